package qp

import (
	"context"
	"fmt"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "qp.stuck",
		Description: "With --interval: QPs that stay in RESET, INIT or RTR across both readings (connections that never complete)",
		Fault:       "qp-context",
		Run:         runStuck,
	})
}

func connecting(s uint8) bool {
	return s == nldev.QPStateReset || s == nldev.QPStateInit || s == nldev.QPStateRTR
}

type qpID struct {
	port, lqpn uint32
}

// Stuck returns the QPs of after that were already in the same connecting state in before.
// A QP number reused by a new QP in between would look stuck too; QP numbers are allocated
// round-robin by every driver we know, so reuse within one interval needs the whole range.
func Stuck(before, after []nldev.QP) []nldev.QP {
	prev := make(map[qpID]uint8, len(before))
	for i := range before {
		if connecting(before[i].State) {
			prev[qpID{before[i].Port, before[i].LQPN}] = before[i].State
		}
	}
	var out []nldev.QP
	for i := range after {
		q := &after[i]
		if s, ok := prev[qpID{q.Port, q.LQPN}]; ok && s == q.State {
			out = append(out, *q)
		}
	}
	return out
}

func runStuck(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	if env.Opts.Interval <= 0 {
		return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
			Summary: "needs two readings: run with --interval (e.g. --interval 10s) to find QPs stuck before RTS"}}}, nil
	}
	if skip := checks.IntervalNotApplied(env, "the QP table"); skip != nil {
		// One reading replayed twice would call every connecting QP stuck.
		return skip, nil
	}
	first := rdmares.QPs(env)
	if first.Err != nil {
		return netlinkUnavailable(env, first.Err), nil
	}
	if len(first.Devices) == 0 {
		return noDevices(), nil
	}
	if _, err := env.SecondReading(ctx, "QP"); err != nil {
		return nil, err
	}
	second := rdmares.ReadQPs(env)
	if second.Err != nil {
		return nil, fmt.Errorf("second QP reading: %w", second.Err)
	}
	after := map[uint32]rdmares.DeviceTable[nldev.QP]{}
	for _, d := range second.Devices {
		after[d.Dev.Index] = d
	}
	owners := rdmares.SharedOwners(env)
	var out []engine.Finding
	for _, d := range first.Devices {
		src := rdmares.Source("QP", d.Dev.Name)
		a, ok := after[d.Dev.Index]
		switch {
		case d.Err != nil || !ok || a.Err != nil:
			why := "device gone in the second reading"
			if d.Err != nil {
				why = d.Err.Error()
			} else if a.Err != nil {
				why = a.Err.Error()
			}
			out = append(out, engine.Finding{Finding: report.Finding{Subject: devSubject(env, d.Dev.Name), Severity: report.Unknown,
				Summary: d.Dev.Name + ": stuck QPs not judged: " + why}})
			continue
		}
		stuck := Stuck(d.Objs, a.Objs)
		c := Take(stuck, func(uint8) bool { return true })
		if len(c.Groups) == 0 {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: devSubject(env, d.Dev.Name), Severity: report.OK,
				Summary:  fmt.Sprintf("%s: no QP stayed in RESET/INIT/RTR over %s (%d QPs)", d.Dev.Name, env.Opts.Interval, len(a.Objs)),
				Evidence: []report.Evidence{report.Ev("QPs by state (second reading)", stateCounts(a.Objs), src)}}})
			continue
		}
		for _, g := range c.Groups {
			owner := owners.Name(g.PID, g.Kern)
			subj := devSubject(env, d.Dev.Name)
			subj.Kind, subj.Name = "qp", fmt.Sprintf("%s/%d %s %s", d.Dev.Name, g.Port, owner, nldev.QPStateName(g.State))
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Warning,
				Summary: fmt.Sprintf("%s/%d: %d QP(s) of %s stayed in %s for %s: their connections never completed",
					d.Dev.Name, g.Port, len(g.QPNs), owner, nldev.QPStateName(g.State), env.Opts.Interval),
				Evidence: []report.Evidence{
					report.EvExp("state in both readings", nldev.QPStateName(g.State), "RTS", src),
					report.Ev("owner", owner, src),
					report.Ev("QPs", fmt.Sprintf("%d (%s)", len(g.QPNs), g.TypeCounts()), src),
					report.Ev("QP numbers (lqpn)", QPNList(g.QPNs), src),
				},
				Remediation: "A QP left in INIT/RTR means the connection handshake did not finish: the peer is unreachable " +
					"(routing, GID/address resolution, a missing subnet manager path), the out-of-band exchange failed, or " +
					"the application leaks half-built QPs. Check the application's connection logs and rdma res show qp lqpn N; " +
					"RESET QPs that are never used are a leak that eats into max_qp.",
			}})
		}
	}
	return out, nil
}

func stateCounts(qps []nldev.QP) string {
	c := Take(qps, func(uint8) bool { return false })
	return c.StateCounts()
}
