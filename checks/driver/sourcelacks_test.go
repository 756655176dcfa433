package driver

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// copyTree unpacks a fixture and returns its root/ as a --root tree without the named paths: a
// copy of /sys and /proc as a support case gets it.
func copyTree(t *testing.T, fixture string, drop ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(checktest.Fixture(t, fixture), dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	for _, d := range drop {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func runTree(t *testing.T, root string, terms ...string) []engine.Finding {
	t.Helper()
	h, err := snapshot.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := checks.Default.Select(terms, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(context.Background(), checks.NewEnv(h, checks.Options{}), cs, 1)
}

// A tree that holds /sys and /proc but no /usr, /etc, /dev, /proc/modules nor
// /sys/class/infiniband_verbs: what it does not hold is skipped with the source as its limit,
// and the uverbs devices registered under the PCI functions prove ib_uverbs.
func TestTreeWithoutParts(t *testing.T) {
	root := copyTree(t, "port-flaps", "etc", "proc/modules", "sys/class/infiniband_verbs")
	fs := runTree(t, root, "driver")
	for _, f := range fs {
		if f.Severity == report.Critical || f.Severity == report.Unknown {
			t.Errorf("%s@%s is %s: %s", f.CheckID, f.Subject.Name, f.Severity, f.Summary)
		}
	}
	for _, subj := range []string{"libibverbs.so.1", "provider mlx5", "mlx5_0 uverbs"} {
		f := checktest.One(t, fs, "driver.user_verbs", subj)
		checktest.WantSeverity(t, f, report.Skipped)
		if f.Limit == nil || f.Limit.Kind != report.LimitSource {
			t.Errorf("%s: limit %+v, want the source", subj, f.Limit)
		}
	}
	f := checktest.One(t, fs, "driver.modules", "ib_uverbs")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "registered devices", "0000:3b:00.0/infiniband_verbs/uverbs0")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "/proc/modules"), report.Skipped)

	// A recording of the tree remembers what it lacked.
	snap := filepath.Join(t.TempDir(), "recorded")
	h, err := snapshot.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.Record(h, snap, snapshot.RecordOptions{}); err != nil {
		t.Fatal(err)
	}
	rs := checktest.Run(t, snap, checks.Options{}, "driver.user_verbs")
	checktest.WantSeverity(t, checktest.One(t, rs, "driver.user_verbs", "libibverbs.so.1"), report.Skipped)
}
