package port

import (
	"context"
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"strconv"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.rate",
		Description: "Active port rate and width: degraded width, below --expect-rate or the --policy rate, slower than identical ports",
		Fault:       "port-link",
		Run:         runRate,
	})
}

// rateInfo is one active port's rate, judged after all ports are read so that identical cards
// can be compared.
type rateInfo struct {
	p         portRef
	f         engine.Finding
	raw       inventory.Rate
	effective float64 // Gb/s; 0 = unknown
	group     string  // identical-card key; "" = not comparable
}

func gbps(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) + " Gb/s" }

func runRate(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	pol := portsPolicy(env.Opts)
	h := env.Host
	var out []engine.Finding
	var infos []*rateInfo
	for _, p := range ports {
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		st, _, err := states(h, p)
		if err != nil {
			f.Severity, f.Summary = report.Unknown, p.name()+": port state unreadable, rate not judged: "+err.Error()
			out = append(out, f)
			continue
		}
		if st.Num != stateActive {
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s is %s: rate is only meaningful on an active port (see port.state)", p.name(), st.Name)
			out = append(out, f)
			continue
		}
		r, s, err := p.port.ReadRate(h, p.dev.Name)
		if nh := h.Lacks(host.PartPortRate); err != nil && s == "" && nh != nil {
			f.Summary = p.name() + ": rate not judged: " + nh.Reason
			out = append(out, f.SkippedBy(report.LimitSource, nh.Lift))
			continue
		}
		if err != nil {
			if s == "" { // nothing read
				f.Severity, f.Summary = report.Unknown, p.name()+": rate unreadable: "+err.Error()
			} else {
				f.Severity, f.Summary = report.Unknown, fmt.Sprintf("%s: %v", p.name(), err)
			}
			out = append(out, f)
			continue
		}
		ri := &rateInfo{p: p, f: f, raw: r, effective: r.Gbps}
		ri.f.Evidence = append(ri.f.Evidence, report.Ev("rate", s, p.file("rate")))
		effectiveRate(env, ri)
		if p.dev.PCI != nil {
			ri.group = fmt.Sprintf("%04x:%04x %s %s", p.dev.PCI.Vendor, p.dev.PCI.DeviceID, p.dev.BoardID, p.port.LinkLayer)
		}
		infos = append(infos, ri)
	}
	fastest := map[string]*rateInfo{}
	for _, ri := range infos {
		if ri.group == "" || ri.effective == 0 {
			continue
		}
		if b := fastest[ri.group]; b == nil || ri.effective > b.effective {
			fastest[ri.group] = ri
		}
	}
	for _, ri := range infos {
		judgeRate(expectedRate(env.Opts, pol, ri.p.dev.BoardID), ri, fastest[ri.group])
		out = append(out, ri.f)
	}
	return out, nil
}

// effectiveRate settles what the port really runs at. On Ethernet the netdev's speed is the
// truth: mlx5 translates Ethernet modes into IB speed/width pairs and falls back to
// "40 Gb/sec (4X QDR)" for modes it does not know (drivers/infiniband/hw/mlx5/main.c:
// mlx5_query_port_roce() presets IB_WIDTH_4X/IB_SPEED_QDR, which translate_eth_proto_oper()
// leaves in place when it returns -EINVAL), and rxe derives its rate from the netdev speed,
// reporting 2.5 Gb/sec (1X SDR) when the netdev has none (lab: virtio-net, speed -1).
func effectiveRate(env *checks.Env, ri *rateInfo) {
	p := ri.p
	if p.ib() || len(p.port.Netdevs) == 0 {
		return
	}
	nd := netdev(env, p.port.Netdevs[0])
	src := "/sys/class/net/" + nd.Name + "/speed"
	if nd.SpeedMbps <= 0 {
		ri.f.Evidence = append(ri.f.Evidence, report.Ev("netdev speed", "unknown", src))
		if p.dev.Software() {
			// rxe's own rate is then a placeholder, not a measurement.
			ri.effective = 0
		}
		return
	}
	eth := float64(nd.SpeedMbps) / 1000
	ri.f.Evidence = append(ri.f.Evidence, report.Ev("netdev speed", fmt.Sprintf("%d Mb/s", nd.SpeedMbps), src))
	if eth != ri.raw.Gbps {
		note := "the rate file and the netdev disagree; the netdev speed is used"
		if ri.raw.Gbps == 40 && ri.raw.Width == 4 && ri.raw.Speed == "QDR" {
			note = "\"40 Gb/sec (4X QDR)\" is the kernel's fallback for an Ethernet mode it cannot translate, not a degraded link; the netdev speed is used"
		}
		ri.f.Evidence = append(ri.f.Evidence, report.Ev("note", note, ""))
	}
	ri.effective = eth
}

func judgeRate(exp expectation, ri *rateInfo, fastest *rateInfo) {
	p, f := ri.p, &ri.f
	f.Severity = report.OK
	desc := ri.raw.String()
	if ri.effective != 0 && ri.effective != ri.raw.Gbps {
		desc = gbps(ri.effective) + " (netdev speed; rate file says " + ri.raw.String() + ")"
	}
	f.Summary = p.name() + " runs at " + desc
	if ri.effective == 0 {
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s: rate %s is a placeholder: software device %s takes its rate from netdev speed, which is unknown",
			p.name(), ri.raw, p.dev.Name)
	}
	// An IB HCA port trains 4X (2X on split NDR200 ports); 1X means lanes failed to train and the
	// port runs at a quarter of its bandwidth while looking ACTIVE to every state check. On
	// Ethernet, the width is the lane count of the Ethernet mode (25G is legitimately 1X), so
	// width alone proves nothing there.
	if p.ib() && ri.raw.Width == 1 && !p.dev.Software() {
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s is degraded to 1X width (%s): one lane trained instead of four, a quarter of the bandwidth", p.name(), ri.raw)
		f.Evidence = append(f.Evidence, report.EvExp("width", "1X", "4X (or 2X on split ports)", p.file("rate")))
		f.Remediation = "Reseat or replace the cable (a bad lane or dirty connector), then check the switch port; mlxlink -d <pci> shows the lanes and BER."
		return
	}
	if exp.gbps > 0 {
		switch {
		case ri.effective == 0:
			f.Severity = report.Unknown
			f.Summary = fmt.Sprintf("%s: rate unknown (%s), cannot compare with the expected %s (%s)", p.name(), ri.raw, gbps(exp.gbps), exp.source)
			f.Evidence = append(f.Evidence, report.EvExp("expected rate", "unknown", gbps(exp.gbps), exp.source))
			return
		case ri.effective+0.01 < exp.gbps:
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("%s runs at %s, below the expected %s (%s)", p.name(), gbps(ri.effective), gbps(exp.gbps), exp.source)
			f.Evidence = append(f.Evidence, report.EvExp("expected rate", gbps(ri.effective), "at least "+gbps(exp.gbps), exp.source))
			f.Remediation = "Check the cable type and length (a cable rated below the port speed makes the link train slower), the switch port speed and the auto-negotiation setting."
			return
		default:
			f.Evidence = append(f.Evidence, report.EvExp("expected rate", gbps(ri.effective), "at least "+gbps(exp.gbps), exp.source))
		}
	}
	if fastest != nil && fastest != ri && ri.effective != 0 && ri.effective+0.01 < fastest.effective {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s runs at %s, slower than %s on an identical card (%s)", p.name(), gbps(ri.effective), fastest.p.name(), gbps(fastest.effective))
		f.Evidence = append(f.Evidence, report.EvExp("rate of identical cards", gbps(ri.effective), gbps(fastest.effective)+" like "+fastest.p.name(), fastest.p.file("rate")))
		f.Remediation = "Identical cards on one host should run at one speed: check this port's cable and switch port; give --expect-rate or a ports section in --policy to make the expectation explicit."
	}
}
