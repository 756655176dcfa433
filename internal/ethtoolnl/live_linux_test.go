package ethtoolnl_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
)

// TestLive asks the kernel the tests run on about "lo". Where the ethtool family exists (5.6+)
// the loopback device has no FEC, link settings or module, so each query must come back as
// EOPNOTSUPP: a malformed request would be refused with EINVAL before the kernel looks for the
// operation, which proves the request layout against a real kernel.
func TestLive(t *testing.T) {
	conn := ethtoolnl.NewLazyConn()
	defer conn.Close()
	c := ethtoolnl.NewClient(conn)
	if _, err := c.Family(); errors.Is(err, ethtoolnl.ErrNoEthtool) {
		t.Skipf("no ethtool netlink in this kernel: %v", err)
	} else if err != nil {
		t.Fatalf("family: %v", err)
	}
	if _, err := c.FEC("lo"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("FEC_GET lo: %v", err)
	}
	if _, err := c.ModuleEEPROM("lo", ethtoolnl.RecordedPages[0]); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("MODULE_EEPROM_GET lo: %v", err)
	}
	if _, err := c.FEC("rdmadiag-none0"); !errors.Is(err, syscall.ENODEV) {
		t.Errorf("FEC_GET of a missing netdev: %v", err)
	}
	l, err := c.LinkModes("lo")
	t.Logf("LINKMODES_GET lo: %+v, %v", l, err)
	// LINKSTATE_GET is answered for every netdev (the loopback's get_link is always on); it
	// has no extended state or link-down count.
	if ls, err := c.LinkState("lo"); err != nil || ls.Link == nil || !*ls.Link || ls.ExtState != nil {
		t.Errorf("LINKSTATE_GET lo: %+v, %v", ls, err)
	}
}
