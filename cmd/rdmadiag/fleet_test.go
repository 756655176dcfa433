package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/fleet"
)

// fleet over every golden: the scenarios are hosts with problems, so it needs attention, and
// the other JSON files under fixtures (option files) are failed reports, named.
func TestFleetGoldens(t *testing.T) {
	out, stderr, code := run(t, "fleet", "--now", "2026-01-02T03:04:05Z", "--stale", "0", fixturesDir)
	if code != 1 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"Hosts by verdict", "critical", "Root causes, by hosts hit", "port.state",
		"Drift between hosts of the same card", "policy.json: not an rdmadiag report", "Fleet: NEEDS ATTENTION (exit 1)"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	out, _, code = run(t, "fleet", "--format", "json", "--stale", "0", fixturesDir)
	var r fleet.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 1 || r.Kind != "rdmadiag-fleet" || r.ExitCode != 1 || len(r.RootCauses) == 0 {
		t.Errorf("JSON: %v, exit %d: %.300s", err, code, out)
	}
}

// A report written by check is read back by fleet, from a file and from standard input.
func TestFleetReadsCheckOutput(t *testing.T) {
	snap := filepath.Join(fixturesDir, "fw-inbox-cx6dx", "snapshot.txtar")
	if _, err := os.Stat(snap); err != nil {
		t.Skip(err)
	}
	rep, _, code := run(t, "check", "--snapshot", snap, "--format", "json")
	if code != 0 {
		t.Fatalf("fixture is no longer healthy: exit %d", code)
	}
	f := filepath.Join(t.TempDir(), "h.json")
	if err := os.WriteFile(f, []byte(rep), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, "fleet", "--stale", "0", f)
	if code != 0 || !strings.Contains(out, "Fleet: HEALTHY (1 host(s)") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	// The same host twice on standard input counts once, with its newest report: standard
	// input is read a second time from a copy.
	at := func(ts string) string { return strings.Replace(rep, `"tool": {`, `"tool": {"started": "`+ts+`",`, 1) }
	fleetStdin = strings.NewReader(at("2026-01-02T03:00:00Z") + at("2026-01-02T03:04:00Z"))
	defer func() { fleetStdin = os.Stdin }()
	out, _, code = run(t, "fleet", "--stale", "0", "-")
	if code != 0 || !strings.Contains(out, "  healthy  1\n") || !strings.Contains(out, "Older duplicate reports ignored") ||
		!strings.Contains(out, ": -, started 2026-01-02T03:00:00Z: older than the host's newest report, started 2026-01-02T03:04:00Z") {
		t.Errorf("one host's report twice on stdin: exit %d:\n%s", code, out)
	}
	// Without tool.started (as in the goldens) which is newest cannot be told: both count.
	fleetStdin = strings.NewReader(rep + rep)
	out, _, code = run(t, "fleet", "--stale", "0", "-")
	if code != 0 || !strings.Contains(out, "  healthy  2\n") || !strings.Contains(out, "more than one report without tool.started") {
		t.Errorf("two reports on stdin: exit %d:\n%s", code, out)
	}
}

func TestFleetUsage(t *testing.T) {
	for _, args := range [][]string{
		{"fleet"},
		{"fleet", "--format", "xml", "x"},
		{"fleet", "--now", "yesterday", "x"},
		{"fleet", "--stale", "-1h", "x"},
		{"fleet", "--names", "-1", "x"},
		{"fleet", "--parallel", "0", "x"},
		{"fleet", "--bogus", "x"},
	} {
		if _, stderr, code := run(t, args...); code != 64 || stderr == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// A signal stops fleet between two inputs, and nothing is written: a partial aggregate would
// name every host not read yet as missing.
func TestFleetInterrupted(t *testing.T) {
	out, code := runInterrupted(t, "fleet", "--stale", "0", filepath.Join("..", "..", "fixtures", "sysfs", "healthy", "check.golden.json"))
	if out != "" || code == 0 {
		t.Errorf("interrupted fleet: exit %d, wrote %q", code, out)
	}
	n := 0
	for range untilDone(context.Background(), func(yield func(fleet.Input) bool) {
		for range 3 {
			if !yield(fleet.Input{}) {
				return
			}
		}
	}) {
		n++
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range untilDone(ctx, func(yield func(fleet.Input) bool) { yield(fleet.Input{}) }) {
		n += 100
	}
	if n != 3 {
		t.Errorf("untilDone yielded %d, want 3 then none once the context ended", n)
	}
}
