package cq_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestErrorsDevlinkFixture(t *testing.T) {
	fs := checktest.Run(t, "fw-devlink", checks.Options{}, "cq.errors")
	f := checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health vnic")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "cq_overrun", "3")
	checktest.WantEvidenceIs(t, f, "comp_eq_overrun", "0")
	if f.Subject.Device != "mlx5_0" || f.Subject.PCI != "0000:19:00.0" || f.Fault != "cq-eq" {
		t.Errorf("%+v", f)
	}
	f = checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health fw")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "reporter fw", "state healthy error 2 recover 0")
	if f.Fault != "firmware-health" {
		t.Errorf("%+v", f)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health tx/rx"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_1 devlink health vnic"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_1 devlink health fw"), report.OK)
	// The kernel log part still reports.
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_0"), report.OK)
}

// variant runs cq.errors on the fw-devlink files with another devlink answer, recorded first so
// that the recorder's questions are the check's.
func variant(t *testing.T, dl host.NetlinkConn) []engine.Finding {
	t.Helper()
	return checktest.Run(t, checktest.RecordWithDevlink(t, "fw-devlink", dl), checks.Options{}, "cq.errors")
}

func TestErrorsDevlinkVariants(t *testing.T) {
	pf := devlink.PCI("0000:19:00.0")
	base := func() dltest.Model {
		return dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf},
			Reporters: []devlink.Reporter{
				{Handle: pf, Name: "fw"}, {Handle: pf, Name: "fw_fatal", HasGracePeriod: true, GracePeriod: 60000},
				{Handle: pf, Name: "vnic"}, {Handle: pf, Port: 65535, HasPort: true, Name: "tx"}},
			Diagnoses: []dltest.Diagnosis{{Handle: pf, Reporter: "vnic", Object: devlink.Object{{Name: "vNIC env counters",
				Value: devlink.Object{{Name: "comp_eq_overrun", Value: uint32(0)}, {Name: "async_eq_overrun", Value: uint32(0)}, {Name: "cq_overrun", Value: uint32(0)}}}}}}}
	}
	// Not root: DIAGNOSE answers EPERM, which is unknown for that item only.
	m := base()
	m.Diagnoses[0] = dltest.Diagnosis{Handle: pf, Reporter: "vnic", Errno: syscall.EPERM}
	fs := variant(t, m.Conn())
	f := checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health vnic")
	checktest.WantSeverity(t, f, report.Unknown)
	if !strings.Contains(f.Summary, "CAP_NET_ADMIN") {
		t.Errorf("EPERM: %q", f.Summary)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health fw"), report.OK)
	// The device without a devlink instance is skipped with the reason.
	f = checktest.One(t, fs, "cq.errors", "mlx5_1 devlink health")
	checktest.WantSeverity(t, f, report.Skipped)
	if !strings.Contains(f.Summary, "no devlink instance") {
		t.Errorf("%q", f.Summary)
	}

	// fw_fatal in error state (recovery failed) without a counted error is still critical;
	// recovered tx errors are a warning; an EQ overrun is critical.
	m = base()
	m.Reporters[1].State = devlink.StateError
	m.Reporters[3].ErrCount, m.Reporters[3].RecoverCount = 4, 4
	m.Diagnoses[0].Object = devlink.Object{{Name: "vNIC env counters", Value: devlink.Object{{Name: "async_eq_overrun", Value: uint32(1)}}}}
	m.GlobalDumpEINVAL = true
	fs = variant(t, m.Conn())
	f = checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health fw")
	checktest.WantSeverity(t, f, report.Critical)
	if !strings.Contains(f.Summary, "fw_fatal error") {
		t.Errorf("%q", f.Summary)
	}
	f = checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health tx/rx")
	checktest.WantSeverity(t, f, report.Warning)
	if !strings.Contains(f.Summary, "tx (port 65535) healthy with 4 error(s), 4 recovered") {
		t.Errorf("%q", f.Summary)
	}
	f = checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health vnic")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "async_eq_overrun", "1")
	checktest.WantEvidenceIs(t, f, "cq_overrun", "not reported by this firmware")

	// A kernel without the vnic reporter (before 6.4): skipped, the rest judged.
	m = base()
	m.Reporters = m.Reporters[:2]
	fs = variant(t, m.Conn())
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "mlx5_0 devlink health vnic"), report.Skipped)

	// No devlink in the kernel: one host-wide skipped finding.
	fs = variant(t, dltest.Model{}.Conn())
	f = checktest.One(t, fs, "cq.errors", "devlink health")
	checktest.WantSeverity(t, f, report.Skipped)
	if !strings.Contains(f.Summary, "devlink not available") {
		t.Errorf("%q", f.Summary)
	}
}
