// Command rdmadiag tells whether the RDMA NICs of a Linux host are healthy, and if not, which
// layer is at fault, with the evidence and the fix.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	app := &App{Version: version, Now: time.Now, Stdout: os.Stdout, Stderr: os.Stderr, IsTerminal: isTerminal(os.Stdout)}
	code := app.Execute(ctx, os.Args[1:])
	if ctx.Err() != nil && code != report.ExitUsage {
		// Interrupted: probes have cleaned up by now; say so and use the shell's convention.
		fmt.Fprintln(os.Stderr, "rdmadiag: interrupted")
		code = 130
	}
	os.Exit(code)
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
