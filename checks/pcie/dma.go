package pcie

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// dmaRecords returns the IOMMU faults and DMA errors the kernel log holds about a function or
// its RDMA devices (kernel log events judged by pcie.dma: fault row dma-engine). An IOMMU's own
// line (its driver is of the pcie layer: Intel VT-d, AMD-Vi, SMMU) is an IOMMU fault, a NIC
// driver's a DMA error. Intel VT-d prints the fault status register first, without a device
// (drivers/iommu/intel/dmar.c dmar_fault(): "DRHD: handling fault status reg %x"), then one
// line per fault naming it: the status line belongs to the fault after it.
func dmaRecords(ke *checks.KernelEvents, t *target) (iommu, dma []kmsg.Record, sev report.Severity) {
	if ke == nil {
		return nil, nil, report.OK
	}
	sev = report.Warning
	evs := ke.For(checks.JudgeDMA)
	for i, e := range evs {
		about := e.PCI == t.BDF
		for _, d := range t.Devices {
			about = about || e.Device == d.Name
		}
		if !about {
			continue
		}
		sev = max(sev, e.Sig.Sev)
		if e.Sig.Printer().Layer != "pcie" {
			dma = append(dma, e.Record)
			continue
		}
		if i > 0 && evs[i-1].PCI == "" && evs[i-1].Index == e.Index-1 &&
			(len(iommu) == 0 || iommu[len(iommu)-1].Seq != evs[i-1].Record.Seq) {
			iommu = append(iommu, evs[i-1].Record)
		}
		iommu = append(iommu, e.Record)
	}
	return iommu, dma, sev
}

type netErrs struct {
	name   string
	dir    string
	tx, rx uint64
	ok     bool
}

func readNetErrs(h *host.Host, nd string) (netErrs, error) {
	n := netErrs{name: nd, dir: "/sys/class/net/" + nd + "/statistics"}
	var errs []error
	for _, c := range []struct {
		file string
		v    *uint64
	}{{"tx_errors", &n.tx}, {"rx_errors", &n.rx}} {
		s, err := h.ReadString(path.Join(n.dir, c.file))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		v, err := ParseCount(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", path.Join(n.dir, c.file), err))
			continue
		}
		*c.v = v
	}
	n.ok = len(errs) == 0
	return n, errors.Join(errs...)
}

// counterGrowth returns the counters of after that exceed their value in before.
func counterGrowth(before, after []DriverCounter) []DriverCounter {
	prev := map[string]uint64{}
	for _, c := range before {
		prev[c.Name] = c.Value
	}
	var out []DriverCounter
	for _, c := range after {
		if c.Value > prev[c.Name] {
			out = append(out, DriverCounter{Name: c.Name, Value: c.Value - prev[c.Name], Kind: c.Kind})
		}
	}
	return out
}

func runDMA(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	h := env.Host
	ts, out := sharedTargets(env)
	klog := kernelLog(env)
	type perTarget struct {
		nets  []netErrs
		errs  []error
		names []string
		// drv holds each netdev's DMA-path driver counters; drvNote why they are missing.
		drv     map[string][]DriverCounter
		drvNote map[string]string
	}
	readDrv := func(nd string) ([]DriverCounter, string) {
		st, err := h.EthtoolStats(nd)
		if err != nil {
			return nil, err.Error()
		}
		return DMACounters(st), ""
	}
	pts := make([]perTarget, len(ts))
	for i, t := range ts {
		names := append([]string{}, t.Netdevs...)
		// The function's own netdevs (IPoIB, or Ethernet netdevs of an IB-less port) are on its DMA path too.
		if fn, err := h.ReadDir(path.Join(t.Nodes[0].Dir, "net")); err == nil {
			for _, n := range fn {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			pts[i].errs = append(pts[i].errs, err)
		}
		pts[i].names = names
		pts[i].drv, pts[i].drvNote = map[string][]DriverCounter{}, map[string]string{}
		for _, n := range names {
			pts[i].drv[n], pts[i].drvNote[n] = readDrv(n)
		}
		for _, n := range names {
			ne, err := readNetErrs(h, n)
			if err != nil {
				pts[i].errs = append(pts[i].errs, err)
			}
			pts[i].nets = append(pts[i].nets, ne)
		}
	}
	var later [][]netErrs
	var laterDrv []map[string][]DriverCounter
	out = append(out, checks.IntervalNotApplied(env, "the netdev and driver error counters")...)
	again, err := env.SecondReading(ctx, "netdev and driver error counter")
	if err != nil {
		return nil, err
	}
	if again {
		for _, p := range pts {
			var l []netErrs
			ld := map[string][]DriverCounter{}
			for _, n := range p.names {
				ne, _ := readNetErrs(h, n)
				l = append(l, ne)
				ld[n], _ = readDrv(n)
			}
			later = append(later, l)
			laterDrv = append(laterDrv, ld)
		}
	}
	for i, t := range ts {
		f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
		iommu, dma, logSev := dmaRecords(klog.events, t)
		var txrx []string
		grew := false
		for j, n := range pts[i].nets {
			if !n.ok {
				continue
			}
			obs := fmt.Sprintf("tx_errors %d, rx_errors %d since the netdev was created", n.tx, n.rx)
			if later != nil && later[i][j].ok {
				dt, dr := delta(later[i][j].tx, n.tx), delta(later[i][j].rx, n.rx)
				obs += fmt.Sprintf("; +%d/+%d in %s", dt, dr, env.Opts.Interval)
				grew = grew || dt > 0 || dr > 0
			}
			f.Evidence = append(f.Evidence, report.EvExp("netdev "+n.name, obs, "0", n.dir))
			if n.tx > 0 || n.rx > 0 {
				txrx = append(txrx, fmt.Sprintf("%s tx_errors %d rx_errors %d", n.name, n.tx, n.rx))
			}
		}
		if len(pts[i].names) == 0 {
			f.Evidence = append(f.Evidence, report.Ev("netdev", "none bound (InfiniBand port without IPoIB)", t.Nodes[0].Dir+"/net"))
		}
		var drv []string
		drvGrew := false
		for _, n := range pts[i].names {
			src := "ethtool -S " + n
			if note := pts[i].drvNote[n]; note != "" {
				f.Evidence = append(f.Evidence, report.Ev("driver counters "+n, "not available: "+note, src))
				continue
			}
			cs := pts[i].drv[n]
			if len(cs) == 0 {
				f.Evidence = append(f.Evidence, report.EvExp("driver counters "+n, "no PCIe signal-integrity or DMA error counts", "none", src))
				continue
			}
			obs := countersString(cs)
			if laterDrv != nil {
				grown := counterGrowth(cs, laterDrv[i][n])
				obs += "; grew in " + env.Opts.Interval.String() + ": " + orNone(countersString(grown))
				drvGrew = drvGrew || len(grown) > 0
			}
			f.Evidence = append(f.Evidence, report.EvExp("driver counters "+n, obs, "none", src))
			drv = append(drv, n+" "+countersString(cs))
		}
		f.Evidence = append(f.Evidence, klog.evidence("IOMMU fault", iommu, 5)...)
		f.Evidence = append(f.Evidence, klog.evidence("DMA error", dma, 5)...)
		if klog.err != nil {
			f.Evidence = append(f.Evidence, checks.KernelLogNote(klog.err))
		}
		switch {
		case len(iommu) > 0:
			// The IOMMU refused the device's DMA: a transfer was lost or a queue hung,
			// whatever the IOMMU driver's own level.
			f.Severity = report.Critical
			f.LogSpan = checks.LogSpan(iommu)
			f.Events = append(kevent.RecordKeys(iommu), kevent.RecordKeys(dma)...)
			f.Summary = fmt.Sprintf("%s (%s): %d IOMMU fault line(s) in the kernel log: the device's DMA was blocked", t.BDF, t.deviceNames(), len(iommu))
			f.Remediation = "A blocked DMA loses data or hangs queues. Check the IOMMU mode (iommu=pt or intel_iommu=on with passthrough for RDMA), driver/firmware versions, and whether the device was reset; " +
				"reload the driver or reboot to recover, and report the fault address to the vendor if it recurs."
		case len(dma) > 0:
			f.Severity = logSev
			f.LogSpan = checks.LogSpan(dma)
			f.Events = kevent.RecordKeys(dma)
			f.Summary = fmt.Sprintf("%s (%s): %d DMA error line(s) in the kernel log", t.BDF, t.deviceNames(), len(dma))
			f.Remediation = "DMA errors point at memory registration, the IOMMU or the PCIe path: check pcie.aer and pcie.link, the IOMMU mode, and the memory-registration limits; update driver and firmware if they recur."
		case len(drv) > 0 && (laterDrv == nil || drvGrew):
			// Counted by the NIC itself: signal-integrity recoveries on its PCIe link, or DMA
			// mapping/buffer/queue-entry errors. Each was recovered, so warning, not critical.
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s (%s): the driver counts PCIe/DMA errors: %s", t.BDF, t.deviceNames(), strings.Join(drv, "; "))
			f.Remediation = "pci_signal_integrity counts mean the card's PCIe link keeps recovering: move the card to another slot, reseat it, update firmware and BIOS (mlx5 counters documentation). " +
				"DMA mapping or buffer allocation errors mean the host ran short of mappable memory or IOMMU space: check memory pressure and the IOMMU mode. Run with --interval to see whether they still grow."
		case len(drv) > 0:
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s (%s): the driver counted PCIe/DMA errors before (%s) but none during the %s interval", t.BDF, t.deviceNames(), strings.Join(drv, "; "), env.Opts.Interval)
		case len(txrx) > 0 && (later == nil || grew):
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s (%s): transmit/receive errors on the bound netdev: %s", t.BDF, t.deviceNames(), strings.Join(txrx, "; "))
			f.Remediation = "Read ethtool -S <netdev> for which counter grows (rx_crc/symbol errors mean the cable or optics: see the port layer; dma/mapping/buffer errors mean the host side); run with --interval to see whether they are still growing."
		case len(txrx) > 0:
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s (%s): netdev errors since creation (%s) but none during the %s interval", t.BDF, t.deviceNames(), strings.Join(txrx, "; "), env.Opts.Interval)
		default:
			f.Severity = report.OK
			f.Summary = fmt.Sprintf("%s (%s): no netdev errors, IOMMU faults or DMA errors", t.BDF, t.deviceNames())
			if klog.err != nil {
				f.Summary = fmt.Sprintf("%s (%s): no netdev or driver-counted DMA errors (the kernel log was not searched for IOMMU faults and DMA errors)", t.BDF, t.deviceNames())
			}
		}
		if len(pts[i].errs) > 0 && f.Severity < report.Warning {
			f.Severity = report.Unknown
			f.Summary = fmt.Sprintf("%s (%s): DMA path counters could not be read: %v", t.BDF, t.deviceNames(), pts[i].errs[0])
		}
		for _, e := range pts[i].errs {
			f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
		}
		out = append(out, f)
	}
	// The counters are judged without the log; only its IOMMU and DMA error lines are missing.
	if klog.err != nil && len(ts) > 0 {
		out = append(out, checks.KernelLogFinding(klog.err, "IOMMU faults and DMA errors in the kernel log"))
	}
	return out, nil
}
