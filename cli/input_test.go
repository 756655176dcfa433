package cli

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperMain is the real rdmadiag process for the tests below: main's signal handling and
// exit (runMain, exitProcess) on the arguments in RDMADIAG_TEST_MAIN_ARGS (one a line).
func TestHelperMain(t *testing.T) {
	args := os.Getenv("RDMADIAG_TEST_MAIN_ARGS")
	if args == "" {
		t.Skip("run by the tests that start rdmadiag as a process")
	}
	app := &App{Version: "test", Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, Golden: true}
	exitProcess(runMain(app, strings.Split(args, "\n")))
}

// proc is rdmadiag started as a process whose standard input is a pipe the test writes (or
// does not), with a TMPDIR of its own so that what it leaves behind shows.
type proc struct {
	cmd      *exec.Cmd
	stdin    *os.File // the pipe's write end
	tmp      string
	out, err bytes.Buffer
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{tmp: t.TempDir()}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.stdin = w
	p.cmd = exec.Command(os.Args[0], "-test.run=^TestHelperMain$")
	p.cmd.Env = append(os.Environ(), "RDMADIAG_TEST_MAIN_ARGS="+strings.Join(args, "\n"), "TMPDIR="+p.tmp)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = r, &p.out, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	t.Cleanup(func() {
		w.Close()
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// unpacking waits until the process has made its unpack directory, so that a signal sent then
// arrives while the snapshot is read.
func (p *proc) unpacking(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(p.tmp, "rdmadiag-snapshot-*")); len(m) > 0 {
			time.Sleep(200 * time.Millisecond) // into the read
			return
		}
	}
	t.Fatalf("no unpack directory appeared; stderr: %s", p.err.String())
}

// signal sends sigs (at once, so that a second one finds the run still going) and returns the exit code and how long after the
// first the process ended.
func (p *proc) signal(t *testing.T, sigs ...syscall.Signal) (int, time.Duration) {
	t.Helper()
	sent := time.Now()
	for _, s := range sigs {
		p.cmd.Process.Signal(s)
	}
	return p.wait(t), time.Since(sent)
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	done := make(chan struct{})
	go func() {
		p.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-done
		t.Fatalf("still running 30 s later; stderr: %s", p.err.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// leftBehind lists what the process left in its TMPDIR.
func (p *proc) leftBehind() []string {
	ents, _ := os.ReadDir(p.tmp)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// stdinAs names the process's standard input with a file name (the archive's form follows the
// name: a text archive is read as one only when named .txtar).
func stdinAs(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.Symlink("/dev/stdin", p); err != nil {
		t.Fatal(err)
	}
	return p
}

// feedTxtar writes a text snapshot that never ends into w, as a large one arriving slowly does.
func feedTxtar(w io.WriteCloser) {
	go func() {
		defer w.Close()
		fmt.Fprintf(w, "-- meta.json --\n{\"format\":\"rdmadiag-snapshot/1\"}\n")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "-- root/sys/d%d/f%d --\n1\n", i/100, i); err != nil {
				return
			}
		}
	}()
}

// feedTar writes a tar.gz snapshot of many entries that never ends into w.
func feedTar(w io.WriteCloser) {
	go func() {
		defer w.Close()
		zw := gzip.NewWriter(w)
		tw := tar.NewWriter(zw)
		meta := `{"format":"rdmadiag-snapshot/1"}`
		tw.WriteHeader(&tar.Header{Name: "meta.json", Mode: 0o644, Size: int64(len(meta)), Typeflag: tar.TypeReg})
		tw.Write([]byte(meta))
		for i := 0; ; i++ {
			if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("root/sys/d%d/f%d", i/100, i), Mode: 0o644, Size: 2, Typeflag: tar.TypeReg}); err != nil {
				return
			}
			if _, err := tw.Write([]byte("1\n")); err != nil {
				return
			}
			if i%1000 == 0 {
				zw.Flush()
			}
		}
	}()
}

// A snapshot read from a pipe that nobody writes yet (`... | rdmadiag check --snapshot
// /dev/stdin`): the first SIGINT ends the run within a second or so, exit 130, and the report
// says the run was interrupted while reading the snapshot, judging nothing.
func TestSIGINTWhileASnapshotPipeIsSilentExits130(t *testing.T) {
	p := start(t, "check", "--snapshot", "/dev/stdin", "--format", "json")
	p.unpacking(t)
	code, took := p.signal(t, syscall.SIGINT)
	if code != 130 || took > 3*time.Second {
		t.Fatalf("exit %d %s after SIGINT, want 130 within 3 s\nstdout: %s\nstderr: %s", code, took, p.out.String(), p.err.String())
	}
	var doc struct {
		Error    string          `json:"error"`
		ExitCode int             `json:"exit_code"`
		Findings json.RawMessage `json:"findings"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &doc); err != nil {
		t.Fatalf("%v: %s", err, p.out.String())
	}
	if doc.ExitCode != 130 || !strings.Contains(doc.Error, "interrupted while reading the snapshot /dev/stdin") || doc.Findings != nil {
		t.Errorf("want an interrupted run that judged nothing, got:\n%s", p.out.String())
	}
	if left := p.leftBehind(); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A large snapshot arriving on a pipe: SIGTERM, SIGHUP, or two signals end the unpack at once
// (exit 130) and the unpack directory is removed on each way out, the second signal's immediate
// exit included.
func TestSignalsDuringALargeUnpackRemoveTheDirectory(t *testing.T) {
	for _, c := range []struct {
		name string
		sigs []syscall.Signal
	}{
		{"SIGTERM", []syscall.Signal{syscall.SIGTERM}},
		{"SIGHUP", []syscall.Signal{syscall.SIGHUP}},
		{"second signal", []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, "check", "--snapshot", stdinAs(t, "big.txtar"), "--format", "json")
			feedTxtar(p.stdin)
			p.unpacking(t)
			time.Sleep(time.Second) // well into the unpack
			code, took := p.signal(t, c.sigs...)
			// The bound leaves room for removing what was unpacked on a slow disk.
			if code != 130 || took > 5*time.Second {
				t.Errorf("exit %d %s after %v, want 130 within a few seconds\nstderr: %s", code, took, c.sigs, p.err.String())
			}
			if left := p.leftBehind(); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// The run's deadline ends the unpack of either form, a never-ending one included, with exit 3
// (could not check), naming the deadline, and nothing left behind.
func TestDeadlineEndsTheUnpack(t *testing.T) {
	for _, c := range []struct {
		name, file string
		feed       func(io.WriteCloser)
	}{
		{"silent pipe", "s.tar.gz", nil},
		{"endless text", "s.txtar", feedTxtar},
		{"endless tar", "s.tar.gz", feedTar},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := start(t, "check", "--snapshot", stdinAs(t, c.file), "--timeout", "1s")
			if c.feed != nil {
				c.feed(p.stdin)
			}
			started := time.Now()
			code := p.wait(t)
			if took := time.Since(started); code != 3 || took > 6*time.Second {
				t.Errorf("exit %d after %s with --timeout 1s, want 3 within a few seconds\nstderr: %s", code, took, p.err.String())
			}
			if !strings.Contains(p.err.String(), "--timeout 1s reached while reading the snapshot") {
				t.Errorf("stderr does not name the deadline: %s", p.err.String())
			}
			if left := p.leftBehind(); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}
