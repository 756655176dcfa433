package ethtoolnl_test

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// module is a 256-byte page view whose every byte says where it is: page<<8|offset, low byte.
func module(page uint8) []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i) ^ page
	}
	return b
}

func model() ethtooltest.Model {
	return ethtooltest.Model{Family: fam, Netdevs: []ethtooltest.Netdev{
		{Ifindex: 4, Ifname: "ens1f0np0", FEC: &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 10}, Uncorrectable: &ethtoolnl.FECStat{Total: 0}},
			LinkModes: &ethtoolnl.LinkModes{SpeedMbps: 100000, Lanes: 4, Duplex: 1},
			EEPROM:    map[uint16][]byte{ethtooltest.PageKey(0x50, 0): module(0), ethtooltest.PageKey(0x50, 3): module(3)}, EEPROMErrno: syscall.EINVAL},
		{Ifindex: 5, Ifname: "eth1", FECErrno: syscall.ENODEV},
	}}
}

func TestClient(t *testing.T) {
	conn := model().Conn()
	c := ethtoolnl.NewClient(conn)
	f, err := c.FEC("ens1f0np0")
	if err != nil || f.Active != ethtoolnl.FECRS || f.Corrected.Total != 10 || f.Uncorrectable == nil || f.CorrectedBits != nil || !f.HasStats() {
		t.Fatalf("FEC: %+v, %v", f, err)
	}
	l, err := c.LinkModes("ens1f0np0")
	if err != nil || l.SpeedMbps != 100000 || l.Lanes != 4 {
		t.Fatalf("link modes: %+v, %v", l, err)
	}
	_, err = c.FEC("eth1")
	var e *ethtoolnl.Error
	if en, ok := ethtoolnl.Errno(err); !ok || en != syscall.ENODEV || !errors.As(err, &e) || e.Ifname != "eth1" || e.Op != "FEC_GET" {
		t.Fatalf("ENODEV: %v", err)
	}
	if _, err := c.LinkModes("eth1"); !errors.Is(err, syscall.EOPNOTSUPP) || !strings.Contains(err.Error(), "eth1") {
		t.Fatalf("EOPNOTSUPP: %v", err)
	}
	if _, err := c.FEC("eth9"); !errors.Is(err, host.ErrNotRecorded) {
		t.Fatalf("unknown netdev: %v", err)
	}
	if _, err := c.FEC("../x"); err == nil {
		t.Fatal("invalid netdev name accepted")
	}
	// The family was resolved once for all of these.
	n := 0
	for _, r := range conn.Requests {
		if r.Key() == ethtoolnl.FamilyRequest().Key() {
			n++
		}
	}
	if n != 1 {
		t.Errorf("family resolved %d times", n)
	}
}

func TestClientNoFamily(t *testing.T) {
	c := ethtoolnl.NewClient(ethtooltest.Model{}.Conn())
	if _, err := c.FEC("eth0"); !errors.Is(err, ethtoolnl.ErrNoEthtool) || !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("no family: %v", err)
	}
	if _, err := ethtoolnl.NewClient(nil).FEC("eth0"); !errors.Is(err, host.ErrNotRecorded) {
		t.Fatalf("nil conn: %v", err)
	}
}

// TestReplyAboutAnotherNetdev: a reply naming another netdev is refused, not attributed.
func TestReplyAboutAnotherNetdev(t *testing.T) {
	conn := model().Conn()
	f := ethtoolnl.FEC{Ifindex: 9, Ifname: "other", Active: ethtoolnl.FECRS}
	conn.Reply(ethtoolnl.FECRequest(fam, "ens1f0np0"), ethtooltest.Encoder{}.FECReply(fam, f))
	if _, err := ethtoolnl.NewClient(conn).FEC("ens1f0np0"); !errors.Is(err, ethtoolnl.ErrMalformed) {
		t.Fatalf("got %v", err)
	}
}

func TestModuleEEPROM(t *testing.T) {
	c := ethtoolnl.NewClient(model().Conn())
	b, err := c.ModuleEEPROM("ens1f0np0", ethtoolnl.EEPROMPage{I2CAddr: 0x50, Page: 3, Offset: 128, Length: 128})
	if err != nil || !bytes.Equal(b, module(3)[128:]) {
		t.Fatalf("page 3: %x, %v", b, err)
	}
	if _, err := c.ModuleEEPROM("ens1f0np0", ethtoolnl.EEPROMPage{I2CAddr: 0x50, Page: 1, Offset: 128, Length: 128}); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("absent page: %v", err)
	}
	for _, p := range []ethtoolnl.EEPROMPage{
		{I2CAddr: 0x50, Offset: 0, Length: 0},
		{I2CAddr: 0x50, Offset: 0, Length: 129},
		{I2CAddr: 0x50, Offset: 100, Length: 50},
		{I2CAddr: 0x50, Offset: 200, Length: 100},
		{I2CAddr: 0x50, Page: 2, Offset: 0, Length: 16},
	} {
		if _, err := c.ModuleEEPROM("ens1f0np0", p); err == nil || !strings.Contains(err.Error(), "ens1f0np0") {
			t.Errorf("%v accepted: %v", p, err)
		}
	}
}

func TestPageReader(t *testing.T) {
	conn := model().Conn()
	r := ethtoolnl.NewClient(conn).PageReader("ens1f0np0")
	tests := []struct {
		page        uint8
		off, length uint32
		want        []byte
	}{
		{0, 0, 1, module(0)[0:1]},
		{0, 120, 16, module(0)[120:136]},                                    // crosses the half page: lower + upper page 0
		{3, 120, 16, append(module(0)[120:128:128], module(3)[128:136]...)}, // lower half is page 0's
		{3, 128, 128, module(3)[128:]},
		{3, 0, 256, append(module(0)[:128:128], module(3)[128:]...)},
	}
	for _, tc := range tests {
		got, err := r.ReadPage(0x50, tc.page, 0, tc.off, tc.length)
		if err != nil || !bytes.Equal(got, tc.want) {
			t.Errorf("page %d [%d,+%d): %x, %v", tc.page, tc.off, tc.length, got, err)
		}
	}
	// Every read was served from whole half pages, each fetched once: family + 3 halves.
	if len(conn.Requests) != 4 {
		t.Errorf("%d requests, want 4", len(conn.Requests))
	}
	if _, err := r.ReadPage(0x50, 1, 0, 130, 4); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("absent page: %v", err)
	}
	for _, bad := range [][2]uint32{{0, 0}, {256, 1}, {200, 57}} {
		if _, err := r.ReadPage(0x50, 0, 0, bad[0], bad[1]); err == nil {
			t.Errorf("read %v accepted", bad)
		}
	}
}
