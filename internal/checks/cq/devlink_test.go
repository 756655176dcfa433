package cq_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/internal/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestErrorsDevlinkFixture(t *testing.T) {
	fs := checktest.Run(t, "fw-devlink", checks.Options{}, "cq.errors")
	f := one(t, fs, "cq.errors", "mlx5_0 devlink health vnic", report.Critical)
	if got := ev(t, f, "cq_overrun"); got != "3" {
		t.Errorf("cq_overrun %q", got)
	}
	if ev(t, f, "comp_eq_overrun") != "0" || f.Subject.Device != "mlx5_0" || f.Subject.PCI != "0000:19:00.0" || f.Fault != "cq-eq" {
		t.Errorf("%+v", f)
	}
	f = one(t, fs, "cq.errors", "mlx5_0 devlink health fw", report.Critical)
	if f.Fault != "firmware-health" || ev(t, f, "reporter fw") != "state healthy error 2 recover 0" {
		t.Errorf("%+v", f)
	}
	one(t, fs, "cq.errors", "mlx5_0 devlink health tx/rx", report.OK)
	one(t, fs, "cq.errors", "mlx5_1 devlink health vnic", report.OK)
	one(t, fs, "cq.errors", "mlx5_1 devlink health fw", report.OK)
	// The kernel log part still reports.
	one(t, fs, "cq.errors", "mlx5_0", report.OK)
}

// variant runs cq.errors on the fw-devlink files with another devlink answer, recorded first so
// that the recorder's questions are the check's.
func variant(t *testing.T, dl host.NetlinkConn) []report.Finding {
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
	if f := one(t, fs, "cq.errors", "mlx5_0 devlink health vnic", report.Unknown); !strings.Contains(f.Summary, "CAP_NET_ADMIN") {
		t.Errorf("EPERM: %q", f.Summary)
	}
	one(t, fs, "cq.errors", "mlx5_0 devlink health fw", report.OK)
	// The device without a devlink instance is skipped with the reason.
	if f := one(t, fs, "cq.errors", "mlx5_1 devlink health", report.Skipped); !strings.Contains(f.Summary, "no devlink instance") {
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
	if f := one(t, fs, "cq.errors", "mlx5_0 devlink health fw", report.Critical); !strings.Contains(f.Summary, "fw_fatal error") {
		t.Errorf("%q", f.Summary)
	}
	if f := one(t, fs, "cq.errors", "mlx5_0 devlink health tx/rx", report.Warning); !strings.Contains(f.Summary, "tx (port 65535) healthy with 4 error(s), 4 recovered") {
		t.Errorf("%q", f.Summary)
	}
	f := one(t, fs, "cq.errors", "mlx5_0 devlink health vnic", report.Critical)
	if ev(t, f, "async_eq_overrun") != "1" || ev(t, f, "cq_overrun") != "not reported by this firmware" {
		t.Errorf("%+v", f.Evidence)
	}

	// A kernel without the vnic reporter (before 6.4): skipped, the rest judged.
	m = base()
	m.Reporters = m.Reporters[:2]
	fs = variant(t, m.Conn())
	one(t, fs, "cq.errors", "mlx5_0 devlink health vnic", report.Skipped)

	// No devlink in the kernel: one host-wide skipped finding.
	fs = variant(t, dltest.Model{}.Conn())
	if f := one(t, fs, "cq.errors", "devlink health", report.Skipped); !strings.Contains(f.Summary, "devlink not available") {
		t.Errorf("%q", f.Summary)
	}
}
