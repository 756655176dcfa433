package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// askEthtool asks what the link-quality and transceiver checks ask of ethtool netlink, as a
// recording's Ask would by running them.
func askEthtool(view *host.Host) {
	c := ethtoolnl.NewClient(view.Ethtool())
	for _, nd := range []string{"ens1f0np0", "ens2f0np0"} {
		c.FEC(nd)
		c.LinkModes(nd)
		for _, p := range ethtoolnl.RecordedPages {
			c.ModuleEEPROM(nd, p)
		}
	}
}

// Record keeps the FEC, link modes and module pages asked through its view under
// ethtool-netlink/, and Open replays them, the kernel's refusals included, with the recorded
// family id.
func TestRecordOpenEthtoolNetlink(t *testing.T) {
	data, err := os.ReadFile("../../fixtures/sysfs/port-roce/snapshot.txtar")
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := UnpackTxtar(data, tree); err != nil {
		t.Fatal(err)
	}
	lower := make([]byte, 256)
	lower[0] = 0x11 // SFF-8024 identifier: QSFP28
	m := ethtooltest.Model{Family: 0x1d, Netdevs: []ethtooltest.Netdev{
		{Ifindex: 4, Ifname: "ens1f0np0", FEC: &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 7}, Uncorrectable: &ethtoolnl.FECStat{Total: 1}},
			LinkModes: &ethtoolnl.LinkModes{SpeedMbps: 200000, Lanes: 4}, EEPROM: map[uint16][]byte{ethtooltest.PageKey(0x50, 0): lower}, EEPROMErrno: syscall.EINVAL},
		{Ifindex: 5, Ifname: "ens2f0np0"},
	}}
	src, err := host.New(host.Options{Root: filepath.Join(tree, RootDir), Kind: host.KindRoot, EthtoolNetlink: m.Conn()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{ToolVersion: "test", Now: time.Unix(0, 0), Ask: askEthtool}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, MetaFile)); contains(b, EthtoolNetlinkDir) {
		t.Errorf("kernel refusals listed as unreadable: %s", b)
	}
	h, err := openDir(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := ethtoolnl.NewClient(h.Ethtool())
	f, err := c.FEC("ens1f0np0")
	if err != nil || f.Active != ethtoolnl.FECRS || f.Uncorrectable.Total != 1 {
		t.Errorf("FEC %+v %v", f, err)
	}
	if _, err := c.FEC("ens2f0np0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("FEC of a driver without it: %v", err)
	}
	r := c.PageReader("ens1f0np0")
	if b, err := r.ReadPage(0x50, 0, 0, 0, 1); err != nil || b[0] != 0x11 {
		t.Errorf("identifier %x %v", b, err)
	}
	if _, err := r.ReadPage(0x50, 0x11, 0, 128, 8); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("absent page replayed as %v", err)
	}
	if _, err := c.LinkModes("ens9"); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("unrecorded netdev: %v", err)
	}

	// A kernel without the family is recorded as such; a host without the connection has none.
	src, _ = host.New(host.Options{Root: filepath.Join(tree, RootDir), Kind: host.KindRoot, EthtoolNetlink: ethtooltest.Model{}.Conn()})
	dir = filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{Now: time.Unix(0, 0), Ask: askEthtool}); err != nil {
		t.Fatal(err)
	}
	h, _ = openDir(dir, "test")
	if _, err := ethtoolnl.NewClient(h.Ethtool()).FEC("ens1f0np0"); !errors.Is(err, ethtoolnl.ErrNoEthtool) {
		t.Errorf("replayed kernel without ethtool netlink: %v", err)
	}
	src, _ = host.New(host.Options{Root: filepath.Join(tree, RootDir), Kind: host.KindRoot})
	dir = filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{Now: time.Unix(0, 0), Ask: askEthtool}); err != nil {
		t.Fatal(err)
	}
	if h, _ = openDir(dir, "test"); h.Ethtool() != nil {
		t.Error("a snapshot recorded without ethtool netlink has a connection")
	}
}
