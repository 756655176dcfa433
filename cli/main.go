// Package cli is the rdmadiag command line: every command, its flags, exit codes and outputs.
// cmd/rdmadiag is its main; a program that adds site checks (examples/sitecheck) registers them
// in the checks registry and calls Main, so its binary is rdmadiag with those checks added.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/tempdir"
	"github.com/rdmadiag/rdmadiag/report"
)

// Main runs rdmadiag on the process's arguments and ends the process with its exit code.
func Main(b Build) {
	if b.Version == "" {
		b.Version = "dev"
	}
	v, c, d := stamps(b.Version, b.Commit, b.Date, debug.ReadBuildInfo)
	app := &App{Version: v, Commit: c, BuildDate: d, Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr,
		IsTerminal: isTerminal(os.Stdout), TermWidth: func() int { return terminalWidth(os.Stdout) },
		StderrIsTerminal: isTerminal(os.Stderr), StderrWidth: func() int { return terminalWidth(os.Stderr) },
		Self: os.Args}
	// A run is short and its live heap small (tens of MB with 100k QPs): collecting at 4 MB and
	// every doubling spends more on the collector and on faulting fresh pages in than it saves.
	// Collect at 5x the live heap, but start collecting hard near 32 MiB so that the peak RSS
	// stays bounded. GOGC and GOMEMLIMIT in the environment still win.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(32 << 20)
	}
	stopProfile := startCPUProfile(os.Getenv("RDMADIAG_CPUPROFILE"), os.Stderr)
	stopTrace := startTrace(os.Getenv("RDMADIAG_TRACE"), os.Stderr)
	stopMem := startMemProfile(os.Getenv("RDMADIAG_MEMPROFILE"), os.Stderr)
	code := runMain(app, os.Args[1:])
	stopMem()
	stopTrace()
	stopProfile()
	exitProcess(code)
}

// exitProcess ends the process with code, first removing the temporary directories still held
// (one a goroutine left blocked at the deadline still owns, or every one at a second signal),
// since os.Exit runs no deferred function.
func exitProcess(code int) {
	tempdir.RemoveAll()
	os.Exit(code)
}

// startCPUProfile writes a CPU profile of the whole process to file when it is set
// (RDMADIAG_CPUPROFILE, an environment variable rather than a flag so that any command and any
// wrapper script can be profiled unchanged; docs/speed.md).
func startCPUProfile(file string, stderr io.Writer) (stop func()) {
	return startDiagnostic("RDMADIAG_CPUPROFILE", file, stderr, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace writes an execution trace of the run (`go tool trace`) to file when it is set
// (RDMADIAG_TRACE): where each goroutine waited and when a CPU idled, which a CPU profile does
// not show (docs/speed.md).
func startTrace(file string, stderr io.Writer) (stop func()) {
	return startDiagnostic("RDMADIAG_TRACE", file, stderr, trace.Start, trace.Stop)
}

// startMemProfile writes the heap profile at the end of the run (`go tool pprof -sample_index
// inuse_space` for what is held, alloc_space for what was allocated) when file is set
// (RDMADIAG_MEMPROFILE): what a long-running watch keeps resident (docs/watch.md, "Cost").
func startMemProfile(file string, stderr io.Writer) (stop func()) {
	var out io.Writer
	return startDiagnostic("RDMADIAG_MEMPROFILE", file, stderr, func(w io.Writer) error { out = w; return nil },
		func() { _ = pprof.Lookup("allocs").WriteTo(out, 0) })
}

// startDiagnostic starts writing one of the run's own diagnostics to file, named by the
// environment variable that asked for it. A failure to start or to write it is reported and the
// run goes on.
func startDiagnostic(env, file string, stderr io.Writer, start func(io.Writer) error, end func()) (stop func()) {
	if file == "" {
		return func() {}
	}
	// Written beside its name and renamed at the end, as every other file rdmadiag writes: never
	// through a link at the name, never half a profile left under it.
	dir, base := filepath.Split(file)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		fmt.Fprintf(stderr, "rdmadiag: %s: %v\n", env, err)
		return func() {}
	}
	if err := start(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		fmt.Fprintf(stderr, "rdmadiag: %s: %v\n", env, err)
		return func() {}
	}
	return func() {
		end()
		err := f.Close()
		if err == nil {
			err = os.Rename(f.Name(), file)
		}
		if err != nil {
			os.Remove(f.Name())
			fmt.Fprintf(stderr, "rdmadiag: %s: %v\n", env, err)
		}
	}
}

// runMain runs the command line under the signal contract: the first SIGINT, SIGTERM or SIGHUP
// ends the run (checks still blocked are reported as cut short, probes clean up, the report says
// "interrupted" and the exit code is 130); a second one exits at once, after removing the
// temporary directories (an unpacked snapshot, a recording), which no deferred call would.
// SIGHUP is caught only when it is not ignored (nohup), so that a closed terminal ends the run
// the same way and leaves nothing behind.
func runMain(app *App, args []string) int {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 2)
	caught := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		caught = append(caught, syscall.SIGHUP)
	}
	signal.Notify(sigs, caught...)
	defer signal.Stop(sigs)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		fmt.Fprintf(app.Stderr, "rdmadiag: %s: stopping; a second signal exits at once\n", signalName(s))
		cancel(&interrupted{sig: signalName(s)})
		if s2, ok := <-sigs; ok {
			if s2 == syscall.SIGTERM && app.termExitsZero.Load() {
				// A service stopped twice (a process group signalled as well as the process):
				// its state is saved at every change, so exiting at once is still a clean stop.
				exitProcess(0)
			}
			fmt.Fprintln(app.Stderr, "rdmadiag: interrupted")
			exitProcess(app.interruptedCode())
		}
	}()
	code := app.Execute(ctx, args)
	var in *interrupted
	if errors.As(context.Cause(ctx), &in) && in.sig == "SIGTERM" && app.termExitsZero.Load() && code == 0 {
		return 0 // a service stopped the way its manager stops it
	}
	if ctx.Err() != nil && code != report.ExitUsage {
		// Interrupted: probes have cleaned up by now; say so and use the shell's convention (or
		// the format's code for "could not tell": npd, nagios).
		fmt.Fprintln(app.Stderr, "rdmadiag: interrupted")
		code = app.interruptedCode()
	}
	return code
}

// interrupted is the cause a signal gives the run's context; checks cut short name it.
type interrupted struct{ sig string }

func (i *interrupted) Error() string { return "interrupted by " + i.sig }

func signalName(s os.Signal) string {
	if ss, ok := s.(syscall.Signal); ok {
		switch ss {
		case syscall.SIGINT:
			return "SIGINT"
		case syscall.SIGTERM:
			return "SIGTERM"
		case syscall.SIGHUP:
			return "SIGHUP"
		}
	}
	return s.String()
}

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErr(format string, a ...any) error {
	return &exitError{code: report.ExitUsage, err: fmt.Errorf(format, a...)}
}

func codeOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return report.ExitUnknown
}
