package checks_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

// portFileObserver counts the reads of every port's state, phys_state and rate file.
type portFileObserver struct {
	mu    sync.Mutex
	reads map[string]int
}

func (o *portFileObserver) FileRead(p string, _ []byte, _ error) {
	if strings.Contains(p, "/ports/") && (strings.HasSuffix(p, "/state") || strings.HasSuffix(p, "/phys_state") || strings.HasSuffix(p, "/rate")) {
		o.mu.Lock()
		o.reads[p]++
		o.mu.Unlock()
	}
}
func (o *portFileObserver) Listed(string)                                {}
func (o *portFileObserver) Touched(string)                               {}
func (o *portFileObserver) EthtoolRead(string, map[string]uint64, error) {}

// Every check that judges a port's state or rate, and the pcie bandwidth check that compares the
// rate with the slot, judge one reading: each port's state, phys_state and rate file is read once
// per run.
func TestPortStateAndRateReadOncePerRun(t *testing.T) {
	h, cleanup, err := snapshot.Open(checktest.Fixture(t, "port-roce"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	obs := &portFileObserver{reads: map[string]int{}}
	oh := h.Observed(obs, func(_ string, c host.NetlinkConn) host.NetlinkConn { return c })
	cs, err := checks.Default.Select([]string{"port", "pcie.bandwidth"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	checks.Run(context.Background(), checks.NewEnv(oh, checks.Options{}), cs, 4)
	if len(obs.reads) == 0 {
		t.Fatal("no port state or rate was read")
	}
	for p, n := range obs.reads {
		if n != 1 {
			t.Errorf("%s read %d times in one run, want once", p, n)
		}
	}
}
