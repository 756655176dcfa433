package pcie

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// CorrectableWarnSinceBoot is the count of correctable AER errors since boot above which a
// function's link is called marginal. Correctable errors (BadTLP, BadDLLP, RxErr, Replay
// Timer Timeout) are repaired by the data link layer's replay, so a few (link retraining,
// hot-plug, a single burst) cost nothing; the counters run since boot and the kernel only
// rate-limits their log lines. 100 is a judgment call, not a standard: high enough that a
// handful of events over months of uptime stays quiet, low enough that a link replaying
// continuously (thousands per day) is flagged. With --interval any growth is a rate and is
// flagged instead: a healthy link produces none within seconds.
const CorrectableWarnSinceBoot = 100

// aerSnap is one read of a function's AER counters (observe.AERCounters) on the path of a target.
type aerSnap struct {
	node
	observe.AERCounters
}

// records are the events' log records, in order.
func records(evs []kevent.Event) []kmsg.Record {
	out := make([]kmsg.Record, len(evs))
	for i, e := range evs {
		out[i] = e.Record
	}
	return out
}

// aerLines are the kernel log's lines about the link of one of bdfs that pcie.aer judges: what
// the AER, DPC and hotplug services print (drivers/pci/pcie/aer.c, err.c, dpc.c,
// drivers/pci/hotplug), tied to a function by its prefix or by the address the line names.
func aerLines(ke *checks.KernelEvents, bdfs []string) []kevent.Event {
	if ke == nil {
		return nil
	}
	var out []kevent.Event
	for _, e := range ke.For(checks.JudgeAER) {
		// A dump line (the error bits, the TLP header) belongs to the line before it, which is
		// quoted.
		if e.Sig.Benign || e.Sig.Kind == kevent.KindDump {
			continue
		}
		b := e.Record.BDF()
		for _, x := range bdfs {
			if b == x || e.PCI == x {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

func runAER(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	ts, out := sharedTargets(env)
	klog := kernelLog(env)
	// Each function is judged once even when several devices share a root port.
	seen := map[string]bool{}
	type item struct {
		t *target
		n node
	}
	var items []item
	for _, t := range ts {
		for _, n := range t.Nodes {
			if seen[n.BDF] {
				continue
			}
			seen[n.BDF] = true
			items = append(items, item{t, n})
		}
	}
	first := make([]aerSnap, len(items))
	for i, it := range items {
		first[i] = aerSnap{it.n, observe.AER(env, it.n.Dir)}
	}
	var second []aerSnap
	out = append(out, checks.IntervalNotApplied(env, "the AER counters")...)
	again, err := env.SecondReading(ctx, "AER")
	if err != nil {
		return nil, err
	}
	if again {
		second = make([]aerSnap, len(items))
		for i, it := range items {
			second[i] = aerSnap{it.n, observe.ReadAER(env.Host, it.n.Dir)}
		}
	}
	anyPresent := false
	for i, it := range items {
		s := first[i]
		lines := aerLines(klog.events, []string{s.BDF})
		if !s.Present && len(s.Errs) == 0 && len(s.Root) == 0 {
			if len(lines) > 0 {
				// No counters (no AER capability, as the lab's virtio endpoint), but the kernel
				// logged AER events for it: that is the only evidence there is, so report it.
				anyPresent = true
				// The lines of an endpoint without AER ("can't recover", "device recovery
				// failed") are the kernel handling an error reported to its root port: the
				// events say which, so that the report links them to the counters' finding.
				out = append(out, engine.Finding{Finding: report.Finding{
					Subject:     report.Subject{Kind: "pci", Name: s.BDF, Device: it.t.Device(), PCI: s.BDF},
					Severity:    report.Warning,
					Summary:     fmt.Sprintf("%s: no AER counters, but the kernel log has %d AER/link line(s) for it", s.BDF, len(lines)),
					Evidence:    append([]report.Evidence{report.Ev("aer_dev_* files", "absent", s.node.Dir)}, klog.evidence("kernel log", records(lines), 5)...),
					Remediation: "Read the kernel log lines: a failed recovery or a link down means the function may have lost transactions; reseat or replace the card if they recur.",
				}, LogSpan: checks.LogSpan(records(lines)), Events: aerLogEvents(it.t, lines)})
			}
			continue
		}
		anyPresent = true
		var later *aerSnap
		if second != nil {
			later = &second[i]
		}
		out = append(out, judgeAER(it.t, s, later, env.Opts.Interval, klog.evidence("kernel log", records(lines), 5)))
	}
	if !anyPresent {
		for _, t := range ts {
			f := engine.Finding{Finding: report.Finding{
				Subject:  t.subject(),
				Severity: report.Skipped,
				Summary:  fmt.Sprintf("skipped: no AER counters on %s or its upstream ports (kernel without CONFIG_PCIEAER, or no AER capability on the path)", t.BDF),
				Evidence: append(viaEvidence(t), report.Ev("aer_dev_* files", "absent", t.Nodes[0].Dir)),
			}}
			if lines := aerLines(klog.events, bdfList(t)); len(lines) > 0 {
				f.Severity = report.Warning
				f.Summary = fmt.Sprintf("%s: no AER counters, but the kernel log has %d AER/link lines for the path", t.BDF, len(lines))
				f.Evidence = append(f.Evidence, klog.evidence("kernel log", records(lines), 5)...)
				f.Remediation = "Read the kernel log lines: uncorrectable errors or link downs mean reseat the card or replace card/riser; see the fault table's PCIe row."
				f.Events = aerLogEvents(t, lines)
			}
			out = append(out, f)
		}
	}
	// The counters are judged without the log; only its AER and link-down lines are missing.
	if klog.err != nil {
		out = append(out, checks.KernelLogFinding(klog.err, "AER and link-down lines"))
	}
	return out, nil
}

// judgeAER judges one function's AER counters; logLines is the evidence of its kernel log lines.
func judgeAER(t *target, s aerSnap, later *aerSnap, interval time.Duration, logLines []report.Evidence) engine.Finding {
	role := "function"
	if s.BDF != t.BDF {
		role = "upstream port of " + t.BDF
	}
	f := engine.Finding{Finding: report.Finding{
		Subject: report.Subject{Kind: "pci", Name: s.BDF, Device: t.Device(), PCI: s.BDF},
	}, Events: aerEvents(t, s)}
	if s.BDF == t.BDF {
		f.Evidence = viaEvidence(t)
	}
	for _, a := range observe.AERFiles {
		v, ok := s.Totals[a.Kind]
		if !ok {
			continue
		}
		obs := fmt.Sprintf("%d since boot", v)
		if bits := s.Bits[a.Kind]; len(bits) > 0 {
			obs += " (" + strings.Join(bits, ", ") + ")"
		}
		if later != nil {
			obs += fmt.Sprintf("; +%d in %s", delta(later.Totals[a.Kind], v), interval)
		}
		f.Evidence = append(f.Evidence, report.EvExp(a.Kind+" errors", obs, "0", path.Join(s.node.Dir, a.File)))
	}
	for _, k := range []string{"fatal", "non-fatal", "correctable"} {
		if v, ok := s.Root[k]; ok {
			f.Evidence = append(f.Evidence, report.Ev("root port total "+k, fmt.Sprintf("%d since boot (errors reported by all functions below)", v), s.node.Dir+"/aer_rootport_total_err_*"))
		}
	}
	f.Evidence = append(f.Evidence, logLines...)
	fatal, nonfatal, cor := s.Totals["fatal"], s.Totals["non-fatal"], s.Totals["correctable"]
	// Root-port totals count what the functions below reported, including ones not on any
	// inventory path; an uncorrectable error there is the same link's problem.
	rFatal, rNonfatal := s.Root["fatal"], s.Root["non-fatal"]
	switch {
	case fatal > 0 || nonfatal > 0 || rFatal > 0 || rNonfatal > 0:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s (%s): uncorrectable PCIe errors since boot: %d fatal, %d non-fatal", s.BDF, role, max(fatal, rFatal), max(nonfatal, rNonfatal))
		f.Remediation = "Uncorrectable PCIe errors corrupt or drop transactions (the driver may have reset the device). Drain the node, reseat the card, replace the riser/card if they recur; " +
			"check the kernel log for the reporting device and error bits."
	case later != nil && delta(later.Totals["correctable"], cor) > 0:
		d := delta(later.Totals["correctable"], cor)
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s (%s): %d correctable PCIe errors in %s (%.2f/s): the link is replaying", s.BDF, role, d, interval, float64(d)/interval.Seconds())
		f.Remediation = "A link that keeps replaying loses bandwidth and may degrade further: reseat the card, check the riser and slot; watch the rate after the fix."
	case later != nil && cor > CorrectableWarnSinceBoot:
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s (%s): %d correctable PCIe errors since boot but none during the %s interval: not growing now", s.BDF, role, cor, interval)
	case cor > CorrectableWarnSinceBoot:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s (%s): %d correctable PCIe errors since boot (above %d; counters are since boot, use --interval for a rate)", s.BDF, role, cor, CorrectableWarnSinceBoot)
		f.Remediation = "Run again with --interval 60s to see whether they are still growing; if so reseat the card and check the riser and slot."
	case cor > 0:
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s (%s): %d correctable PCIe error(s) since boot, not above the %d that would mean a marginal link; no uncorrectable errors", s.BDF, role, cor, CorrectableWarnSinceBoot)
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s (%s): no PCIe errors since boot", s.BDF, role)
	}
	if len(s.Errs) > 0 && f.Severity < report.Warning {
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s (%s): AER counters could not be read: %v", s.BDF, role, s.Errs[0])
	}
	for _, e := range s.Errs {
		f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
	}
	return f
}

func delta(now, then uint64) uint64 {
	if now < then {
		// Counters only reset with the function (hot-plug, driver reload); report what grew since.
		return now
	}
	return now - then
}
