package probes

import (
	"context"
	"sync"

	"github.com/rdmadiag/rdmadiag/checks"
)

// phase says when a probe check may start on a device (ready) and hears when it is done with
// that device (done); schedule calls both once per device.
type phase interface {
	ready(ctx context.Context, dev string) bool
	done(dev string)
}

// lightFirst has the run's light probes (open and query, limits, loopback, CQ: tens of
// milliseconds each) run before the bandwidth probes, each of which keeps a thread busy for up to
// half the probe timeout. Run after it, the light probes of eight devices shared two CPUs with eight
// busy bandwidth probes and took seconds each (milliseconds alone). It orders, it does not
// guarantee: a light check registers when it starts, so one that starts after a bandwidth probe
// has begun on a device probes that device after it, which is slower and equally right.
type lightFirst struct {
	mu   sync.Mutex
	runs map[*lightRun]struct{}
	// changed is closed, and replaced, whenever a light check is done with a device.
	changed chan struct{}
}

// lightRun is one light probe check of the run: the devices it is done with.
type lightRun struct {
	l      *lightFirst
	devs   map[string]bool
	closed bool
}

var orderFact = checks.NewFact("order of the probe checks", func(*checks.Env) *lightFirst { return newLightFirst() })

func newLightFirst() *lightFirst {
	return &lightFirst{runs: map[*lightRun]struct{}{}, changed: make(chan struct{})}
}

// light registers a light probe check; close it when the check returns.
func (l *lightFirst) light() *lightRun {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &lightRun{l: l, devs: map[string]bool{}}
	l.runs[r] = struct{}{}
	return r
}

func (r *lightRun) ready(context.Context, string) bool { return true }

func (r *lightRun) done(dev string) {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.devs[dev] = true
	r.l.wake()
}

// close says the check is done with every device, probed or not.
func (r *lightRun) close() {
	r.l.mu.Lock()
	defer r.l.mu.Unlock()
	r.closed = true
	r.l.wake()
}

func (l *lightFirst) wake() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// heavy is the phase of the bandwidth probes: they start once every light check registered so
// far is done with every device. A bandwidth figure is then taken while no other probe of the
// run moves traffic: a light probe on another function of the same card, or behind the same
// switch, shares the link being measured; and on software devices the first devices' bandwidth
// loops left the last devices' light probes two CPUs' leftovers (in the lab, eight rxe devices
// took 1.51-1.61x one device in a device-by-device order, 1.28-1.44x in this one). A wedged
// device's light probe delays them by at most its own --probe-timeout per light check, within
// the run's --timeout.
type heavy struct{ l *lightFirst }

func (h heavy) ready(ctx context.Context, _ string) bool {
	for {
		h.l.mu.Lock()
		pending := false
		for r := range h.l.runs {
			if !r.closed {
				pending = true
				break
			}
		}
		ch := h.l.changed
		h.l.mu.Unlock()
		if !pending {
			return ctx.Err() == nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func (heavy) done(string) {}
