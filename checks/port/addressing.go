package port

import (
	"context"
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.addressing",
		Description: "InfiniBand LID and subnet manager; RoCE v2 GID on an IP address, netdev up, MTU fitting the RoCE MTU",
		Fault:       "port-link",
		Run:         runAddressing,
	})
}

func runAddressing(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	var out []engine.Finding
	for _, p := range ports {
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		st, _, err := states(env.Host, p)
		switch {
		case err != nil:
			f.Severity, f.Summary = report.Unknown, p.name()+": port state unreadable, addressing not judged: "+err.Error()
		case st.Num != stateActive:
			// A port that is not ACTIVE has no usable address by definition; port.state says why.
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s is %s: addressing is judged on active ports only (see port.state)", p.name(), st.Name)
		case p.ib():
			ibAddressing(env, p, &f)
		case p.eth() || p.port.LinkLayer == "":
			roceAddressing(env, p, &f)
		default:
			// A link layer that is neither (sysfs "Unknown": EFA's efa_port_link_layer returns
			// IB_LINK_LAYER_UNSPECIFIED, drivers/infiniband/hw/efa/efa_verbs.c, 6.12) has neither
			// a subnet manager's LID nor RoCE's IP GIDs: the driver addresses the port itself.
			f.Severity = report.Skipped
			f.Summary = fmt.Sprintf("%s has link layer %s: neither InfiniBand LIDs nor RoCE GIDs apply; its state is judged by port.state", p.name(), p.port.LinkLayer)
		}
		if f.Severity == report.Warning || f.Severity == report.Critical {
			// The port is ACTIVE: what it lacks (a subnet manager's LID, an IP address, a RoCE
			// v2 GID) is configured, never cabled.
			f.Action = report.ActionFixConfiguration
		}
		out = append(out, f)
	}
	return out, nil
}

func ibAddressing(env *checks.Env, p portRef, f *engine.Finding) {
	h := env.Host
	var vals [2]uint32
	for i, n := range []string{"lid", "sm_lid"} {
		s, err := p.attr(h, n)
		if err == nil {
			vals[i], err = ParseLID(s)
			if err != nil {
				err = fmt.Errorf("%s: %w", p.file(n), err)
			}
		}
		if err != nil {
			f.Severity, f.Summary = report.Unknown, p.name()+": "+err.Error()
			return
		}
		f.Evidence = append(f.Evidence, report.EvExp(n, fmt.Sprintf("0x%x", vals[i]), "non-zero", p.file(n)))
	}
	if vals[0] == 0 || vals[1] == 0 {
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is ACTIVE but LID 0x%x, SM LID 0x%x: no subnet manager has configured it", p.name(), vals[0], vals[1])
		f.Remediation = "Check that a subnet manager is running and reaches this port (sminfo; the SM's log); re-sweep the fabric."
		return
	}
	f.Severity = report.OK
	f.Summary = fmt.Sprintf("%s: LID 0x%x, subnet manager at LID 0x%x", p.name(), vals[0], vals[1])
}

func roceAddressing(env *checks.Env, p portRef, f *engine.Finding) {
	h := env.Host
	gs, err := gids(h, p)
	if err != nil {
		if nh := h.Lacks(host.PartGIDs); nh != nil {
			f.Summary = p.name() + ": RoCE addressing not judged: " + nh.Reason
			*f = f.SkippedBy(report.LimitSource, nh.Lift)
			return
		}
		f.Severity, f.Summary = report.Unknown, p.name()+": GID table unreadable: "+err.Error()
		return
	}
	var v2, v2ip []string
	for _, g := range gs {
		if g.Type != "RoCE v2" {
			continue
		}
		d := fmt.Sprintf("[%d] %s", g.Index, g.Addr)
		if ip := g.IPv4(); ip != "" {
			d = fmt.Sprintf("[%d] %s (%s)", g.Index, ip, orNone(g.Netdev))
		}
		v2 = append(v2, d)
		if g.IPBased() {
			v2ip = append(v2ip, d)
		}
	}
	f.Evidence = append(f.Evidence, report.EvExp("RoCE v2 GIDs on an IP address", joinOr(v2ip, "none"), "at least one", p.file("gids")))
	type problem struct {
		sev  report.Severity
		text string
		fix  string
	}
	var probs []problem
	switch {
	case len(gs) == 0:
		probs = append(probs, problem{report.Critical, "its GID table is empty: no RoCE address at all",
			"Check that the netdev exists and is up; the kernel fills the GID table from the netdev's addresses."})
	case len(v2) == 0:
		probs = append(probs, problem{report.Critical, "it has no RoCE v2 GID (only RoCE v1): routable RoCE, NCCL and rdma_cm over UDP cannot work",
			"Check the RoCE mode (cma_roce_mode, mlxconfig ROCE_CONF) and that the RoCE v2 GIDs were not disabled."})
	case len(v2ip) == 0:
		probs = append(probs, problem{report.Critical, "its RoCE v2 GIDs are link-local only: the netdev has no IP address, so nothing can connect to it over RoCE v2",
			"Assign the port's IP address to its netdev (ip addr add ... dev <netdev>); the kernel adds the RoCE v2 GID for it."})
	}
	for _, n := range p.port.Netdevs {
		nd := netdev(env, n)
		src := "/sys/class/net/" + n
		if !nd.Operational() {
			probs = append(probs, problem{report.Warning, fmt.Sprintf("netdev %s is %s although the port is ACTIVE", n, orNone(nd.Operstate)),
				"Bring the netdev up: ip link set " + n + " up"})
		}
		if nd.MTU == 0 {
			continue
		}
		got := RoCEMTU(nd.MTU)
		f.Evidence = append(f.Evidence, report.Ev("netdev "+n+" mtu", fmt.Sprintf("%d (RoCE MTU %d)", nd.MTU, got), src+"/mtu"))
		// A jumbo netdev MTU shows the operator wants 4096-byte RoCE packets; an MTU of exactly
		// 4096 (a common mistake) leaves no room for the 96 header bytes iboe_get_mtu()
		// subtracts and gives only 2048.
		for _, want := range []int{4096, 2048} {
			if nd.MTU > 1500 && nd.MTU >= want && got < want {
				probs = append(probs, problem{report.Warning,
					fmt.Sprintf("netdev %s MTU %d gives a RoCE MTU of only %d: %d needs a netdev MTU of at least %d", n, nd.MTU, got, want, want+roceOverhead),
					fmt.Sprintf("Set the netdev MTU to %d or more (commonly 4200 or 9000), on the switch ports too: ip link set %s mtu 9000", want+roceOverhead, n)})
				break
			}
		}
		if got < 1024 {
			probs = append(probs, problem{report.Warning,
				fmt.Sprintf("netdev %s MTU %d gives a RoCE MTU of %d, below the 1024 every RoCE application assumes", n, nd.MTU, got),
				"Raise the netdev MTU to at least 1500."})
		}
	}
	if len(probs) == 0 {
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: RoCE v2 GID %s, netdev up", p.name(), v2ip[0])
		return
	}
	var texts, fixes []string
	for _, pr := range probs {
		if pr.sev > f.Severity {
			f.Severity = pr.sev
		}
		texts = append(texts, pr.text)
		fixes = append(fixes, pr.fix)
	}
	f.Summary = p.name() + ": " + strings.Join(texts, "; ")
	f.Remediation = strings.Join(fixes, " ")
}
