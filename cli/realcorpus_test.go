package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

// The fixtures made of public captures of real machines (fixtures/sysfs/real-*) hold the verdict
// their reporters' evidence supports in an "expect" file; a healthy one may have no critical or
// unknown finding at all, and every one names its public source.
func TestRealCaptures(t *testing.T) {
	var real []scenario
	for _, s := range scenarios(t) {
		if strings.HasPrefix(s.name, "real-") {
			real = append(real, s)
		}
	}
	if len(real) == 0 {
		t.Fatal("no real captures")
	}
	t.Logf("%d real captures", len(real))
	source := regexp.MustCompile(`(github\.com/|https?://)[^\s]+`)
	for _, sc := range real {
		name, dir := sc.name, sc.dir
		b, err := os.ReadFile(filepath.Join(dir, "expect"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := -1
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "exit "); ok {
				want, _ = strconv.Atoi(v)
			}
		}
		readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
		if !source.Match(readme) {
			t.Errorf("%s: README.md names no public source", name)
		}
		out, errOut, code := checkReport(t, sc)
		if code != want {
			t.Errorf("%s: exit %d, want %d (%s)", name, code, want, errOut)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range r.Findings {
			if f.Severity == report.Unknown || (want == 0 && f.Severity == report.Critical) {
				t.Errorf("%s: %s %s@%s: %s", name, f.Severity, f.CheckID, f.Subject.Name, f.Summary)
			}
		}
	}
}
