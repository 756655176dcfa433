package cli

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestWatchUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"watch", "--poll", "0s"},
		{"watch", "--poll", "-1s"},
		{"watch", "--full", "0"},
		{"watch", "--rescan", "100ms", "--poll", "1s"},
		{"watch", "--probe-every", "1m", "--full", "5m"},
		{"watch", "--probe-every", "-1m"},
		{"watch", "--kmsg", "/x", "--no-kmsg"},
		{"watch", "--root", filepath.Join(dir, "missing")},
		{"watch", "--poll", "soon"},
		{"watch", "extra"},
		{"watch", "--policy", filepath.Join(dir, "missing.json")},
		{"watch", "--exclude", "[mlx5"},
	} {
		var out, errb bytes.Buffer
		app := &App{Version: "test", Now: time.Now, Stdout: &out, Stderr: &errb}
		if code := app.Execute(context.Background(), args); code != report.ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, report.ExitUsage, errb.String())
		}
	}
}

// watchChild runs `rdmadiag watch` in a child process (this test binary re-executed) on a copy
// of a fixture, and returns it once it has written its first event.
func watchChild(t *testing.T) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(filepath.Join(fixturesDir, "port-flaps", "snapshot.txtar"), dir); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchHelperProcess$")
	cmd.Env = append(os.Environ(), "RDMADIAG_TEST_WATCH_ROOT="+filepath.Join(dir, "root"), "RDMADIAG_TEST_WATCH_STATE="+filepath.Join(dir, "state"))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 100)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, `"kind":"set"`) {
				go func() {
					for range lines {
					}
				}()
				return cmd, &errb
			}
		case <-deadline:
			t.Fatalf("watch wrote no condition in 10 s; stderr: %s", errb.String())
		}
	}
}

func TestWatchHelperProcess(t *testing.T) {
	root := os.Getenv("RDMADIAG_TEST_WATCH_ROOT")
	if root == "" {
		t.Skip("run by TestWatchSignals")
	}
	app := &App{Version: "test", Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr}
	os.Exit(runMain(app, []string{"watch", "--root", root, "--state-dir", os.Getenv("RDMADIAG_TEST_WATCH_STATE"),
		"--poll", "100ms", "--full", "1h", "--listen", "127.0.0.1:0"}))
}

// SIGTERM, how a service manager stops watch, ends it within a second with exit 0; SIGINT, as
// for check, is an interruption: 130.
func TestWatchSignals(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 0}, {syscall.SIGINT, report.ExitInterrupted}} {
		cmd, errb := watchChild(t)
		sent := time.Now()
		cmd.Process.Signal(tc.sig)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			t.Fatalf("%s: still running 1 s after the signal; stderr: %s", tc.sig, errb.String())
		}
		if got := cmd.ProcessState.ExitCode(); got != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr: %s", tc.sig, got, tc.code, errb.String())
		}
		t.Logf("%s: stopped in %s", tc.sig, time.Since(sent).Round(time.Millisecond))
	}
}

// SIGTERM sent twice (to the process and to its process group, as GNU timeout and some
// supervisors do) is still a clean stop: exit 0.
func TestWatchDoubleSIGTERM(t *testing.T) {
	cmd, errb := watchChild(t)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("still running 1 s after two SIGTERMs; stderr: %s", errb.String())
	}
	if got := cmd.ProcessState.ExitCode(); got != 0 {
		t.Errorf("exit %d after two SIGTERMs, want 0; stderr: %s", got, errb.String())
	}
}

// The full check watch runs is check's: on the port-flaps fixture, whose mlx5_1 port is down,
// port.state's critical finding becomes mlx5_1's full_check condition, keyed by its PCI address.
func TestWatchFullCheckIsChecks(t *testing.T) {
	dir := t.TempDir()
	if err := snapshot.UnpackFile(filepath.Join(fixturesDir, "port-flaps", "snapshot.txtar"), dir); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	app := &App{Version: "test", Now: time.Now, Stdout: &out, Stderr: io.Discard}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		done <- app.Execute(ctx, []string{"watch", "--root", filepath.Join(dir, "root"), "--state-dir", "", "--poll", "100ms"})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), `"identity":"pci-0000:5e:00.0","device":"mlx5_1","condition":"full_check","severity":"critical"`) {
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("no full_check condition on mlx5_1 in 20 s:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d", code)
	}
	if !strings.Contains(out.String(), "port.state: mlx5_1/1") {
		t.Errorf("the condition does not name the check's finding:\n%s", out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the watcher's writes and the test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
