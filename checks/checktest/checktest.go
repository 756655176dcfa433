// Package checktest runs registered checks against fixture snapshots in tests.
package checktest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Fixture returns the path of a scenario's snapshot under fixtures/sysfs/, from any package.
func Fixture(t testing.TB, scenario string) string {
	t.Helper()
	dir := filepath.Join(fixturesRoot(), scenario)
	for _, n := range []string{"snapshot.tar.gz", "snapshot.txtar"} {
		p := filepath.Join(dir, n)
		if fileExists(p) {
			return p
		}
	}
	t.Fatalf("fixture %q has no snapshot in %s", scenario, dir)
	return ""
}

// fixturesRoot is fixtures/sysfs, found from this file so that any package's test can use it.
func fixturesRoot() string { return filepath.Join(repoRoot(), "fixtures", "sysfs") }

// repoRoot is the repository's root directory, three levels above this package.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Run opens a snapshot (a fixture name or a path) and runs the checks whose ids match the
// given terms (layers, ids or globs), returning their findings as the runner produces them.
func Run(t testing.TB, snap string, opts checks.Options, terms ...string) []engine.Finding {
	t.Helper()
	if !strings.ContainsAny(snap, "/.") {
		snap = Fixture(t, snap)
	}
	h, cleanup, err := snapshot.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	cs, err := checks.Default.Select(terms, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, opts)
	env.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	env.Sleep = func(context.Context, time.Duration) error { return nil }
	return checks.Run(context.Background(), env, cs, 1)
}

// RecordWithDevlink records a fixture's files again with another devlink connection (a
// dltest model) and returns the new snapshot's directory for Run. The recording runs the
// registered checks (those of the test's package) and keeps what they ask, as `rdmadiag
// record` does, so this also proves that what they ask replays.
func RecordWithDevlink(t testing.TB, fixture string, dl host.NetlinkConn) string {
	t.Helper()
	h, cleanup, err := snapshot.Open(Fixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	h2, err := host.New(host.Options{Root: h.Root(), Kind: host.KindSnapshot, Devlink: dl})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ask := func(view *host.Host) {
		var cs []checks.Check
		for _, c := range checks.Default.All() {
			if !c.Probe {
				cs = append(cs, c)
			}
		}
		checks.Run(context.Background(), checks.NewEnv(view, checks.Options{}), cs, 1)
	}
	if err := snapshot.Record(h2, dir, snapshot.RecordOptions{Ask: ask}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Find returns the findings of one check on one subject name ("" = any subject). A "*" in the
// subject matches any text, for names that carry values a new lab recording changes (pids).
func Find(fs []engine.Finding, checkID, subject string) []engine.Finding {
	re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(subject), `\*`, ".*") + "$")
	var out []engine.Finding
	for _, f := range fs {
		if f.CheckID == checkID && (subject == "" || re.MatchString(f.Subject.Name)) {
			out = append(out, f)
		}
	}
	return out
}

// Evidence returns the observed value of a named evidence item, and whether it exists.
func Evidence(f engine.Finding, name string) (string, bool) {
	for _, e := range f.Evidence {
		if e.Name == name {
			return e.Observed, true
		}
	}
	return "", false
}

// One returns the single finding of a check on a subject (see Find for "*"), failing the test
// when there is none or more than one.
func One(t testing.TB, fs []engine.Finding, checkID, subject string) engine.Finding {
	t.Helper()
	got := Find(fs, checkID, subject)
	if len(got) != 1 {
		t.Fatalf("%s@%s: %d findings, want 1; all: %+v", checkID, subject, len(got), fs)
	}
	return got[0]
}

// WantSeverity reports an error when a finding's severity is not want.
func WantSeverity(t testing.TB, f engine.Finding, want report.Severity) {
	t.Helper()
	if f.Severity != want {
		t.Errorf("%s@%s: severity %s, want %s (%s)", f.CheckID, f.Subject.Name, f.Severity, want, f.Summary)
	}
}

// WantEvidence reports an error unless an evidence item of that name contains the text.
func WantEvidence(t testing.TB, f engine.Finding, name, contains string) {
	t.Helper()
	var seen []string
	for _, e := range f.Evidence {
		if e.Name == name {
			if strings.Contains(e.Observed, contains) {
				return
			}
			seen = append(seen, e.Observed)
		}
	}
	t.Errorf("%s@%s: no evidence %q containing %q (have %q)", f.CheckID, f.Subject.Name, name, contains, seen)
}

// WantEvidenceIs reports an error unless an evidence item of that name is exactly want, for
// values a substring would not pin down (a count of "4" is also in "14").
func WantEvidenceIs(t testing.TB, f engine.Finding, name, want string) {
	t.Helper()
	var seen []string
	for _, e := range f.Evidence {
		if e.Name == name {
			if e.Observed == want {
				return
			}
			seen = append(seen, e.Observed)
		}
	}
	t.Errorf("%s@%s: no evidence %q equal to %q (have %q)", f.CheckID, f.Subject.Name, name, want, seen)
}

// RunLive runs checks on a fixture's tree read as a live host reads (Repeatable: a second
// reading sees what changed), for the checks that judge growth over --interval. between is
// called instead of sleeping the interval, with the tree's root, to change counter files as a
// busy device would; nil leaves them as they are. The snapshot's driver statistics
// (ethtool/*.json) are answered too; netlink, devlink and the kernel log are not.
func RunLive(t testing.TB, fixture string, opts checks.Options, between func(root string), terms ...string) []engine.Finding {
	t.Helper()
	dir := t.TempDir()
	snap := Fixture(t, fixture)
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(snap, ".txtar") {
		err = snapshot.UnpackTxtar(data, dir)
	} else {
		err = snapshot.Unpack(bytes.NewReader(data), dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, snapshot.RootDir)
	h, err := host.New(host.Options{Root: root, Kind: host.KindLive, Ethtool: func(nd string) (map[string]uint64, error) {
		b, err := os.ReadFile(filepath.Join(dir, snapshot.EthtoolDir, nd+".json"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("ethtool -S %s: %w", nd, host.ErrNotRecorded)
		}
		if err != nil {
			return nil, err
		}
		var st map[string]uint64
		return st, json.Unmarshal(b, &st)
	}})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := checks.Default.Select(terms, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, opts)
	env.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	env.Sleep = func(context.Context, time.Duration) error {
		if between != nil {
			between(root)
		}
		return nil
	}
	return checks.Run(context.Background(), env, cs, 1)
}
