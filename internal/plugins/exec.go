package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StderrTail is how much of the end of a plugin's standard error is kept to quote.
const StderrTail = 4096

// waitDelay is how long a plugin's pipes stay open once it exited or was killed: a process it
// left behind in another session holding them cannot hold the run longer (exec.Cmd.WaitDelay).
const waitDelay = 500 * time.Millisecond

// Path is the PATH a plugin runs with: the system's directories, none of the caller's.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// result is what one execution gave: the output when it ran to a zero exit, else why not.
type result struct {
	stdout []byte
	stderr string
	// failure says what the plugin did instead of answering ("timed out after 10s and was
	// killed"); empty when it exited 0 with its output in stdout.
	failure string
	// ended is the run's end (deadline, signal) that killed it, if that is what happened.
	ended error
}

var (
	errTimeout  = errors.New("plugin deadline")
	errTooMuch  = errors.New("output bound")
	errCanceled = errors.New("run ended")
)

// execute runs one plugin in its own process group with the clean environment env, facts on
// its standard input and cwd /, killed as a group at timeout, at the end of ctx or when it
// prints more than MaxStdout.
func execute(ctx context.Context, path string, env []string, facts []byte, timeout time.Duration) result {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errCanceled)
	tctx, tcancel := context.WithTimeoutCause(pctx, timeout, errTimeout)
	defer tcancel()
	cmd := exec.CommandContext(tctx, path)
	cmd.Dir = "/"
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(facts)
	out := &bounded{max: MaxStdout, full: func() { cancel(errTooMuch) }}
	errw := &tail{max: StderrTail}
	cmd.Stdout, cmd.Stderr = out, errw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	if err := cmd.Start(); err != nil {
		return result{failure: "could not be started: " + strings.TrimPrefix(err.Error(), "fork/exec ")}
	}
	err := cmd.Wait()
	// Whatever it left in its group (a background child) goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r := result{stdout: out.bytes(), stderr: errw.String()}
	switch cause := context.Cause(tctx); {
	case errors.Is(cause, errTooMuch):
		r.failure = fmt.Sprintf("printed more than %d bytes on standard output and was killed", MaxStdout)
	case err == nil:
	case errors.Is(cause, errTimeout):
		r.failure = fmt.Sprintf("timed out after %s (--plugin-timeout) and was killed with its process group", timeout)
	case ctx.Err() != nil:
		r.ended = context.Cause(ctx)
		r.failure = "was killed with its process group at the run's end: " + r.ended.Error()
	case errors.Is(err, exec.ErrWaitDelay):
		r.failure = "exited, but left a process holding its standard output or error open (killed after " + waitDelay.String() + ")"
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.failure = fmt.Sprintf("was killed by signal %d (%s)", ws.Signal(), unix.SignalName(ws.Signal()))
			} else {
				r.failure = fmt.Sprintf("exited %d", ee.ExitCode())
			}
		} else {
			r.failure = "failed: " + err.Error()
		}
	}
	return r
}

// bounded keeps up to max bytes and calls full once when more arrive.
type bounded struct {
	mu   sync.Mutex
	buf  []byte
	max  int
	over bool
	full func()
}

func (b *bounded) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return len(p), nil
	}
	if len(b.buf)+len(p) > b.max {
		b.buf = append(b.buf, p[:b.max-len(b.buf)]...)
		b.over = true
		b.full()
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *bounded) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf
}

// tail keeps the last max bytes written.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
