package devlink_test

import (
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
)

// FuzzDecode feeds arbitrary bytes to every decoder. None may panic or loop, and every failure
// must be a kernel errno or ErrMalformed.
func FuzzDecode(f *testing.F) {
	m := sampleModel()
	for _, e := range []dltest.Encoder{{}, m.Encoder} {
		f.Add(e.FamilyReply("devlink", fam))
		f.Add(e.DevDump(fam, m.Devices))
		f.Add(e.InfoReply(fam, m.Infos[0]))
		f.Add(e.ReporterDump(fam, m.Reporters))
		f.Add(e.DiagnoseReply(fam, m.Diagnoses[0].Object))
		f.Add(e.DiagnoseReply(fam, devlink.Object{{Name: "a", Value: devlink.Array{true, "s", []byte{1}, uint8(1), uint64(2), devlink.Object{{Name: "b", Value: nil}}}}}))
		f.Add(e.ErrorReply(syscall.EPERM))
	}
	f.Add(mlx5Info("28.39.1002", "28.41.1000"))
	for _, n := range []string{"family.bin", "devices.bin", "info.bin", "reporters.bin", "diagnose-empty.bin", "diagnose-dummy.bin"} {
		f.Add(realReply(f, n))
	}
	f.Add(done(0))
	f.Add([]byte{})
	decoders := []func([]byte) (int, error){
		func(b []byte) (int, error) { _, err := devlink.DecodeFamily(b); return 0, err },
		func(b []byte) (int, error) { v, err := devlink.DecodeDevices(b, fam); return len(v), err },
		func(b []byte) (int, error) {
			v, err := devlink.DecodeInfo(b, fam)
			if v == nil {
				return 0, err
			}
			return 1 + len(v.Fixed) + len(v.Running) + len(v.Stored), err
		},
		func(b []byte) (int, error) { v, err := devlink.DecodeReporters(b, fam); return len(v), err },
		func(b []byte) (int, error) { v, err := devlink.DecodeDiagnose(b, fam); return len(v), err },
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
			if n > len(b)/4 {
				t.Errorf("decoder %d: %d objects from %d bytes", i, n, len(b))
			}
		}
	})
}
