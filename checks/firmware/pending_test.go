package firmware_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	_ "github.com/rdmadiag/rdmadiag/checks/firmware"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func pendingOf(t *testing.T, fs []engine.Finding, dev string) engine.Finding {
	t.Helper()
	got := checktest.Find(fs, "firmware.pending", dev)
	if len(got) != 1 {
		t.Fatalf("firmware.pending@%s: %d findings: %+v", dev, len(got), fs)
	}
	return got[0]
}

func TestPendingOnDevlinkFixture(t *testing.T) {
	fs := checktest.Run(t, fixtureName, checks.Options{}, "firmware.pending")
	f := pendingOf(t, fs, "mlx5_0")
	if f.Severity != report.Warning || !strings.Contains(f.Summary, "28.41.1000 flashed but not active") ||
		!strings.Contains(f.Summary, "mlxfwreset -d 0000:19:00.0 reset") || f.Subject.PCI != "0000:19:00.0" || f.Fault != "firmware" {
		t.Errorf("mlx5_0: %+v", f)
	}
	if r, _ := checktest.Evidence(f, "running fw.version"); r != "28.39.1002" {
		t.Errorf("running %q", r)
	}
	if s, _ := checktest.Evidence(f, "stored fw.version"); s != "28.41.1000" {
		t.Errorf("stored %q", s)
	}
	if f := pendingOf(t, fs, "mlx5_1"); f.Severity != report.OK {
		t.Errorf("mlx5_1: %v %s", f.Severity, f.Summary)
	}
}

// runOnDevlink runs firmware.pending on the fixture's files with another devlink answer.
func runOnDevlink(t *testing.T, dl host.NetlinkConn) []engine.Finding {
	t.Helper()
	return checktest.Run(t, checktest.RecordWithDevlink(t, fixtureName, dl), checks.Options{}, "firmware.pending")
}

func TestPendingDevlinkVariants(t *testing.T) {
	pf0, pf1 := devlink.PCI("0000:19:00.0"), devlink.PCI("0000:99:00.0")
	info := func(h devlink.Handle, run, stored, psid string) devlink.Info {
		return devlink.Info{Handle: h, Driver: "mlx5_core", Fixed: []devlink.Version{{Name: "fw.psid", Value: psid}},
			Running: []devlink.Version{{Name: "fw.version", Value: run}}, Stored: []devlink.Version{{Name: "fw.version", Value: stored}}}
	}
	for _, c := range []struct {
		name     string
		model    dltest.Model
		sev0     report.Severity
		contains string
	}{
		{"no devlink in the kernel", dltest.Model{}, report.Skipped, "devlink not available"},
		{"instance missing", dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf1}, Infos: []devlink.Info{info(pf1, "1", "1", "MT_0000000838")}},
			report.Skipped, "no devlink instance pci/0000:19:00.0"},
		{"driver without info", dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf0, pf1}}, report.Skipped, "no devlink info"},
		{"PSID differs", dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf0}, Infos: []devlink.Info{info(pf0, "28.39.1002", "28.39.1002", "MT_0000000891")}},
			report.Warning, "fw.psid MT_0000000891 differs from board_id MT_0000000838"},
		{"no stored version", dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf0}, Infos: []devlink.Info{{Handle: pf0, Driver: "mlx5_core"}}},
			report.Unknown, "lacks the running or stored"},
	} {
		fs := runOnDevlink(t, c.model.Conn())
		f := pendingOf(t, fs, "mlx5_0")
		if f.Severity != c.sev0 || !strings.Contains(f.Summary, c.contains) {
			t.Errorf("%s: %v %q", c.name, f.Severity, f.Summary)
		}
	}
	// A refusal other than "not supported" is unknown, never a crash.
	m := dltest.Model{Family: 0x20, Devices: []devlink.Handle{pf0}}
	conn := m.Conn()
	conn.Fail(devlink.InfoRequest(0x20, pf0), syscall.EIO)
	if f := pendingOf(t, runOnDevlink(t, conn), "mlx5_0"); f.Severity != report.Unknown {
		t.Errorf("EIO: %v %q", f.Severity, f.Summary)
	}
	// Without any devlink answer recorded, every PF is skipped with that reason.
	fs := checktest.Run(t, "fw-drift", checks.Options{}, "firmware.pending")
	if f := pendingOf(t, fs, "mlx5_0"); f.Severity != report.Skipped || !strings.Contains(f.Summary, "not recorded") {
		t.Errorf("fw-drift: %v %q", f.Severity, f.Summary)
	}
}
