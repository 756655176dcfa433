package kevent

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/relit"
)

func mustMatch(t *testing.T, expr, line string) []string {
	t.Helper()
	re := relit.New(expr)
	if err := re.Compile(); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%s does not match %q", expr, line)
	}
	return m[1:]
}
