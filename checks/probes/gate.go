package probes

import (
	"context"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/internal/inventory"
)

// dmaPath is what a device's bandwidth probe loads besides the device: the PCIe links its
// loopback crosses, or, for a software device, the CPU.
type dmaPath struct {
	// software: rxe and siw copy in the CPU and have no DMA path (rxe loops a local
	// destination back inside the kernel, rxe_xmit_packet in drivers/infiniband/sw/rxe/rxe_net.c).
	software bool
	// links name the PCIe links the traffic crosses: the device's own upstream link, which
	// every function of a multi-function device shares (a VF's is its PF's), and the link of
	// each bridge above it up to the root port. A bridge on both of two paths puts a link on
	// both: below a root port or a switch downstream port is one link to one device, and
	// above a switch upstream port one link to the port above.
	links []string
}

// pathOf is d's dmaPath, from the resolved sysfs path the inventory read (PCIFunction.Path).
func pathOf(d *inventory.Device) dmaPath {
	if d.Software() {
		return dmaPath{software: true}
	}
	fn := d.PCI.BDF
	if d.PCI.PF != "" {
		fn = d.PCI.PF
	}
	// The device is the BDF without its function number, as pcie.bandwidth groups the
	// functions that share one link.
	dev, _, _ := strings.Cut(fn, ".")
	p := dmaPath{links: []string{"device " + dev}}
	for _, b := range d.PCI.Path {
		p.links = append(p.links, "bridge "+b)
	}
	return p
}

// disturbs says whether bandwidth probes on a and b, run at once, would measure each other.
// Two hardware devices do when a PCIe link carries both loopbacks (each would see part of the
// link's bandwidth and could be judged below its ceiling), not when their paths meet only in
// the root complex. Software devices measure the CPU, so they run beside each other and the
// finding says the figure is a share; but never beside a hardware device's probe, whose
// figure is judged and whose completion polling needs a CPU that they would keep busy.
func (a dmaPath) disturbs(b dmaPath) bool {
	if a.software || b.software {
		return a.software != b.software
	}
	for _, x := range a.links {
		for _, y := range b.links {
			if x == y {
				return true
			}
		}
	}
	return false
}

// bwGate admits a bandwidth probe while no running one's path disturbs its path, and counts,
// for each probe, the others that ran beside it.
type bwGate struct {
	mu      sync.Mutex
	running map[*gateEntry]struct{}
	// left is closed, and replaced, whenever a probe leaves: waiters then look again.
	left chan struct{}
}

type gateEntry struct {
	path dmaPath
	// beside counts the probes that ran at some time during this one.
	beside int
}

// enter waits until p disturbs no running probe, or returns false once ctx has ended (then
// nothing is held). leave ends the probe and says how many others ran beside it. Waiters are
// not queued in order: a run has one bandwidth probe per port, so none waits for long.
func (g *bwGate) enter(ctx context.Context, p dmaPath) (leave func() (beside int), ok bool) {
	for {
		if ctx.Err() != nil {
			return nil, false
		}
		g.mu.Lock()
		if g.running == nil {
			g.running = map[*gateEntry]struct{}{}
			g.left = make(chan struct{})
		}
		clear := true
		for e := range g.running {
			if e.path.disturbs(p) {
				clear = false
				break
			}
		}
		if clear {
			e := &gateEntry{path: p, beside: len(g.running)}
			for o := range g.running {
				o.beside++
			}
			g.running[e] = struct{}{}
			g.mu.Unlock()
			return func() int {
				g.mu.Lock()
				defer g.mu.Unlock()
				if _, ok := g.running[e]; ok {
					delete(g.running, e)
					close(g.left)
					g.left = make(chan struct{})
				}
				return e.beside
			}, true
		}
		left := g.left
		g.mu.Unlock()
		select {
		case <-left:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// run runs probe once the gate admits d's path, and says how many other probes ran beside it.
// When ctx ends first it returns false without running probe.
func (g *bwGate) run(ctx context.Context, d *inventory.Device, probe func(ctx context.Context)) (beside int, ok bool) {
	leave, ok := g.enter(ctx, pathOf(d))
	if !ok {
		return 0, false
	}
	probe(ctx)
	return leave(), true
}
