package cli

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// TestWatchChildHelper is the child a watch under test starts for its full check: this test
// binary again, run with -test.run=^TestWatchChildHelper$ and watch's command line after --.
// RDMADIAG_TEST_CHILD=hang makes it a child that never answers.
func TestWatchChildHelper(t *testing.T) {
	mode := os.Getenv("RDMADIAG_TEST_CHILD")
	if mode == "" {
		t.Skip("run by the watch tests as the child of a full check")
	}
	if mode == "hang" {
		time.Sleep(time.Hour)
	}
	app := &App{Version: "test", Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(runMain(app, flag.Args()))
}

// childSelf is the command line a watch under test re-runs for its full check.
func childSelf(t *testing.T, mode string, args ...string) []string {
	t.Setenv("RDMADIAG_TEST_CHILD", mode)
	return append([]string{os.Args[0], "-test.run=^TestWatchChildHelper$", "--"}, args...)
}

func unpackPortFlaps(t *testing.T) string {
	dir := t.TempDir()
	if err := snapshot.UnpackFile(filepath.Join(fixturesDir, "port-flaps", "snapshot.txtar"), dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "root")
}

// The child's findings are the in-process check's: on the port-flaps fixture port.state's
// critical finding on mlx5_1 comes back from the child with its device, PCI address and text.
func TestFullCheckChildIsInProcess(t *testing.T) {
	root := unpackPortFlaps(t)
	args := []string{"watch", "--root", root, "--state-dir", "", "--no-kmsg"}
	f := &watchFlags{checkTimeout: time.Minute}
	f.root = root
	in, err := (&App{Version: "test", Now: time.Now, Stdout: io.Discard, Stderr: io.Discard, Registry: checks.Default}).fullCheck(context.Background(), f, false)
	if err != nil {
		t.Fatal(err)
	}
	child, err := (&App{Self: childSelf(t, "check", args...)}).fullCheck(context.Background(), f, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(in) == 0 || len(child) != len(in) {
		t.Fatalf("%d findings from the child, %d in-process", len(child), len(in))
	}
	found := false
	for i := range in {
		if child[i] != in[i] {
			t.Errorf("finding %d: child %+v, in-process %+v", i, child[i], in[i])
		}
		found = found || (in[i].CheckID == "port.state" && in[i].Device == "mlx5_1" && in[i].PCI == "0000:5e:00.0" && in[i].Severity == report.Critical)
	}
	if !found {
		t.Errorf("no critical port.state finding on mlx5_1 among %+v", in)
	}
	// A --root relative to where watch was started is the child's too.
	t.Chdir(filepath.Dir(root))
	rel, err := (&App{Self: childSelf(t, "check", "watch", "--root", filepath.Base(root), "--no-kmsg")}).fullCheck(context.Background(), f, false)
	if err != nil || len(rel) != len(in) {
		t.Errorf("relative --root: %d findings, %v; want %d", len(rel), err, len(in))
	}
}

// A child that never answers is killed with its group at --check-timeout and its grace, and the
// full check fails with that said; the watch's own end stops it at once.
func TestFullCheckChildHangs(t *testing.T) {
	root := unpackPortFlaps(t)
	a := &App{Self: childSelf(t, "hang", "watch", "--root", root)}
	f := &watchFlags{checkTimeout: 200 * time.Millisecond}
	start := time.Now()
	_, err := a.fullCheck(context.Background(), f, false)
	if err == nil || !strings.Contains(err.Error(), "timed out after 400ms (--check-timeout and its grace)") {
		t.Errorf("hanging child: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("held the watch %s", took)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	f.checkTimeout = time.Hour
	if _, err := a.fullCheck(ctx, f, false); err == nil || err.Error() != "stopped" {
		t.Errorf("watch stopped during the child: %v", err)
	}
}

func TestDecodeFullCheck(t *testing.T) {
	got, err := decodeFullCheck([]byte(`[{"check_id":"port.state","device":"mlx5_1","pci":"0000:5e:00.0","severity":"critical","summary":"down"}]` + "\n"))
	if err != nil || len(got) != 1 || got[0].Severity != report.Critical || got[0].PCI != "0000:5e:00.0" {
		t.Errorf("%+v, %v", got, err)
	}
	for name, in := range map[string]string{
		"empty":          "",
		"not JSON":       "panic: runtime error",
		"object":         `{"check_id":"x"}`,
		"unknown field":  `[{"check_id":"x","severity":"ok","summary":"","extra":1}]`,
		"bad severity":   `[{"check_id":"x","severity":"dire","summary":""}]`,
		"two documents":  `[] []`,
		"cut short":      `[{"check_id":"x",`,
		"trailing token": `[] x`,
	} {
		if _, err := decodeFullCheck([]byte(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The child does not inherit what belongs to the service: systemd's notification socket and
// watchdog, socket activation.
func TestChildEnv(t *testing.T) {
	got := childEnv([]string{"PATH=/bin", "NOTIFY_SOCKET=/run/n", "WATCHDOG_USEC=1", "WATCHDOG_PID=2", "LISTEN_FDS=1", "GOGC=80", "RDMADIAG_CPUPROFILE=/tmp/p"})
	if strings.Join(got, " ") != "PATH=/bin GOGC=80" {
		t.Errorf("%v", got)
	}
}

// The full check runs the site plugins check runs, found again each time: a plugin's finding
// becomes a result like a built-in's, in the child as in-process; --no-plugins runs none.
func TestWatchFullCheckRunsPlugins(t *testing.T) {
	root := unpackPortFlaps(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "site.sh"), []byte("#!/bin/sh\n"+
		`echo '{"schema": 1, "findings": [{"severity": "warning", "summary": "rail 3 cabled to the wrong leaf"}]}'`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"watch", "--root", root, "--state-dir", "", "--no-kmsg", "--plugins", dir}
	for name, a := range map[string]*App{
		"in-process": {Version: "test", Now: time.Now, Stdout: io.Discard, Stderr: io.Discard, Registry: checks.Default},
		"child":      {Self: childSelf(t, "check", args...), Registry: checks.Default},
	} {
		f := &watchFlags{checkTimeout: time.Minute}
		f.root = root
		f.plugins = pluginFlags{dir: dir, given: true, timeout: 10 * time.Second}
		res, err := a.fullCheck(context.Background(), f, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := 0
		for _, r := range res {
			if r.CheckID == "plugin.site" && r.Severity == report.Warning && strings.Contains(r.Summary, "wrong leaf") {
				got++
			}
		}
		if got != 1 {
			t.Errorf("%s: %d plugin.site warnings among %+v", name, got, res)
		}
	}
	f := &watchFlags{checkTimeout: time.Minute}
	f.root = root
	f.plugins = pluginFlags{dir: dir, given: true, off: true}
	if _, err := (&App{Registry: checks.Default}).fullCheck(context.Background(), f, false); err == nil {
		t.Error("--plugins DIR with --no-plugins accepted")
	}
	if _, _, code := run(t, "watch", "--root", root, "--plugins", filepath.Join(dir, "absent")); code != report.ExitUsage {
		t.Errorf("watch --plugins absent: exit %d, want 64", code)
	}
}
