package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseIbstat(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/captures/mooncake-2039-h20-ib/ibstat.txt")
	if err != nil {
		t.Fatal(err)
	}
	cas, err := parseIbstat(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(cas) != 2 || cas[0].Name != "mlx5_0" || cas[1].Type != "MT4125" || cas[1].Ports[0].PhysState != "Disabled" ||
		cas[0].Ports[0].BaseLID != "287" || cas[0].Ports[0].LinkLayer != "InfiniBand" {
		t.Errorf("parsed %+v", cas)
	}
	for _, bad := range []string{"", "CA 'x'\n", "CA 'x'\n CA type: MT4129\n Firmware version: 1.2.3\n Port x:\n"} {
		if _, err := parseIbstat(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestConversions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"400", "400 Gb/sec (4X NDR)"}, {"200", "200 Gb/sec (4X HDR)"}, {"100", "100 Gb/sec (4X EDR)"},
		{"56", "56 Gb/sec (4X FDR)"}, {"40", "40 Gb/sec (4X QDR)"}, {"10", "10 Gb/sec (4X SDR)"},
	} {
		if got, err := rateFile(tc.in); err != nil || got != tc.want {
			t.Errorf("rate %s: %q %v, want %q", tc.in, got, err, tc.want)
		}
	}
	if _, err := rateFile("37"); err == nil {
		t.Error("rate 37 accepted")
	}
	if g, _ := sysGUID("0x58a2e103001b2576"); g != "58a2:e103:001b:2576" {
		t.Errorf("GUID %q", g)
	}
	if d, _ := deviceID("MT4129"); d != 0x1021 {
		t.Errorf("MT4129 = %#x", d)
	}
	for in, want := range map[string]string{"Active": "4: ACTIVE", "Down": "1: DOWN", "Initializing": "2: INIT"} {
		if got, _ := portState(in); got != want {
			t.Errorf("%s: %q", in, got)
		}
	}
	if got, _ := physState("Polling"); got != "2: Polling" {
		t.Errorf("Polling: %q", got)
	}
	if sysfsSpeed("16GT/s") != "16.0 GT/s PCIe" || sysfsSpeed("2.5GT/s") != "2.5 GT/s PCIe" {
		t.Error("speed")
	}
}

func TestParseLspci(t *testing.T) {
	text := `3b:00.0 Infiniband controller [0207]: Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]
	Subsystem: Mellanox Technologies Device [15b3:0040]
		LnkCap:	Port #0, Speed 32GT/s, Width x16, ASPM not supported
		LnkSta:	Speed 16GT/s (downgraded), Width x8 (downgraded)
	Kernel driver in use: mlx5_core
`
	fs, err := parseLspci(text)
	if err != nil {
		t.Fatal(err)
	}
	f := fs[0]
	if f.BDF != "0000:3b:00.0" || f.Device != 0x1021 || f.CapSpeed != "32GT/s" || f.StaWid != "8" || f.Driver != "mlx5_core" {
		t.Errorf("%+v", f)
	}
}

// Every committed capture builds a tree, and each value the tree holds beyond the capture is listed.
func TestCapturesBuild(t *testing.T) {
	dirs, _ := filepath.Glob("../../fixtures/captures/*")
	if len(dirs) == 0 {
		t.Fatal("no captures")
	}
	for _, d := range dirs {
		filled, err := build(d, filepath.Join(t.TempDir(), "root"))
		if err != nil {
			t.Errorf("%s: %v", d, err)
			continue
		}
		if !strings.Contains(strings.Join(filled, "\n"), "4X assumed") {
			t.Errorf("%s: the assumed width is not listed: %v", d, filled)
		}
		if _, err := os.Stat(filepath.Join(d, "capture.md")); err != nil {
			t.Errorf("%s: no capture.md naming the source", d)
		}
	}
}
