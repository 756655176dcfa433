package host

import (
	"os"
	"path/filepath"
	"testing"
)

// A --root tree lacks what it holds nothing of; each part a file or directory brings back.
func TestTreeLacksParts(t *testing.T) {
	full := map[string]string{
		"usr/lib/libibverbs.so.1": "", "etc/libibverbs.d/mlx5.driver": "driver mlx5\n", "dev/infiniband/.keep": "",
		"proc/modules": "", "proc/interrupts": "", "proc/sys/kernel/osrelease": "6.1.0\n",
		"sys/class/net/eth0/operstate":                        "up\n",
		"sys/class/infiniband_verbs/abi_version":              "6\n",
		"sys/bus/pci/devices/0000:3b:00.0/current_link_speed": "16.0 GT/s PCIe\n",
		"sys/class/infiniband/mlx5_0/ports/1/gids/0":          "fe80:0000:0000:0000:0000:0000:0000:0001\n",
		"sys/class/infiniband/mlx5_0/ports/1/state":           "4: ACTIVE\n",
		"sys/class/infiniband/mlx5_0/ports/1/rate":            "400 Gb/sec (4X NDR)\n",
	}
	all := []Part{PartUsr, PartEtc, PartDev, PartModules, PartInterrupts, PartOSRelease, PartUverbs, PartPCIeLink, PartGIDs, PartPortRate, PartNetdevs}
	tree := func(t *testing.T, skip map[string]bool) *Host {
		dir := t.TempDir()
		for p, c := range full {
			if skip[p] {
				continue
			}
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		h, err := New(Options{Root: dir, Kind: KindRoot})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	h := tree(t, nil)
	for _, p := range all {
		if nh := h.Lacks(p); nh != nil {
			t.Errorf("a full tree lacks %s: %v", p, nh)
		}
	}
	for _, tc := range []struct {
		leave []string
		lacks []Part
	}{
		{[]string{"proc/interrupts"}, []Part{PartInterrupts}},
		{[]string{"proc/sys/kernel/osrelease"}, []Part{PartOSRelease}},
		{[]string{"sys/class/net/eth0/operstate"}, []Part{PartNetdevs}},
		{[]string{"sys/bus/pci/devices/0000:3b:00.0/current_link_speed"}, []Part{PartPCIeLink}},
		{[]string{"sys/class/infiniband/mlx5_0/ports/1/gids/0"}, []Part{PartGIDs}},
		{[]string{"sys/class/infiniband/mlx5_0/ports/1/rate"}, []Part{PartPortRate}},
		// Without the uverbs class, the module list still says whether ib_uverbs was loaded.
		{[]string{"sys/class/infiniband_verbs/abi_version"}, nil},
		{[]string{"sys/class/infiniband_verbs/abi_version", "proc/modules"}, []Part{PartUverbs, PartModules}},
	} {
		skip := map[string]bool{}
		for _, l := range tc.leave {
			skip[l] = true
		}
		h := tree(t, skip)
		want := map[Part]bool{}
		for _, p := range tc.lacks {
			want[p] = true
		}
		for _, p := range all {
			if got := h.Lacks(p) != nil; got != want[p] {
				t.Errorf("without %v: lacks %s = %v, want %v", tc.leave, p, got, want[p])
			}
		}
	}
	for _, p := range all {
		if partReasons[p] == "" {
			t.Errorf("%s has no reason to give", p)
		}
	}
	// A live host lacks nothing: what it has not is a fact about it.
	live, err := New(Options{Root: t.TempDir(), Kind: KindLive})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		if live.Lacks(p) != nil {
			t.Errorf("live host lacks %s", p)
		}
	}
}
