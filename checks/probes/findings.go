package probes

import (
	"fmt"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/checks/pcie"
	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

const src = "verbs"

// base maps what every probe reports; ok is the summary used when the probe passed.
func base(t target, r probe.Result, what, ok string) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Remediation: r.Remedy}}
	switch r.Status {
	case probe.Pass:
		f.Severity, f.Summary = report.OK, ok
	case probe.Skipped:
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("%s probe not run on %s: %s", what, t.subject().Name, r.Error)
	default:
		f.Severity = report.Critical
		where := string(r.Stage)
		if r.Verb != "" {
			where += ", " + r.Verb
		}
		if r.Errno != "" {
			where += " " + r.Errno
		}
		f.Summary = fmt.Sprintf("%s probe failed on %s at %s: %s", what, t.subject().Name, where, r.Error)
		f.Evidence = append(f.Evidence, report.Ev("failed stage", string(r.Stage), src))
		if r.Verb != "" {
			f.Evidence = append(f.Evidence, report.Ev("failed verb", r.Verb+" "+r.Errno, src))
		}
	}
	for _, c := range r.Cleanup {
		f.Evidence = append(f.Evidence, report.Ev("cleanup error", c, src))
	}
	f.Evidence = append(f.Evidence, report.Ev("probe time", r.Elapsed.Round(time.Microsecond).String(), src))
	return f
}

func driverFinding(t target, r probe.Result) engine.Finding {
	f := base(t, r, "verbs open/query", "")
	a := r.Attrs
	if a == nil {
		return f
	}
	if f.Severity == report.OK {
		f.Summary = fmt.Sprintf("%s opens through libibverbs (%s): port %s, %s, MTU %d, %s", t.subject().Name, a.Uverbs,
			a.PortState, a.LinkLayer, a.ActiveMTU, rateText(a))
	}
	f.Evidence = append(f.Evidence,
		report.EvExp("fw_ver (verbs)", a.FWVer, orNone(a.FWVerSysfs)+" (sysfs)", src),
		report.Ev("max_qp", fmt.Sprint(a.MaxQP), src),
		report.Ev("max_qp_wr", fmt.Sprint(a.MaxQPWR), src),
		report.Ev("max_cqe", fmt.Sprint(a.MaxCQE), src),
		report.Ev("max_sge", fmt.Sprint(a.MaxSGE), src),
		report.Ev("max_mr_size", fmt.Sprint(a.MaxMRSize), src),
		report.Ev("port state", a.PortState, src),
		report.Ev("active mtu", fmt.Sprint(a.ActiveMTU), src),
		report.Ev("speed/width", rateText(a), src))
	if a.GID != nil {
		f.Evidence = append(f.Evidence, report.Ev("gid", fmt.Sprintf("index %d %s (%s)", a.GID.Index, a.GID.GID, a.GID.Type), src))
	}
	if f.Severity == report.OK && a.FWVerSysfs != "" && !a.FWVerMatch {
		f.Severity = report.Warning
		f.Fault = "firmware"
		f.Summary = fmt.Sprintf("%s: verbs reports firmware %s but sysfs says %s: the driver and the device disagree", t.subject().Name, a.FWVer, a.FWVerSysfs)
		f.Remediation = "Reload the driver or reset the card so that both views agree; a firmware update that was flashed but not activated shows this way."
	}
	return f
}

func limitsFinding(t target, r probe.LimitsResult) engine.Finding {
	ok := fmt.Sprintf("%s accepts a QP at its reported limits (max_qp_wr %d, max_sge %d)",
		t.subject().Name, r.Requested.MaxSendWR, r.Requested.MaxSendSGE)
	if r.MemoryBound && len(r.Attempts) > 0 {
		ok = memoryBoundSummary(t.subject().Name, r.Attempts)
	}
	f := base(t, r.Result, "limits", ok)
	// A limit the memory budget left out is not verified: information, with how to verify it
	// (the probe's own remedy when it says more: the budget was held by other devices' probes).
	for _, a := range r.Attempts {
		if !a.Tried() && f.Severity == report.OK {
			f.Severity = report.Info
			if f.Remediation == "" {
				f.Remediation = probe.MemoryBudgetRemedy
			}
		}
	}
	if len(r.Attempts) > 1 {
		for _, a := range r.Attempts {
			obs := fmt.Sprintf("granted %d/%d", a.Granted.MaxSendWR, a.Granted.MaxSendSGE)
			switch {
			case !a.Tried():
				obs = "not tried: " + a.NotTried
			case a.Errno != "":
				obs = "refused: " + a.Errno
			}
			f.Evidence = append(f.Evidence, report.EvExp("QP at "+a.What+" (send wr/sge)", obs,
				fmt.Sprintf("%d/%d", a.Cap.MaxSendWR, a.Cap.MaxSendSGE), src))
		}
	} else {
		f.Evidence = append(f.Evidence,
			report.EvExp("granted send wr/sge", fmt.Sprintf("%d/%d", r.Granted.MaxSendWR, r.Granted.MaxSendSGE),
				fmt.Sprintf("%d/%d", r.Requested.MaxSendWR, r.Requested.MaxSendSGE), src))
	}
	if r.Inconsistent {
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s rejects a QP at the limits it advertises (EINVAL): the firmware and the driver disagree", t.subject().Name)
		if f.Remediation == "" {
			f.Remediation = "Update the firmware to the version this driver expects (see firmware findings), then reset the card (mlxfwreset or reboot)."
		}
	}
	return f
}

// memoryBoundSummary says what a limits probe verified when the QP at both limits at once was
// refused for memory or left out for the probe's budget: the limits accepted on their own and
// the QPs not tried, with why.
func memoryBoundSummary(name string, attempts []probe.LimitAttempt) string {
	var accepted, left []string
	for i, a := range attempts {
		switch {
		case !a.Tried():
			left = append(left, fmt.Sprintf("a QP at %s (%s)", a.What, a.NotTried))
		case i > 0 && a.Errno == "":
			accepted = append(accepted, a.What)
		}
	}
	out := name + " accepts a QP at " + strings.Join(accepted, " and at ")
	if len(accepted) == 0 {
		out = name + " was not given a QP at any limit"
	}
	if both := attempts[0]; both.Tried() && both.Errno != "" {
		out += "; a QP at both limits at once was refused with " + both.Errno + " (the host could not back that much queue memory)"
	}
	if len(left) > 0 {
		out += "; not tried: " + strings.Join(left, "; ")
	}
	return out
}

func loopbackFinding(t target, r probe.LoopbackResult) engine.Finding {
	f := base(t, r.Result, "RC loopback", fmt.Sprintf("RC loopback on %s: QP 0x%x reached RTS, RDMA WRITE and SEND completed with intact payloads in %s",
		t.subject().Name, r.QPN, r.RoundTrip.Round(time.Microsecond)))
	var steps []string
	for _, tr := range r.Transitions {
		s := tr.To
		if !tr.OK {
			s += " failed " + tr.Errno
		}
		steps = append(steps, s)
	}
	if len(steps) > 0 {
		f.Evidence = append(f.Evidence, report.Ev("transitions", "RESET->"+strings.Join(steps, "->"), src))
	}
	for _, c := range r.Completions {
		f.Evidence = append(f.Evidence, report.Ev("completion "+c.Opcode, c.Status, src))
	}
	if r.Status == probe.Pass {
		f.Evidence = append(f.Evidence, report.EvExp("payloads intact", fmt.Sprint(r.WritePayloadOK && r.SendPayloadOK), "true", src))
	}
	if r.QPState != "" && r.Status == probe.Fail {
		f.Evidence = append(f.Evidence, report.Ev("qp state after failure", r.QPState, src))
	}
	if r.Status == probe.Fail && f.Remediation == "" {
		f.Remediation = "A loopback QP that cannot connect or complete on a port that is up points at the QP context (firmware/driver) or the DMA path: " +
			"read the pcie, firmware and port findings, and the kernel log, for this device."
	}
	return f
}

func cqFinding(t target, r probe.CQResult) engine.Finding {
	f := base(t, r.Result, "CQ", fmt.Sprintf("%d of %d signaled work requests completed on a CQ of %d entries", r.Completed, r.Requested, r.Granted))
	f.Evidence = append(f.Evidence, report.EvExp("completions", fmt.Sprint(r.Completed), fmt.Sprint(r.Requested), src))
	if o := r.Overrun; o != nil {
		f.Evidence = append(f.Evidence,
			report.Ev("overrun test", fmt.Sprintf("%d signaled WRs into a %d-entry CQ: %d IBV_EVENT_CQ_ERR, QP %s", o.Posted, o.Granted, o.CQErrEvents, o.QPState), src))
		if f.Severity == report.OK {
			if o.Detected {
				f.Summary += "; an overrun of a probe-owned CQ was reported as IBV_EVENT_CQ_ERR"
			} else {
				f.Severity = report.Warning
				f.Summary = fmt.Sprintf("%s did not report an overrun of a probe-owned CQ: overruns on this host would lose completions silently", t.subject().Name)
				f.Remediation = "Size every CQ for all outstanding signaled work requests (see cq findings); report the missing IBV_EVENT_CQ_ERR to the NIC vendor."
			}
		}
	}
	return f
}

// bandwidthFinding judges r; beside is how many other devices' bandwidth probes ran during it
// (never one whose figure it would disturb, see dmaPath.disturbs).
func bandwidthFinding(t target, r probe.BandwidthResult, b pcie.Budget, beside int) engine.Finding {
	f := base(t, r.Result, "bandwidth", "")
	if f.Severity == report.OK {
		f.Summary = fmt.Sprintf("RDMA WRITE loopback on %s: %.2f Gb/s (%d x %d B, %d in flight), latency median %s",
			t.subject().Name, r.Gbps, r.Iters, r.MsgSize, r.TxDepth, r.LatMedian.Round(time.Microsecond))
	}
	f.Evidence = append(f.Evidence,
		report.Ev("bandwidth", fmt.Sprintf("%.2f Gb/s (%.1f MiB/s)", r.Gbps, r.MiBps), src),
		report.Ev("latency min/median/p99/max", fmt.Sprintf("%s/%s/%s/%s", r.LatMin, r.LatMedian, r.LatP99, r.LatMax), src),
		report.Ev("what it measures", "host memory -> NIC -> host memory: crosses the PCIe link in both directions and the NIC's DMA engines once each way", ""))
	if b.UsableGbps > 0 {
		f.Evidence = append(f.Evidence, report.Ev("pcie budget", fmt.Sprintf("%.1f Gb/s (%s)", b.UsableGbps, b.Limit), "pcie.bandwidth"))
	}
	if r.Truncated {
		f.Evidence = append(f.Evidence, report.Ev("truncated", "stopped early to stay within --probe-timeout", src))
	}
	if beside > 0 {
		if t.dev.Software() {
			f.Evidence = append(f.Evidence, report.Ev("run beside", fmt.Sprintf("%d other software device(s)' bandwidth probes: each copies in the CPU, so the figure is this device's share of the CPU, not what it reaches alone", beside), src))
		} else {
			f.Evidence = append(f.Evidence, report.Ev("run beside", fmt.Sprintf("%d other device(s)' bandwidth probes, none on a PCIe link this device's path crosses", beside), src))
		}
	}
	if r.Completion != nil {
		f.Evidence = append(f.Evidence, report.Ev("failed completion", r.Completion.Status+" "+r.Completion.StatusText, src))
	}
	a := r.Attrs
	if f.Severity != report.OK || a == nil {
		return f
	}
	if t.dev.Software() {
		// Soft-RoCE copies in the CPU: its number says nothing about a NIC or a PCIe link.
		f.Severity = report.Info
		f.Summary += " (software device: the number measures the CPU, not a NIC)"
		return f
	}
	// The loopback can go no faster than the port rate or the PCIe link, whichever is lower. Below
	// half that ceiling on an idle host, the DMA path (PCIe link, IOMMU, NIC) is the bottleneck;
	// half leaves room for the loopback's own overhead and short probe runs.
	ceiling, what := a.RateGbps, fmt.Sprintf("port rate %.0f Gb/s", a.RateGbps)
	if b.UsableGbps > 0 && (ceiling == 0 || b.UsableGbps < ceiling) {
		ceiling, what = b.UsableGbps, fmt.Sprintf("PCIe budget %.1f Gb/s (%s)", b.UsableGbps, b.Limit)
	}
	if ceiling > 0 && r.Gbps < ceiling/2 {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("RDMA WRITE loopback on %s reaches %.1f Gb/s, under half its ceiling, the %s", t.subject().Name, r.Gbps, what)
		f.Remediation = "Compare with the pcie findings (link trained below capability, bandwidth budget) and check for traffic or IOMMU translation on this device; re-run with ib_write_bw to confirm."
		f.Evidence = append(f.Evidence, report.EvExp("ceiling", what, fmt.Sprintf(">= %.1f Gb/s loopback", ceiling/2), src))
	}
	return f
}

func rateText(a *probe.Attributes) string {
	if a.RateGbps == 0 {
		return fmt.Sprintf("%s %s", orNone(a.ActiveWidth), orNone(a.ActiveSpeed))
	}
	return fmt.Sprintf("%s x %s = %.0f Gb/s", a.ActiveWidth, a.ActiveSpeed, a.RateGbps)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
