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
		ID:          "qp.state",
		Description: "QPs in ERR or SQE state, by device, port and owner (RDMA netlink, as rdma res show qp)",
		Fault:       "qp-context",
		Run:         runState,
	})
}

// errState selects the states that mean the QP can no longer move data until its owner resets it.
func errState(s uint8) bool { return s == nldev.QPStateErr || s == nldev.QPStateSQE }

func runState(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	t := rdmares.QPs(env)
	if t.Err != nil {
		return netlinkUnavailable(env, t.Err), nil
	}
	if len(t.Devices) == 0 {
		return noDevices(), nil
	}
	owners := rdmares.SharedOwners(env)
	var out []engine.Finding
	for _, d := range t.Devices {
		src := rdmares.Source("QP", d.Dev.Name)
		if d.Err != nil {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: devSubject(env, d.Dev.Name), Severity: report.Unknown,
				Summary:  fmt.Sprintf("%s: QP table could not be read: %v", d.Dev.Name, d.Err),
				Evidence: []report.Evidence{report.Ev("QP dump", d.Err.Error(), src)}}})
			continue
		}
		c := Take(d.Objs, errState)
		if len(c.Groups) == 0 {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: devSubject(env, d.Dev.Name), Severity: report.OK,
				Summary:  fmt.Sprintf("%s: %d QP(s), none in ERR or SQE", d.Dev.Name, c.Total),
				Evidence: []report.Evidence{report.EvExp("QPs by state", c.StateCounts(), "no ERR or SQE", src)}}})
			continue
		}
		for _, g := range c.Groups {
			f := errFinding(env, d.Dev.Name, g, owners.Name(g.PID, g.Kern), c, src)
			f.Key = fmt.Sprintf("%s/%d/qp:%s/%s", d.Dev.Name, g.Port, owners.Key(g.PID, g.Kern), nldev.QPStateName(g.State))
			out = append(out, f)
		}
	}
	return out, nil
}

func errFinding(env *checks.Env, dev string, g *Group, owner string, c Census, src string) engine.Finding {
	subj := devSubject(env, dev)
	subj.Kind = "qp"
	subj.Name = fmt.Sprintf("%s/%d %s %s", dev, g.Port, owner, nldev.QPStateName(g.State))
	f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Warning}}
	n := len(g.QPNs)
	state := nldev.QPStateName(g.State)
	ev := []report.Evidence{
		report.EvExp("state", state, "RTS (or RESET/INIT/RTR while connecting)", src),
		report.Ev("owner", owner, src),
		report.Ev("QPs", fmt.Sprintf("%d (%s)", n, g.TypeCounts()), src),
		report.Ev("QP numbers (lqpn)", QPNList(g.QPNs), src),
		report.Ev("device QPs by state", c.StateCounts(), src),
	}
	where := fmt.Sprintf("rdma res show qp link %s/%d state %s", dev, g.Port, state)
	switch {
	case g.State == nldev.QPStateSQE:
		f.Summary = fmt.Sprintf("%s/%d: %d QP(s) of %s in SQE: a send work request failed and the send queue stopped", dev, g.Port, n, owner)
		f.Remediation = "The owner must read the failed completion's status (ibv_wc_status) and move the QP back to RTS or recreate it; " +
			"until then nothing is sent on it. Inspect with: " + where + "."
	case g.Kernel():
		// A kernel consumer's QP serves every application on the port: the GSI QP carries the
		// MADs connection management and SA queries need, rdma_cm's the connections it sets up.
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s/%d: %d QP(s) of kernel module %s in ERR (QP context fault): the kernel's own "+
			"connection/management traffic on this port is failing, which affects every application", dev, g.Port, n, g.Kern)
		f.Remediation = "A kernel-owned QP in ERR usually follows a catastrophic device or port event (firmware fault, " +
			"link loss, PCIe error) rather than an application bug: read the kernel log around the event " +
			"(dmesg | grep -i -e " + g.Kern + " -e " + dev + "), the port and PCIe findings below this layer, and the " +
			"firmware health; reloading the driver (or resetting the device) recreates the QP. Inspect with: " + where + "."
		f.Action = report.ActionResetDevice // only a driver reload or device reset recreates it
	default:
		f.Summary = fmt.Sprintf("%s/%d: %d QP(s) of %s in ERR (QP context fault): this application's connections are dead "+
			"until it recreates them", dev, g.Port, n, owner)
		f.Remediation = "QPs enter ERR on a fatal completion error: usually remote access errors (wrong rkey, missing " +
			"remote access rights, memory deregistered too early), transport or RNR retry exceeded (peer dead, path or " +
			"MTU problem, receiver not posting buffers), or a catastrophic device event. Look at the application's " +
			"work-completion statuses and async events (its own log), the peer's health, and the port's error counters " +
			"(port layer). Inspect with: " + where + "."
	}
	f.Evidence = ev
	return f
}
