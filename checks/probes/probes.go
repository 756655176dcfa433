// Package probes turns the verbs loopback probes (package probe) into findings, one probe per
// layer, each reported under that layer's check id: driver.verbs_probe (open and query),
// firmware.limits_probe (a QP at the reported limits), qp.loopback_probe (RC self-loopback with
// WRITE and SEND), cq.completion_probe (N completions, optional overrun) and
// pcie.bandwidth_probe (RDMA WRITE loopback bandwidth and latency). They live in one package
// because they share the library handle, the device/port walk and a lock that keeps two probes
// from measuring each other.
//
// Probes run only on a live host (a snapshot has no device to open) and only when --no-probe is
// not given; they create and destroy their own resources and touch nothing else.
package probes

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/pcie"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/inventory"
	"github.com/rdmadiag/rdmadiag/probe"
	"github.com/rdmadiag/rdmadiag/report"
)

func init() {
	for _, c := range []checks.Check{
		{ID: "driver.verbs_probe", Fault: "user-verbs", Description: "open each device through libibverbs and query device and port (fw_ver, limits, MTU, speed, GID)", Run: runDriver},
		{ID: "firmware.limits_probe", Fault: "firmware", Description: "create a QP at the limits the device reports (EINVAL = firmware/driver inconsistency)", Run: runLimits},
		{ID: "qp.loopback_probe", Fault: "qp-context", Description: "RC QP connected to itself: RESET->INIT->RTR->RTS, signaled RDMA WRITE and SEND, payloads checked", Run: runLoopback},
		{ID: "cq.completion_probe", Fault: "cq-eq", Description: "N signaled work requests complete on a CQ sized for them (--probe-cq-overrun: overrun is detected)", Run: runCQ},
		{ID: "pcie.bandwidth_probe", Fault: "dma-engine", Description: "RDMA WRITE loopback bandwidth and small-message latency across the DMA path", Run: runBandwidth},
	} {
		c.Probe = true
		checks.Register(c)
	}
}

// state is shared by the probe checks of one run.
type state struct {
	lib *verbs.Lib
	err error
	// mu serialises probes so that the bandwidth probe is not measured against the others.
	mu sync.Mutex
}

func shared(env *checks.Env) *state { return stateFact.Get(env) }

var stateFact = checks.NewFact("verbs library and probe lock", func(*checks.Env) *state {
	lib, err := verbs.Load()
	return &state{lib: lib, err: err}
})

func (s *state) options(env *checks.Env) probe.Options {
	return probe.Options{Timeout: env.Opts.ProbeTimeout, SysfsRoot: filepath.Join(env.Host.Root(), "sys")}
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

// each runs fn on every port, serialised, or explains why nothing can be probed.
func each(ctx context.Context, env *checks.Env, what string, fn func(ctx context.Context, s *state, t target) report.Finding) ([]report.Finding, error) {
	s := shared(env)
	inv := env.Inventory()
	if len(inv.Devices) == 0 {
		return []report.Finding{{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary: "no RDMA device to probe"}}, nil
	}
	if s.err != nil {
		return []report.Finding{{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary:     "verbs probes not run: " + s.err.Error(),
			Evidence:    []report.Evidence{report.Ev("libibverbs", s.err.Error(), "dlopen libibverbs.so.1")},
			Remediation: "install rdma-core's libibverbs and the provider for this NIC (Debian/Ubuntu: apt install libibverbs1 ibverbs-providers; RHEL: dnf install libibverbs)"}}, nil
	}
	var out []report.Finding
	total := 0
	for _, d := range inv.Devices {
		total += len(d.Ports)
	}
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			s.mu.Lock()
			env.Progressf("%s: probing %s/%d (%d/%d)", what, d.Name, p.Num, len(out)+1, total)
			f := fn(ctx, s, target{d, p.Num})
			s.mu.Unlock()
			out = append(out, f)
		}
	}
	return out, nil
}

func runDriver(ctx context.Context, env *checks.Env) ([]report.Finding, error) {
	return each(ctx, env, "driver.verbs_probe", func(ctx context.Context, s *state, t target) report.Finding {
		return driverFinding(t, probe.Device(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runLimits(ctx context.Context, env *checks.Env) ([]report.Finding, error) {
	return each(ctx, env, "firmware.limits_probe", func(ctx context.Context, s *state, t target) report.Finding {
		return limitsFinding(t, probe.Limits(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runLoopback(ctx context.Context, env *checks.Env) ([]report.Finding, error) {
	return each(ctx, env, "qp.loopback_probe", func(ctx context.Context, s *state, t target) report.Finding {
		return loopbackFinding(t, probe.Loopback(ctx, s.lib, t.dev.Name, t.port, s.options(env)))
	})
}

func runCQ(ctx context.Context, env *checks.Env) ([]report.Finding, error) {
	return each(ctx, env, "cq.completion_probe", func(ctx context.Context, s *state, t target) report.Finding {
		return cqFinding(t, probe.CQ(ctx, s.lib, t.dev.Name, t.port, env.Opts.ProbeCQOverrun, s.options(env)))
	})
}

func runBandwidth(ctx context.Context, env *checks.Env) ([]report.Finding, error) {
	return each(ctx, env, "pcie.bandwidth_probe", func(ctx context.Context, s *state, t target) report.Finding {
		// The PCIe layer's budget (narrowest trained link on the path) is the other ceiling the
		// loopback is judged against; an error leaves it unknown and the port rate alone counts.
		b, err := pcie.DeviceBudget(env.Host, env.Inventory(), t.dev.Name)
		if err != nil {
			b = pcie.Budget{}
		}
		return bandwidthFinding(t, probe.Bandwidth(ctx, s.lib, t.dev.Name, t.port, s.options(env)), b)
	})
}
