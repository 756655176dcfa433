package checks

import (
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// KernelEvents is the run's kernel log classified once (internal/kevent): every record matched
// against the one signature table and tied to its device. Checks judge these events and never
// match records with expressions of their own; each event has one judge (Judge), so one line
// makes at most one finding.
type KernelEvents struct {
	Log    *kmsg.Log
	Table  *kevent.Table
	Events []kevent.Event
}

// Judge is the check that judges an event: the one place that decides, so that two checks
// never judge one line.
type Judge int

// Judges of kernel log events.
const (
	// JudgeKernelLog: driver.kernel_log, every event no other judge takes.
	JudgeKernelLog Judge = iota
	// JudgeLink: port.flaps, the link state changes (signature kind "link").
	JudgeLink
	// JudgeCQ: cq.errors, CQ and EQ errors (fault row cq-eq) that are not part of a firmware
	// health event's family.
	JudgeCQ
	// JudgeDMA: pcie.dma, IOMMU faults and DMA errors (fault row dma-engine); the kernel's own
	// allocator failing (a page allocation failure, no function named) stays with
	// driver.kernel_log, which reads the call trace after it.
	JudgeDMA
	// JudgePCIeLink: pcie.link, the kernel's report of the link bandwidth a driver's probe
	// measured (family pcie-link-bandwidth).
	JudgePCIeLink
	// JudgeAER: pcie.aer, what the PCIe port services print about a function's link (AER,
	// DPC, hotplug: fault row pcie-interface, printed by a pcie-layer subsystem), judged with
	// the function's AER counters.
	JudgeAER
)

// portServices are the families of the PCIe port services' lines (signatures/pcie.json): AER
// and its recovery, DPC, hotplug, and AER errors the firmware reports (CPER).
var portServices = map[string]bool{"aer": true, "aer-recovery": true, "dpc": true, "hotplug": true, "cper-pcie": true}

// JudgeOf says which check judges e.
func JudgeOf(e *kevent.Event) Judge {
	s := e.Sig
	switch {
	case s == nil:
		return JudgeKernelLog
	case s.Kind == kevent.KindLink:
		return JudgeLink
	case s.Fault == "cq-eq" && s.Family == "":
		return JudgeCQ
	case s.Fault == "dma-engine" && (e.PCI != "" || s.Driver != "kernel"):
		return JudgeDMA
	case s.Family == "pcie-link-bandwidth":
		return JudgePCIeLink
	case s.Fault == "pcie-interface" && portServices[s.Family]:
		return JudgeAER
	}
	return JudgeKernelLog
}

// For returns the events j judges, in log order.
func (k *KernelEvents) For(j Judge) []kevent.Event {
	var out []kevent.Event
	for i := range k.Events {
		if JudgeOf(&k.Events[i]) == j {
			out = append(out, k.Events[i])
		}
	}
	return out
}

type kernelEvents struct {
	v   *KernelEvents
	err error
}

var kernelEventsFact = NewFact("kernel log events", func(e *Env) kernelEvents {
	l, err := e.KernelLog()
	if err != nil {
		return kernelEvents{err: err}
	}
	k, err := NewKernelEvents(l, e.Inventory())
	return kernelEvents{v: k, err: err}
})

// NewKernelEvents classifies a log against the devices of an inventory (nil: none) with the
// embedded signature table.
func NewKernelEvents(l *kmsg.Log, inv *inventory.Inventory) (*KernelEvents, error) {
	t, err := kevent.Default()
	if err != nil {
		return nil, err
	}
	var devs []kevent.Device
	if inv != nil {
		for _, d := range inv.Devices {
			kd := kevent.Device{Name: d.Name, Netdevs: map[string]int{}}
			if d.PCI != nil {
				kd.PCI = d.PCI.BDF
			}
			for _, p := range d.Ports {
				for _, nd := range p.Netdevs {
					kd.Netdevs[nd] = p.Num
				}
			}
			if d.Parent != "" && kd.Netdevs[d.Parent] == 0 && len(d.Ports) > 0 {
				kd.Netdevs[d.Parent] = d.Ports[0].Num
			}
			devs = append(devs, kd)
		}
	}
	return &KernelEvents{Log: l, Table: t, Events: t.Classify(l.Records, devs)}, nil
}

// KernelEvents classifies the run's kernel log once, against the devices of the run's
// inventory. Its error is KernelLog's (see KernelLogFinding), or a signature table that does
// not load.
func (e *Env) KernelEvents() (*KernelEvents, error) {
	k := kernelEventsFact.Get(e)
	return k.v, k.err
}
