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
		// ibstat gives no width and ibv_devinfo without -v no rate: either is listed.
		_, ibstat := os.Stat(filepath.Join(d, "ibstat.txt"))
		if j := strings.Join(filled, "\n"); ibstat == nil && !strings.Contains(j, "4X assumed") {
			t.Errorf("%s: the assumed width is not listed: %v", d, filled)
		}
		if _, err := os.Stat(filepath.Join(d, "capture.md")); err != nil {
			t.Errorf("%s: no capture.md naming the source", d)
		}
	}
}

func TestParseDevinfo(t *testing.T) {
	text := "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t16.23.1020\n" +
		"\tnode_guid:\t\t\t0015:5dff:fe33:ff5f\n\tvendor_part_id:\t\t\t4120\n\thw_ver:\t\t\t\t0x80\n" +
		"\tboard_id:\t\t\tMT_0000000010\n\t\tport:\t1\n\t\t\tstate:\t\t\tPORT_ACTIVE (4)\n" +
		"\t\t\tsm_lid:\t\t\t1\n\t\t\tport_lid:\t\t780\n\t\t\tlink_layer:\t\tInfiniBand\n" +
		"\t\t\tphys_state:\t\tLINK_UP (5)\n\t\t\tactive_width:\t\t4X (2)\n\t\t\tactive_speed:\t\t25.0 Gbps (32)\n"
	cas, err := parseDevinfo(text)
	if err != nil {
		t.Fatal(err)
	}
	c := cas[0]
	p := c.Ports[0]
	if c.Name != "mlx5_0" || c.Type != "MT4120" || c.FW != "16.23.1020" || c.NodeGUID != "0x00155dfffe33ff5f" ||
		c.BoardID != "MT_0000000010" || c.HWVersion != "80" || p.State != "Active" || p.PhysState != "LinkUp" ||
		p.BaseLID != "780" || p.SMLID != "1" || p.LinkLayer != "InfiniBand" || p.Width != "4X" || p.LaneGbps != "25.0" {
		t.Errorf("parsed %+v", cas)
	}
	if r, _, err := portRate(p); err != nil || r != "100 Gb/sec (4X EDR)" {
		t.Errorf("rate %q %v", r, err)
	}
	for _, bad := range []string{"", "hca_id: x\n", "hca_id: x\n fw_ver: 1\n vendor_part_id: 4129\n port: 1\n",
		"hca_id: x\n fw_ver: 1\n vendor_part_id: 4129\n port: one\n"} {
		if _, err := parseDevinfo(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseIbstatus(t *testing.T) {
	text := "Infiniband device 'mlx5_0' port 1 status:\n\tdefault gid:\t fe80::1\n\tbase lid:\t 0x30c\n" +
		"\tsm lid:\t\t 0x1\n\tstate:\t\t 4: ACTIVE\n\tphys state:\t 5: LinkUp\n" +
		"\trate:\t\t 100 Gb/sec (4X EDR)\n\tlink_layer:\t InfiniBand\n"
	ps, err := parseIbstatus(text)
	if err != nil {
		t.Fatal(err)
	}
	if p := ps[0]; p.Dev != "mlx5_0" || p.Num != 1 || p.BaseLID != "0x30c" || p.Rate != "100 Gb/sec (4X EDR)" || p.Phys != "5: LinkUp" {
		t.Errorf("parsed %+v", ps)
	}
	if _, err := parseIbstatus("Infiniband device 'x' port 1 status:\n\tstate: 4: ACTIVE\n"); err == nil {
		t.Error("a block without rate accepted")
	}
}

func TestPortRate(t *testing.T) {
	for _, tc := range []struct {
		p    caPort
		want string
		note string
	}{
		{caPort{Width: "4X", LaneGbps: "14.0625"}, "56 Gb/sec (4X FDR)", ""},
		{caPort{Width: "1X", LaneGbps: "100.0"}, "100 Gb/sec (1X NDR)", ""},
		{caPort{Width: "2X", LaneGbps: "50.0"}, "100 Gb/sec (2X HDR)", ""},
		{caPort{RateSys: "200 Gb/sec (4X HDR)"}, "200 Gb/sec (4X HDR)", ""},
		{caPort{Rate: "400"}, "400 Gb/sec (4X NDR)", "4X assumed"},
		{caPort{}, "", "no rate file written"},
	} {
		got, note, err := portRate(tc.p)
		if err != nil || got != tc.want || !strings.Contains(note, tc.note) {
			t.Errorf("%+v: %q %q %v, want %q %q", tc.p, got, note, err, tc.want, tc.note)
		}
	}
	if _, err := widthRate("4X", "37.0"); err == nil {
		t.Error("lane speed 37 accepted")
	}
}

func TestParseDevices(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []pciDev
	}{
		{"# a comment\n0000:b3:00.0 15b3:101d mlx5_core mlx5_0\n", []pciDev{{BDF: "0000:b3:00.0", Device: 0x101d, Driver: "mlx5_core", CA: "mlx5_0"}}},
		{"0000:03:00.0 15b3:1015 mlx5_core unbound\n", []pciDev{{BDF: "0000:03:00.0", Device: 0x1015, Driver: "mlx5_core", Unbound: true}}},
		{"0000:01:00.1 15b3:1015 mlx5_core -\n", []pciDev{{BDF: "0000:01:00.1", Device: 0x1015, Driver: "mlx5_core"}}},
	} {
		got, err := parseDevices(tc.in)
		if err != nil || len(got) != len(tc.want) || got[0] != tc.want[0] {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "# only a comment\n", "03:00.0 15b3:1015 mlx5_core unbound\n",
		"0000:03:00.0 8086:1015 mlx5_core unbound\n", "0000:03:00.0 15b3:1015 ixgbe unbound\n",
		"0000:03:00.0 15b3:1015 mlx5_core\n", "0000:03:00.0 15b3:1015 mlx5_core ../x1\n",
		"0000:03:00.0 15b3:1015 mlx5_core - \n0000:03:00.0 15b3:1015 mlx5_core -\n"} {
		if _, err := parseDevices(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A function whose probe failed is written without a driver link, and the driver stays loaded;
// a CA devices.txt names sits at the address it gives.
func TestBuildDevices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("devices.txt", "0000:03:00.0 15b3:1015 mlx5_core unbound\n")
	root := filepath.Join(t.TempDir(), "root")
	if _, err := build(dir, root); err != nil {
		t.Fatal(err)
	}
	fn := filepath.Join(root, "sys/devices/pci0000:03/0000:03:00.0")
	if b, err := os.ReadFile(fn + "/device"); err != nil || string(b) != "0x1015\n" {
		t.Errorf("device %q %v", b, err)
	}
	if _, err := os.Lstat(fn + "/driver"); err == nil {
		t.Error("an unbound function has a driver link")
	}
	if _, err := os.Stat(filepath.Join(root, "sys/bus/pci/drivers/mlx5_core")); err != nil {
		t.Errorf("the loaded driver is missing: %v", err)
	}

	write("ibstat.txt", "CA 'mlx5_1'\n\tCA type: MT4125\n\tFirmware version: 22.32.2004\n\tPort 1:\n\t\tState: Active\n"+
		"\t\tPhysical state: LinkUp\n\t\tRate: 100\n\t\tBase lid: 0\n\t\tSM lid: 0\n\t\tLink layer: Ethernet\n")
	write("devices.txt", "0000:b3:00.1 15b3:101d mlx5_core mlx5_1\n")
	root = filepath.Join(t.TempDir(), "root")
	if _, err := build(dir, root); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(root, "sys/class/infiniband/mlx5_1")); err != nil || !strings.Contains(target, "0000:b3:00.1") {
		t.Errorf("mlx5_1 -> %q %v", target, err)
	}
	write("devices.txt", "0000:b3:00.1 15b3:1017 mlx5_core mlx5_1\n")
	if _, err := build(dir, filepath.Join(t.TempDir(), "root")); err == nil {
		t.Error("a device id that contradicts the CA type was accepted")
	}
	write("devices.txt", "0000:b3:00.1 15b3:101d mlx5_core mlx5_7\n")
	if _, err := build(dir, filepath.Join(t.TempDir(), "root")); err == nil {
		t.Error("a CA the capture does not show was accepted")
	}
}
