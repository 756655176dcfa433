package cli

import (
	"strings"
	"testing"
)

// The pair probe's usage errors exit 64 before anything is opened; without libibverbs it could
// not run (3), which is the host's, not the operator's.
func TestProbeUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"probe"}, "exactly one of --listen"},
		{[]string{"probe", "--listen=:1", "--peer", "h"}, "exactly one of --listen"},
		{[]string{"probe", "--peer", "h", "--format", "xml"}, `--format "xml"`},
		{[]string{"probe", "--peer", "h", "--iters", "0"}, "must be positive"},
	} {
		_, errOut, code := run(t, c.args...)
		if code != 64 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q", c.args, code, errOut)
		}
	}
}
