package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

const cx7IB = fixturesDir + "/port-cx7-ib/snapshot.txtar"

// Devices left out by --exclude or the policy are judged by no check and named in the report;
// --include brings one back. On port-cx7-ib mlx5_1 (1X) and mlx5_2 (INIT) are critical and
// mlx5_0 has symbol errors (a warning).
func TestExcludeDevices(t *testing.T) {
	policy := writeFile(t, "fleet.json", `{"devices": {"exclude": ["0000:5e:00.0", "mlx5_2"]}}`)
	for _, tc := range []struct {
		name     string
		args     []string
		code     int
		excluded []string
		by       string
	}{
		{"nothing excluded", nil, 2, nil, ""},
		{"by glob", []string{"--exclude", "mlx5_[12]"}, 1, []string{"mlx5_1", "mlx5_2"}, `--exclude "mlx5_[12]"`},
		{"by the policy, PCI address and name", []string{"--policy", policy}, 1, []string{"mlx5_1", "mlx5_2"}, `policy fleet.json devices.exclude[0] "0000:5e:00.0"`},
		{"included again", []string{"--policy", policy, "--include", "mlx5_1"}, 2, []string{"mlx5_2"}, `policy fleet.json devices.exclude[1] "mlx5_2"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--snapshot", cx7IB, "--expect-rate", "400", "--format", "json"}, tc.args...)
			out, errOut, code := run(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			var r report.Report
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, x := range r.Host.Excluded {
				got = append(got, x.Device)
			}
			if strings.Join(got, ",") != strings.Join(tc.excluded, ",") {
				t.Errorf("excluded %v, want %v", got, tc.excluded)
			}
			if tc.by != "" && r.Host.Excluded[0].By != tc.by {
				t.Errorf("by %q, want %q", r.Host.Excluded[0].By, tc.by)
			}
			for _, f := range r.Findings {
				for _, x := range r.Host.Excluded {
					if f.Subject.Device == x.Device || f.Subject.PCI == x.PCI || strings.Contains(f.Summary, x.Device+"/") {
						t.Errorf("finding about excluded %s: %s@%s %s", x.Device, f.CheckID, f.Subject.Name, f.Summary)
					}
				}
			}
			for _, d := range r.Host.Devices {
				for _, x := range tc.excluded {
					if d == x {
						t.Errorf("excluded %s still listed as a device", d)
					}
				}
			}
		})
	}
	// The table names what was left out, under the devices.
	out, _, _ := run(t, "check", "--snapshot", cx7IB, "--exclude", "mlx5_2")
	if !strings.Contains(out, `excluded: mlx5_2 (0000:86:00.0) by --exclude "mlx5_2"`) {
		t.Errorf("table does not name the excluded device:\n%s", out[:min(len(out), 600)])
	}
	if _, errOut, code := run(t, "check", "--snapshot", cx7IB, "--exclude", "mlx5_["); code != 64 || !strings.Contains(errOut, "--exclude") {
		t.Errorf("bad glob: exit %d, %q", code, errOut)
	}
}
