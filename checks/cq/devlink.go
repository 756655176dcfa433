package cq

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// vnicCounters are the mlx5 vnic reporter's diagnose counters that mean a CQ or EQ already
// overran (drivers/net/ethernet/mellanox/mlx5/core/diag/reporter_vnic.c;
// Documentation/networking/devlink/mlx5.rst, "vnic reporter": "cq_overrun: number of times CQ
// entered an error state due to an overflow"). Firmware counts them per function since it was
// initialised, so any non-zero value is an overrun on this boot of the card. Each one is
// critical: an overrun CQ is dead together with the QPs completing into it, and an overrun EQ
// loses completion or async events, so CQs stop being signalled and the job hangs rather than
// fails. A training run on such a node cannot be trusted until the owner is found (cq.depth,
// qp.state) and the device reset.
var vnicCounters = []struct{ name, meaning string }{
	{"cq_overrun", "completions lost, the CQ and its QPs went to error"},
	{"comp_eq_overrun", "completion events lost"},
	{"async_eq_overrun", "asynchronous events lost"},
}

// vnicContext are shown as evidence when present but not judged: total_error_queues is a gauge
// of queues now in error, whose owners the qp layer reports.
var vnicContext = []string{"total_error_queues", "invalid_command", "quota_exceeded_command"}

// devlinkFindings judges the devlink health of every mlx5 device: the firmware reporters (fw,
// fw_fatal), the netdev queue reporters (tx, rx) and the vnic counters. Devices of other drivers
// have no such reporters and get no finding.
func devlinkFindings(env *checks.Env) []engine.Finding {
	var devs []*inventory.Device
	for _, d := range env.Inventory().Devices {
		if d.PCI != nil && d.PCI.Driver == "mlx5_core" {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		return nil
	}
	c := devlink.NewClient(env.Host.Devlink())
	handles, err := c.Devices()
	var reps []devlink.Reporter
	if err == nil {
		reps, err = c.Reporters()
	}
	if err != nil {
		f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "devlink health"},
			Evidence: []report.Evidence{report.Ev("devlink", err.Error(), "netlink:devlink")}}}
		switch {
		case errors.Is(err, devlink.ErrNoDevlink):
			f.Severity = report.Skipped
			f.Summary = "skipped: devlink not available (the kernel has no devlink family): mlx5 health reporters and vnic CQ/EQ overrun counters cannot be read"
		case errors.Is(err, host.ErrNotRecorded):
			f.Severity = report.Skipped
			f.Summary = "skipped: devlink health not recorded in this snapshot: mlx5 health reporters and vnic CQ/EQ overrun counters cannot be read"
		default:
			f.Severity = report.Unknown
			f.Summary = "devlink health could not be read: " + err.Error()
			f.Remediation = "Run `devlink health show` and `devlink health diagnose pci/<BDF> reporter vnic` by hand."
		}
		return []engine.Finding{f}
	}
	present := map[devlink.Handle]bool{}
	for _, h := range handles {
		present[h] = true
	}
	var out []engine.Finding
	for _, d := range devs {
		h := devlink.PCI(d.PCI.BDF)
		subj := rdmares.DevSubject(env, d.Name)
		if !present[h] {
			subj.Name = d.Name + " devlink health"
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Skipped,
				Summary: fmt.Sprintf("skipped: %s: no devlink instance %s, so its health reporters cannot be read", d.Name, h)}})
			continue
		}
		var mine []devlink.Reporter
		for _, r := range reps {
			if r.Handle == h {
				mine = append(mine, r)
			}
		}
		out = append(out, reporterFindings(subj, d, mine)...)
		out = append(out, vnicFinding(c, subj, d, mine))
	}
	return out
}

func reporterSource(h devlink.Handle) string {
	return "netlink:devlink HEALTH_REPORTER_GET " + h.String()
}

func reporterLine(r devlink.Reporter) string {
	return fmt.Sprintf("state %s error %d recover %d", r.StateName(), r.ErrCount, r.RecoverCount)
}

// reporterFindings judges the firmware reporters and the queue reporters of one device.
func reporterFindings(subj report.Subject, d *inventory.Device, reps []devlink.Reporter) []engine.Finding {
	var fw, queues []devlink.Reporter
	for _, r := range reps {
		switch r.Name {
		case devlink.FWReporter, devlink.FWFatalReporter:
			fw = append(fw, r)
		case devlink.TxReporter, devlink.RxReporter:
			queues = append(queues, r)
		}
	}
	var out []engine.Finding
	if len(fw) > 0 {
		// fw counts health syndromes and missed heartbeats of the firmware (health.c: "FW
		// syndrome reported", "FW miss counter reported"); fw_fatal counts fatal errors, each
		// followed by a full device recovery that destroys every QP. None of the syndromes
		// (hsynd_str() in health.c: firmware internal error, irisc not responding, ...) is
		// benign, and the counts start at driver load, so any error on this node is critical: it
		// explains failures above it, and a node that hit one is likely to hit it again during
		// the next run.
		f := engine.Finding{Finding: report.Finding{Subject: subj, Fault: "firmware-health", Severity: report.OK}}
		f.Subject.Name = d.Name + " devlink health fw"
		var bad []string
		for _, r := range fw {
			f.Evidence = append(f.Evidence, report.EvExp("reporter "+r.Name, reporterLine(r), "state healthy error 0", reporterSource(r.Handle)))
			if r.State != devlink.StateHealthy || r.ErrCount > 0 {
				bad = append(bad, fmt.Sprintf("%s %s with %d error(s), %d recovered", r.Name, r.StateName(), r.ErrCount, r.RecoverCount))
			}
		}
		if len(bad) > 0 {
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("%s: firmware health reporters saw errors since the driver loaded: %s", d.Name, strings.Join(bad, "; "))
			f.Remediation = fmt.Sprintf("Read `devlink health diagnose pci/%s reporter fw` (syndrome) and the health dump in the kernel log; drain the node, reset the card (mlxfwreset -d %s reset, or reboot) and update the firmware; a syndrome that returns needs NVIDIA support or an RMA.", d.PCI.BDF, d.PCI.BDF)
		} else {
			f.Summary = fmt.Sprintf("%s: firmware health reporters healthy, no error since the driver loaded", d.Name)
		}
		out = append(out, f)
	}
	if len(queues) > 0 {
		// tx and rx watch the Ethernet netdev's send and receive queues (ERR CQE on SQ, TX
		// timeouts), not RDMA QPs, and the driver recovers them within its 500 ms grace period.
		// They matter to an RDMA host through its TCP/IP traffic (job bootstrap, storage), so
		// errors are a warning: worth a look, no reason alone to drain the node.
		sort.SliceStable(queues, func(i, j int) bool { return queues[i].Port < queues[j].Port })
		f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK}}
		f.Subject.Name = d.Name + " devlink health tx/rx"
		var bad []string
		for _, r := range queues {
			name := r.Name
			if r.HasPort {
				name = fmt.Sprintf("%s (port %d)", r.Name, r.Port)
			}
			f.Evidence = append(f.Evidence, report.EvExp("reporter "+name, reporterLine(r), "state healthy error 0", reporterSource(r.Handle)))
			if r.State != devlink.StateHealthy || r.ErrCount > 0 {
				bad = append(bad, fmt.Sprintf("%s %s with %d error(s), %d recovered", name, r.StateName(), r.ErrCount, r.RecoverCount))
			}
		}
		if len(bad) > 0 {
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s: netdev queue reporters saw errors: %s", d.Name, strings.Join(bad, "; "))
			f.Remediation = fmt.Sprintf("Look for \"ERR CQE on SQ\" and \"TX timeout\" in the kernel log and run `devlink health diagnose pci/%s reporter tx`; repeated errors point at PCIe or firmware trouble (see those layers).", d.PCI.BDF)
		} else {
			f.Summary = fmt.Sprintf("%s: netdev queue reporters (tx, rx) healthy", d.Name)
		}
		out = append(out, f)
	}
	return out
}

// vnicFinding reads the vnic reporter's counters through DIAGNOSE, which needs CAP_NET_ADMIN.
func vnicFinding(c *devlink.Client, subj report.Subject, d *inventory.Device, reps []devlink.Reporter) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: subj}}
	f.Subject.Name = d.Name + " devlink health vnic"
	h := devlink.PCI(d.PCI.BDF)
	src := "netlink:devlink HEALTH_REPORTER_DIAGNOSE " + h.String() + " vnic"
	found := false
	for _, r := range reps {
		found = found || (r.Name == devlink.VnicReporter && !r.HasPort)
	}
	if !found {
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: no vnic health reporter (mlx5 added it in Linux 6.4), so firmware CQ/EQ overrun counters cannot be read", d.Name)
		return f
	}
	obj, err := c.Diagnose(h, devlink.VnicReporter)
	if err != nil {
		f.Severity = report.Unknown
		f.Evidence = []report.Evidence{report.Ev("diagnose", err.Error(), src)}
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			f.Summary = fmt.Sprintf("%s: vnic CQ/EQ overrun counters not read: devlink health diagnose needs CAP_NET_ADMIN", d.Name)
			f.Remediation = "Run rdmadiag (or rdmadiag record) as root to read the counters."
		} else {
			f.Summary = fmt.Sprintf("%s: vnic CQ/EQ overrun counters not read: %v", d.Name, err)
			f.Remediation = fmt.Sprintf("Run `devlink health diagnose %s reporter vnic` by hand.", h)
		}
		return f
	}
	var hits []string
	seen := 0
	for _, vc := range vnicCounters {
		v, ok := obj.Find(vc.name)
		n, isUint := devlink.Uint(v)
		if !ok || !isUint {
			f.Evidence = append(f.Evidence, report.Ev(vc.name, "not reported by this firmware", src))
			continue
		}
		seen++
		f.Evidence = append(f.Evidence, report.EvExp(vc.name, fmt.Sprint(n), "0", src))
		if n > 0 {
			hits = append(hits, fmt.Sprintf("%s %d (%s)", vc.name, n, vc.meaning))
		}
	}
	for _, name := range vnicContext {
		if v, ok := obj.Find(name); ok {
			if n, ok := devlink.Uint(v); ok {
				f.Evidence = append(f.Evidence, report.Ev(name, fmt.Sprint(n), src))
			}
		}
	}
	switch {
	case len(hits) > 0:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: firmware counted CQ/EQ overruns: %s", d.Name, strings.Join(hits, "; "))
		f.Remediation = "A CQ overrun means an application let more completions pile up than its CQ holds; find the owner " +
			"(cq.depth with --wr-concurrency, qp.state for QPs in error) and size its CQs to the outstanding work requests. " +
			"EQ overruns mean event queues were not drained (interrupts lost or starved CPUs): check cq.vectors and the " +
			"firmware and PCIe findings. The counters reset only with the function (driver reload or card reset)."
	case seen == 0:
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s: the vnic reporter reports none of cq_overrun, comp_eq_overrun, async_eq_overrun (firmware without these capabilities)", d.Name)
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: firmware counted no CQ or EQ overrun", d.Name)
	}
	return f
}
