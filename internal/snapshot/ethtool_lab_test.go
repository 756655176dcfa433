package snapshot_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

// The ethtool decoders against bytes a real kernel sent: fixtures/sysfs/ethtool-netdevsim was
// recorded in the lab (Debian 12, Linux 6.1) with rxe1 on a netdevsim port netdev whose FEC was
// set to RS; 6.1's netdevsim (drivers/net/netdevsim/ethtool.c) has get_fecparam but no
// get_fec_stats, no module EEPROM and no link settings, and eth0 is virtio_net, which has none
// of the three.
func TestEthtoolNetdevsimFixture(t *testing.T) {
	h, cleanup, err := snapshot.Open("../../fixtures/sysfs/ethtool-netdevsim/snapshot.txtar")
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	c := ethtoolnl.NewClient(h.Ethtool())
	fam, err := c.Family()
	if err != nil || fam == 0 {
		t.Fatalf("family: %d %v", fam, err)
	}

	f, err := c.FEC("eth1")
	if err != nil {
		t.Fatalf("FEC eth1: %v", err)
	}
	if f.Ifname != "eth1" || f.Ifindex == 0 || f.Active != ethtoolnl.FECRS || f.Auto {
		t.Errorf("FEC eth1: %+v", f)
	}
	// fec_put_stats puts the three statistics even when the driver has no get_fec_stats, each
	// an empty array: no statistic, not a zero.
	if f.HasStats() {
		t.Errorf("FEC eth1 statistics: %+v %+v %+v", f.Corrected, f.Uncorrectable, f.CorrectedBits)
	}

	// The test encoder, given what the decoder read, lays out the kernel's bytes exactly (but for
	// the sequence number and port id of the header), so synthetic fixtures built with it look
	// like this kernel's answers.
	raw, err := h.Ethtool().Exchange(ethtoolnl.FECRequest(fam, "eth1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 16 {
		t.Fatalf("FEC eth1 reply of %d bytes", len(raw))
	}
	ne := binary.NativeEndian
	enc := ethtooltest.Encoder{Seq: ne.Uint32(raw[8:]), PortID: ne.Uint32(raw[12:])}
	if want := enc.FECReply(fam, *f, ethtoolnl.FECRS); !bytes.Equal(raw, want) {
		t.Errorf("FEC eth1 reply differs from the test encoder's:\nkernel  %x\nencoder %x", raw, want)
	}

	for _, tc := range []struct {
		what string
		err  error
	}{
		{"FEC eth0", second(c.FEC("eth0"))},
		{"LINKMODES eth1", second(c.LinkModes("eth1"))},
		{"MODULE_EEPROM eth0", second(c.ModuleEEPROM("eth0", ethtoolnl.RecordedPages[0]))},
		{"MODULE_EEPROM eth1", second(c.ModuleEEPROM("eth1", ethtoolnl.RecordedPages[0]))},
	} {
		if en, ok := ethtoolnl.Errno(tc.err); !ok || en.Error() != "operation not supported" {
			t.Errorf("%s: %v, want the kernel's EOPNOTSUPP", tc.what, tc.err)
		}
	}

	// netdevsim has no ethtool -S strings: recorded as the empty set, not as missing.
	st, err := h.EthtoolStats("eth1")
	if err != nil || st == nil || len(st) != 0 {
		t.Errorf("ethtool -S eth1: %v %v, want an empty set", st, err)
	}
}

func second[T any](_ T, err error) error { return err }
