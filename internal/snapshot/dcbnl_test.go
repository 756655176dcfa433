package snapshot

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl/dcbtest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// Record keeps the DCB netlink answers asked through its view under dcb-netlink/, refusals
// included, and Open replays them; a host without the connection records none.
func TestRecordOpenDCBNetlink(t *testing.T) {
	data, err := os.ReadFile("../../fixtures/sysfs/port-roce/snapshot.txtar")
	if err != nil {
		t.Fatal(err)
	}
	tree := t.TempDir()
	if err := UnpackTxtar(data, tree); err != nil {
		t.Fatal(err)
	}
	m := dcbtest.Model{Netdevs: []dcbnl.IEEE{{Ifname: "ens1f0np0", PFC: &dcbnl.PFC{Cap: 8, Enabled: 1 << 3}, Apps: []dcbnl.App{}}}, Refuse: []string{"ens2f0np0"}}
	ask := func(view *host.Host) {
		c := dcbnl.NewClient(view.DCB())
		c.IEEE("ens1f0np0")
		c.IEEE("ens2f0np0")
	}
	src, err := host.New(host.Options{Root: filepath.Join(tree, RootDir), Kind: host.KindRoot, DCB: m.Conn()})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{ToolVersion: "test", Now: time.Unix(0, 0), Ask: ask}); err != nil {
		t.Fatal(err)
	}
	h, err := openDir(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	c := dcbnl.NewClient(h.DCB())
	if v, err := c.IEEE("ens1f0np0"); err != nil || !v.PFC.EnabledOn(3) {
		t.Errorf("replayed PFC %+v %v", v, err)
	}
	if _, err := c.IEEE("ens2f0np0"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("replayed refusal: %v", err)
	}
	if _, err := c.IEEE("ens9"); !errors.Is(err, host.ErrNotRecorded) {
		t.Errorf("unrecorded netdev: %v", err)
	}
	src, _ = host.New(host.Options{Root: filepath.Join(tree, RootDir), Kind: host.KindRoot})
	dir = filepath.Join(t.TempDir(), "snap")
	if err := Record(src, dir, RecordOptions{Now: time.Unix(0, 0), Ask: ask}); err != nil {
		t.Fatal(err)
	}
	if h, _ = openDir(dir, "test"); h.DCB() != nil {
		t.Error("a snapshot recorded without DCB netlink has a connection")
	}
}
