package driver

import (
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// TestKernelLogFamilies runs the check on a host whose log holds whole published events: each
// family becomes one finding tied to its device, and benign or foreign lines stay quiet.
func TestKernelLogFamilies(t *testing.T) {
	fs := checktest.Run(t, "drv-klog-families", checks.Options{}, "driver.kernel_log")
	byKey := map[string]engine.Finding{}
	for _, f := range fs {
		sig, _ := checktest.Evidence(f, "signature")
		if _, dup := byKey[f.Subject.Name+"|"+sig]; dup {
			t.Errorf("two findings for %s %s: a family must make one", f.Subject.Name, sig)
		}
		byKey[f.Subject.Name+"|"+sig] = f
	}
	want := []struct {
		subject, sig string
		sev          report.Severity
		evidence     string
	}{
		// The poll miss, the syndrome and 17 dump lines are one event.
		{"mlx5_0", "mlx5-health-event", report.Critical, "mlx5-health-dump"},
		// The watchdog line names only the interface; the queue and EQ lines follow it.
		{"mlx5_1", "tx-timeout", report.Warning, "EQ 0x20"},
		// Firmware stuck in pre-initialisation, then the failed load and probe, on a device
		// that registered afterwards: history.
		{"mlx5_1", "mlx5-fw-preinit", report.Info, "probe of 0000:5e:00.0 failed"},
		{"mlx5_1", "module-high-temperature", report.Warning, "High Temperature"},
		{"mlx5_0", "slot-power", report.Warning, "27W"},
		{"mlx5_0", "mlx5-access-reg", report.Info, "ACCESS_REG"},
		{"kernel log", "peermem-invalid-context", report.Warning, "invalid context"},
	}
	for _, w := range want {
		f, ok := byKey[w.subject+"|"+w.sig]
		if !ok {
			t.Errorf("no %s finding for %s; got %v", w.sig, w.subject, keys(byKey))
			continue
		}
		checktest.WantSeverity(t, f, w.sev)
		found := false
		for _, e := range f.Evidence {
			found = found || strings.Contains(e.Observed, w.evidence)
		}
		if !found {
			t.Errorf("%s %s: no evidence with %q: %+v", w.subject, w.sig, w.evidence, f.Evidence)
		}
	}
	if f := byKey["mlx5_0|mlx5-health-event"]; !strings.Contains(fmt.Sprint(f.Evidence), "more") {
		t.Errorf("a 19-line health event should be cut at %d lines: %+v", maxEventLines, f.Evidence)
	}
	for _, f := range fs {
		if strings.Contains(fmt.Sprint(f.Evidence), "eno1") {
			t.Errorf("the watchdog of eno1, no RDMA port, was reported: %s", f.Summary)
		}
	}
	if len(fs) != len(want) {
		t.Errorf("%d findings, want %d: %v", len(fs), len(want), keys(byKey))
	}
}

func keys(m map[string]engine.Finding) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Two TX timeouts an hour apart are two events, not one family of lines.
func TestFamilySplitsAfterSilence(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "drv-klog-families"))
	if err != nil {
		t.Fatal(err)
	}
	late := "6,900,4500000000,-;mlx5_core 0000:5e:00.0 ens2f0np0: TX timeout detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:5e:00.0\n"
	s := strings.Replace(string(b), "-- root/etc/libibverbs.d/mlx5.driver --", late+"-- root/etc/libibverbs.d/mlx5.driver --", 1)
	snap := filepath.Join(t.TempDir(), "snapshot.txtar")
	if err := os.WriteFile(snap, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	var tx []engine.Finding
	for _, f := range checktest.Run(t, snap, checks.Options{}, "driver.kernel_log") {
		if sig, _ := checktest.Evidence(f, "signature"); familyOf(t, sig) == "tx-timeout" {
			tx = append(tx, f)
		}
	}
	if len(tx) != 2 {
		t.Fatalf("%d tx-timeout findings, want 2 (900 s and 4500 s)", len(tx))
	}
	if !strings.Contains(tx[1].Summary, "once, 4500") {
		t.Errorf("second event: %s", tx[1].Summary)
	}
}

// Thousands of distinct lines of one kind (a work request failing with new text each time, TX
// timeouts an hour apart for months, or a hostile log) make a bounded number of findings: the
// first groups one by one, the rest folded into one that says how many it stands for.
func TestGroupsPerKindAreBounded(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "drv-klog-families"))
	if err != nil {
		t.Fatal(err)
	}
	var extra strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&extra, "3,%d,%d,-;infiniband mlx5_0: WC error: 12, Message: transport retry counter exceeded on qp %d\n", 100000+i, 5000000000+int64(i)*1000, i)
		fmt.Fprintf(&extra, "4,%d,%d,-;mlx5_core 0000:5e:00.0 ens2f0np0: TX timeout detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:5e:00.0\n", 200000+i, 9000000000+int64(i)*3600000000)
	}
	s := strings.Replace(string(b), "-- root/etc/libibverbs.d/mlx5.driver --", extra.String()+"-- root/etc/libibverbs.d/mlx5.driver --", 1)
	snap := filepath.Join(t.TempDir(), "snapshot.txtar")
	if err := os.WriteFile(snap, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	per := map[string][]engine.Finding{}
	for _, f := range checktest.Run(t, snap, checks.Options{}, "driver.kernel_log") {
		sig, _ := checktest.Evidence(f, "signature")
		if fam := familyOf(t, sig); fam != "" {
			sig = fam
		}
		per[sig] = append(per[sig], f)
	}
	for _, sig := range []string{"wc-error", "tx-timeout"} {
		fs := per[sig]
		if len(fs) != maxGroupsPerKind+1 {
			t.Errorf("%s: %d findings, want %d one by one and one folded", sig, len(fs), maxGroupsPerKind)
			continue
		}
		if last := fs[len(fs)-1]; !strings.Contains(last.Summary, "more groups of these lines") {
			t.Errorf("%s: last finding is not the folded one: %s", sig, last.Summary)
		} else if last.Subject.Kind != "device" && last.Subject.Kind != "pci" {
			// Folded per device of the host, so that it still links to that device's findings.
			t.Errorf("%s: folded finding is on %s %q, not the device", sig, last.Subject.Kind, last.Subject.Name)
		}
	}
}

// familyOf is the family of the signature a finding names ("" for none): a family's finding
// is named by its gravest line's signature.
func familyOf(t *testing.T, id string) string {
	t.Helper()
	tb, err := kevent.Default()
	if err != nil {
		t.Fatal(err)
	}
	if s := tb.Signature(id); s != nil {
		return s.Family
	}
	return ""
}
