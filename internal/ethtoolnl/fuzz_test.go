package ethtoolnl_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
)

// FuzzDecode feeds arbitrary bytes to every decoder. None may panic or loop, and every failure
// must be a kernel errno or ErrMalformed.
func FuzzDecode(f *testing.F) {
	fec := ethtoolnl.FEC{Ifindex: 4, Ifname: "eth0", Active: ethtoolnl.FECRS, Auto: true,
		Corrected: &ethtoolnl.FECStat{Total: 10, Lanes: []uint64{4, 6}}, Uncorrectable: &ethtoolnl.FECStat{Total: 1}, CorrectedBits: &ethtoolnl.FECStat{Total: 99}}
	for _, e := range []ethtooltest.Encoder{{}, {PadU64: true, NoNestedFlag: true}} {
		f.Add(e.FamilyReply(fam))
		f.Add(e.FECReply(fam, fec, ethtoolnl.FECRS))
		f.Add(e.LinkModesReply(fam, ethtoolnl.LinkModes{Ifindex: 4, Ifname: "eth0", SpeedMbps: 100000, Lanes: 4}))
		f.Add(e.EEPROMReply(fam, 4, "eth0", make([]byte, 128)))
		down, st, n := false, ethtoolnl.ExtAutoneg, uint32(3)
		f.Add(e.LinkStateReply(fam, ethtoolnl.LinkState{Ifindex: 4, Ifname: "eth0", Link: &down, ExtState: &st, ExtSubstate: 1, DownCount: &n}))
		f.Add(e.ErrorReply(syscall.EOPNOTSUPP))
	}
	f.Add([]byte{})
	decoders := []func([]byte) (bool, error){
		func(b []byte) (bool, error) { v, err := ethtoolnl.DecodeFEC(b, fam); return v != nil, err },
		func(b []byte) (bool, error) { v, err := ethtoolnl.DecodeLinkModes(b, fam); return v != nil, err },
		func(b []byte) (bool, error) { v, err := ethtoolnl.DecodeLinkState(b, fam); return v != nil, err },
		func(b []byte) (bool, error) {
			v, err := ethtoolnl.DecodeModuleEEPROM(b, fam)
			if len(v) > len(b) {
				return true, errors.New("more data than input")
			}
			return v != nil, err
		},
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i, dec := range decoders {
			got, err := dec(b)
			var errno syscall.Errno
			if err != nil && !errors.Is(err, ethtoolnl.ErrMalformed) && !errors.As(err, &errno) {
				t.Errorf("decoder %d: unclassified error %v", i, err)
			}
			if err != nil && got {
				t.Errorf("decoder %d: value returned with error %v", i, err)
			}
		}
	})
}
