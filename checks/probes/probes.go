// Package probes turns the verbs loopback probes (package probe) into findings, one probe per
// layer, each reported under that layer's check id: driver.verbs_probe (open and query),
// firmware.limits_probe (a QP at the reported limits), qp.loopback_probe (RC self-loopback with
// WRITE and SEND), cq.completion_probe (N completions, optional overrun) and
// pcie.bandwidth_probe (RDMA WRITE loopback bandwidth and latency). They live in one package
// because they share the library handle, the device/port walk, the per-device locks that keep
// two probes of one device from measuring each other, the gate that keeps apart the bandwidth
// probes of devices whose paths would disturb each other, and the limits probes' memory pool.
//
// Probes run only on a live host (a snapshot has no device to open) and only when --no-probe is
// not given; they create and destroy their own resources and touch nothing else.
package probes

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/pcie"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	for _, c := range []checks.Check{
		{ID: "driver.verbs_probe", Fault: "user-verbs", Description: "open each device through libibverbs and query device and port (fw_ver, limits, MTU, speed, GID)", Run: runDriver},
		{ID: "firmware.limits_probe", Fault: "firmware", Description: "create a QP at the limits the device reports (EINVAL = firmware/driver inconsistency)", Run: runLimits},
		{ID: "qp.loopback_probe", Fault: "qp-context", Description: "RC QP connected to itself: RESET->INIT->RTR->RTS, signaled RDMA WRITE and SEND, payloads checked", Run: runLoopback},
		{ID: "cq.completion_probe", Fault: "cq-eq", Description: "N signaled work requests complete on a CQ sized for them (--probe-cq-overrun: overrun is detected)", Run: runCQ},
		{ID: bandwidthID, Fault: "dma-engine", Description: "RDMA WRITE loopback bandwidth and small-message latency across the DMA path", Run: runBandwidth},
	} {
		c.Probe = true
		checks.Register(c)
	}
}

// state is shared by the probe checks of one run.
type state struct {
	lib *verbs.Lib
	err error
	// locks serialise the probes of one device, so that the bandwidth probe is not measured
	// against the others on the same device; probes of different devices run concurrently.
	locks deviceLocks
	// bandwidth keeps two devices' bandwidth probes apart when they would measure each other
	// (a shared PCIe link; software beside hardware; see dmaPath.disturbs). It is entered while
	// holding the device's lock, never the other way round, so no two probes wait for each
	// other.
	bandwidth bwGate
	// memory is the queue memory the limits probes of all devices share (probe.MemoryPool):
	// a bound per probe let eight devices' QPs at rxe's limits exhaust a 1 GiB guest.
	memOnce sync.Once
	memory  *probe.MemoryPool
}

func shared(env *checks.Env) *state { return stateFact.Get(env) }

var stateFact = checks.NewFact("verbs library and probe locks", func(*checks.Env) *state {
	lib, err := verbs.Load()
	return &state{lib: lib, err: err}
})

func (s *state) options(env *checks.Env) probe.Options {
	s.memOnce.Do(func() { s.memory = probe.NewMemoryPool(memoryBudget(env.Host)) })
	return probe.Options{Timeout: env.Opts.ProbeTimeout, SysfsRoot: filepath.Join(env.Host.Root(), "sys"), Memory: s.memory}
}

// fallbackBudget bounds the limits probe's queues when /proc/meminfo cannot be read.
const fallbackBudget = 256 << 20

// memoryBudget is what the limits probes' QPs of one run may take at once, and where that comes
// from: a quarter of the memory the kernel says is available for new work (MemAvailable,
// Documentation/filesystems/proc.rst). The quarter is rdmadiag's own margin, not a published
// figure: a health check on a busy node must leave its jobs the rest.
func memoryBudget(h *host.Host) (uint64, string) {
	const unknown = "MemAvailable unknown"
	s, err := h.ReadString("/proc/meminfo")
	if err != nil {
		return fallbackBudget, unknown
	}
	if kb, ok := meminfoKB(s, "MemAvailable"); ok && kb > 0 {
		return kb * 1024 / 4, "a quarter of MemAvailable"
	}
	return fallbackBudget, unknown
}

// meminfoKB reads one "Name:  N kB" line of /proc/meminfo.
func meminfoKB(meminfo, name string) (uint64, bool) {
	for line := range strings.SplitSeq(meminfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != name {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || n >= 1<<50 {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// target is one port of one device.
type target struct {
	dev  *inventory.Device
	port int
}

func (t target) subject() report.Subject {
	s := report.Subject{Kind: "port", Name: fmt.Sprintf("%s/%d", t.dev.Name, t.port), Device: t.dev.Name}
	if t.dev.PCI != nil {
		s.PCI = t.dev.PCI.BDF
	}
	return s
}

// each runs fn on every port (see schedule), or explains why nothing can be probed; what
// names the probe in the progress line.
func each(ctx context.Context, env *checks.Env, what string, fn func(ctx context.Context, s *state, t target) engine.Finding) ([]engine.Finding, error) {
	// Registered before anything slow (the library's load), so that the bandwidth check, which
	// waits for the light ones on each device, finds every light check of the run registered.
	var ph phase
	if order := orderFact.Get(env); what == bandwidthID {
		ph = heavy{order}
	} else {
		r := order.light()
		defer r.close()
		ph = r
	}
	s := shared(env)
	inv := env.Inventory()
	if len(inv.Devices) == 0 {
		return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary: "no RDMA device to probe"}}}, nil
	}
	if s.err != nil {
		return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary:     "verbs probes not run: " + s.err.Error(),
			Evidence:    []report.Evidence{report.Ev("libibverbs", s.err.Error(), "dlopen libibverbs.so.1")},
			Remediation: "install rdma-core's libibverbs and the provider for this NIC (Debian/Ubuntu: apt install libibverbs1 ibverbs-providers; RHEL: dnf install libibverbs)"}}}, nil
	}
	var ts []target
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			ts = append(ts, target{d, p.Num})
		}
	}
	var started atomic.Int32
	return schedule(ctx, &s.locks, ph, ts, func(ctx context.Context, t target) engine.Finding {
		env.Progressf("%s: probing %s/%d (%d/%d)", what, t.dev.Name, t.port, started.Add(1), len(ts))
		return fn(ctx, s, t)
	})
}

// schedule runs probe on every target: the devices concurrently, each device's ports one after
// the other, and each probe only while it holds its device's lock, so that the probe checks of a
// run (which all call schedule) never overlap on one device. The cost of a run thus grows with
// the busiest device, not with the device count. When ctx ends, probes not yet started are not
// started (nor waited for: a probe already running ends at its own deadline, which ctx bounds)
// and the error is ctx's; the findings keep the targets' order.
func schedule(ctx context.Context, locks *deviceLocks, ph phase, ts []target, probe func(ctx context.Context, t target) engine.Finding) ([]engine.Finding, error) {
	type devRun struct {
		name string
		idx  []int // into ts, in order
	}
	var runs []*devRun
	byName := map[string]*devRun{}
	for i, t := range ts {
		r := byName[t.dev.Name]
		if r == nil {
			r = &devRun{name: t.dev.Name}
			byName[t.dev.Name] = r
			runs = append(runs, r)
		}
		r.idx = append(r.idx, i)
	}
	results := make([]*engine.Finding, len(ts))
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ph != nil {
				defer ph.done(r.name)
				if !ph.ready(ctx, r.name) {
					return
				}
			}
			for _, i := range r.idx {
				unlock, ok := locks.lock(ctx, r.name)
				if !ok {
					return
				}
				f := probe(ctx, ts[i])
				unlock()
				results[i] = &f
			}
		}()
	}
	wg.Wait()
	out := make([]engine.Finding, 0, len(ts))
	for _, f := range results {
		if f != nil {
			out = append(out, *f)
		}
	}
	if len(out) < len(ts) {
		return out, ctx.Err()
	}
	return out, nil
}

// deviceLocks holds one lock per device name; waiting for one gives up when ctx ends.
type deviceLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// lock takes the device's lock, or returns false once ctx has ended (then nothing is held).
func (l *deviceLocks) lock(ctx context.Context, dev string) (unlock func(), ok bool) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]chan struct{}{}
	}
	ch := l.m[dev]
	if ch == nil {
		ch = make(chan struct{}, 1)
		l.m[dev] = ch
	}
	l.mu.Unlock()
	if ctx.Err() != nil {
		return nil, false
	}
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, false
	}
	if ctx.Err() != nil {
		<-ch
		return nil, false
	}
	return func() { <-ch }, true
}

func runDriver(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	return each(ctx, env, "driver.verbs_probe", func(ctx context.Context, s *state, t target) engine.Finding {
		return driverFinding(t, probe.Device(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runLimits(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	return each(ctx, env, "firmware.limits_probe", func(ctx context.Context, s *state, t target) engine.Finding {
		return limitsFinding(t, probe.Limits(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runLoopback(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	return each(ctx, env, "qp.loopback_probe", func(ctx context.Context, s *state, t target) engine.Finding {
		return loopbackFinding(t, probe.Loopback(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runCQ(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	return each(ctx, env, "cq.completion_probe", func(ctx context.Context, s *state, t target) engine.Finding {
		return cqFinding(t, probe.CQ(ctx, s.lib, t.dev.Name, t.port, env.Opts.ProbeCQOverrun, s.options(env)))
	})
}

const bandwidthID = "pcie.bandwidth_probe"

func runBandwidth(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	return each(ctx, env, bandwidthID, func(ctx context.Context, s *state, t target) engine.Finding {
		// The PCIe layer's budget (narrowest trained link on the path) is the other ceiling the
		// loopback is judged against; an error leaves it unknown and the port rate alone counts.
		b, err := pcie.DeviceBudget(env, t.dev.Name)
		if err != nil {
			b = pcie.Budget{}
		}
		var r probe.BandwidthResult
		beside, ok := s.bandwidth.run(ctx, t.dev, func(ctx context.Context) {
			r = probe.Bandwidth(ctx, s.lib, t.dev.Name, t.port, s.options(env))
		})
		if !ok {
			// The run ended while the probe waited: with the ended context the probe opens
			// nothing and reports the run's end at its first stage.
			r = probe.Bandwidth(ctx, s.lib, t.dev.Name, t.port, s.options(env))
		}
		return bandwidthFinding(t, r, b, beside)
	})
}
