package pcie

import (
	"encoding/hex"
	"math"
	"strings"
	"testing"
)

func TestParseSpeed(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Speed
		wantErr bool
	}{
		{"2.5 GT/s PCIe", 2.5, false},
		{"8.0 GT/s PCIe", 8, false},
		{"16.0 GT/s PCIe", 16, false},
		{"64.0 GT/s PCIe", 64, false},
		{"8 GT/s", 8, false}, // kernels before 5.6
		{"5 GT/s\n", 5, false},
		{"Unknown", 0, false},
		{"Unknown speed", 0, false},
		{"", 0, false},
		{"7 GT/s", 0, true},
		{"8.0 Gb/s", 0, true},
		{"fast", 0, true},
	} {
		got, err := ParseSpeed(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseSpeed(%q) = %v, %v; want %v, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseWidth(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"16", 16, false}, {"1\n", 1, false}, {"0", 0, false}, {"255", 0, false},
		{"64", 0, true}, {"-1", 0, true}, {"x16", 0, true},
	} {
		got, err := ParseWidth(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseWidth(%q) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

// The usable per-lane rates are the kernel's PCIE_SPEED2MBS_ENC table (drivers/pci/pci.h).
func TestLaneGbps(t *testing.T) {
	for _, tc := range []struct {
		s    Speed
		w    int
		want float64
	}{
		{2.5, 16, 32}, {5, 16, 64}, {8, 16, 126.0}, {16, 16, 252.1}, {32, 16, 504.1}, {64, 16, 1024},
		{8, 8, 63.0}, // the documented case: Gen3 x8
	} {
		got := gbps(tc.s, tc.w)
		if math.Abs(got-tc.want) > 0.05 {
			t.Errorf("%v x%d = %.2f Gb/s, want %.1f", tc.s, tc.w, got, tc.want)
		}
	}
}

func cardConfig(t testing.TB) []byte {
	t.Helper()
	b := make([]byte, 256)
	copy(b, []byte{0xb3, 0x15, 0x21, 0x10, 0, 0, 0x10, 0})
	b[0x34] = 0x60
	c := 0x60
	b[c] = 0x10
	b[c+2] = 0x02 // version 2, type 0
	b[c+4] = 2
	b[c+8], b[c+9] = 1<<5, 5<<4
	b[c+0xc], b[c+0xd] = 5|(16<<4)&0xf0, 16>>4
	b[c+0x12], b[c+0x13] = 4|(16<<4)&0xf0, 16>>4
	b[c+0x30] = 5
	return b
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig(cardConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	want := ExpressCap{Offset: 0x60, Version: 2, PortType: 0, CapSpeed: 32, StaSpeed: 16, CapWidth: 16, StaWidth: 16,
		TargetSpeed: 32, MaxPayloadSupported: 512, MaxPayload: 256, MaxReadRequest: 4096}
	if c != want {
		t.Errorf("ParseConfig = %+v\nwant %+v", c, want)
	}
	short := cardConfig(t)[:64] // what a non-root reader sees
	if _, err := ParseConfig(short); err != ErrNoExpressCap {
		t.Errorf("64-byte config: err = %v, want ErrNoExpressCap", err)
	}
	loop := cardConfig(t)
	loop[0x60] = 0x01 // not PCIe; next pointer back to itself
	loop[0x61] = 0x60
	if _, err := ParseConfig(loop); err != ErrNoExpressCap {
		t.Errorf("looping capability list: err = %v", err)
	}
	ones := make([]byte, 256)
	for i := range ones {
		ones[i] = 0xff
	}
	if _, err := ParseConfig(ones); err == nil || !strings.Contains(err.Error(), "all-ones") {
		t.Errorf("all-ones config: err = %v", err)
	}
	cut := cardConfig(t)[:0x68]
	if _, err := ParseConfig(cut); err == nil {
		t.Error("capability cut off: want an error")
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add(cardConfig(f))
	f.Add(cardConfig(f)[:64])
	b, _ := hex.DecodeString("86800c29" + strings.Repeat("00", 60))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err == nil && (c.Offset < 0x40 || c.Offset >= len(b)) {
			t.Fatalf("capability offset 0x%x outside the %d-byte image", c.Offset, len(b))
		}
	})
}

func FuzzParseLink(f *testing.F) {
	for _, s := range []string{"8.0 GT/s PCIe", "8 GT/s", "Unknown speed", "255", "16", "400 Gb/sec (4X NDR)", "4: ACTIVE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if sp, err := ParseSpeed(s); err == nil && sp != 0 && sp.Gen() == 0 {
			t.Fatalf("ParseSpeed(%q) = %v, not a PCIe generation", s, sp)
		}
		if w, err := ParseWidth(s); err == nil && (w < 0 || w > 32) {
			t.Fatalf("ParseWidth(%q) = %d", s, w)
		}
	})
}
