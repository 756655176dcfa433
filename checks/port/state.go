package port

import (
	"context"
	"fmt"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.state",
		Description: "Port logical state ACTIVE and physical state LinkUp; why not (subnet manager, cable, netdev, the driver's link-down reason from ethtool's extended link state)",
		Fault:       "port-link",
		Run:         runState,
	})
}

func runState(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	pol := portsPolicy(env.Opts)
	all := make([]portStateOf, len(ports))
	for i, p := range ports {
		st, phys, err := states(env.Host, p)
		all[i] = portStateOf{p: p, ok: err == nil, active: err == nil && st.Num == stateActive && phys.Num == physLinkUp}
	}
	var out []engine.Finding
	for _, p := range ports {
		f := judgeState(env, p, all)
		if pol != nil && pol.LinkLayer != "" && f.Severity != report.Unknown {
			judgeLinkLayer(env.Opts.PolicyFile, pol.LinkLayer, p, &f)
		}
		out = append(out, f)
	}
	return out, nil
}

// judgeLinkLayer holds a port to the policy's link layer. A VPI card (ConnectX-4 and later)
// runs either protocol per port as its firmware configuration says; one in the wrong mode cannot
// join the fabric it is cabled to, whatever its state, so the mismatch leads the finding.
func judgeLinkLayer(from, want string, p portRef, f *engine.Finding) {
	got := p.port.LinkLayer
	f.Evidence = append(f.Evidence, report.EvExp("policy link_layer", orNone(got), want, "policy "+from+" ports.link_layer"))
	if got == want {
		return
	}
	was := *f
	f.Severity = report.Critical
	f.Summary = fmt.Sprintf("%s runs %s but the fleet policy expects %s: it cannot join the %s fabric", p.name(), orNone(got), want, want)
	if was.Severity.Problem() {
		f.Summary += "; also: " + was.Summary
	}
	switch {
	case p.dev.Software():
		f.Remediation = fmt.Sprintf("%s is a software RDMA device (%s), Ethernet only: use a hardware port for %s, or correct the policy for this host.", p.dev.Name, p.dev.Driver, want)
	default:
		mode := map[string]int{"InfiniBand": 1, "Ethernet": 2}[want]
		f.Remediation = fmt.Sprintf("Set the port's protocol in the firmware configuration: mlxconfig -d %s set LINK_TYPE_P%d=%d (1 = IB, 2 = ETH), then reset the card (mlxfwreset) or reboot.",
			p.dev.PCI.BDF, p.port.Num, mode)
	}
}

func judgeState(env *checks.Env, p portRef, all []portStateOf) engine.Finding {
	h := env.Host
	f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
	st, phys, err := states(h, p)
	if err != nil {
		f.Severity = report.Unknown
		f.Summary = p.name() + ": port state unreadable: " + err.Error()
		return f
	}
	f.Evidence = append(f.Evidence,
		report.EvExp("state", st.String(), "4: ACTIVE", p.file("state")),
		report.EvExp("phys_state", phys.String(), "5: LinkUp", p.file("phys_state")),
		report.Ev("link_layer", orNone(p.port.LinkLayer), p.file("link_layer")))

	var nds []observe.NetdevAttrs
	if !p.ib() {
		for _, n := range p.port.Netdevs {
			nd := netdev(env, n)
			nds = append(nds, nd)
			exp := "up"
			if nd.Operstate == "unknown" && nd.Operational() {
				exp = "up, or unknown on an interface that is up" // see observe.NetdevAttrs.Operational
			}
			f.Evidence = append(f.Evidence, report.EvExp("netdev "+n+" operstate", orNone(nd.Operstate), exp, "/sys/class/net/"+n+"/operstate"))
			if nd.AdminUp != nil && nd.Operstate != "up" {
				f.Evidence = append(f.Evidence, report.EvExp("netdev "+n+" administratively up (IFF_UP)", fmt.Sprint(*nd.AdminUp), "true", "/sys/class/net/"+n+"/flags"))
			}
		}
	}
	if st.Num == stateActive && phys.Num == physLinkUp {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s is ACTIVE, LinkUp (%s)", p.name(), orNone(p.port.LinkLayer))
		return f
	}
	if nh := h.Lacks(host.PartNetdevs); !p.ib() && len(nds) == 0 && nh != nil {
		// A copy of /sys without class/net (an excerpt, ibstat turned into a tree) says nothing
		// of the netdev a RoCE port needs.
		f.Summary = fmt.Sprintf("%s is %s (physical %s); why is not judged: %s", p.name(), st.Name, phys.Name, nh.Reason)
		return f.SkippedBy(report.LimitSource, nh.Lift)
	}
	if p.ib() {
		judgeIBState(h, p, st, phys, &f)
	} else {
		judgeEthState(p, st, phys, nds, whyDown(h, nds, &f), &f)
	}
	// A port without a physical link may be one nobody cabled; one with a link (waiting for the
	// subnet manager, ACTIVE on a degraded link) or without its netdev is a fault either way.
	if phys.Num != physLinkUp && f.Severity.Problem() && (p.ib() || len(nds) > 0) {
		judgeExpected(env, p, all, &f)
	}
	return f
}

func judgeIBState(h *host.Host, p portRef, st, phys inventory.PortState, f *engine.Finding) {
	lid, _ := p.attr(h, "lid")
	sm, _ := p.attr(h, "sm_lid")
	switch {
	case (st.Num == stateInit || st.Num == stateArmed) && phys.Num == physLinkUp:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s has link but is %s: waiting for the subnet manager (LID %s, SM LID %s), so it carries no traffic",
			p.name(), st.Name, orNone(lid), orNone(sm))
		f.Evidence = append(f.Evidence, report.EvExp("lid", orNone(lid), "non-zero", p.file("lid")),
			report.EvExp("sm_lid", orNone(sm), "non-zero", p.file("sm_lid")))
		f.Remediation = "Make sure a subnet manager runs on this fabric (opensm on a host, or the switch/UFM SM) and can reach this port: " +
			"`sminfo` from this host, the SM's log for this port GUID, and the partition (P_Key) configuration."
		// The link trained: what is missing is the fabric's subnet manager, not the cable.
		f.Action = report.ActionFixConfiguration
	case phys.Num == physDisabled:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s is %s and physically Disabled: the port was turned off (locally or by the switch)", p.name(), st.Name)
		f.Remediation = "If the port should carry traffic, enable it (ibportstate <lid> <port> enable, or on the switch side); an intentionally unused port can be ignored."
		f.Action = report.ActionFixConfiguration // turned off, not broken
	case phys.Num == physPolling:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is %s, physical state Polling: no link partner (cable unplugged or bad, switch port down)", p.name(), st.Name)
		f.Remediation = "Check the cable and the switch port (mlxlink -d <pci> for the cable and module); reseat or replace the cable."
	default:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is %s, physical state %s: the port carries no traffic", p.name(), st.Name, phys.Name)
		f.Remediation = "Check the cable, the switch port and the subnet manager; mlxlink -d <pci> shows why the link does not train."
	}
}

// whyDown asks the driver why each netdev that is up without a link has none, and quotes it.
func whyDown(h *host.Host, nds []observe.NetdevAttrs, f *engine.Finding) map[string]linkWhy {
	out := map[string]linkWhy{}
	for _, nd := range nds {
		if nd.Operstate == "up" || nd.Operstate == "" || nd.AdminUp == nil || !*nd.AdminUp {
			continue
		}
		ls, err := linkStateOf(h, nd.Name)
		if err != nil {
			f.Evidence = append(f.Evidence, report.Ev("netdev "+nd.Name+" link down reason (driver)", "unreadable: "+err.Error(), "ethtool netlink LINKSTATE_GET "+nd.Name))
			continue
		}
		if ls != nil {
			w := linkWhy{netdev: nd.Name, ls: ls}
			f.Evidence = append(f.Evidence, w.evidence()...)
			out[nd.Name] = w
		}
	}
	return out
}

func judgeEthState(p portRef, st, phys inventory.PortState, nds []observe.NetdevAttrs, why map[string]linkWhy, f *engine.Finding) {
	var down, fixes []string
	adminOnly := true // every netdev that is down was set down: a setting, not the cable
	noCarrier := false
	var driverAct report.Action // what the driver's reason for the first netdev calls for
	for _, nd := range nds {
		if nd.Operstate == "up" || nd.Operstate == "" {
			continue
		}
		switch {
		case nd.AdminUp != nil && !*nd.AdminUp:
			down = append(down, nd.Name+" was set administratively down")
			fixes = append(fixes, "Bring "+nd.Name+" up: ip link set "+nd.Name+" up (and find what set it down: NetworkManager, netplan, a script).")
		case nd.AdminUp != nil && why[nd.Name].ls != nil && why[nd.Name].ls.ExtState != nil:
			adminOnly, noCarrier = false, true
			cause, fix, act := why[nd.Name].explain()
			if driverAct == "" {
				driverAct = act
			}
			down = append(down, fmt.Sprintf("%s is up but has no link (%s): %s", nd.Name, nd.Operstate, cause))
			fixes = append(fixes, fix)
		case nd.AdminUp != nil:
			adminOnly, noCarrier = false, true
			down = append(down, fmt.Sprintf("%s is up but has no link (%s): no carrier from the cable, transceiver or switch port", nd.Name, nd.Operstate))
			fixes = append(fixes, "Check the cable, transceiver and switch port of "+nd.Name+" (ethtool "+nd.Name+": Link detected; mlxlink -d <pci> on ConnectX).")
		default:
			adminOnly = false
			down = append(down, fmt.Sprintf("%s is %s", nd.Name, nd.Operstate))
			fixes = append(fixes, "Bring "+nd.Name+" up (ip link set "+nd.Name+" up) and check its cable and switch port (ethtool "+nd.Name+": Link detected).")
		}
	}
	switch {
	case len(down) > 0:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is %s (physical %s) because its netdev %s", p.name(), st.Name, phys.Name, strings.Join(down, ", "))
		f.Remediation = strings.Join(fixes, " ")
		// Set down, or the port Disabled with no netdev that lost its carrier: the port was
		// turned off (mlx5 disables the port of a netdev that is down), which no cable explains.
		switch {
		case adminOnly || (phys.Num == physDisabled && !noCarrier):
			f.Action = report.ActionFixConfiguration
		case driverAct != "":
			f.Action = driverAct
		}
	case len(nds) == 0:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is %s (physical %s) and has no bound netdev: RoCE needs one", p.name(), st.Name, phys.Name)
		f.Remediation = "Check that the Ethernet driver created the netdev for this function (ip link) and that it is not in another network namespace."
		f.Action = report.ActionFixConfiguration
	case st.Num == stateActive:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s is ACTIVE but its physical state is %s", p.name(), phys.Name)
	default:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is %s (physical %s) although its netdev is up", p.name(), st.Name, phys.Name)
		f.Remediation = "Check the Ethernet link (ethtool <netdev>) and the kernel log for the device."
	}
}
