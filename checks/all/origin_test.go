package all

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
)

// The layer packages' checks are built in: `rdmadiag list` names an origin only for checks that
// another package registered.
func TestBuiltinChecksHaveNoOrigin(t *testing.T) {
	cs := checks.Default.All()
	if len(cs) < 30 {
		t.Fatalf("only %d checks registered", len(cs))
	}
	for _, c := range cs {
		if c.Origin != "" {
			t.Errorf("%s: origin %q, want built-in", c.ID, c.Origin)
		}
	}
}
