package inventory

import (
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// fileCounter counts the reads of every file.
type fileCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (o *fileCounter) FileRead(p string, _ []byte, _ error) {
	o.mu.Lock()
	o.n[p]++
	o.mu.Unlock()
}
func (o *fileCounter) Listed(string)                                {}
func (o *fileCounter) Touched(string)                               {}
func (o *fileCounter) EthtoolRead(string, map[string]uint64, error) {}

// A port's counters and LIDs, as the checks first read them, are what the host's description
// shows: ReadFiles and ReadAttr read each file once per run, ErrorCounters and ReadAttrs take
// those readings, and ReadFilesNow (an interval's second reading) reads anew.
func TestPortFilesReadOncePerRun(t *testing.T) {
	obs := &fileCounter{n: map[string]int{}}
	h := build(t).Observed(obs, func(_ string, c host.NetlinkConn) host.NetlinkConn { return c })
	inv := Discover(h)
	pf := inv.Device("mlx5_0")
	p := pf.Ports[0]
	dir := p.Dir(pf.Name)
	vals, errs := p.ReadFiles(h, pf.Name, "counters", []string{"symbol_error", "link_downed"})
	if vals[0] != "7" || vals[1] != "1" || errs[0] != nil || errs[1] != nil {
		t.Fatalf("ReadFiles = %q, %v", vals, errs)
	}
	if lid, err := p.ReadAttr(h, pf.Name, "lid"); err != nil || lid != "0x1a" {
		t.Fatalf("ReadAttr(lid) = %q, %v", lid, err)
	}
	if c := ErrorCounters(h, pf, p); c["symbol_error"] != 7 || c["link_downed"] != 1 {
		t.Errorf("ErrorCounters = %v", c)
	}
	q := *p
	q.ReadAttrs(h, pf.Name)
	if q.LID == nil || *q.LID != 0x1a {
		t.Errorf("ReadAttrs LID = %v", q.LID)
	}
	for _, f := range []string{"counters/symbol_error", "counters/link_downed", "lid"} {
		if n := obs.n[dir+"/"+f]; n != 1 {
			t.Errorf("%s read %d times, want once", f, n)
		}
	}
	vals, _ = p.ReadFilesNow(h, pf.Name, "counters", []string{"symbol_error"})
	if vals[0] != "7" || obs.n[dir+"/counters/symbol_error"] != 2 {
		t.Errorf("ReadFilesNow = %q after %d reads, want a second read", vals, obs.n[dir+"/counters/symbol_error"])
	}
}
