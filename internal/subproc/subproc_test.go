package subproc

import (
	"context"
	"strings"
	"testing"
	"time"
)

func sh(script string, timeout time.Duration) Spec {
	return Spec{Path: "/bin/sh", Argv0: "child", Args: []string{"-c", script}, Timeout: timeout, TimeoutName: "--t",
		MaxStdout: 64, StderrTail: 8}
}

// Each way a child can fail to answer is told apart, and none holds the caller past its
// deadline: a grandchild that keeps standard output open is killed with the group.
func TestRun(t *testing.T) {
	for _, c := range []struct {
		name, script, failure, stdout, stderr string
	}{
		{"answer", `echo "$0"; printf 0123456789abc >&2`, "", "child\n", "56789abc"},
		{"stdin", `cat`, "", "in", ""},
		{"exit", `exit 3`, "exited 3", "", ""},
		{"signal", `kill -SEGV $$`, "was killed by signal 11 (SIGSEGV)", "", ""},
		{"timeout", `sleep 30`, "timed out after 300ms (--t) and was killed with its process group", "", ""},
		{"grandchild", `(sleep 30) & echo started`, "timed out after 300ms", "started\n", ""},
		{"too much", `yes`, "printed more than 64 bytes on standard output and was killed", "", ""},
		{"missing", "", "could not be started", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := sh(c.script, 300*time.Millisecond)
			s.Stdin = []byte("in")
			if c.name == "missing" {
				s.Path = "/nonexistent/child"
			}
			start := time.Now()
			r := Run(context.Background(), s)
			if took := time.Since(start); took > 300*time.Millisecond+2*WaitDelay+time.Second {
				t.Errorf("held the caller %s", took)
			}
			if !strings.HasPrefix(r.Failure, c.failure) || (c.failure == "" && r.Failure != "") {
				t.Errorf("failure %q, want %q", r.Failure, c.failure)
			}
			if c.stdout != "" && string(r.Stdout) != c.stdout {
				t.Errorf("stdout %q, want %q", r.Stdout, c.stdout)
			}
			if c.name == "too much" && len(r.Stdout) != 64 {
				t.Errorf("stdout %d bytes, want the 64 kept", len(r.Stdout))
			}
			if c.stderr != "" && r.Stderr != c.stderr {
				t.Errorf("stderr %q, want its last 8 bytes %q", r.Stderr, c.stderr)
			}
		})
	}
}

// The caller's end kills the child and is reported as Ended, not as the child's failure.
func TestRunCallerEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r := Run(ctx, sh("sleep 30", time.Minute))
	if r.Ended == nil || !strings.Contains(r.Failure, "run's end") {
		t.Errorf("ended %v, failure %q", r.Ended, r.Failure)
	}
}
