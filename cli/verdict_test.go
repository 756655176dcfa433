package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/live"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// unpackHealthy lays the healthy fixture out as a directory and returns the snapshot directory.
func unpackHealthy(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(filepath.Join(fixturesDir, "healthy", "snapshot.txtar"), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

const rateFile = "sys/devices/virtual/infiniband/rxe0/ports/1/rate"

// plantFIFO replaces a sysfs file of the tree with a FIFO: a read of it blocks until a writer
// comes, as a firmware-backed read does on a wedged device. At the end of the test a writer
// opens and closes it, so that abandoned readers end with the test.
func plantFIFO(t *testing.T, root, rel string) {
	t.Helper()
	p := filepath.Join(root, rel)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
}

// interruptBlockedRun runs rdmadiag (TestHelperProcess) on a live-kind tree whose port rate read
// blocks, sends SIGINT once the run has reached it, and returns what the process printed, its
// exit code and how long it took to exit after the signal.
func interruptBlockedRun(t *testing.T, format string) (stdout, stderr string, code int, took time.Duration) {
	t.Helper()
	snap := unpackHealthy(t)
	root := filepath.Join(snap, "root")
	plantFIFO(t, root, rateFile)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "RDMADIAG_TEST_LIVE_ROOT="+root, "RDMADIAG_TEST_FORMAT="+format)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	sent := time.Now()
	cmd.Process.Signal(os.Interrupt)
	cmd.Wait()
	return out.String(), errb.String(), cmd.ProcessState.ExitCode(), time.Since(sent)
}

// A FIFO in a tree is refused at once and named, whatever the deadline: the run exits 3 (could
// not check), well within --timeout.
func TestFIFOInTreeEndsWithExit3NamingThePath(t *testing.T) {
	snap := unpackHealthy(t)
	plantFIFO(t, filepath.Join(snap, "root"), rateFile)
	// The unpacked snapshot's root/ as a plain --root tree lacks the libraries the snapshot's
	// facts record, which is a limit of that source (skipped), not a fault: both runs could not
	// check the FIFO and name it.
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"check", "--snapshot", snap, "--timeout", "3s", "--format", "json"}, 3},
		{[]string{"check", "--root", filepath.Join(snap, "root"), "--timeout", "3s", "--format", "json"}, 3},
	} {
		start := time.Now()
		out, _, code := run(t, c.args...)
		if took := time.Since(start); took > 6*time.Second {
			t.Errorf("%v took %s", c.args, took)
		}
		if code != c.code || !strings.Contains(out, "/ports/1/rate: not a regular file (named pipe)") {
			t.Errorf("%v: exit %d, want %d naming the FIFO:\n%s", c.args, code, c.code, out)
		}
	}
}

// liveOn runs the live code paths on a prepared tree (a live host reads what it finds, so a FIFO
// blocks there just as a wedged sysfs read does).
func liveOn(root string) func(context.Context, source) (*host.Host, func(), error) {
	return func(context.Context, source) (*host.Host, func(), error) {
		h, err := host.New(host.Options{Root: root, Kind: host.KindLive})
		return h, func() {}, err
	}
}

// A read that blocks on a live host ends with the run's deadline: the blocked check is unknown,
// names the read, and the rest of the report is kept.
func TestBlockedLiveReadEndsAtTheDeadline(t *testing.T) {
	snap := unpackHealthy(t)
	root := filepath.Join(snap, "root")
	plantFIFO(t, root, rateFile)
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.OpenHost = liveOn(root)
	start := time.Now()
	code := app.Execute(context.Background(), []string{"check", "--no-probe", "--timeout", "2s", "--format", "json"})
	took := time.Since(start)
	// Unblock the abandoned reader so its goroutine ends.
	if took > 5*time.Second {
		t.Errorf("run took %s with --timeout 2s", took)
	}
	r := decode(t, out.String())
	if code != 3 || r.Summary.ExitCode != 3 {
		t.Fatalf("exit %d (report %d), want 3\n%s", code, r.Summary.ExitCode, out.String())
	}
	blocked := 0
	for _, f := range r.Findings {
		if strings.Contains(f.Summary, "--timeout 2s reached") && strings.Contains(f.Summary, "read /sys/class/infiniband/rxe0/ports/1/rate") {
			blocked++
		}
	}
	if blocked == 0 || len(r.Findings) < 10 {
		t.Errorf("want the blocked checks named and the rest kept; %d blocked of %d:\n%s", blocked, len(r.Findings), out.String())
	}
}

// The signal contract, tested on the real process: SIGINT during a blocked read ends the run in
// well under 3 s with exit 130 and a report that says it was interrupted.
func TestSIGINTDuringABlockedReadExits130(t *testing.T) {
	if os.Getenv("RDMADIAG_TEST_LIVE_ROOT") != "" {
		t.Skip("helper process")
	}
	out, errs, code, took := interruptBlockedRun(t, "json")
	if took > 3*time.Second || code != 130 {
		t.Fatalf("exit %d after %s, want 130 within 3s\nstdout:\n%s\nstderr:\n%s", code, took, out, errs)
	}
	r := decode(t, out)
	if r.Summary.Verdict != "interrupted" || r.Summary.ExitCode != 130 || !strings.Contains(out, "interrupted by SIGINT") {
		t.Errorf("report after SIGINT: %s/%d\n%s", r.Summary.Verdict, r.Summary.ExitCode, out)
	}
}

// TestHelperProcess is the rdmadiag process of TestSIGINTDuringABlockedReadExits130: the real
// signal handling of runMain on a live host rooted at a prepared tree.
func TestHelperProcess(t *testing.T) {
	root := os.Getenv("RDMADIAG_TEST_LIVE_ROOT")
	if root == "" {
		t.Skip("run by TestSIGINTDuringABlockedReadExits130")
	}
	format := os.Getenv("RDMADIAG_TEST_FORMAT")
	if format == "" {
		format = "json"
	}
	app := &App{Version: "test", Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Golden: true, OpenHost: liveOn(root)}
	os.Exit(runMain(app, []string{"check", "--no-probe", "--timeout", "60s", "--format", format}))
}

// A symlink chain out of a tree never puts the outside file into the report.
func TestSymlinkChainOutOfATreeIsNeverRead(t *testing.T) {
	snap := unpackHealthy(t)
	root := filepath.Join(snap, "root")
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("99.99.9999-OUTSIDE\n"), 0o644)
	dev := filepath.Join(root, "sys/devices/virtual/infiniband/rxe0")
	os.Remove(filepath.Join(dev, "fw_ver"))
	os.Symlink(".", filepath.Join(dev, "q"))
	climb := "q/q/q" + strings.Repeat("/..", strings.Count(dev, "/")+3) + secret
	os.Symlink(climb, filepath.Join(dev, "fw_ver"))
	os.Remove(filepath.Join(dev, "node_desc"))
	os.Symlink(secret, filepath.Join(dev, "node_desc")) // absolute: means the tree's own path
	for _, args := range [][]string{{"check", "--root", root, "--format", "json"}, {"check", "--snapshot", snap, "--format", "json"}} {
		out, _, _ := run(t, args...)
		if strings.Contains(out, "OUTSIDE") {
			t.Errorf("%v: the outside file leaked into the report", args)
		}
		if !strings.Contains(out, "leaves the tree") {
			t.Errorf("%v: the escaping link is not named:\n%s", args, out)
		}
	}
}

// The verdict counts what was judged; a selection that selects nothing is a usage error; an empty
// directory is not a Linux root; numeric flags are checked and named.
func TestVerdictContract(t *testing.T) {
	healthy := filepath.Join(fixturesDir, "healthy", "snapshot.txtar")
	empty := t.TempDir()
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--snapshot", healthy, "--only", "*probe*"}, 3, "nothing was judged"},
		{[]string{"check", "--snapshot", healthy, "--only", "pcie", "--skip", "pcie"}, 64, "select no check"},
		{[]string{"check", "--root", empty}, 3, "not a Linux root"},
		{[]string{"check", "--snapshot", healthy, "--parallel", "0"}, 64, "--parallel 0"},
		{[]string{"check", "--snapshot", healthy, "--probe-timeout", "0s"}, 64, "--probe-timeout 0s"},
		{[]string{"check", "--snapshot", healthy, "--timeout", "-1s"}, 64, "--timeout -1s"},
		{[]string{"check", "--snapshot", healthy, "--wr-concurrency", "-3"}, 64, "--wr-concurrency -3"},
		{[]string{"check", "--snapshot", healthy, "--expect-rate", "-1"}, 64, "--expect-rate -1"},
		{[]string{"check", "--snapshot", healthy, "--interval", "-1s"}, 64, "--interval -1s"},
		{[]string{"check", "--snapshot", healthy, "--interval", "10s"}, 64, "--interval needs a live host"},
		{[]string{"check", "--interval", "3m", "--timeout", "2m"}, 64, "does not fit in --timeout"},
		{[]string{"check", "--snapshot", healthy}, 0, "checks run: "},
	}
	for _, c := range cases {
		out, errs, code := run(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.want, out, errs)
		}
	}
}

// After an interrupt the report says so and carries the exit code the process returns.
func TestInterruptedReportSaysSo(t *testing.T) {
	out, code := runInterrupted(t, "check", "--snapshot", filepath.Join(fixturesDir, "port-down", "snapshot.txtar"), "--format", "json")
	r := decode(t, out)
	if code != 130 || r.Summary.Verdict != "interrupted" || r.Summary.ExitCode != 130 {
		t.Errorf("exit %d, report %s/%d", code, r.Summary.Verdict, r.Summary.ExitCode)
	}
}

// A healthy host recorded by an ordinary user (the lab's unprivileged scenario): the kernel log
// could not be read, which is a limit, not a failure: healthy, with the skip and how to lift it.
func TestNonRootRecordingOfAHealthyHost(t *testing.T) {
	out, _, code := run(t, "check", "--snapshot", filepath.Join(fixturesDir, "unprivileged", "snapshot.txtar"), "--format", "json")
	r := decode(t, out)
	if code != 0 || r.Summary.Verdict != "healthy" {
		t.Fatalf("exit %d, verdict %s", code, r.Summary.Verdict)
	}
	var klog *report.Finding
	for i, f := range r.Findings {
		if f.Severity == report.Unknown {
			t.Errorf("unknown finding: %s %s", f.CheckID, f.Summary)
		}
		if f.CheckID == "driver.kernel_log" {
			klog = &r.Findings[i]
		}
	}
	if klog == nil || klog.Severity != report.Skipped || klog.Limit == nil || !strings.Contains(klog.Summary, "dmesg_restrict") {
		t.Fatalf("driver.kernel_log: %+v", klog)
	}
	// --strict asks for certainty: the same recording is then "could not check".
	if _, _, code := run(t, "check", "--snapshot", filepath.Join(fixturesDir, "unprivileged", "snapshot.txtar"), "--strict"); code != 3 {
		t.Errorf("--strict: exit %d, want 3", code)
	}
}

// blockingConn is a netlink socket whose kernel never answers.
type blockingConn struct{ stop chan struct{} }

func (b blockingConn) Exchange(host.Request) ([]byte, error) {
	<-b.stop
	return nil, errors.New("stopped")
}

// record has the same deadline: a query that never returns fails the recording in time and names
// what it is blocked in (record copies only regular files, so a netlink answer stands in for a
// wedged device here).
func TestRecordEndsAtTheDeadline(t *testing.T) {
	snap := sharedFixture(t, "healthy") // read only: record writes under TMPDIR
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where record makes its working directory
	stop := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(stop) }) }
	defer release()
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.OpenHost = func(context.Context, source) (*host.Host, func(), error) {
		h, err := host.New(host.Options{Root: filepath.Join(snap, "root"), Kind: host.KindLive, Netlink: blockingConn{stop}})
		return h, func() {}, err
	}
	start := time.Now()
	// The checks the recording runs read the tree's files before they reach netlink: 2 s leaves
	// them time to get there on a busy machine.
	code := app.Execute(context.Background(), []string{"record", "--timeout", "2s", "-o", filepath.Join(t.TempDir(), "s.tar.gz")})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("record took %s with --timeout 2s", took)
	}
	if code != 3 || !strings.Contains(errb.String(), "--timeout 2s reached; blocked in RDMA netlink request") {
		t.Errorf("exit %d: %s", code, errb.String())
	}
	// When the blocked query returns after all, the recording goes on writing into its working
	// directory; it must not leave that directory behind. Gone for good: absent twice, a second
	// apart (the recording resumes within milliseconds).
	release()
	left := func() []string { l, _ := filepath.Glob(filepath.Join(tmp, "rdmadiag-record-*")); return l }
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if len(left()) == 0 {
			time.Sleep(time.Second)
			if len(left()) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("record left its working directory behind: %v", left())
		}
	}
}

// The RDMA netlink socket is opened only when ib_core is there: creating it on a host without
// ib_core makes the kernel load the module, and a diagnosis must not change the host.
func TestIBCorePresent(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		want bool
	}{
		{nil, false},
		{[]string{"sys/module/mlx5_core"}, false},
		{[]string{"sys/module/ib_core"}, true},
		{[]string{"sys/class/infiniband"}, true},
	} {
		root := t.TempDir()
		for _, d := range tc.dirs {
			os.MkdirAll(filepath.Join(root, d), 0o755)
		}
		if got := live.IBCorePresent(root); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.dirs, got, tc.want)
		}
	}
	if !errors.Is(errIBCoreAbsent, syscall.EPROTONOSUPPORT) {
		t.Error("the checks must see the same errno as on a kernel without RDMA")
	}
}
