package port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.roce_qos",
		Description: "RoCE lossless settings per port: PFC priorities and their pause counters, trust (DSCP or PCP) and the DSCP-to-priority map, ETS, ECN per priority (MLNX_OFED), against the policy and the identical RoCE ports of the node",
		Fault:       "port-link",
		Run:         runRoCEQoS,
	})
}

// RoCE runs lossless when the priority its traffic is classified to has PFC, with ECN-based
// congestion control (DCQCN) beside it so that pauses stay rare, or lossy with ECN alone
// (NVIDIA's "Lossless RoCE Configuration for Linux Drivers in DSCP-Based QoS Mode": mlnx_qos -i
// <if> --trust dscp --pfc 0,0,0,1,0,0,0,0, and ECN enabled on that priority in
// /sys/class/net/<if>/ecn/roce_np|roce_rp/enable/<prio>). What the host says comes from DCB
// netlink (package dcbnl: what `dcb pfc show` and mlnx_qos read) and, where MLNX_OFED exposes
// it, the ECN sysfs of en_sysfs.c. The fabric's side (the switch's PFC and ECN) is not visible
// from the host: the policy and the node's identical ports stand in for it.

// liftDCB is how to have the settings judged when the source does not hold them.
const liftDCB = "record a snapshot with `rdmadiag record` on the host, which captures the DCB netlink answers"

// ecnState is one direction of ECN (notification point: marks seen, CNPs sent; reaction point:
// CNPs handled, rate cut) per priority; nil when the driver exposes no ECN sysfs.
type ecnState struct {
	np, rp [8]bool
}

// readECN reads MLNX_OFED's /sys/class/net/<nd>/ecn/roce_{np,rp}/enable/<prio> ("0"/"1",
// mlx5e_show_ecn_enable in MLNX_OFED's en_sysfs.c); nil without the directory (in-box mlx5).
func readECN(h *host.Host, nd string) (*ecnState, error) {
	dir := "/sys/class/net/" + nd + "/ecn"
	if _, err := h.ReadDir(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	e := &ecnState{}
	for _, side := range []struct {
		name string
		dst  *[8]bool
	}{{"roce_np", &e.np}, {"roce_rp", &e.rp}} {
		for p := 0; p < 8; p++ {
			f := fmt.Sprintf("%s/%s/enable/%d", dir, side.name, p)
			s, err := h.ReadString(f)
			if err != nil {
				return nil, err
			}
			switch strings.TrimSpace(s) {
			case "1":
				side.dst[p] = true
			case "0":
			default:
				return nil, fmt.Errorf("%s: %q is not 0 or 1", f, strings.TrimSpace(s))
			}
		}
	}
	return e, nil
}

// qosPort is what one RoCE port's settings are, for the node comparison.
type qosPort struct {
	p    portRef
	ieee *dcbnl.IEEE
	idx  int
}

func runRoCEQoS(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	var c *dcbnl.Client
	if conn := h.DCB(); conn != nil {
		c = dcbnl.NewClient(conn)
	}
	var out []engine.Finding
	var judged []qosPort
	for _, p := range ports {
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		nd := p.port.Netdevs
		switch {
		case p.ib():
			f.Severity, f.Summary = report.Skipped, p.name()+" is InfiniBand: its lanes are lossless by credit-based flow control, no PFC to set"
		case p.dev.Software():
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s is a software RDMA device (%s): its netdev's QoS is the underlying NIC's", p.name(), p.dev.Driver)
		case len(nd) == 0:
			f.Severity, f.Summary = report.Skipped, p.name()+": no netdev is bound to the port, so its DCB settings cannot be asked for"
		case c == nil:
			f.Summary = p.name() + ": the source holds no DCB netlink answers (a tree, or a snapshot recorded without them)"
			f = f.SkippedBy(report.LimitSource, liftDCB)
		}
		if f.Severity == report.Skipped {
			out = append(out, f)
			continue
		}
		ieee, err := c.IEEE(nd[0])
		switch {
		case errors.Is(err, host.ErrNotRecorded):
			f.Summary = p.name() + ": the snapshot holds no DCB netlink answer for " + nd[0]
			out = append(out, f.SkippedBy(report.LimitSource, liftDCB))
			continue
		case errors.Is(err, syscall.EOPNOTSUPP):
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s: %s has no DCB (its driver implements no dcbnl operations: a VF, a bond, or a NIC without QoS offload)", p.name(), nd[0])
			out = append(out, f)
			continue
		case err != nil:
			f.Severity, f.Summary = report.Unknown, p.name()+": DCB settings unreadable: "+err.Error()
			out = append(out, f)
			continue
		case ieee.PFC == nil:
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s: %s reports no PFC settings (no ieee_getpfc in its driver)", p.name(), nd[0])
			out = append(out, f)
			continue
		}
		ecn, err := readECN(h, nd[0])
		if err != nil {
			f.Evidence = append(f.Evidence, report.Ev("ECN", "unreadable: "+err.Error(), "/sys/class/net/"+nd[0]+"/ecn"))
		}
		judgeRoCEQoS(env, p, nd[0], ieee, ecn, &f)
		judged = append(judged, qosPort{p: p, ieee: ieee, idx: len(out)})
		out = append(out, f)
	}
	compareRoCEQoS(judged, out)
	return out, nil
}

func prioList(mask uint8) []int {
	var out []int
	for i := 0; i < 8; i++ {
		if mask&(1<<i) != 0 {
			out = append(out, i)
		}
	}
	return out
}

func intsString(v []int) string {
	if len(v) == 0 {
		return "none"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func trustName(i *dcbnl.IEEE) string {
	if i.TrustsDSCP() {
		return "dscp"
	}
	return "pcp"
}

// dscpsOf lists, as ranges, the DSCP values the APP table maps to prio: "24-31".
func dscpsOf(i *dcbnl.IEEE, prio int) string {
	m := i.DSCPPriority()
	var ds []int
	for d := 0; d < 64; d++ {
		if p, ok := m[uint16(d)]; ok && int(p) == prio {
			ds = append(ds, d)
		}
	}
	var parts []string
	for j := 0; j < len(ds); {
		k := j
		for k+1 < len(ds) && ds[k+1] == ds[k]+1 {
			k++
		}
		if k == j {
			parts = append(parts, strconv.Itoa(ds[j]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ds[j], ds[k]))
		}
		j = k + 1
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

func judgeRoCEQoS(env *checks.Env, p portRef, nd string, ieee *dcbnl.IEEE, ecn *ecnState, f *engine.Finding) {
	src := "DCB netlink IEEE_GET " + nd
	pfc := prioList(ieee.PFC.Enabled)
	trust := trustName(ieee)
	f.Evidence = append(f.Evidence, report.Ev("PFC priorities", intsString(pfc), src), report.Ev("trust", trust, src+" (APP table / trust table)"))
	for _, pr := range pfc {
		f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("priority %d pause frames sent/received", pr),
			fmt.Sprintf("%d / %d", ieee.PFC.Requests[pr], ieee.PFC.Indications[pr]), src+" (ieee_pfc requests/indications)"))
		if trust == "dscp" {
			f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("DSCP values on priority %d", pr), dscpsOf(ieee, pr), src+" (APP table)"))
		}
		if ieee.ETS != nil {
			tc := ieee.ETS.PrioTC[pr]
			if tc < 8 {
				f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("priority %d traffic class, ETS share", pr), fmt.Sprintf("TC %d, %d %%", tc, ieee.ETS.TCTxBW[tc]), src+" (ieee_ets)"))
			}
		}
	}
	ecnPath := "/sys/class/net/" + nd + "/ecn/roce_{np,rp}/enable"
	if ecn != nil {
		var np, rp []int
		for i := 0; i < 8; i++ {
			if ecn.np[i] {
				np = append(np, i)
			}
			if ecn.rp[i] {
				rp = append(rp, i)
			}
		}
		f.Evidence = append(f.Evidence, report.Ev("ECN notification point priorities", intsString(np), ecnPath), report.Ev("ECN reaction point priorities", intsString(rp), ecnPath))
	}

	var crit, warn, fixes []string
	if pol := portsPolicy(env.Opts); pol != nil {
		from := "policy " + env.Opts.PolicyFile
		if pol.PFCPriorities != nil {
			f.Evidence = append(f.Evidence, report.EvExp("policy PFC priorities", intsString(pfc), intsString(pol.PFCPriorities), from+" ports.pfc_priorities"))
			if !slices.Equal(pfc, pol.PFCPriorities) {
				crit = append(crit, fmt.Sprintf("%s, the fleet policy expects %s: under congestion, RoCE frames on an unpaused lossless priority are dropped", pfcPhrase(pfc), pfcPhrase(pol.PFCPriorities)))
				fixes = append(fixes, fmt.Sprintf("Set PFC as the fabric does: mlnx_qos -i %s --pfc %s (or dcb pfc set dev %s prio-pfc ...), and make it persistent (the NIC's DCBX, or a boot script).", nd, pfcArg(pol.PFCPriorities), nd))
			}
		}
		if pol.Trust != "" {
			f.Evidence = append(f.Evidence, report.EvExp("policy trust", trust, pol.Trust, from+" ports.trust"))
			if trust != pol.Trust {
				crit = append(crit, fmt.Sprintf("the port trusts %s, the fleet policy expects %s: RoCE traffic is classified to another priority than the fabric's lossless one", trust, pol.Trust))
				fixes = append(fixes, fmt.Sprintf("mlnx_qos -i %s --trust %s (or dcb app / the driver's trust setting).", nd, pol.Trust))
			}
		}
	}
	switch {
	case len(pfc) == 0 && ecn != nil && !slices.Contains(ecn.np[:], true) && !slices.Contains(ecn.rp[:], true):
		warn = append(warn, "neither PFC nor ECN on any priority: congestion drops RoCE frames and nothing slows the senders, so throughput collapses into retransmissions")
		fixes = append(fixes, fmt.Sprintf("Enable ECN (echo 1 > /sys/class/net/%s/ecn/roce_np/enable/<prio> and roce_rp) on the RoCE priority, and PFC there if the fabric is lossless.", nd))
	case len(pfc) > 0 && ecn != nil:
		var bare []string
		for _, pr := range pfc {
			if !ecn.np[pr] || !ecn.rp[pr] {
				bare = append(bare, strconv.Itoa(pr))
			}
		}
		if len(bare) > 0 {
			warn = append(warn, fmt.Sprintf("PFC without ECN on priority %s: pauses, not rate control, absorb congestion, and they spread to the switch and other ports (head-of-line blocking)", strings.Join(bare, ",")))
			fixes = append(fixes, fmt.Sprintf("Enable ECN on those priorities: echo 1 > /sys/class/net/%s/ecn/roce_np/enable/<prio> and .../roce_rp/enable/<prio>.", nd))
		}
	}
	if len(pfc) > 0 && trust == "pcp" && !slices.Contains(pfc, 0) && !hasUpper(env.Host, nd) {
		// Untagged frames carry no PCP: with PCP trust they are priority 0 on the receiving side.
		warn = append(warn, fmt.Sprintf("PFC is on priority %s with PCP trust, but %s carries no VLAN: untagged RoCE frames have no PCP and land on priority 0, which has no PFC", intsString(pfc), nd))
		fixes = append(fixes, fmt.Sprintf("Classify by DSCP (mlnx_qos -i %s --trust dscp) or run RoCE over a VLAN with the lossless PCP.", nd))
	}
	switch {
	case len(crit) > 0:
		f.Severity = report.Critical
		f.Summary = p.name() + ": " + strings.Join(append(crit, warn...), "; ")
	case len(warn) > 0:
		f.Severity = report.Warning
		f.Summary = p.name() + ": " + strings.Join(warn, "; ")
	case len(pfc) == 0:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s runs lossy RoCE (no PFC on any priority, trust %s): it relies on ECN congestion control and retransmission", p.name(), trust)
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: PFC on priority %s, trust %s", p.name(), intsString(pfc), trust)
		if ecn != nil {
			f.Summary += ", ECN on the PFC priorities"
		}
	}
	if len(fixes) > 0 {
		f.Remediation = strings.Join(fixes, " ")
	}
	if f.Severity.Problem() {
		f.Action = report.ActionFixConfiguration
	}
}

// pfcPhrase says on which priorities PFC is: "PFC on priority 3", "PFC off on every priority".
func pfcPhrase(prios []int) string {
	if len(prios) == 0 {
		return "PFC off on every priority"
	}
	return "PFC on priority " + intsString(prios)
}

// pfcArg is mlnx_qos's --pfc argument for the priorities: "0,0,0,1,0,0,0,0".
func pfcArg(prios []int) string {
	v := make([]string, 8)
	for i := range v {
		v[i] = "0"
		if slices.Contains(prios, i) {
			v[i] = "1"
		}
	}
	return strings.Join(v, ",")
}

// hasUpper says whether a netdev has an upper device (a VLAN, a bond): upper_<name> links in its
// sysfs directory (netdev_adjacent_sysfs_add in net/core/dev.c). Unreadable counts as having one,
// so that the PCP warning needs evidence.
func hasUpper(h *host.Host, nd string) bool {
	names, err := h.ReadDir("/sys/class/net/" + nd)
	if err != nil {
		return true
	}
	for _, n := range names {
		if strings.HasPrefix(n, "upper_") {
			return true
		}
	}
	return false
}

// qosSignature is what identical ports must agree on.
func qosSignature(i *dcbnl.IEEE) string {
	s := fmt.Sprintf("pfc %s, trust %s", intsString(prioList(i.PFC.Enabled)), trustName(i))
	if i.TrustsDSCP() {
		var m []string
		for p := 0; p < 8; p++ {
			m = append(m, fmt.Sprintf("%d:%s", p, dscpsOf(i, p)))
		}
		s += ", dscp map " + strings.Join(m, " ")
	}
	if i.ETS != nil {
		s += fmt.Sprintf(", prio->tc %v", i.ETS.PrioTC)
	}
	return s
}

// compareRoCEQoS holds the RoCE ports of one kind of card (vendor, device, board) to the settings
// most of them have: a node's rails are configured by one script, and the one it missed drops
// frames the others pause.
func compareRoCEQoS(ports []qosPort, out []engine.Finding) {
	kind := func(q qosPort) string {
		if q.p.dev.PCI == nil || q.p.dev.PCI.IsVF() {
			return ""
		}
		return fmt.Sprintf("%04x:%04x %s", q.p.dev.PCI.Vendor, q.p.dev.PCI.DeviceID, q.p.dev.BoardID)
	}
	for _, g := range groupsOf(ports, kind) {
		count := map[string]int{}
		for _, q := range g {
			count[qosSignature(q.ieee)]++
		}
		if len(count) == 1 {
			continue
		}
		ref := ""
		for s, n := range count {
			if 2*n > len(g) {
				ref = s
			}
		}
		if ref == "" {
			// No majority (two ports that differ): the settings of the ports judged sound on
			// their own (the policy's, when there is one) are the reference, if they agree.
			ok := map[string]bool{}
			for _, q := range g {
				if out[q.idx].Severity == report.OK {
					ok[qosSignature(q.ieee)] = true
				}
			}
			if len(ok) == 1 && len(ok) < len(count) {
				for s := range ok {
					ref = s
				}
			}
		}
		for _, q := range g {
			sig := qosSignature(q.ieee)
			if sig == ref {
				continue
			}
			var why string
			if ref == "" {
				why = fmt.Sprintf("the %d identical RoCE ports of this node disagree on their QoS settings (this one: %s)", len(g), sig)
			} else {
				why = fmt.Sprintf("its QoS settings (%s) differ from those of %d of the %d identical RoCE ports of this node (%s)", sig, count[ref], len(g), ref)
				if 2*count[ref] <= len(g) {
					why = fmt.Sprintf("its QoS settings (%s) differ from those of the identical RoCE ports of this node judged sound (%s)", sig, ref)
				}
			}
			differsFromPeers(&out[q.idx], q.p, "identical ports' QoS", why, "DCB netlink of identical cards",
				"Apply the node's QoS script (mlnx_qos, dcb) to this port as to its peers.")
		}
	}
}
