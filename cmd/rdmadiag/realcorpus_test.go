package main

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
	dirs, err := filepath.Glob(filepath.Join(fixturesDir, "real-*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no real captures: %v", err)
	}
	source := regexp.MustCompile(`(github\.com/|https?://)[^\s]+`)
	for _, dir := range dirs {
		name := filepath.Base(dir)
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
		snap := filepath.Join(dir, "snapshot.txtar")
		args := append([]string{"check", "--snapshot", snap, "--format", "json"}, scenarioArgs(t, dir)...)
		out, errOut, code := run(t, args...)
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

// scenarioArgs are a fixture's extra check arguments (its "args" file), as the goldens use them.
func scenarioArgs(t *testing.T, dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		return nil
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, strings.Fields(l)...)
		}
	}
	return out
}
