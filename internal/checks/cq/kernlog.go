package cq

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/internal/checks/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/internal/relit"
	"github.com/rdmadiag/rdmadiag/report"
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

// Event is one CQ/EQ error the kernel logged.
type Event struct {
	Kind     string // cq_error, cq_full, bogus_cq, eq_recovered, eq_error
	Severity report.Severity
	CQN      string // as logged (hex for mlx5, restrack index for rxe)
	Syndrome string
	Meaning  string
	Device   string // RDMA device or PCI address the record names
	Rec      kmsg.Record
}

var (
	// drivers/net/ethernet/mellanox/mlx5/core/eq.c: "CQ error on CQN 0x%x, syndrome 0x%x".
	reCQError = relit.MustCompile(`CQ error on CQN (0x[0-9a-fA-F]+), syndrome (0x[0-9a-fA-F]+)`)
	// eq.c: "Async event for bogus CQ 0x%x".
	reBogusCQ = relit.MustCompile(`Async event for bogus CQ (0x[0-9a-fA-F]+)`)
	// drivers/infiniband/sw/rxe: rxe_err_cq(cq, "queue full") -> "cq#%d %s: queue full".
	reRxeFull = relit.MustCompile(`cq#(\d+) [a-z_]+: queue full`)
	// eq.c: "Recovered %d EQEs on cmd_eq" (a missed EQ interrupt).
	reEQRecovered = relit.MustCompile(`Recovered (\d+) EQEs on (\S+)`)
	// health.c syndrome strings for EQ faults (hsynd_str).
	reEQFault = relit.MustCompile(`(async EQ buffer overrun|Invalid EQ referenced|, EQ error,|synd 0x[0-9a-f]+: EQ error)`)
	// "infiniband rxe0: ..." prefix of ibdev_* messages.
	reIBDev = relit.MustCompile(`^infiniband (\S+): `)
)

// syndromes are the mlx5 PRM CQ error syndromes.
var syndromes = map[uint64]string{1: "CQ overrun", 2: "CQ access violation"}

// Classify returns the CQ/EQ event a kernel log record reports, if any.
func Classify(r kmsg.Record) (Event, bool) {
	e := Event{Rec: r, Device: recordDevice(r)}
	switch {
	case strings.Contains(r.Text, "CQ error on CQN"):
		m := reCQError.FindStringSubmatch(r.Text)
		if m == nil {
			return e, false
		}
		e.Kind, e.Severity, e.CQN, e.Syndrome = "cq_error", report.Critical, m[1], m[2]
		e.Meaning = "CQ error"
		if v, err := strconv.ParseUint(strings.TrimPrefix(m[2], "0x"), 16, 64); err == nil {
			if s, ok := syndromes[v]; ok {
				e.Meaning = s
			}
		}
	case strings.Contains(r.Text, "queue full") && reRxeFull.MatchString(r.Text):
		e.Kind, e.Severity, e.CQN = "cq_full", report.Critical, reRxeFull.FindStringSubmatch(r.Text)[1]
		e.Meaning = "CQ overrun (completion dropped)"
	case strings.Contains(r.Text, "bogus CQ") && reBogusCQ.MatchString(r.Text):
		e.Kind, e.Severity, e.CQN = "bogus_cq", report.Warning, reBogusCQ.FindStringSubmatch(r.Text)[1]
		e.Meaning = "event for a CQ the driver does not know (destroyed while events were pending)"
	case strings.Contains(r.Text, "EQEs on") && reEQRecovered.MatchString(r.Text):
		m := reEQRecovered.FindStringSubmatch(r.Text)
		e.Kind, e.Severity = "eq_recovered", report.Warning
		e.Meaning = fmt.Sprintf("%s EQE(s) recovered on %s after a missed interrupt", m[1], m[2])
	case reEQFault.MatchString(r.Text):
		e.Kind, e.Severity = "eq_error", report.Critical
		e.Meaning = strings.Trim(reEQFault.FindString(r.Text), ", ")
	default:
		return e, false
	}
	return e, true
}

// recordDevice names what a record is about: "+infiniband:rxe0" or "+pci:BDF" from the
// dictionary, else the "infiniband rxe0:" or "mlx5_core 0000:3b:00.0:" text prefix.
func recordDevice(r kmsg.Record) string {
	if d, ok := strings.CutPrefix(r.Device, "+infiniband:"); ok {
		return d
	}
	if bdf := r.BDF(); bdf != "" {
		return bdf
	}
	if m := reIBDev.FindStringSubmatch(r.Text); m != nil {
		return m[1]
	}
	return ""
}

func runErrors(_ context.Context, env *checks.Env) ([]report.Finding, error) {
	inv := env.Inventory()
	if inv.Absent != nil || len(inv.Devices) == 0 {
		return rdmares.NoDevices(), nil
	}
	// The kernel log and devlink are independent witnesses: either can be missing while the
	// other still reports.
	return append(kernelLogFindings(env), devlinkFindings(env)...), nil
}

func kernelLogFindings(env *checks.Env) []report.Finding {
	inv := env.Inventory()
	klog, err := env.KernelLog()
	if err != nil {
		return []report.Finding{checks.KernelLogFinding(err, "past CQ overruns and EQ errors")}
	}
	// An RDMA device is named in the log by itself (ibdev messages) or by its PCI function.
	owner := map[string]string{}
	for _, d := range inv.Devices {
		owner[d.Name] = d.Name
		if d.PCI != nil {
			owner[d.PCI.BDF] = d.Name
		}
	}
	byDev := map[string][]Event{}
	var unattributed []Event
	for _, r := range klog.Records {
		e, ok := Classify(r)
		if !ok {
			continue
		}
		if dev, ok := owner[e.Device]; ok {
			byDev[dev] = append(byDev[dev], e)
		} else {
			unattributed = append(unattributed, e)
		}
	}
	var out []report.Finding
	for _, d := range inv.Devices {
		evs := byDev[d.Name]
		subj := rdmares.DevSubject(env, d.Name)
		if len(evs) == 0 {
			out = append(out, report.Finding{Subject: subj, Severity: report.OK,
				Summary:  d.Name + ": no CQ overrun or EQ error in the kernel log",
				Evidence: []report.Evidence{report.EvExp("CQ/EQ error records", "0", "0", klog.Cite)}})
			continue
		}
		out = append(out, eventFinding(subj, d.Name, evs, klog))
	}
	if len(unattributed) > 0 {
		out = append(out, eventFinding(checks.KernelLogSubject, "an unidentified device", unattributed, klog))
	}
	return out
}

func eventFinding(subj report.Subject, dev string, evs []Event, klog *kmsg.Log) report.Finding {
	cite := klog.Cite
	sev := report.Warning
	counts := map[string]int{}
	var order []string
	for _, e := range evs {
		if e.Severity > sev {
			sev = e.Severity
		}
		if counts[e.Meaning] == 0 {
			order = append(order, e.Meaning)
		}
		counts[e.Meaning]++
	}
	var kinds []string
	for _, m := range order {
		kinds = append(kinds, fmt.Sprintf("%s x%d", m, counts[m]))
	}
	f := report.Finding{Subject: subj, Severity: sev,
		Summary: fmt.Sprintf("%s: the kernel logged %d CQ/EQ error(s): %s", dev, len(evs), strings.Join(kinds, ", ")),
	}
	const maxShown = 10
	for i, e := range evs {
		if i == maxShown {
			f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more record(s)", len(evs)-maxShown), cite))
			break
		}
		obs := klog.Quote(e.Rec)
		f.Evidence = append(f.Evidence, report.Ev(e.Kind, obs, cite))
	}
	f.LogSpan = &report.LogSpan{First: evs[0].Rec.Since(), Last: evs[len(evs)-1].Rec.Since()}
	f.Remediation = "A CQ overrun means an application (or kernel consumer) let more completions pile up than its CQ holds: " +
		"the CQ and the QPs completing into it are dead until recreated. Size CQs to at least the outstanding work " +
		"requests with headroom (see cq.depth with --wr-concurrency), poll faster, or signal fewer sends. Access " +
		"violations point at a CQ buffer unmapped under the device (application bug or IOMMU fault). EQ errors and " +
		"recovered EQEs point at lost interrupts or firmware trouble: check the firmware health and PCIe findings."
	return f
}
