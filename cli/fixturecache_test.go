package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// Unpacking a fixture writes hundreds to thousands of files and costs ten to a hundred times
// what judging it does; the tests judge each fixture a dozen times. So a fixture under
// fixturesDir is unpacked once per test binary, by the same snapshot.UnpackFile that `check
// --snapshot` runs, and each run opens that directory through snapshot.OpenUnpacked under the
// fixture's own path, as Open does after its unpack (a fresh host each time; nothing writes into
// the directory). TestCachedFixtureReportsAsUnpacked holds the two ways to the same report.
var fixtureCache struct {
	mu      sync.Mutex
	dir     string // made on first use, removed by TestMain
	entries map[string]*cachedFixture
}

type cachedFixture struct {
	once sync.Once
	dir  string // named when the entry is made, filled by once
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	fixtureCache.mu.Lock()
	if fixtureCache.dir != "" {
		os.RemoveAll(fixtureCache.dir)
	}
	fixtureCache.mu.Unlock()
	os.Exit(code)
}

// fixturesAbs is fixturesDir as an absolute path: the cache takes only files under it, which no
// test writes, so that a snapshot a test writes or replaces is unpacked as the CLI does.
var fixturesAbs = func() string {
	p, err := filepath.Abs(fixturesDir)
	if err != nil {
		panic(err)
	}
	return p
}()

// unpackedFixture returns the directory fixture p was unpacked into once, or ok false when p is
// not a fixture's snapshot file.
func unpackedFixture(p string) (dir string, ok bool, err error) {
	abs, err := filepath.Abs(p)
	if err != nil || !strings.HasPrefix(abs, fixturesAbs+string(filepath.Separator)) {
		return "", false, nil
	}
	if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
		return "", false, nil
	}
	fixtureCache.mu.Lock()
	if fixtureCache.dir == "" {
		d, err := os.MkdirTemp("", "rdmadiag-test-fixtures-")
		if err != nil {
			fixtureCache.mu.Unlock()
			return "", false, err
		}
		fixtureCache.dir = d
		fixtureCache.entries = map[string]*cachedFixture{}
	}
	e := fixtureCache.entries[abs]
	if e == nil {
		e = &cachedFixture{dir: filepath.Join(fixtureCache.dir, strconv.Itoa(len(fixtureCache.entries)))}
		fixtureCache.entries[abs] = e
	}
	fixtureCache.mu.Unlock()
	e.once.Do(func() {
		if e.err = os.Mkdir(e.dir, 0o755); e.err == nil {
			e.err = snapshot.UnpackFile(abs, e.dir)
		}
	})
	return e.dir, true, e.err
}

// openCached is the tests' App.OpenHost: a fixture from its one unpack, anything else as the
// CLI opens it.
func openCached(ctx context.Context, src source) (*host.Host, func(), error) {
	if src.snapshot != "" && src.root == "" {
		dir, ok, err := unpackedFixture(src.snapshot)
		if err != nil {
			return nil, nil, &exitError{code: report.ExitUnknown, err: err}
		}
		if ok {
			h, err := snapshot.OpenUnpacked(dir, src.snapshot)
			if err != nil {
				return nil, nil, &exitError{code: report.ExitUnknown, err: err}
			}
			return h, func() {}, nil
		}
	}
	return src.open(ctx)
}

// A fixture judged from its one unpack reports what `check --snapshot FILE` reports when it
// unpacks the file itself (the CLI's own open, no OpenHost), for check and inventory: the cache
// changes where the files are, not what is read.
func TestCachedFixtureReportsAsUnpacked(t *testing.T) {
	// A lab recording with netlink replies, and a hardware one with devlink and a kernel log.
	for _, name := range []string{"healthy", "fw-inbox-cx6dx"} {
		p := filepath.Join(fixturesDir, name, "snapshot.txtar")
		if _, ok, err := unpackedFixture(p); !ok || err != nil {
			t.Fatalf("%s: not taken from the cache (%v)", name, err)
		}
		for _, args := range [][]string{
			{"check", "--snapshot", p, "--format", "json"},
			{"inventory", "--snapshot", p, "--format", "json"},
		} {
			cached, cerr, ccode := run(t, args...)
			var out, errb bytes.Buffer
			app := testApp(&out, &errb)
			app.OpenHost = nil
			code := app.Execute(context.Background(), args)
			if cached != out.String() || cerr != errb.String() || ccode != code {
				t.Errorf("%v: the cached fixture gives exit %d, unpacked %d:\n%s\n---\n%s", args, ccode, code, cached, out.String())
			}
		}
	}
	if _, ok, _ := unpackedFixture(filepath.Join(t.TempDir(), "x.txtar")); ok {
		t.Error("a file outside the fixtures is taken from the cache")
	}
}

// sharedFixture is the one unpack of fixtures/sysfs/<name>, for a test that only reads it (one
// that changes the tree unpacks its own copy, as unpackHealthy does).
func sharedFixture(t *testing.T, name string) string {
	t.Helper()
	dir, ok, err := unpackedFixture(filepath.Join(fixturesDir, name, "snapshot.txtar"))
	if err != nil || !ok {
		t.Fatalf("fixture %s not unpacked: %v", name, err)
	}
	return dir
}

// A fixture's check report is the same at every run (a fixed clock, the Golden flag, a fresh
// host on the same files), and five tests read every fixture's: checkReport runs each command
// line once per test binary and hands every caller the same output.
var reportCache sync.Map // command line joined by NUL -> *cachedReport

type cachedReport struct {
	once        sync.Once
	out, errOut string
	code        int
}

// checkReport is run(t, "check", "--snapshot", s.snapshot, "--format", "json", s.args...), once.
func checkReport(t *testing.T, s scenario) (out, errOut string, code int) {
	t.Helper()
	args := append([]string{"check", "--snapshot", s.snapshot, "--format", "json"}, s.args...)
	v, _ := reportCache.LoadOrStore(strings.Join(args, "\x00"), &cachedReport{})
	r := v.(*cachedReport)
	r.once.Do(func() { r.out, r.errOut, r.code = run(t, args...) })
	return r.out, r.errOut, r.code
}
