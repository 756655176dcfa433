package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrOverBudget: a reservation asked for more than the whole MemoryPool.
var ErrOverBudget = errors.New("more than the whole probe memory budget")

// MemoryPool is the queue memory the limits probes of one run may hold at once. Each attempt
// reserves what its QP's queues need (QueueBytes, or RXEQueueBytes on rxe: lower bounds) before
// ibv_create_qp and gives it back after ibv_destroy_qp, so the limits probes of several devices
// run concurrently without together taking more than the budget: a bound per probe let eight
// probes map eight budgets at once. A nil pool bounds nothing.
type MemoryPool struct {
	total uint64
	why   string
	mu    sync.Mutex
	held  uint64
	// freed is closed, and replaced, whenever memory is given back: waiters then look again.
	freed chan struct{}
}

// NewMemoryPool is a pool of total bytes (0: no bound); why says where the figure comes from,
// for the findings ("a quarter of MemAvailable").
func NewMemoryPool(total uint64, why string) *MemoryPool {
	return &MemoryPool{total: total, why: why, freed: make(chan struct{})}
}

// Total is the pool's size in bytes; 0 when nothing is bounded.
func (p *MemoryPool) Total() uint64 {
	if p == nil {
		return 0
	}
	return p.total
}

// Why says where the pool's size comes from.
func (p *MemoryPool) Why() string {
	if p == nil {
		return ""
	}
	return p.why
}

// Held is what the reservations not yet released hold.
func (p *MemoryPool) Held() uint64 {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Reserve holds n bytes of the pool until release is called (more than once is harmless),
// waiting while other reservations leave too little. It fails at once with ErrOverBudget when n
// is more than the whole pool (waiting could not help), and with ctx's cause when ctx ends
// first; a failed reservation holds nothing. Waiters are not queued in order: a run has a few
// attempts per device, so none waits for long behind smaller ones.
func (p *MemoryPool) Reserve(ctx context.Context, n uint64) (release func(), err error) {
	if p == nil || p.total == 0 {
		return func() {}, nil
	}
	if n > p.total {
		return nil, fmt.Errorf("%d MiB: %w of %d MiB", n>>20, ErrOverBudget, p.total>>20)
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		p.mu.Lock()
		if p.total-p.held >= n {
			p.held += n
			p.mu.Unlock()
			var once sync.Once
			return func() { once.Do(func() { p.give(n) }) }, nil
		}
		freed := p.freed
		p.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

func (p *MemoryPool) give(n uint64) {
	p.mu.Lock()
	p.held -= n
	close(p.freed)
	p.freed = make(chan struct{})
	p.mu.Unlock()
}
