package observe_test

import (
	"context"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
)

// readCounter counts the reads of every file.
type readCounter struct {
	mu    sync.Mutex
	reads map[string]int
}

func (o *readCounter) FileRead(p string, _ []byte, _ error) {
	o.mu.Lock()
	o.reads[p]++
	o.mu.Unlock()
}
func (o *readCounter) Listed(string)                                {}
func (o *readCounter) Touched(string)                               {}
func (o *readCounter) EthtoolRead(string, map[string]uint64, error) {}

// factFile reports whether p is a file one of this package's facts reads.
func factFile(p string) bool {
	switch {
	case p == observe.ModulesPath, p == "/proc/interrupts", p == "/proc/config.gz", strings.HasPrefix(p, "/boot/config-"):
		return true
	case strings.HasPrefix(p, observe.NetClassDir+"/"):
		switch path.Base(p) {
		case "operstate", "mtu", "flags", "speed":
			return strings.Count(p, "/") == 5 // /sys/class/net/<if>/<attr>
		}
	case strings.HasPrefix(path.Base(p), "aer_dev_"), strings.HasPrefix(path.Base(p), "aer_rootport_total_err_"):
		return true
	}
	return false
}

// A whole run (every check that reads the host) reads each shared fact's files once, however
// many checks judge them: /proc/modules is read by the module, presence and GPUDirect checks
// through one reading, the netdevs' attributes by the port and PCIe checks through another.
func TestRunReadsSharedFactsOnce(t *testing.T) {
	var cs []checks.Check
	for _, c := range checks.Default.All() {
		if !c.Probe {
			cs = append(cs, c)
		}
	}
	for _, tc := range []struct {
		fixture string
		want    []string // files that must have been read (once)
	}{
		{"gpu-no-peermem-acs", []string{observe.ModulesPath}},
		{"port-roce", []string{observe.ModulesPath}},
		{"cq-depth-128", []string{observe.ModulesPath, "/proc/interrupts"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			h, cleanup, err := snapshot.Open(checktest.Fixture(t, tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(cleanup)
			obs := &readCounter{reads: map[string]int{}}
			oh := h.Observed(obs, func(_ string, c host.NetlinkConn) host.NetlinkConn { return c })
			checks.Run(context.Background(), checks.NewEnv(oh, checks.Options{}), cs, 2)
			for _, p := range tc.want {
				if obs.reads[p] != 1 {
					t.Errorf("%s read %d times in one run, want once", p, obs.reads[p])
				}
			}
			facts := 0
			for p, n := range obs.reads {
				if factFile(p) {
					facts++
					if n != 1 {
						t.Errorf("%s read %d times in one run, want once", p, n)
					}
				}
			}
			if facts <= len(tc.want) {
				t.Errorf("only %d of the facts' files read: the fixture does not exercise them", facts)
			}
		})
	}
}
