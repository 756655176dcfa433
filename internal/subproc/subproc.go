// Package subproc runs one program as a child the run can always get rid of: in its own process
// group, killed as a group at its deadline, at the end of the caller's context or when it prints
// more than it may, with its standard output bounded and the end of its standard error kept.
// Site plugins and watch's periodic full check run through it.
package subproc

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

// WaitDelay is how long a child's pipes stay open once it exited or was killed: a process it
// left behind in another session holding them cannot hold the caller longer (exec.Cmd.WaitDelay).
const WaitDelay = 500 * time.Millisecond

// Spec is one execution.
type Spec struct {
	Path  string
	Argv0 string // argv[0] as the child sees it; "" is Path
	Args  []string
	Env   []string
	Dir   string
	Stdin []byte
	// Timeout bounds the run; TimeoutName is how a failure names it ("--plugin-timeout").
	Timeout     time.Duration
	TimeoutName string
	// MaxStdout bounds standard output (the child is killed past it); StderrTail is how much
	// of the end of standard error is kept.
	MaxStdout, StderrTail int
}

// Result is what one execution gave.
type Result struct {
	Stdout []byte
	Stderr string
	// Failure says what the child did instead of answering ("timed out after 10s and was
	// killed"); empty when it exited 0 with its output in Stdout.
	Failure string
	// Ended is the caller's end (deadline, signal) that killed it, if that is what happened.
	Ended error
}

var (
	errTimeout  = errors.New("child deadline")
	errTooMuch  = errors.New("output bound")
	errCanceled = errors.New("run ended")
)

// Run executes s and waits for it and for whatever it left in its process group.
func Run(ctx context.Context, s Spec) Result {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(errCanceled)
	tctx, tcancel := context.WithTimeoutCause(pctx, s.Timeout, errTimeout)
	defer tcancel()
	cmd := exec.CommandContext(tctx, s.Path, s.Args...)
	if s.Argv0 != "" {
		cmd.Args[0] = s.Argv0
	}
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	cmd.Stdin = bytes.NewReader(s.Stdin)
	out := &bounded{max: s.MaxStdout, full: func() { cancel(errTooMuch) }}
	errw := &tail{max: s.StderrTail}
	cmd.Stdout, cmd.Stderr = out, errw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = WaitDelay
	if err := cmd.Start(); err != nil {
		return Result{Failure: "could not be started: " + strings.TrimPrefix(err.Error(), "fork/exec ")}
	}
	err := cmd.Wait()
	// Whatever it left in its group (a background child) goes with it.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r := Result{Stdout: out.bytes(), Stderr: errw.String()}
	switch cause := context.Cause(tctx); {
	case errors.Is(cause, errTooMuch):
		r.Failure = fmt.Sprintf("printed more than %d bytes on standard output and was killed", s.MaxStdout)
	case err == nil:
	case errors.Is(cause, errTimeout):
		r.Failure = fmt.Sprintf("timed out after %s (%s) and was killed with its process group", s.Timeout, s.TimeoutName)
	case ctx.Err() != nil:
		r.Ended = context.Cause(ctx)
		r.Failure = "was killed with its process group at the run's end: " + r.Ended.Error()
	case errors.Is(err, exec.ErrWaitDelay):
		r.Failure = "exited, but left a process holding its standard output or error open (killed after " + WaitDelay.String() + ")"
	default:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				r.Failure = fmt.Sprintf("was killed by signal %d (%s)", ws.Signal(), unix.SignalName(ws.Signal()))
			} else {
				r.Failure = fmt.Sprintf("exited %d", ee.ExitCode())
			}
		} else {
			r.Failure = "failed: " + err.Error()
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
