package procirq

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	in := "            CPU0       CPU1\n" +
		"   0:         22          0   IO-APIC   2-edge      timer\n" +
		"  24:          2          0   PCI-MSI 32768-edge      PCIe PME, aerdrv\n" +
		" 100:          5          6  IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0\n" +
		" 121:     104857          5  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0\n" +
		" 122:          x          5  IR-PCI-MSIX-0000:3b:00.0    2-edge      mlx5_comp1@pci:0000:3b:00.0\n" +
		" 123:          1\n" +
		" 124:\n" +
		" NMI:          0          0   Non-maskable interrupts\n" +
		" ERR:          0\n" +
		"bad line\n"
	got, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []IRQ{
		{Num: 0, Total: 22, Name: "timer"},
		{Num: 24, Total: 2, Name: "aerdrv"},
		{Num: 100, Total: 11, Name: "mlx5_async0@pci:0000:3b:00.0"},
		{Num: 121, Total: 104862, Name: "mlx5_comp0@pci:0000:3b:00.0"},
	}
	if len(got.IRQs) != len(want) {
		t.Fatalf("IRQs %+v, want %+v", got.IRQs, want)
	}
	for i := range want {
		if got.IRQs[i] != want[i] {
			t.Errorf("IRQ %d = %+v, want %+v", i, got.IRQs[i], want[i])
		}
	}
	// 122 has a count that is not a number, 123 and 124 lack counts or a name: none is taken
	// with a partial total.
	if got.Bad != 3 {
		t.Errorf("Bad = %d, want 3", got.Bad)
	}
	by := got.ByName()
	if c := by["mlx5_comp0@pci:0000:3b:00.0"]; len(c) != 1 || c[0].Num != 121 {
		t.Errorf("ByName comp0: %+v", c)
	}
	if _, ok := by["mlx5_comp1@pci:0000:3b:00.0"]; ok {
		t.Error("ByName lists the unparsable line 122")
	}
	for _, bad := range []string{"garbage\n", "", "0: 1 2 x\n"} {
		if _, err := Parse([]byte(bad)); err == nil || !strings.Contains(err.Error(), Path) {
			t.Errorf("Parse(%q): err %v, want one naming %s", bad, err, Path)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("  CPU0\n 1: 5 IO-APIC 1-edge i8042\n"))
	f.Add([]byte("  CPU0\n 1: 5 x y name\n"))
	f.Add([]byte(""))
	f.Add([]byte("CPU0 CPU1\n 121: 1 2 a b c\nNMI: 0 0\n"))
	f.Add([]byte("CPU0 CPU1\n100: 1 x\n101:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := Parse(b)
		if err != nil {
			return
		}
		lines := strings.Count(string(b), "\n") + 1
		if len(tab.IRQs)+tab.Bad > lines {
			t.Fatalf("%d IRQs and %d bad lines from %d lines", len(tab.IRQs), tab.Bad, lines)
		}
		for _, q := range tab.IRQs {
			if q.Num < 0 {
				t.Fatalf("negative IRQ %d", q.Num)
			}
			if q.Name == "" || strings.ContainsAny(q.Name, " \t\n") {
				t.Fatalf("IRQ %d has name %q", q.Num, q.Name)
			}
		}
	})
}
