package plugins

import (
	"context"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/subproc"
)

// StderrTail is how much of the end of a plugin's standard error is kept to quote.
const StderrTail = 4096

// Path is the PATH a plugin runs with: the system's directories, none of the caller's.
const Path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// result is what one execution gave: the output when it ran to a zero exit, else why not.
type result = subproc.Result

// execute runs one plugin in its own process group with the clean environment env, facts on
// its standard input and cwd /, killed as a group at timeout, at the end of ctx or when it
// prints more than MaxStdout.
func execute(ctx context.Context, path string, env []string, facts []byte, timeout time.Duration) result {
	return subproc.Run(ctx, subproc.Spec{Path: path, Env: env, Dir: "/", Stdin: facts,
		Timeout: timeout, TimeoutName: "--plugin-timeout", MaxStdout: MaxStdout, StderrTail: StderrTail})
}
