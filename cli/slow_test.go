package cli

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/slowtest"
)

// slowScenarios is every scenario with RDMADIAG_SLOW=1 (make test-slow), slowtest.Sample's
// otherwise: for the tests that record or unpack a whole fixture again.
func slowScenarios(t *testing.T) []scenario {
	t.Helper()
	return slowtest.Pick(t, scenarios(t), func(s scenario) string { return s.name })
}
