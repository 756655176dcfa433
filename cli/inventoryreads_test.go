package cli

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

// fileReads counts the reads of every file; Take returns the counts so far and starts again.
type fileReads struct {
	mu    sync.Mutex
	reads map[string]int
}

func (o *fileReads) FileRead(p string, _ []byte, _ error) {
	o.mu.Lock()
	o.reads[p]++
	o.mu.Unlock()
}
func (o *fileReads) Listed(string)                                {}
func (o *fileReads) Touched(string)                               {}
func (o *fileReads) EthtoolRead(string, map[string]uint64, error) {}

func (o *fileReads) take() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.reads
	o.reads = map[string]int{}
	return r
}

// The report's inventory describes the host the checks judged: after a run of every check it
// reads none of the files the checks read (the ports' state, rate and LIDs, the netdevs' MTU)
// again, but takes the run's readings of them.
func TestReportInventoryReadsNothingTheChecksRead(t *testing.T) {
	var cs []checks.Check
	for _, c := range checks.Default.All() {
		if !c.Probe {
			cs = append(cs, c)
		}
	}
	for _, fixture := range []string{"port-roce", "port-cx7-ib", "healthy", "drv-module-states"} {
		t.Run(fixture, func(t *testing.T) {
			h, cleanup, err := snapshot.Open(checktest.Fixture(t, fixture))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cleanup)
			obs := &fileReads{reads: map[string]int{}}
			env := checks.NewEnv(h.Observed(obs, func(_ string, c host.NetlinkConn) host.NetlinkConn { return c }), checks.Options{})
			checks.Run(context.Background(), env, cs, 2)
			byChecks := obs.take()
			inv := reportInventory(env)
			if len(inv.Devices) == 0 || len(inv.Devices[0].Ports) == 0 || inv.Devices[0].Ports[0].State == "" {
				t.Fatalf("inventory without a described port: %+v", inv)
			}
			var again []string
			for p := range obs.take() {
				if byChecks[p] > 0 {
					again = append(again, p)
				}
			}
			sort.Strings(again)
			if len(again) > 0 {
				t.Errorf("the report's inventory read again %d file(s) the checks read: %s", len(again), strings.Join(again, ", "))
			}
		})
	}
}
