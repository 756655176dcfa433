package observe_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/procirq"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// countingObserver counts the reads of one file.
type countingObserver struct {
	path  string
	reads atomic.Int32
}

func (o *countingObserver) FileRead(p string, _ []byte, _ error) {
	if p == o.path {
		o.reads.Add(1)
	}
}
func (o *countingObserver) Listed(string)                                {}
func (o *countingObserver) Touched(string)                               {}
func (o *countingObserver) EthtoolRead(string, map[string]uint64, error) {}

// Both vector checks judge the same interrupt table: /proc/interrupts is read once per run, and
// a new run reads it again.
func TestInterruptsReadOncePerRun(t *testing.T) {
	h, cleanup, err := snapshot.Open(checktest.Fixture(t, "cq-depth-128"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	obs := &countingObserver{path: procirq.Path}
	oh := h.Observed(obs, func(_ string, c host.NetlinkConn) host.NetlinkConn { return c })
	cs, err := checks.Default.Select([]string{"driver.interrupts", "cq.vectors"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("selected %d checks, want driver.interrupts and cq.vectors", len(cs))
	}
	env := checks.NewEnv(oh, checks.Options{})
	fs := checks.Run(context.Background(), env, cs, 2)
	if n := obs.reads.Load(); n != 1 {
		t.Errorf("/proc/interrupts was read %d times in one run, want once", n)
	}
	// Both judged from it (an unread table would make them unknown or leave out the IRQs).
	drv := checktest.One(t, fs, "driver.interrupts", "mlx5_0")
	checktest.WantSeverity(t, drv, report.OK)
	checktest.WantEvidence(t, drv, "completion vectors", "4")
	checktest.WantEvidence(t, checktest.One(t, fs, "cq.vectors", "mlx5_0"), "IRQs", "mlx5_comp0@pci:0000:3b:00.0")
	for _, f := range fs {
		if f.Severity == report.Unknown || strings.Contains(f.Summary, "could not check") {
			t.Errorf("%s %s: %s", f.CheckID, f.Subject.Name, f.Summary)
		}
	}

	t1 := observe.Interrupts.Get(env)
	if t1.Err != nil || len(t1.IRQs) == 0 || obs.reads.Load() != 1 {
		t.Errorf("Interrupts after the run: %d IRQs, err %v, %d reads", len(t1.IRQs), t1.Err, obs.reads.Load())
	}
	checks.Run(context.Background(), checks.NewEnv(oh, checks.Options{}), cs, 2)
	if n := obs.reads.Load(); n != 2 {
		t.Errorf("a second run read /proc/interrupts %d times in all, want 2", n)
	}
}
