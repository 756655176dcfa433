package cq

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/procirq"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "cq.vectors",
		Description: "Completion vectors present (verbs num_comp_vectors, MSI-X vectors, IRQs); with --interval, whether they advance under traffic",
		Fault:       "cq-eq",
		Run:         runVectors,
		// Asks Host.VerbsDevices for the device's limits.
		VerbsDevices: true,
	})
}

// deviceIRQs returns the IRQs of a PCI function: those whose numbers are in its msi_irqs
// directory, else those whose action names carry its address (mlx5_comp0@pci:BDF).
func deviceIRQs(irqs []procirq.IRQ, msi map[int]bool, bdf string) []procirq.IRQ {
	var out []procirq.IRQ
	for _, q := range irqs {
		if msi[q.Num] || (bdf != "" && strings.Contains(q.Name, bdf)) {
			out = append(out, q)
		}
	}
	return out
}

func sumIRQ(qs []procirq.IRQ) (total uint64) {
	for _, q := range qs {
		total += q.Total
	}
	return total
}

// traffic sums a device's port packet counters (IB PMA counters, also kept by RoCE drivers).
func traffic(h *host.Host, d *inventory.Device) (uint64, bool) {
	var total uint64
	ok := false
	for _, p := range d.Ports {
		for _, c := range []string{"port_xmit_packets", "port_rcv_packets"} {
			s, err := h.ReadString(fmt.Sprintf("%s/%s/ports/%d/counters/%s", inventory.ClassDir, d.Name, p.Num, c))
			if err != nil {
				continue
			}
			if v, err := strconv.ParseUint(s, 10, 64); err == nil {
				total += v
				ok = true
			}
		}
	}
	return total, ok
}

func runVectors(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if inv.Absent != nil || len(inv.Devices) == 0 {
		return rdmares.NoDevices(), nil
	}
	verbsDevs := map[string]host.VerbsDevice{}
	if devs, _, err := env.Host.VerbsDevices(); err == nil {
		for _, v := range devs {
			verbsDevs[v.Name] = v
		}
	}
	first := observe.Interrupts.Get(env)
	irqs, irqErr := first.IRQs, first.Err
	type state struct {
		idx    int
		d      *inventory.Device
		msi    map[int]bool
		before uint64
		tx     uint64
		txOK   bool
	}
	var out []engine.Finding
	var pending []state
	for _, d := range inv.Devices {
		subj := rdmares.DevSubject(env, d.Name)
		f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK}}
		var notes []string
		if v, ok := verbsDevs[d.Name]; ok && v.Error == "" {
			f.Evidence = append(f.Evidence, report.EvExp("num_comp_vectors", fmt.Sprint(v.NumCompVectors), "at least 1", "verbs:ibv_open_device "+d.Name))
			if v.NumCompVectors < 1 {
				f.Severity = report.Critical
				notes = append(notes, "the device offers no completion vector, so no CQ can get completion events")
				f.Remediation = "The driver registered no completion EQs: look for interrupt allocation failures in the kernel log " +
					"(dmesg | grep -i -e msi -e irq) and the firmware/driver findings; reload the driver."
				// The driver layer sees the same fault from /proc/interrupts; when it ran and found it,
				// the fault table's observation makes this its consequence, not a second root cause.
				f.Observation = "no-completion-vector"
			} else {
				notes = append(notes, fmt.Sprintf("%d completion vector(s)", v.NumCompVectors))
			}
		} else {
			f.Evidence = append(f.Evidence, report.Ev("num_comp_vectors", "unknown (no verbs query recorded)", "verbs"))
		}
		if d.PCI == nil {
			notes = append(notes, "software device: completions are delivered without hardware interrupts")
			f.Summary = d.Name + ": " + strings.Join(notes, "; ")
			out = append(out, f)
			continue
		}
		msiDir := path.Join(d.PCI.SysPath, "msi_irqs")
		msi := map[int]bool{}
		if names, err := env.Host.ReadDir(msiDir); err == nil {
			for _, n := range names {
				if v, err := strconv.Atoi(n); err == nil {
					msi[v] = true
				}
			}
			f.Evidence = append(f.Evidence, report.EvExp("MSI/MSI-X vectors", fmt.Sprint(len(msi)), "at least 1", msiDir))
			if len(msi) == 0 {
				f.Severity = max(f.Severity, report.Warning)
				notes = append(notes, "the PCI function has no MSI/MSI-X vector allocated")
			}
		}
		var mine []procirq.IRQ
		if irqErr == nil {
			mine = deviceIRQs(irqs, msi, d.PCI.BDF)
			names := make([]string, 0, len(mine))
			for _, q := range mine {
				names = append(names, q.Name)
			}
			f.Evidence = append(f.Evidence, report.Ev("IRQs", fmt.Sprintf("%d: %s", len(mine), abbreviate(names, 6)), "/proc/interrupts"))
			notes = append(notes, fmt.Sprintf("%d IRQ(s) in /proc/interrupts", len(mine)))
		} else {
			f.Evidence = append(f.Evidence, report.Ev("IRQs", "unreadable: "+irqErr.Error(), "/proc/interrupts"))
		}
		f.Summary = d.Name + ": " + strings.Join(notes, "; ")
		out = append(out, f)
		tx, txOK := traffic(env.Host, d)
		pending = append(pending, state{idx: len(out) - 1, d: d, msi: msi, before: sumIRQ(mine), tx: tx, txOK: txOK})
	}
	if env.Opts.Interval <= 0 || irqErr != nil || len(pending) == 0 {
		return out, nil
	}
	if skip := checks.IntervalNotApplied(env, "the completion vectors' interrupt counts"); skip != nil {
		// One recorded /proc/interrupts replayed twice would say no vector ever advances.
		return append(out, skip...), nil
	}
	if _, err := env.SecondReading(ctx, "interrupt"); err != nil {
		return out, err
	}
	second, err := observe.ReadInterrupts(env.Host)
	if err != nil {
		return out, fmt.Errorf("second reading: %w", err)
	}
	interruptCQs := interruptDrivenCQs(env)
	for _, p := range pending {
		f := &out[p.idx]
		after := sumIRQ(deviceIRQs(second.IRQs, p.msi, p.d.PCI.BDF))
		tx2, _ := traffic(env.Host, p.d)
		dIRQ, dTx := after-p.before, tx2-p.tx
		f.Evidence = append(f.Evidence,
			report.Ev("interrupts over interval", fmt.Sprintf("+%d in %s", dIRQ, env.Opts.Interval), "/proc/interrupts"))
		if !p.txOK {
			continue
		}
		f.Evidence = append(f.Evidence, report.Ev("port packets over interval", fmt.Sprintf("+%d", dTx), inventory.ClassDir+"/"+p.d.Name+"/ports/*/counters"))
		if dTx == 0 || dIRQ > 0 {
			continue
		}
		// Busy-polling applications never arm their CQs, so silence under traffic is only a
		// fault when kernel consumers that wait for completion interrupts are on the device.
		if n := interruptCQs[p.d.Name]; n > 0 {
			f.Severity = max(f.Severity, report.Warning)
			f.Summary += fmt.Sprintf("; no interrupt in %s while the ports moved %d packets and %d kernel CQ(s) wait for completion events", env.Opts.Interval, dTx, n)
			f.Remediation = "Completion interrupts are not arriving: check the IRQ affinity and that the vectors are not " +
				"masked (cat /proc/irq/N/smp_affinity_list), the kernel log for EQ errors, and the firmware health."
		} else {
			f.Severity = max(f.Severity, report.Info)
			f.Summary += fmt.Sprintf("; no interrupt in %s under traffic (normal for busy-polling applications)", env.Opts.Interval)
		}
	}
	return out, nil
}

// interruptDrivenCQs counts, per device, the kernel CQs polled from softirq or a workqueue:
// they depend on completion interrupts to make progress.
func interruptDrivenCQs(env *checks.Env) map[string]int {
	out := map[string]int{}
	t := rdmares.CQs(env)
	if t.Err != nil {
		return out
	}
	for _, d := range t.Devices {
		for i := range d.Objs {
			c := &d.Objs[i]
			if c.HasPollCtx && c.PollCtx != 0 { // 0 = IB_POLL_DIRECT
				out[d.Dev.Name]++
			}
		}
	}
	return out
}

func abbreviate(ss []string, n int) string {
	if len(ss) == 0 {
		return "none"
	}
	if len(ss) <= n {
		return strings.Join(ss, " ")
	}
	return strings.Join(ss[:n], " ") + fmt.Sprintf(" ... and %d more", len(ss)-n)
}
