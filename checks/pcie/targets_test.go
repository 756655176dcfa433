package pcie

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// The PCIe checks share one resolution of their targets per run; each gets its own copy of the
// findings to append to.
func TestTargetsResolvedOncePerRun(t *testing.T) {
	h, cleanup, err := snapshot.Open(checktest.Fixture(t, "healthy"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	env := checks.NewEnv(h, checks.Options{})
	ts1, out1 := sharedTargets(env)
	ts2, out2 := sharedTargets(env)
	if len(ts1) == 0 {
		t.Fatal("no target in the healthy fixture")
	}
	if len(ts1) != len(ts2) || &ts1[0] != &ts2[0] {
		t.Error("targets resolved twice in one run")
	}
	out1 = append(out1, engine.Finding{Finding: report.Finding{Summary: "mine"}})
	if len(out2) > 0 && out2[len(out2)-1].Summary == "mine" || len(out1) == len(out2) {
		t.Errorf("findings shared between callers: %d %d", len(out1), len(out2))
	}
	if other, _ := sharedTargets(checks.NewEnv(h, checks.Options{})); &other[0] == &ts1[0] {
		t.Error("targets shared across runs")
	}
}
