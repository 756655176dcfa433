package main

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/relit"
)

// The program's expressions (kernel-log signatures, the other checks' patterns, the manual
// page's) are compiled at their first use, not when it starts (internal/relit): compiling every
// one here makes a typo fail the tests instead of a check on the first host whose log reaches
// that expression.
func TestEveryExpressionCompiles(t *testing.T) {
	all := relit.All()
	// The kernel-log signatures alone are dozens: fewer means the listing lost them, and this
	// test would pass on nothing.
	if len(all) < 50 {
		t.Fatalf("relit.All() lists %d expressions; the checks declare more than 50", len(all))
	}
	for _, r := range all {
		if err := r.Compile(); err != nil {
			t.Errorf("%v", err)
		}
	}
}
