package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/fleet"
	"github.com/rdmadiag/rdmadiag/report"
)

// fleet over every golden: the scenarios are hosts with problems, so it needs attention, and
// the other JSON files under fixtures (option files) are failed reports, named.
func TestFleetGoldens(t *testing.T) {
	out, stderr, code := run(t, "fleet", "--now", "2026-01-02T03:04:05Z", "--stale", "0", fixturesDir)
	if code != 1 || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for _, want := range []string{"Hosts by verdict", "critical", "Hosts by action", "reseat-or-clean-cable", "Root causes, by hosts hit", "port.state",
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
	// Every golden's root causes carry an action, so every root-cause row names one.
	for _, c := range r.RootCauses {
		if c.Action == "" {
			t.Errorf("root cause %s/%s/%s without an action", c.CheckID, c.Fault, c.SubjectKind)
		}
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

// A signal stops fleet and nothing is written: a partial aggregate would name every host not
// read yet as missing. --format json prints the error document instead, and its exit code is
// the process's.
func TestFleetInterrupted(t *testing.T) {
	rep := filepath.Join("..", "fixtures", "sysfs", "healthy", "check.golden.json")
	out, code := runInterrupted(t, "fleet", "--stale", "0", rep)
	if out != "" || code != report.ExitInterrupted {
		t.Errorf("interrupted fleet: exit %d, wrote %q", code, out)
	}
	out, code = runInterrupted(t, "fleet", "--stale", "0", "--format", "json", rep)
	var doc report.ErrorDocument
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc.ExitCode != code || code != report.ExitInterrupted ||
		!strings.Contains(doc.Error, "interrupted by SIGINT") {
		t.Errorf("interrupted fleet --format json: exit %d, document %+v (%v): %q", code, doc, err, out)
	}
}

// Every read fleet may block in, standard input from a pipe that stays open and a FIFO no one
// writes to (whose open(2) itself waits), ends soon after the first signal.
func TestFleetInterruptedWhileBlocked(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "reports.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	fleetStdin = pr
	defer func() { fleetStdin = os.Stdin }()
	for _, in := range []string{"-", fifo} {
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(200*time.Millisecond, func() { cancel(&interrupted{sig: "SIGTERM"}) })
		type result struct {
			out  string
			code int
		}
		ch := make(chan result, 1)
		go func() {
			var out, errb bytes.Buffer
			code := testApp(&out, &errb).Execute(ctx, []string{"fleet", "--format", "json", in})
			ch <- result{out.String(), code}
		}()
		select {
		case r := <-ch:
			var doc report.ErrorDocument
			if err := json.Unmarshal([]byte(r.out), &doc); err != nil || r.code != report.ExitInterrupted || doc.ExitCode != r.code {
				t.Errorf("%s: exit %d, document %q", in, r.code, r.out)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: fleet still reading 10 s after SIGTERM", in)
		}
	}
}
