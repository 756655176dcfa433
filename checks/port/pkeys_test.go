package port

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestParsePKey(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint16
		ok   bool
	}{
		{"0xffff\n", 0xffff, true}, {"0x7fff", 0x7fff, true}, {"0x0000", 0, true}, {"0x8001", 0x8001, true},
		{"ffff", 0, false}, {"0x", 0, false}, {"0x10000", 0, false}, {"0xfffg", 0, false}, {"", 0, false}, {"-0x1", 0, false},
	} {
		got, err := ParsePKey(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParsePKey(%q) = %#x, %v; want %#x ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func FuzzParsePKey(f *testing.F) {
	for _, s := range []string{"0xffff\n", "0x0000", "0x8001", "junk", "0x123456"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParsePKey(s)
		if err != nil {
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(s), "0x") {
			t.Errorf("%q accepted without 0x", s)
		}
		if again, err := ParsePKey(pkeyString(k)); err != nil || again != k {
			t.Errorf("%q read as %#x does not read back: %#x, %v", s, k, again, err)
		}
	})
}

func table(keys ...uint16) pkeyTable {
	t := pkeyTable{byIndex: map[int]uint16{}}
	for i, k := range keys {
		if k&pkeyBaseMask != 0 {
			t.byIndex[i] = k
			t.indices = append(t.indices, i)
		}
	}
	return t
}

// Each rule of judgePKeys, one table at a time (IBTA Volume 1, 10.9: membership bit, default
// partition; sa_query.c update_sm_ah: the default key's index).
func TestJudgePKeys(t *testing.T) {
	p := portRef{dev: &inventory.Device{Name: "mlx5_0"}, port: &inventory.Port{Num: 1, LinkLayer: "InfiniBand"}, dir: "/sys/class/infiniband/mlx5_0/ports/1"}
	pol := &optfile.Policy{Ports: &optfile.PortsPolicy{PKeys: []uint16{0xffff, 0x8001}}}
	for _, tc := range []struct {
		name    string
		t       pkeyTable
		policy  bool
		want    report.Severity
		summary string
	}{
		{"default full member", table(0xffff), false, report.OK, "in the default partition and holds 1 P_Key(s): 0xffff"},
		{"default and a partition", table(0xffff, 0x8001), true, report.OK, "holds 2 P_Key(s): 0x8001, 0xffff"},
		{"no default partition", table(0x8001), false, report.Critical, "no default partition key"},
		{"limited everywhere", table(0x7fff, 0x0001), false, report.Warning, "limited member of every partition"},
		{"limited default, full elsewhere", table(0x7fff, 0x8001), false, report.OK, "holds 2"},
		{"index 0 empty", table(0, 0xffff), false, report.Warning, "index 0 is empty"},
		{"policy key absent", table(0xffff), true, report.Critical, "lacks the P_Key 0x8001 the policy expects"},
		{"policy key with the other membership", table(0xffff, 0x0001), true, report.Critical, "holds 0x0001 where the policy expects 0x8001: limited membership of partition 0x0001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &checks.Env{}
			if tc.policy {
				env.Opts = checks.Options{Policy: pol, PolicyFile: "p.json"}
			}
			f := engine.Finding{}
			judgePKeys(env, tc.policy, p, tc.t, &f)
			if f.Severity != tc.want || !strings.Contains(f.Summary, tc.summary) {
				t.Fatalf("%s %q; want %s containing %q", f.Severity, f.Summary, tc.want, tc.summary)
			}
			if f.Severity.Problem() && (f.Remediation == "" || f.Action != report.ActionFixConfiguration) {
				t.Errorf("a problem without a fix or the subnet manager's action: %q, %q", f.Remediation, f.Action)
			}
		})
	}
}

// Identical rails are held to the keys most of them hold; a key one rail has extra is not the
// others' gap.
func TestComparePKeys(t *testing.T) {
	pci := &inventory.PCIFunction{BDF: "0000:3b:00.0", Vendor: 0x15b3, DeviceID: 0x1021}
	mk := func(name string, t pkeyTable, i int) pkeyPort {
		return pkeyPort{p: portRef{dev: &inventory.Device{Name: name, PCI: pci, BoardID: "MT_0000000838"}, port: &inventory.Port{Num: 1, LinkLayer: "InfiniBand"}}, t: t, idx: i}
	}
	ports := []pkeyPort{mk("mlx5_0", table(0xffff, 0x8001), 0), mk("mlx5_1", table(0xffff, 0x8001), 1), mk("mlx5_2", table(0xffff), 2), mk("mlx5_3", table(0xffff, 0x8001, 0x8002), 3)}
	out := make([]engine.Finding, 4)
	comparePKeys(ports, out)
	want := []report.Severity{report.OK, report.OK, report.Warning, report.OK}
	for i, f := range out {
		if f.Severity != want[i] {
			t.Errorf("%s: %s %q, want %s", ports[i].p.name(), f.Severity, f.Summary, want[i])
		}
	}
	if !strings.Contains(out[2].Summary, "0x8001 (held by mlx5_0/1, mlx5_1/1, mlx5_3/1)") {
		t.Errorf("summary %q", out[2].Summary)
	}
}
