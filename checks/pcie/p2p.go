package pcie

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "pcie.acs",
		Description: "PCIe ACS redirect on the switch ports between each RDMA NIC and its nearest NVIDIA GPU (peer traffic forced up to the root complex)",
		Fault:       "gpudirect",
		Run:         runACS,
	})
	checks.Register(checks.Check{
		ID:          "pcie.affinity",
		Description: "PCIe and NUMA affinity of each RDMA NIC to its nearest NVIDIA GPU: same switch, same NUMA node, or across sockets",
		Fault:       "gpudirect",
		Run:         runAffinity,
	})
}

const (
	srcACS = "NCCL User Guide, Troubleshooting, \"PCI Access Control Services (ACS)\": ACS redirects peer-to-peer traffic to the CPU root complex, " +
		"causing a significant performance reduction or a hang; disable it on the PCI switches"
	srcAffinity = "NVIDIA GPUDirect RDMA User Manual, \"System Requirements and Recommendations\": for the best performance the HCA and the GPU " +
		"must sit under the same PCIe root complex (ideally the same switch); NCCL names the distances PIX/PXB (same switch), PHB/NODE (same CPU), SYS (across the inter-socket link)"
)

// placement is where a NIC sits relative to one GPU.
type placement struct {
	g      gpu
	common string   // deepest shared PCI directory, "" when none
	nicUp  []string // the NIC's bridges below common
	gpuUp  []string // the GPU's bridges below common
	level  int      // 0 same switch, 1 same host bridge, 2 same NUMA node, 3 other NUMA node, 4 unknown
}

var levelNames = []string{"same PCIe switch", "same PCIe host bridge", "same NUMA node", "different NUMA node", "unknown NUMA node"}

func place(h *host.Host, t *target, g gpu, nicNUMA int) placement {
	c, nu, gu := commonAncestor(t.Nodes[0].Dir, g.Dir)
	p := placement{g: g, common: c, nicUp: nu, gpuUp: gu}
	switch {
	case c != "" && !isRootPort(h, c, t):
		p.level = 0
	case hostBridge(t.Nodes[0].Dir) == hostBridge(g.Dir) && hostBridge(g.Dir) != "":
		p.level = 1
	case nicNUMA < 0 || g.NUMA < 0:
		p.level = 4
	case nicNUMA == g.NUMA:
		p.level = 2
	default:
		p.level = 3
	}
	return p
}

// isRootPort says whether a shared directory is the root port itself (the last bridge of the
// NIC's path), not a switch below it.
func isRootPort(h *host.Host, dir string, t *target) bool {
	if last := t.Nodes[len(t.Nodes)-1].Dir; dir == last {
		return true
	}
	if b, err := h.ReadFile(path.Join(dir, "config")); err == nil {
		if c, err := ParseConfig(b); err == nil {
			return c.PortType == 4
		}
	}
	return false
}

// nearest returns the GPU placement closest to the NIC (lowest level, then the one with the
// fewest bridges in between).
func nearest(h *host.Host, t *target, gpus []gpu) placement {
	numa := -1
	if d := t.Devices[0]; d.PCI != nil {
		numa = d.PCI.NUMANode
	}
	var best placement
	for i, g := range gpus {
		p := place(h, t, g, numa)
		if i == 0 || p.level < best.level || (p.level == best.level && len(p.nicUp)+len(p.gpuUp) < len(best.nicUp)+len(best.gpuUp)) {
			best = p
		}
	}
	return best
}

func gpuTargets(env *checks.Env) ([]*target, []gpu, []engine.Finding) {
	l := gpusFact.Get(env)
	if f := noGPU(env, l); f != nil {
		return nil, nil, f
	}
	ts, out := sharedTargets(env)
	var hw []*target
	for _, t := range ts {
		if t.Devices[0].PCI != nil {
			hw = append(hw, t)
		}
	}
	return hw, l.gpus, out
}

func runAffinity(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	ts, gpus, out := gpuTargets(env)
	if gpus == nil {
		return out, nil
	}
	for _, t := range ts {
		p := nearest(env.Host, t, gpus)
		f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
		f.Evidence = append(f.Evidence,
			report.Ev("nearest GPU", p.g.BDF+" ("+levelNames[p.level]+")", p.g.Dir),
			report.EvExp("NUMA node", fmt.Sprintf("NIC %d, GPU %d", t.Devices[0].PCI.NUMANode, p.g.NUMA), "the same", t.Nodes[0].Dir+"/numa_node"),
			report.Ev("source", srcAffinity, ""))
		switch p.level {
		case 0:
			f.Severity = report.OK
			f.Summary = fmt.Sprintf("%s (%s) shares a PCIe switch with GPU %s: GPUDirect RDMA traffic stays below the switch", t.BDF, t.deviceNames(), p.g.BDF)
		case 1, 2:
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s (%s) and its nearest GPU %s are on the same NUMA node but not under one PCIe switch: peer traffic crosses the CPU's root complex, "+
				"which on many CPUs forwards peer-to-peer at lower bandwidth than a switch", t.BDF, t.deviceNames(), p.g.BDF)
		case 3:
			f.Severity = report.Warning
			f.Summary = fmt.Sprintf("%s (%s) sits on NUMA node %d and its nearest GPU %s on node %d: GPUDirect RDMA traffic crosses the inter-socket link "+
				"(NCCL's SYS distance), at a fraction of the PCIe bandwidth, or is not used at all", t.BDF, t.deviceNames(), t.Devices[0].PCI.NUMANode, p.g.BDF, p.g.NUMA)
			f.Remediation = "Pair each GPU with a NIC on its own NUMA node (NCCL does so itself when one exists); if none exists, move the NIC to a slot of the GPUs' CPU (the board manual maps slots to CPUs)."
		default:
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s (%s): the platform does not say which NUMA node it or GPU %s sits on (numa_node -1), and they share no PCIe switch", t.BDF, t.deviceNames(), p.g.BDF)
		}
		out = append(out, f)
	}
	return out, nil
}

func runACS(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	ts, gpus, out := gpuTargets(env)
	if gpus == nil {
		return out, nil
	}
	for _, t := range ts {
		out = append(out, judgeACS(env, t, nearest(env.Host, t, gpus)))
	}
	return out, nil
}

func judgeACS(env *checks.Env, t *target, p placement) engine.Finding {
	h := env.Host
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
	f.Evidence = append(f.Evidence, report.Ev("nearest GPU", p.g.BDF+" ("+levelNames[p.level]+")", p.g.Dir))
	if p.level != 0 {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s (%s) shares no PCIe switch with a GPU: peer traffic goes through the root complex whatever ACS says (see pcie.affinity)", t.BDF, t.deviceNames())
		return f
	}
	// The ports a peer request crosses: the NIC's and the GPU's bridges up to the switch port
	// they share, and that port itself.
	ports := append(append(append([]string{}, p.nicUp...), p.gpuUp...), p.common)
	var redirect, unreadable []string
	var limited error
	for _, dir := range ports {
		bdf := path.Base(dir)
		b, err := h.ReadFile(path.Join(dir, "config"))
		if err != nil {
			unreadable = append(unreadable, bdf+": "+err.Error())
			continue
		}
		a, err := ParseACS(b)
		switch {
		case errors.Is(err, ErrNoExtendedConfig):
			limited = err
			f.Evidence = append(f.Evidence, report.Ev("ACS at "+bdf, fmt.Sprintf("not readable: config file holds %d bytes", len(b)), path.Join(dir, "config")))
			continue
		case errors.Is(err, ErrNoACS):
			f.Evidence = append(f.Evidence, report.Ev("ACS at "+bdf, "no ACS capability (nothing to redirect)", path.Join(dir, "config")))
			continue
		case err != nil:
			unreadable = append(unreadable, bdf+": "+err.Error())
			continue
		}
		f.Evidence = append(f.Evidence, report.EvExp("ACS control at "+bdf, fmt.Sprintf("0x%04x: %s", a.Control, a.Bits()), "ReqRedir- CmpltRedir- EgressCtrl-",
			fmt.Sprintf("%s (extended capability 0x000d at 0x%x, control at +6)", path.Join(dir, "config"), a.Offset)))
		if a.Redirects() {
			redirect = append(redirect, bdf)
		}
	}
	switch {
	case len(redirect) > 0:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("ACS redirect is enabled on %s between %s (%s) and GPU %s: peer-to-peer requests are sent up to the root complex instead of "+
			"across the switch (GPUDirect RDMA bandwidth drops, or transfers hang)", strings.Join(redirect, ", "), t.BDF, t.deviceNames(), p.g.BDF)
		f.Remediation = "Disable ACS redirect on these switch ports: in the BIOS (PCIe ACS / \"ACS Control\" disabled), or with the kernel parameter " +
			"pci=disable_acs_redir=" + strings.Join(redirect, ";") + ", or at runtime with setpci -s <port> ECAP_ACS+0x6.w=0000 (lost at reboot). " +
			"Where the IOMMU must isolate devices for VMs, ACS has to stay on and GPUDirect RDMA across this switch is not available."
		f.Evidence = append(f.Evidence, report.Ev("source", srcACS, ""))
	case len(unreadable) > 0:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("ACS between %s and GPU %s could not be read: %s", t.BDF, p.g.BDF, strings.Join(unreadable, "; "))
	case limited != nil:
		f.Summary = fmt.Sprintf("skipped: the ACS control of the switch ports between %s and GPU %s is in the extended config space, which only root can read", t.BDF, p.g.BDF)
		return f.SkippedBy(report.LimitPrivilege, "run rdmadiag as root (or record the snapshot as root), so that the switch ports' extended config space can be read")
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("no ACS redirect between %s (%s) and GPU %s: peer traffic can cross the switch directly", t.BDF, t.deviceNames(), p.g.BDF)
	}
	return f
}
