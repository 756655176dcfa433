package pcie

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "pcie.settings",
		Description: "PCIe Device Control settings of each RDMA function: MaxReadReq against NVIDIA's tuning guidance, MaxPayload against what the path supports",
		Fault:       "pcie-interface",
		Run:         runSettings,
	})
}

const (
	// recommendedMRRS: NVIDIA's "Understanding PCIe Configuration for Maximum Performance"
	// (Enterprise Support knowledge base, section "PCIe Max Read Request") shows raising a
	// ConnectX adapter's MaxReadReq to 4096 bytes with setpci, since the number of read
	// requests an adapter keeps in flight is bounded and larger requests move more data per
	// request.
	recommendedMRRS = 4096
	srcMRRS         = "NVIDIA Enterprise Support, \"Understanding PCIe Configuration for Maximum Performance\", section \"PCIe Max Read Request\" (4096 bytes for ConnectX)"
	// lowMRRS: the Firmware Test Suite's maxreadreq test calls anything below 256 bytes too low
	// ("LowMaxReadReq: ... will affect performance").
	lowMRRS = 256
	srcLow  = "Firmware Test Suite (fwts) maxreadreq test, LowMaxReadReq: below 256 bytes throughput suffers"
	srcMPS  = "PCI Express Base Specification, Device Control \"Max_Payload_Size\": must not exceed what every function on the path supports; Linux sets it from the path (pci=pcie_bus_safe/perf, drivers/pci/probe.c pcie_bus_configure_settings)"
)

func runSettings(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	ts, out := sharedTargets(env)
	for _, t := range ts {
		out = append(out, judgeSettings(env, t))
	}
	return out, nil
}

func judgeSettings(env *checks.Env, t *target) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
	if t.Devices[0].PCI == nil {
		// A software device's traffic crosses its parent NIC, but that NIC is no RDMA adapter:
		// NVIDIA's MaxReadReq guidance is for ConnectX, and an emulated NIC (virtio) reports
		// whatever its hypervisor chose.
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("not judged: %s is the NIC under software device %s, not an RDMA adapter", t.BDF, t.deviceNames())
		return f
	}
	var caps []*ExpressCap
	var capErr error
	for _, n := range t.Nodes {
		l := readLinkState(env.Host, n)
		caps = append(caps, l.Cap)
		if l.Cap == nil && capErr == nil {
			capErr = l.CapErr
		}
	}
	c := caps[0]
	if cfg := path.Join(t.Nodes[0].Dir, "config"); c == nil && !env.Host.Exists(cfg) {
		// Live, sysfs always has the file; a --root tree or a snapshot may not hold it.
		f.Summary = fmt.Sprintf("skipped: %s is not in this host view, so MaxPayload and MaxReadReq cannot be read", cfg)
		return f.SkippedBy(report.LimitSource, "run rdmadiag on the host itself, or record it with rdmadiag record as root")
	}
	if c == nil {
		if capErr == nil || errors.Is(capErr, ErrNoExpressCap) {
			f.Summary = fmt.Sprintf("skipped: the PCI Express capability of %s is not in the readable config space (only root reads past its first 64 bytes)", t.BDF)
			if capErr != nil {
				f.Evidence = append(f.Evidence, report.Ev("config space", capErr.Error(), path.Join(t.Nodes[0].Dir, "config")))
			}
			return f.SkippedBy(report.LimitPrivilege, "run rdmadiag as root (or record the snapshot as root) to read MaxPayload and MaxReadReq")
		}
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("PCIe settings of %s could not be read: %v", t.BDF, capErr)
		return f
	}
	// The path supports the smallest MaxPayload any of its functions supports.
	pathMax, limiter, unread := c.MaxPayloadSupported, t.BDF, 0
	for i, pc := range caps[1:] {
		if pc == nil {
			unread++
		}
		if pc != nil && pc.MaxPayloadSupported < pathMax {
			pathMax, limiter = pc.MaxPayloadSupported, t.Nodes[i+1].BDF
		}
	}
	cfg := path.Join(t.Nodes[0].Dir, "config")
	f.Evidence = append(f.Evidence,
		report.EvExp("MaxReadReq", fmt.Sprintf("%d bytes", c.MaxReadRequest), fmt.Sprintf("%d bytes", recommendedMRRS), cfg+" (Device Control bits 14:12)"),
		report.EvExp("MaxPayload", fmt.Sprintf("%d bytes", c.MaxPayload), fmt.Sprintf("%d bytes, the most the path supports (limited by %s)", pathMax, limiter), cfg+" (Device Control bits 7:5)"))
	f.Severity = report.OK
	var notes []string
	nvidia := t.Devices[0].PCI != nil && t.Devices[0].PCI.Vendor == 0x15b3
	switch {
	case c.MaxReadRequest < lowMRRS:
		f.Severity = report.Warning
		f.Action = report.ActionFixConfiguration // a register the host sets, not hardware
		notes = append(notes, fmt.Sprintf("MaxReadReq is %d bytes, below the %d bytes under which DMA reads (the NIC fetching send data and WQEs) lose throughput", c.MaxReadRequest, lowMRRS))
		f.Evidence = append(f.Evidence, report.Ev("source", srcLow, ""))
	case nvidia && c.MaxReadRequest < recommendedMRRS:
		f.Severity = report.Info
		notes = append(notes, fmt.Sprintf("MaxReadReq is %d bytes; NVIDIA recommends %d for ConnectX, so that each read request fetches more data", c.MaxReadRequest, recommendedMRRS))
		f.Evidence = append(f.Evidence, report.Ev("source", srcMRRS, ""))
	}
	if c.MaxPayload < pathMax {
		// MaxPayload is the platform's choice along the path, never the NIC's.
		f.Severity = max(f.Severity, report.Info)
		which := "every function on the path supports"
		if unread > 0 {
			which = fmt.Sprintf("the functions whose config space was read (%d of %d) support", len(caps)-unread, len(caps))
		}
		notes = append(notes, fmt.Sprintf("MaxPayload is %d bytes although %s %d: the platform (BIOS or the kernel's pci=pcie_bus_* policy) chose less", c.MaxPayload, which, pathMax))
		f.Evidence = append(f.Evidence, report.Ev("source", srcMPS, ""))
	}
	if len(notes) == 0 {
		f.Summary = fmt.Sprintf("%s (%s): MaxReadReq %d, MaxPayload %d bytes (the most the path supports)", t.BDF, t.deviceNames(), c.MaxReadRequest, c.MaxPayload)
		return f
	}
	f.Summary = fmt.Sprintf("%s (%s): %s", t.BDF, t.deviceNames(), joinSentences(notes))
	if c.MaxReadRequest < recommendedMRRS && nvidia {
		f.Remediation = fmt.Sprintf("Raise MaxReadReq to 4096: setpci -s %s CAP_EXP+8.w=5000:7000 (bits 14:12 = 5; lost at reboot, so apply it from a boot script), "+
			"or the BIOS's PCIe Max Read Request setting.", t.BDF)
	}
	if c.MaxPayload < pathMax {
		if f.Remediation != "" {
			f.Remediation += " "
		}
		f.Remediation += "MaxPayload is set by the platform for the whole path: pci=pcie_bus_perf on the kernel command line or the BIOS's Max Payload Size setting raises it; the NIC is not at fault."
	}
	return f
}

func joinSentences(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}
