package cq

import (
	"context"
	"fmt"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "cq.errors",
		Description: "CQ overruns and EQ errors that already happened: kernel log (mlx5 \"CQ error on CQN\", rxe \"queue full\", EQ recovery) and devlink health (vnic cq_overrun/comp_eq_overrun/async_eq_overrun, fw/fw_fatal/tx/rx reporters)",
		Fault:       "cq-eq",
		Run:         runErrors,
		KernelLog:   true,
	})
}

func runErrors(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if inv.Absent != nil || len(inv.Devices) == 0 {
		return rdmares.NoDevices(), nil
	}
	// The kernel log and devlink are independent witnesses: either can be missing while the
	// other still reports.
	return append(kernelLogFindings(env), devlinkFindings(env)...), nil
}

func kernelLogFindings(env *checks.Env) []engine.Finding {
	inv := env.Inventory()
	ke, err := env.KernelEvents()
	if err != nil {
		return []engine.Finding{checks.KernelLogFinding(err, "past CQ overruns and EQ errors")}
	}
	klog := ke.Log
	byDev := map[string][]kevent.Event{}
	var unattributed []kevent.Event
	for _, e := range ke.For(checks.JudgeCQ) {
		if dev := deviceOf(inv, e); dev != "" {
			byDev[dev] = append(byDev[dev], e)
		} else {
			unattributed = append(unattributed, e)
		}
	}
	var out []engine.Finding
	for _, d := range inv.Devices {
		evs := byDev[d.Name]
		subj := rdmares.DevSubject(env, d.Name)
		if len(evs) == 0 {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK,
				Summary:  d.Name + ": no CQ overrun or EQ error in the kernel log",
				Evidence: []report.Evidence{report.EvExp("CQ/EQ error records", "0", "0", klog.Cite)}}})
			continue
		}
		out = append(out, eventFinding(subj, d.Name, evs, klog))
	}
	if len(unattributed) > 0 {
		out = append(out, eventFinding(checks.KernelLogSubject, "an unidentified device", unattributed, klog))
	}
	return out
}

// deviceOf is the RDMA device of the run an event is about, by name or PCI function; "" for
// one the inventory does not hold.
func deviceOf(inv *inventory.Inventory, e kevent.Event) string {
	for _, d := range inv.Devices {
		if e.Device == d.Name || e.PCI != "" && d.PCI != nil && d.PCI.BDF == e.PCI {
			return d.Name
		}
	}
	return ""
}

// meaning says what one event is: its detail where the table gives one (a syndrome's meaning,
// the EQ recovered on), else what its signature means.
func meaning(e kevent.Event) string {
	if d := e.Detail(); d != "" {
		return d
	}
	return e.Sig.What
}

func eventFinding(subj report.Subject, dev string, evs []kevent.Event, klog *kmsg.Log) engine.Finding {
	cite := klog.Cite
	sev := report.Warning
	counts := map[string]int{}
	var order []string
	for _, e := range evs {
		if e.Sig.Sev > sev {
			sev = e.Sig.Sev
		}
		m := meaning(e)
		if counts[m] == 0 {
			order = append(order, m)
		}
		counts[m]++
	}
	var kinds []string
	for _, m := range order {
		kinds = append(kinds, fmt.Sprintf("%s x%d", m, counts[m]))
	}
	f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: sev,
		Summary: fmt.Sprintf("%s: the kernel logged %d CQ/EQ error(s): %s", dev, len(evs), strings.Join(kinds, ", ")),
	}}
	const maxShown = 10
	for i, e := range evs {
		if i == maxShown {
			f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more record(s)", len(evs)-maxShown), cite))
			break
		}
		f.Evidence = append(f.Evidence, report.Ev(e.Sig.ID, klog.Quote(e.Record), cite))
	}
	f.LogSpan = &engine.LogSpan{First: evs[0].Record.Since(), Last: evs[len(evs)-1].Record.Since()}
	for _, e := range evs {
		f.Events = append(f.Events, e.Key())
	}
	f.Remediation = "A CQ overrun means an application (or kernel consumer) let more completions pile up than its CQ holds: " +
		"the CQ and the QPs completing into it are dead until recreated. Size CQs to at least the outstanding work " +
		"requests with headroom (see cq.depth with --wr-concurrency), poll faster, or signal fewer sends. Access " +
		"violations point at a CQ buffer unmapped under the device (application bug or IOMMU fault). EQ errors and " +
		"recovered EQEs point at lost interrupts or firmware trouble: check the firmware health and PCIe findings."
	return f
}
