package port

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// flapsOnTree runs port.flaps on the port-flaps fixture's tree with a kern.log in place of its
// recorded kernel log and an uptime of 30 days: the log's lines carry only syslog times.
func flapsOnTree(t *testing.T, kernLog string) []engine.Finding {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(checktest.Fixture(t, "port-flaps"), dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	for p, v := range map[string]string{"proc/uptime": "2592000.00 5000000.00\n", "var/log/kern.log": kernLog} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := snapshot.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := checks.Default.Select([]string{"port.flaps"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(context.Background(), checks.NewEnv(h, checks.Options{}), cs, 1)
}

// Lines that carry only a syslog time are counted and aged on that clock: four "Link up" lines
// within 45 s (the journalctl capture of bigstack-oss/cubecos#733, on this fixture's netdev) are
// three flaps within 10 minutes, and downs logged an hour before the log's last line are in the
// last 24 h of a host up for 30 days. No summary dates them by a time since boot they lack.
func TestFlapsWallClock(t *testing.T) {
	for _, c := range []struct {
		name, log string
		sev       report.Severity
		window    string
	}{
		{"repeated link up, RFC 3164", "" +
			"Mar 27 15:37:34 cc1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"Mar 27 15:37:39 cc1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"Mar 27 15:37:43 cc1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"Mar 27 15:38:19 cc1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n", report.Critical, "3"},
		{"down and up an hour before the last line, RFC 3339", "" +
			"2024-11-03T13:00:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"2024-11-03T13:01:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n" +
			"2024-11-03T13:20:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"2024-11-03T13:21:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n" +
			"2024-11-03T13:40:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"2024-11-03T13:41:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link down\n" +
			"2024-11-03T13:42:00.000000+00:00 n1 kernel: mlx5_core 0000:3b:00.0 ens1f0np0: Link up\n" +
			"2024-11-03T14:42:00.000000+00:00 n1 kernel: mlx5_core 0000:5e:00.0 ens2f0np0: Link up\n", report.Warning, "3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := checktest.One(t, flapsOnTree(t, c.log), "port.flaps", "mlx5_0/1")
			checktest.WantSeverity(t, f, c.sev)
			checktest.WantEvidenceIs(t, f, "link downs in the last 24 h", c.window)
			if strings.Contains(f.Summary, "after boot") {
				t.Errorf("summary dates syslog lines by a time since boot: %s", f.Summary)
			}
			for _, e := range f.Evidence {
				if e.Name == "link down" && strings.HasPrefix(e.Observed, "[0.") {
					t.Errorf("evidence invents a time since boot: %s", e.Observed)
				}
			}
		})
	}
}
