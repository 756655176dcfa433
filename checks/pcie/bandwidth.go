package pcie

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// ProbeMeasures is what the verbs loopback probe measures against this layer's budget. The probe
// (another package) reports RDMA WRITE loopback bandwidth; a result far below Budget.UsableGbps
// with a healthy link points at the DMA path or the host, one near it at the link itself.
const ProbeMeasures = "RDMA WRITE loopback bandwidth (verbs), compared with Budget.UsableGbps"

// Budget is the PCIe bandwidth a device's traffic can use, and what its ports ask for.
type Budget struct {
	// BDF is the function whose path was judged (the PF for a VF, the parent NIC for rxe).
	BDF string
	// UsableGbps is the narrowest trained link on the path after line encoding (0 = unknown).
	UsableGbps float64
	// Limit names the narrowest link: "8 GT/s x8 at 0000:3a:00.0".
	Limit string
	// LimitPort is the BDF of the narrowest link's downstream port (root or switch downstream
	// port): the link's identity, shared by every function below it.
	LimitPort string
	// PortGbps is the sum of the active ports' rates; MaxPortGbps the fastest one.
	PortGbps, MaxPortGbps float64
	// Ports describes each port counted ("mlx5_0/1 200 Gb/s ACTIVE").
	Ports []report.Evidence
	// limitAction is what a shortfall at the narrowest link asks for where that is not the
	// fault row's (reseating the card): a link at the most both its ends support, or held
	// back by a setting, is fixed by where the card sits or by the BIOS.
	limitAction report.Action
}

// DeviceBudget computes the budget of one RDMA device; the probe calls it.
func DeviceBudget(env *checks.Env, device string) (Budget, error) {
	ts, _ := resolveTargets(env.Host, env.Inventory())
	for _, t := range ts {
		for _, d := range t.Devices {
			if d.Name == device {
				b, errs := budget(env, t)
				return b, errors.Join(errs...)
			}
		}
	}
	return Budget{}, fmt.Errorf("%s: no PCI function to judge (software device without a PCI parent, or not found)", device)
}

func budget(env *checks.Env, t *target) (Budget, []error) {
	b, errs := pathBudget(env.Host, t)
	return b, append(errs, addPorts(env, t, &b)...)
}

// pathBudget is the usable bandwidth of the narrowest trained link from t up to the root port.
func pathBudget(h *host.Host, t *target) (Budget, []error) {
	b := Budget{BDF: t.BDF}
	var errs []error
	var states []linkState
	for _, n := range t.Nodes {
		s := readLinkState(h, n)
		errs = append(errs, s.Errs...)
		states = append(states, s)
	}
	for _, l := range pairLinks(states) {
		v := judgeLink(l)
		if v.GBps == 0 {
			b.UsableGbps, b.Limit, b.LimitPort = 0, "unknown at "+l.Port.BDF, l.Port.BDF
			break
		}
		if b.Limit == "" || v.GBps < b.UsableGbps {
			b.UsableGbps, b.Limit, b.LimitPort = v.GBps, v.Trained+" at "+l.Port.BDF, l.Port.BDF
			b.limitAction = v.Action
			if v.Severity == report.OK {
				b.limitAction = report.ActionFixConfiguration
			}
		}
	}
	return b, errs
}

// addPorts adds the active ports of t's devices to b and returns what could not be read.
func addPorts(env *checks.Env, t *target, b *Budget) []error {
	h := env.Host
	var errs []error
	// A VF's ports are its PF's ports, so only PF devices count when there are any.
	var devs []*inventory.Device
	for _, d := range t.Devices {
		if d.PCI != nil && !d.PCI.IsVF() {
			devs = append(devs, d)
		}
	}
	if len(devs) == 0 {
		devs = t.Devices[:1]
	}
	for _, d := range devs {
		if d.Software() {
			// rxe derives its port rate from the netdev speed and falls back to "2.5 Gb/sec
			// (1X SDR)" when the netdev reports none (lab: virtio speed -1), so the netdev is
			// the truthful source.
			nd := observe.Netdev(env, d.Parent)
			p, s, err := nd.Dir+"/speed", nd.SpeedText, nd.SpeedErr
			if errors.Is(err, syscall.EINVAL) {
				// The kernel refuses the speed of a netdev without link: nothing to carry.
				b.Ports = append(b.Ports, report.Ev("netdev "+d.Parent, "no link (speed refused with EINVAL), not counted", p))
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			mbps := nd.SpeedMbps
			if mbps <= 0 {
				b.Ports = append(b.Ports, report.Ev("netdev "+d.Parent, fmt.Sprintf("speed %s: unknown (virtual NIC or no link)", s), p))
				continue
			}
			g := float64(mbps) / 1000
			b.Ports = append(b.Ports, report.Ev("netdev "+d.Parent, fmt.Sprintf("%g Gb/s", g), p))
			b.PortGbps += g
			b.MaxPortGbps = max(b.MaxPortGbps, g)
			continue
		}
		for _, p := range d.Ports {
			dir := fmt.Sprintf("%s/%s/ports/%d", inventory.ClassDir, d.Name, p.Num)
			state, err := p.ReadState(h, d.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			rate, rs, err := p.ReadRate(h, d.Name)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			name := fmt.Sprintf("port %s/%d", d.Name, p.Num)
			if state.Name != "ACTIVE" {
				b.Ports = append(b.Ports, report.Ev(name, fmt.Sprintf("%s, not counted (%s)", state.Name, rs), dir))
				continue
			}
			b.Ports = append(b.Ports, report.Ev(name, fmt.Sprintf("ACTIVE at %g Gb/s (%s)", rate.Gbps, rs), dir+"/rate"))
			b.PortGbps += rate.Gbps
			b.MaxPortGbps = max(b.MaxPortGbps, rate.Gbps)
		}
	}
	return errs
}

// measured is one judged function's budget with what could not be read, split so that a
// sibling's unreadable ports can be told apart from its (shared) link.
type measured struct {
	t                  *target
	b                  Budget
	linkErrs, portErrs []error
}

func runBandwidth(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	ts, out := sharedTargets(env)
	ms := make([]measured, len(ts))
	bdfs := make([]string, len(ts))
	vf := make([]bool, len(ts))
	for i, t := range ts {
		b, linkErrs := pathBudget(env.Host, t)
		portErrs := addPorts(env, t, &b)
		ms[i] = measured{t: t, b: b, linkErrs: linkErrs, portErrs: portErrs}
		bdfs[i] = t.BDF
		// Only a software device's parent netdev can put a VF here (a VF device is judged as
		// its PF); a VF's traffic already counts through its PF's link.
		vf[i] = env.Host.Exists(path.Join(t.Nodes[0].Dir, "physfn"))
	}
	for i, sibs := range sharedLinks(bdfs, vf) {
		var ss []*measured
		for _, j := range sibs {
			ss = append(ss, &ms[j])
		}
		f := judgeBandwidth(&ms[i], ss)
		if nh := env.Host.Lacks(host.PartPCIeLink); nh != nil && (f.Severity == report.Unknown || f.Severity == report.Skipped) && ms[i].b.UsableGbps == 0 {
			// A tree without any link attribute (ibstat laid out as /sys) says nothing of the links.
			f.Summary = fmt.Sprintf("PCIe bandwidth of %s (%s) not judged: %s", ms[i].t.BDF, ms[i].t.deviceNames(), nh.Reason)
			f = f.SkippedBy(report.LimitSource, nh.Lift)
		}
		out = append(out, f)
	}
	return out, nil
}

// sharedLinks returns, for each function, the indices of the other functions that share its
// physical PCIe link: the functions of one multi-function device. A PCIe link joins one port to
// one device, and a multi-function device has one link for all its functions, which report the
// same Link Status (the PCIe Base Specification has every function of a multi-function upstream
// port report the same link capabilities; Linux keeps one struct pcie_link_state per link on the
// port above it, shared by all functions on the bus below: "All PCIe functions are in one slot",
// drivers/pci/pcie/aspm.c). So a dual-port ConnectX, which exposes each port as its own PF
// (0000:3b:00.0 and 0000:3b:00.1), feeds both ports through one link. The device is the BDF
// without its function number. VFs are left out: their traffic already counts through their PF.
// (With ARI a device may number functions beyond .7 as 01.x; PFs numbered that high are not
// grouped here, while the device number in the key keeps endpoints in different slots of a
// root bus apart.)
func sharedLinks(bdfs []string, vf []bool) [][]int {
	byDev := map[string][]int{}
	for i, b := range bdfs {
		if vf[i] {
			continue
		}
		dev, _, ok := strings.Cut(b, ".")
		if !ok {
			continue
		}
		byDev[dev] = append(byDev[dev], i)
	}
	out := make([][]int, len(bdfs))
	for _, group := range byDev {
		for _, i := range group {
			for _, j := range group {
				if j != i {
					out[i] = append(out[i], j)
				}
			}
		}
	}
	return out
}

// judgeBandwidth judges one function's budget against the active ports it carries: its own
// and, when it shares its link with sibling functions, theirs too.
func judgeBandwidth(m *measured, sibs []*measured) engine.Finding {
	t, b := m.t, m.b
	errs := append(append([]error(nil), m.linkErrs...), m.portErrs...)
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
	usable := fmt.Sprintf("%.1f Gb/s (%s)", b.UsableGbps, b.Limit)
	f.Evidence = append(f.Evidence, report.Ev("usable PCIe bandwidth", usable, t.Nodes[0].Dir))
	f.Evidence = append(f.Evidence, b.Ports...)
	demand, maxPort := b.PortGbps, b.MaxPortGbps
	var sibNames []string
	var sibErrs []error
	// The functions on the link in BDF order, for the demand breakdown and the remediation.
	all := append([]*measured{m}, sibs...)
	sort.Slice(all, func(i, j int) bool { return all[i].t.BDF < all[j].t.BDF })
	for _, s := range sibs {
		name := fmt.Sprintf("%s (%s)", s.t.BDF, s.t.deviceNames())
		sibNames = append(sibNames, name)
		f.Evidence = append(f.Evidence, report.Ev("shares the PCIe link with", name+
			": functions of one multi-function device share one physical link (each reports the same Link Status)", s.t.Nodes[0].Dir))
		f.Evidence = append(f.Evidence, s.b.Ports...)
		for _, e := range s.portErrs {
			f.Evidence = append(f.Evidence, report.Ev("sibling read error", e.Error(), ""))
		}
		sibErrs = append(sibErrs, s.portErrs...)
		demand += s.b.PortGbps
		maxPort = max(maxPort, s.b.MaxPortGbps)
	}
	if len(sibs) == 0 {
		f.Evidence = append(f.Evidence, report.Ev("active port demand", fmt.Sprintf("%g Gb/s", b.PortGbps), ""))
	} else {
		var parts []string
		for _, x := range all {
			parts = append(parts, fmt.Sprintf("%g Gb/s on %s", x.b.PortGbps, x.t.BDF))
		}
		f.Evidence = append(f.Evidence, report.Ev("active port demand",
			fmt.Sprintf("%g Gb/s on the shared link (%s)", demand, strings.Join(parts, " + ")), ""))
	}
	f.Evidence = append(f.Evidence, report.Ev("probe", ProbeMeasures+" (run by the probe layer, not by this check)", ""))
	shared := strings.Join(sibNames, ", ")
	switch {
	case b.UsableGbps == 0 && b.Limit == "" && len(m.linkErrs) == 0:
		// No function on the path has a link: no link files (pci-sysfs shows them for PCIe
		// functions only, pcie_dev_attrs_are_visible in drivers/pci/pci-sysfs.c; AWS EFA) or
		// none that reports a capability (an integrated endpoint, hns3): as pcie.link says.
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s (%s) has no PCIe link, so there is no PCIe bandwidth to judge", t.BDF, t.deviceNames())
		for _, e := range errs {
			f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
		}
	case b.UsableGbps == 0:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("PCIe bandwidth of %s (%s) unknown: a link on the path reports no speed or width", t.BDF, t.deviceNames())
		for _, e := range errs {
			f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
		}
	case b.MaxPortGbps == 0 && len(errs) > 0:
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("port rates of %s could not be read: %v", t.deviceNames(), errs[0])
		for _, e := range errs {
			f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
		}
	case b.MaxPortGbps == 0:
		// The siblings' own findings judge the shared link against their ports.
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s (%s): %.1f Gb/s usable PCIe bandwidth; no active port with a known rate to compare", t.BDF, t.deviceNames(), b.UsableGbps)
	case b.UsableGbps < b.MaxPortGbps:
		// Not even one port can run at line rate: every workload on it is PCIe-bound.
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s (%s): the PCIe path delivers at most %.1f Gb/s (%s) but a port runs at %g Gb/s",
			t.BDF, t.deviceNames(), b.UsableGbps, b.Limit, b.MaxPortGbps)
		f.Remediation = fmt.Sprintf("Put the card in a slot whose whole path trains at least %s (see pcie.link for the limiting hop: move the card, or reseat it if the link trained below its capability).",
			neededLink(maxPort))
	case b.UsableGbps < demand && len(sibs) > 0:
		// The same judgement as one function with two ports (a warning, see below): the
		// card's ports together ask more than its one link carries, whichever function each
		// port belongs to.
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s (%s): the PCIe link it shares with %s delivers at most %.1f Gb/s (%s), less than the %g Gb/s of all active ports of these functions together",
			t.BDF, t.deviceNames(), shared, b.UsableGbps, b.Limit, demand)
		var fns []string
		for _, x := range all {
			fns = append(fns, fmt.Sprintf("%s (%s)", x.t.BDF, x.t.deviceNames()))
		}
		f.Remediation = fmt.Sprintf("Expect at most %.0f Gb/s across the ports of %s together (one PCIe link); for line rate on all ports the path must train at least %s.",
			b.UsableGbps, strings.Join(fns, " and "), neededLink(demand))
	case b.UsableGbps < b.PortGbps:
		// Dual-port cards are often cabled for redundancy, not for both ports at line rate,
		// so the sum exceeding the budget is a warning, not a failure.
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s (%s): the PCIe path delivers at most %.1f Gb/s (%s), less than the %g Gb/s of all active ports together",
			t.BDF, t.deviceNames(), b.UsableGbps, b.Limit, b.PortGbps)
		f.Remediation = fmt.Sprintf("Expect at most %.0f Gb/s across the ports together; for line rate on all ports the path must train at least %s.", b.UsableGbps, neededLink(demand))
	case len(sibErrs) > 0:
		// Its own ports fit, but the link also carries ports whose rate could not be read:
		// calling it healthy could hide a shared link that is oversubscribed.
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("%s (%s): %.1f Gb/s usable PCIe bandwidth covers its own %g Gb/s, but the port rates of %s, which shares the link, could not be read: %v",
			t.BDF, t.deviceNames(), b.UsableGbps, b.PortGbps, shared, sibErrs[0])
	case len(sibs) > 0:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s (%s): %.1f Gb/s usable PCIe bandwidth covers the %g Gb/s of the active ports on the link it shares with %s",
			t.BDF, t.deviceNames(), b.UsableGbps, demand, shared)
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s (%s): %.1f Gb/s usable PCIe bandwidth covers the %g Gb/s of the active ports", t.BDF, t.deviceNames(), b.UsableGbps, b.PortGbps)
	}
	if f.Severity == report.Warning || f.Severity == report.Critical {
		f.Action = b.limitAction
	}
	// One link, one problem: the finding is drawn from the narrowest link, whose identity the
	// siblings' findings and pcie.link's carry too, and the report makes one root cause of them.
	if f.Severity >= report.Warning && b.LimitPort != "" {
		f.Events = []string{linkEvent(b.LimitPort)}
	}
	return f
}

// neededLink names the smallest common link (x16 or x8 of a generation) that carries gbps.
func neededLink(gbps float64) string {
	for _, s := range []Speed{8, 16, 32, 64} {
		for _, w := range []int{8, 16} {
			if s.LaneGbps()*float64(w) >= gbps {
				return fmt.Sprintf("Gen%d x%d (%s, %.0f Gb/s)", s.Gen(), w, linkString(s, w), s.LaneGbps()*float64(w))
			}
		}
	}
	return "a wider or faster link than PCIe offers"
}
