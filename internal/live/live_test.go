package live

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadKmsgMissing(t *testing.T) {
	if _, err := ReadKmsg(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v", err)
	}
}

// Only uverbs nodes are opened: opening issmN would make the port advertise IsSM to the subnet.
func TestOnlyVerbsNodesAreOpened(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"issm0", "umad0", "rdma_cm", "uverbs0"} {
		// /dev/null's numbers: a real character device that is harmless if opened by mistake.
		if err := syscall.Mknod(filepath.Join(dir, n), syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
			t.Skip("mknod needs root:", err)
		}
	}
	var opened []string
	devs := liveCharDevs(dir, func(p string) error {
		opened = append(opened, filepath.Base(p))
		return nil
	})
	if len(devs) != 4 || strings.Join(opened, ",") != "uverbs0" {
		t.Errorf("listed %d nodes, opened %v; want all four listed and only uverbs0 opened", len(devs), opened)
	}
}

// The effective capability set is read from proc(5)'s status file, as the kernel prints it.
func TestCapEff(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "status")
	status := "Name:\trdmadiag\nCapInh:\t0000000000000000\nCapPrm:\t00000000a80425fb\nCapEff:\t00000000a80425fb\nCapBnd:\t00000000a80425fb\n"
	if err := os.WriteFile(p, []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := capEff(p); got != "00000000a80425fb" {
		t.Errorf("CapEff %q", got)
	}
	if got := capEff(filepath.Join(dir, "missing")); got != "" {
		t.Errorf("missing file: %q", got)
	}
}

// A driver without statistics (netdevsim) makes ETHTOOL_GSTRINGS fail with EOPNOTSUPP: that is an
// empty set, as a snapshot replays it; any other failure stays an error naming the netdev.
func TestNoStatsIsEmpty(t *testing.T) {
	st, err := noStatsIsEmpty("eth1")(nil, syscall.EOPNOTSUPP)
	if err != nil || st == nil || len(st) != 0 {
		t.Errorf("EOPNOTSUPP: %v %v, want an empty set", st, err)
	}
	if _, err := noStatsIsEmpty("eth1")(nil, syscall.ENODEV); !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "ethtool -S eth1") {
		t.Errorf("ENODEV: %v", err)
	}
	if st, err := noStatsIsEmpty("eth0")(map[string]uint64{"rx_packets": 3}, nil); err != nil || st["rx_packets"] != 3 {
		t.Errorf("stats: %v %v", st, err)
	}
}

// Capabilities count for the kernel log only in the initial user namespace.
func TestInitialUserNS(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		uidMap string
		want   bool
	}{
		"initial":       {"         0          0 4294967295\n", true},
		"unshare -r":    {"         0       1000          1\n", false},
		"rootless":      {"0 1000 1\n1 100000 65536\n", false},
		"missing":       {"", false},
		"partial range": {"0 0 1000\n", false},
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		if name != "missing" {
			if err := os.WriteFile(p, []byte(c.uidMap), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if got := initialUserNS(p); got != c.want {
			t.Errorf("%s: initialUserNS = %v, want %v", name, got, c.want)
		}
	}
}
