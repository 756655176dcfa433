package port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// The expected topology lives in the port layer: what it states is mostly ports (active ports
// per link layer at a rate, the rails of a GPU node), its device count is the count of the
// devices those ports belong to, and the port layer already owns the policy's port rates. A
// card that vanished from the bus has no device and no port; the PCIe and driver checks cannot
// see what is not there, only a stated expectation can.
func init() {
	checks.Register(checks.Check{
		ID: "port.topology",
		Description: "The RDMA devices and active ports the node must have (--policy topology section): a card gone from the bus, " +
			"a port that is not up or runs below the rate, a missing rail; management NICs (default route) are not counted",
		Fault: "node-topology",
		Run:   runTopology,
	})
}

// topoDevice is one RDMA device and, when it is not counted, why.
type topoDevice struct {
	d       *inventory.Device
	netdevs []string
	skip    string
}

func (t topoDevice) label() string {
	s := t.d.Name
	var at []string
	if t.d.PCI != nil {
		at = append(at, t.d.PCI.BDF)
	}
	if t.d.Driver != "" {
		at = append(at, t.d.Driver)
	}
	if len(at) > 0 {
		s += " (" + strings.Join(at, ", ") + ")"
	}
	return s
}

// topoPort is one port of a counted device, read for the topology.
type topoPort struct {
	p     portRef
	state string  // state name, "" when unreadable
	phys  string  // physical state name
	gbps  float64 // effective rate of an ACTIVE port; 0 = unknown
	err   error
}

func (t topoPort) active() bool { return t.err == nil && t.state == "ACTIVE" }

func (t topoPort) describe() string {
	switch {
	case t.err != nil:
		return t.p.name() + " unreadable: " + t.err.Error()
	case !t.active():
		return fmt.Sprintf("%s %s (physical %s)", t.p.name(), t.state, orNone(t.phys))
	case t.gbps == 0:
		return t.p.name() + " ACTIVE at an unknown rate"
	}
	return fmt.Sprintf("%s ACTIVE at %s", t.p.name(), gbps(t.gbps))
}

func runTopology(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	var pol *optfile.TopologyPolicy
	if env.Opts.Policy != nil {
		pol = env.Opts.Policy.Topology
	}
	mgmt, mgmtEv := managementNetdevs(env.Host)
	devs := classify(env.Host, inv, pol, mgmt)
	var counted []topoDevice
	var notCounted []report.Evidence
	for _, d := range devs {
		if d.skip == "" {
			counted = append(counted, d)
			continue
		}
		notCounted = append(notCounted, report.Ev("not counted: "+d.d.Name, d.skip, inventory.ClassDir+"/"+d.d.Name))
	}
	byLL := map[string][]topoPort{}
	for _, d := range counted {
		for _, p := range d.d.Ports {
			ref := portRef{dev: d.d, port: p, dir: fmt.Sprintf("%s/%s/ports/%d", inventory.ClassDir, d.d.Name, p.Num)}
			byLL[p.LinkLayer] = append(byLL[p.LinkLayer], readTopoPort(env, ref))
		}
	}
	common := append(append([]report.Evidence{}, mgmtEv...), notCounted...)
	if pol == nil || (pol.Devices == 0 && len(pol.DevicesByDriver) == 0 && len(pol.Ports) == 0) {
		return []engine.Finding{noTopology(env.Opts.PolicyFile, pol != nil, counted, byLL, common)}, nil
	}
	from := "policy " + env.Opts.PolicyFile + " topology"
	var out []engine.Finding
	if pol.Devices > 0 || len(pol.DevicesByDriver) > 0 {
		out = append(out, judgeDevices(from, pol, counted, common))
	}
	for _, ll := range pol.LinkLayers() {
		out = append(out, judgeLinkLayerPorts(from, ll, pol.Ports[ll], byLL[ll], common))
	}
	return out, nil
}

// classify decides which devices count: not those the policy ignores, not virtual functions
// (the policy counts cards and their ports; a VF shares its PF's port), and not management NICs
// (a netdev of the device carries the default route) unless the policy includes them.
func classify(h *host.Host, inv *inventory.Inventory, pol *optfile.TopologyPolicy, mgmt []string) []topoDevice {
	var out []topoDevice
	for _, d := range inv.Devices {
		t := topoDevice{d: d, netdevs: deviceNetdevs(h, d)}
		switch {
		case pol != nil && ignoredBy(pol, d.Name) != "":
			t.skip = fmt.Sprintf("ignored by the policy (topology.ignore %q)", ignoredBy(pol, d.Name))
		case d.PCI != nil && d.PCI.IsVF():
			t.skip = "virtual function of " + d.PCI.PF + ": counted through its PF"
		}
		if t.skip == "" && pol != nil {
			for _, n := range t.netdevs {
				if g := ignoredBy(pol, n); g != "" {
					t.skip = fmt.Sprintf("its netdev %s is ignored by the policy (topology.ignore %q)", n, g)
					break
				}
			}
		}
		if t.skip == "" && (pol == nil || !pol.IncludeManagement) {
			for _, n := range t.netdevs {
				if slices.Contains(mgmt, n) {
					t.skip = "management NIC: its netdev " + n + " carries the host's default route (topology.include_management counts it)"
					break
				}
			}
		}
		out = append(out, t)
	}
	return out
}

func ignoredBy(pol *optfile.TopologyPolicy, name string) string {
	g, _ := pol.Ignored(name)
	return g
}

// deviceNetdevs lists every netdev of a device: the ports' GID netdevs (RoCE), the PCI
// function's own netdevs (an IPoIB ib0 is in no GID table), and a software device's parent.
func deviceNetdevs(h *host.Host, d *inventory.Device) []string {
	var out []string
	for _, p := range d.Ports {
		for _, n := range p.Netdevs {
			out = appendUnique(out, n)
		}
	}
	if d.PCI != nil {
		names, _ := h.ReadDir(path.Join(d.PCI.SysPath, "net"))
		for _, n := range names {
			out = appendUnique(out, n)
		}
	}
	if d.Parent != "" {
		out = appendUnique(out, d.Parent)
	}
	return out
}

// managementNetdevs returns the netdevs that carry a default route, which is how the host
// reaches everything outside its fabrics: NVIDIA NVSentinel's NIC health monitor excludes such
// management NICs by default ("Management NICs (on NUMA nodes without GPUs, or carrying the
// host's default route) are automatically excluded", docs/nic-health-monitor.md). The route
// files are those of the network namespace rdmadiag runs in; a missing file leaves nothing
// classified as management, and says so.
func managementNetdevs(h *host.Host) ([]string, []report.Evidence) {
	var out []string
	var ev []report.Evidence
	for _, rf := range []struct {
		file  string
		parse func([]byte) ([]string, error)
	}{{routeFile, ParseDefaultRoutes}, {route6File, ParseDefaultRoutes6}} {
		b, err := h.ReadFile(rf.file)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				ev = append(ev, report.Ev("default route", "unreadable, management NICs not identified: "+err.Error(), rf.file))
			}
			continue
		}
		names, err := rf.parse(b)
		if err != nil {
			ev = append(ev, report.Ev("default route", "not understood, management NICs not identified: "+err.Error(), rf.file))
			continue
		}
		for _, n := range names {
			out = appendUnique(out, n)
		}
		if len(names) > 0 {
			ev = append(ev, report.Ev("default route via", strings.Join(names, ", "), rf.file))
		}
	}
	return out, ev
}

func readTopoPort(env *checks.Env, p portRef) topoPort {
	t := topoPort{p: p}
	st, phys, err := states(env.Host, p)
	if err != nil {
		t.err = err
		return t
	}
	t.state, t.phys = st.Name, phys.Name
	if st.Num != stateActive {
		return t
	}
	r, _, err := p.port.ReadRate(env.Host, p.dev.Name)
	if err != nil {
		return t
	}
	ri := &rateInfo{p: p, raw: r, effective: r.Gbps}
	effectiveRate(env, ri)
	t.gbps = ri.effective
	return t
}

func noTopology(file string, empty bool, counted []topoDevice, byLL map[string][]topoPort, common []report.Evidence) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "topology"}, Severity: report.Info}}
	why := "no expected topology stated (no topology section in --policy)"
	if empty {
		why = "the topology section of policy " + file + " states nothing to compare"
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("%d RDMA device(s)", len(counted)))
	for _, ll := range slices.Sorted(maps.Keys(byLL)) {
		n := 0
		for _, p := range byLL[ll] {
			if p.active() {
				n++
			}
		}
		parts = append(parts, fmt.Sprintf("%d of %d %s port(s) active", n, len(byLL[ll]), orNone(ll)))
	}
	f.Summary = why + "; found " + strings.Join(parts, ", ")
	f.Evidence = append(f.Evidence, report.Ev("devices counted", joinOr(labels(counted), "none"), inventory.ClassDir))
	for _, ll := range slices.Sorted(maps.Keys(byLL)) {
		f.Evidence = append(f.Evidence, report.Ev(orNone(ll)+" ports", joinOr(describePorts(byLL[ll]), "none"), inventory.ClassDir+"/*/ports/*/{state,rate}"))
	}
	f.Evidence = append(f.Evidence, common...)
	f.Remediation = `To have a vanished card or a missing rail reported, state what this node should have in --policy, e.g. {"topology": {"devices": 8, "ports": {"InfiniBand": {"active": 8, "min_rate_gbps": 400}}}} (docs/options.md).`
	return f
}

func judgeDevices(from string, pol *optfile.TopologyPolicy, counted []topoDevice, common []report.Evidence) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "RDMA devices"}, Severity: report.OK}}
	var short []string
	if pol.Devices > 0 {
		f.Evidence = append(f.Evidence, report.EvExp("RDMA devices", fmt.Sprint(len(counted)), fmt.Sprintf("at least %d", pol.Devices), from+".devices"))
		if len(counted) < pol.Devices {
			short = append(short, fmt.Sprintf("%d RDMA device(s) found, %d expected", len(counted), pol.Devices))
		}
	}
	drivers := make([]string, 0, len(pol.DevicesByDriver))
	for d := range pol.DevicesByDriver {
		drivers = append(drivers, d)
	}
	sort.Strings(drivers)
	for _, drv := range drivers {
		var found []string
		for _, d := range counted {
			if d.d.Driver == drv {
				found = append(found, d.d.Name)
			}
		}
		want := pol.DevicesByDriver[drv]
		f.Evidence = append(f.Evidence, report.EvExp("devices of driver "+drv, fmt.Sprintf("%d (%s)", len(found), joinOr(found, "none")),
			fmt.Sprintf("at least %d", want), fmt.Sprintf("%s.devices_by_driver[%s]", from, drv)))
		if len(found) < want {
			short = append(short, fmt.Sprintf("%d %s device(s) found, %d expected", len(found), drv, want))
		}
	}
	f.Evidence = append(f.Evidence, report.Ev("devices found", joinOr(labels(counted), "none"), inventory.ClassDir))
	f.Evidence = append(f.Evidence, common...)
	if len(short) == 0 {
		f.Summary = fmt.Sprintf("%d RDMA device(s) as the policy expects: %s", len(counted), joinOr(names(counted), "none"))
		return f
	}
	f.Severity = report.Critical
	f.Summary = strings.Join(short, "; ") + ": a card is missing (gone from the bus, or its driver did not register it)"
	f.Remediation = "Find the missing card: lspci -d 15b3: (or the vendor's id) lists the functions on the bus; a function that is absent fell off " +
		"the bus or was not enumerated (reseat the card, check slot power, the BIOS and the kernel log for PCIe link-down or AER errors); " +
		"a function that is present without an RDMA device was not bound or not registered by its driver (see driver.devices and the kernel log for probe errors)."
	return f
}

func judgeLinkLayerPorts(from, ll string, e optfile.PortExpectation, ports []topoPort, common []report.Evidence) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: ll + " ports"}, Severity: report.OK}}
	src := fmt.Sprintf("%s.ports[%s]", from, ll)
	var good, bad, unreadable []string
	activeN := 0
	for _, p := range ports {
		switch {
		case p.err != nil:
			unreadable = append(unreadable, p.describe())
			bad = append(bad, p.describe())
		case !p.active():
			bad = append(bad, p.describe()+": not up")
		case e.MinRateGbps > 0 && p.gbps == 0:
			activeN++
			bad = append(bad, p.describe())
			unreadable = append(unreadable, p.describe())
		case e.MinRateGbps > 0 && p.gbps+0.01 < e.MinRateGbps:
			activeN++
			bad = append(bad, fmt.Sprintf("%s: below %s", p.describe(), gbps(e.MinRateGbps)))
		default:
			activeN++
			good = append(good, p.describe())
		}
	}
	want := "ACTIVE"
	if e.MinRateGbps > 0 {
		want += " at " + gbps(e.MinRateGbps) + " or faster"
	}
	exp := "every active port " + want
	if e.Active > 0 {
		exp = fmt.Sprintf("at least %d ports %s", e.Active, want)
	}
	f.Evidence = append(f.Evidence,
		report.EvExp(ll+" ports meeting the policy", fmt.Sprintf("%d: %s", len(good), joinOr(good, "none")), exp, src),
		report.Ev(ll+" ports not meeting it", joinOr(bad, "none"), inventory.ClassDir+"/*/ports/*/{state,phys_state,rate}"))
	f.Evidence = append(f.Evidence, common...)
	var problem string
	switch {
	case e.Active > 0 && len(good) < e.Active:
		problem = fmt.Sprintf("%d of %d expected %s ports are %s", len(good), e.Active, ll, want)
		if missing := e.Active - len(ports); missing > 0 {
			problem += fmt.Sprintf("; %d port(s) do not exist at all (a missing card or a port in the other link layer)", missing)
		}
	case e.Active == 0 && activeN == 0:
		problem = fmt.Sprintf("no %s port is active", ll)
	case e.Active == 0 && len(bad) > 0 && e.MinRateGbps > 0:
		var slow []string
		for _, b := range bad {
			if strings.Contains(b, "ACTIVE") {
				slow = append(slow, b)
			}
		}
		if len(slow) > 0 {
			problem = fmt.Sprintf("%d active %s port(s) below %s", len(slow), ll, gbps(e.MinRateGbps))
		}
	}
	if problem == "" {
		f.Summary = fmt.Sprintf("%d %s port(s) %s, as the policy expects", len(good), ll, want)
		return f
	}
	f.Severity = report.Critical
	if len(unreadable) > 0 && e.Active > 0 && len(good)+len(unreadable) >= e.Active {
		// The unreadable ports might be the ones that make up the count.
		f.Severity = report.Unknown
	}
	f.Summary = problem + ": a rail is missing (" + joinOr(bad, "none") + ")"
	f.Remediation = "Bring every rail up at its rate: port.state says why a port is not ACTIVE (cable, switch port, subnet manager) and port.rate why an active one is slow " +
		"(cable type, switch port speed, lanes); a port that does not exist at all belongs to a card that is missing or runs the other link layer (mlxconfig LINK_TYPE_P<n>)."
	return f
}

func labels(ds []topoDevice) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.label()
	}
	return out
}

func names(ds []topoDevice) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.d.Name
	}
	return out
}

func describePorts(ps []topoPort) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.describe()
	}
	return out
}
