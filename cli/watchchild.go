package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/subproc"
	"github.com/rdmadiag/rdmadiag/internal/watch"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// watch runs each periodic full check in a child: this binary again (/proc/self/exe, so that a
// package upgrade on disk does not change the checks under a running watch) with watch's own
// arguments and --full-check-once, which prints the findings as JSON and exits. A full check's
// burst (it reads the whole host, loads libibverbs and its providers) is then the child's and is
// given back when it exits, so that what the watch keeps resident is what its polls use; and a
// check wedged in a system call or a C library dies with its process group at the deadline
// instead of holding the watch.

const (
	fullCheckOnceFlag   = "full-check-once"
	fullCheckProbesFlag = "full-check-probes"
	// maxFullCheckGrace is how long past --check-timeout a child may take to print what it
	// has (checks past the deadline are cut short at once); never more than the timeout itself.
	maxFullCheckGrace = 10 * time.Second
	// maxFullCheckOutput bounds a child's findings: a host with thousands of findings prints
	// a few MB.
	maxFullCheckOutput = 32 << 20
)

// printFullCheck is the child's part: one full check, its findings on stdout.
func (a *App) printFullCheck(ctx context.Context, f *watchFlags) error {
	res, err := a.watchFullCheck(ctx, f, f.onceProbes)
	if err != nil {
		return &exitError{code: report.ExitUnknown, err: fmt.Errorf("full check: %w", err)}
	}
	return json.NewEncoder(a.Stdout).Encode(res)
}

// fullCheck is the watch's full check: in a child when the App knows its own command line,
// in this process otherwise (tests that run the App in-process).
func (a *App) fullCheck(ctx context.Context, f *watchFlags, probes bool) ([]watch.CheckResult, error) {
	if len(a.Self) == 0 {
		return a.watchFullCheck(ctx, f, probes)
	}
	path := "/proc/self/exe"
	if _, err := os.Stat(path); err != nil {
		if path, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("full check: this program's path: %w", err)
		}
	}
	// The child runs where watch runs: its arguments may name files relative to it (--root,
	// --policy).
	args := append(slices.Clone(a.Self[1:]), "--"+fullCheckOnceFlag, "--"+fullCheckProbesFlag+"="+strconv.FormatBool(probes))
	r := subproc.Run(ctx, subproc.Spec{Path: path, Argv0: a.Self[0], Args: args, Env: childEnv(os.Environ()),
		Timeout: f.checkTimeout + min(maxFullCheckGrace, f.checkTimeout), TimeoutName: "--check-timeout and its grace",
		MaxStdout: maxFullCheckOutput, StderrTail: 2048})
	switch {
	case r.Ended != nil:
		return nil, errors.New("stopped")
	case r.Failure != "":
		msg := "full check " + r.Failure
		if t := strings.TrimSpace(r.Stderr); t != "" {
			msg += ": " + words.Truncate(words.OneLine(t), 300)
		}
		return nil, errors.New(msg)
	}
	return decodeFullCheck(r.Stdout)
}

// decodeFullCheck reads a child's findings: one JSON array, nothing after it.
func decodeFullCheck(b []byte) ([]watch.CheckResult, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var out []watch.CheckResult
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("full check: its findings: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("full check: its findings: more than one document")
	}
	return out, nil
}

// childEnv is the watch's environment without what belongs to the service itself: the child
// must not notify systemd (NOTIFY_SOCKET, the watchdog), take its sockets or write over the
// watch's own profiles.
func childEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES",
			"RDMADIAG_CPUPROFILE", "RDMADIAG_TRACE", "RDMADIAG_MEMPROFILE":
			return true
		}
		return false
	})
}
