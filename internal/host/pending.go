package host

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// PendingOp is a read or query that has started and not returned.
type PendingOp struct {
	What  string
	Since time.Time
}

type pendingOps struct {
	mu   sync.Mutex
	next int
	ops  map[int]PendingOp
}

// begin records an operation until the returned function is called.
func (h *Host) begin(what string) func() {
	if h.observe != nil {
		h.observe(what)
	}
	p := h.pending
	p.mu.Lock()
	id := p.next
	p.next++
	p.ops[id] = PendingOp{What: what, Since: time.Now()}
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.ops, id)
		p.mu.Unlock()
	}
}

// Pending lists the reads and queries in progress, oldest first: after a deadline, these are
// where the run is blocked (a firmware-backed sysfs read on a wedged device, a FIFO).
func (h *Host) Pending() []PendingOp {
	p := h.pending
	p.mu.Lock()
	out := make([]PendingOp, 0, len(p.ops))
	for _, op := range p.ops {
		out = append(out, op)
	}
	p.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Since.Before(out[j].Since) })
	return out
}

// trackedConn records each netlink exchange as pending while the kernel answers.
type trackedConn struct {
	NetlinkConn
	h    *Host
	what string
}

func (c trackedConn) Exchange(req Request) ([]byte, error) {
	defer c.h.begin(fmt.Sprintf("%s (type 0x%04x)", c.what, req.Type))()
	return c.NetlinkConn.Exchange(req)
}
