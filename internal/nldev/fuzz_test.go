package nldev_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// FuzzDecode feeds arbitrary bytes to every decoder. None may panic or loop, and every failure
// must be either a kernel errno or ErrMalformed, so callers can always tell which it was.
func FuzzDecode(f *testing.F) {
	recorded, _ := filepath.Glob(filepath.Join("testdata", "rxe0-6.1", "*.bin"))
	for _, p := range recorded {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	e := nltest.Encoder{MaxMsg: 100, PadU64: true, Nested: true, Extra: unknownAttrs}
	f.Add(e.QPDump(1, "mlx5_0", sampleQPs()))
	f.Add(e.CQDump(1, "mlx5_0", sampleCQs()))
	f.Add(e.MRDump(1, "mlx5_0", sampleMRs()))
	f.Add(e.PDDump(1, "mlx5_0", samplePDs()))
	f.Add(nltest.DevDump([]nldev.Device{{Index: 1, Name: "mlx5_0", FWVersion: "28.41.1000", Protocol: "ib", HasDIM: true}}))
	f.Add(nltest.PortDump([]nldev.Port{{DevIndex: 1, Index: 1, HasIB: true, NetdevName: "ib0"}}))
	f.Add(nltest.ResSummaryDump([]nldev.ResSummary{{DevIndex: 1, Counts: map[string]uint64{"qp": 1}}}))
	f.Add(e.QPRawDump(1, "mlx5_0", []nldev.Raw{{Data: []byte{1, 2, 3}}, {Data: make([]byte, 136)}}))
	f.Add(e.CQRawDump(1, "hns_0", []nldev.Raw{{Data: make([]byte, 64)}}))
	f.Add(nltest.ErrorReply(syscall.EOPNOTSUPP))
	f.Add(done(0))
	f.Add([]byte{})

	decoders := []func([]byte) (int, error){
		func(b []byte) (int, error) { v, err := nldev.DecodeQPs(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeCQs(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeMRs(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodePDs(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeDevices(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodePorts(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeResSummary(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeQPsRaw(b); return len(v), err },
		func(b []byte) (int, error) { v, err := nldev.DecodeCQsRaw(b); return len(v), err },
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i, dec := range decoders {
			n, err := dec(b)
			if err != nil && !wellFormedError(err) {
				t.Errorf("decoder %d: unclassified error %v", i, err)
			}
			if err != nil && n != 0 {
				t.Errorf("decoder %d: %d objects returned with error %v", i, n, err)
			}
			// No entry is smaller than an attribute header, so more objects than that would
			// mean the decoder invented some.
			if n > len(b)/4 {
				t.Errorf("decoder %d: %d objects from %d bytes", i, n, len(b))
			}
		}
	})
}
