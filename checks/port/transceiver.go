package port

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/xcvr"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.transceiver",
		Description: "Pluggable module or cable of each port (ethtool netlink MODULE_EEPROM_GET): identity, and temperature, supply voltage, per-lane Rx/Tx power and bias against the module's own alarm and warning thresholds, plus its latched fault flags (SFF-8636, CMIS, SFF-8472)",
		Fault:       "port-module",
		Run:         runTransceiver,
	})
}

// moduleSource names where module answers come from, as `ethtool -m` reads them.
func moduleSource(nd string) string {
	return "ethtool netlink MODULE_EEPROM_GET " + nd + " (ethtool -m " + nd + ")"
}

func runTransceiver(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	c := ethtoolClient(h)
	out := make([]engine.Finding, 0, len(ports))
	for _, p := range ports {
		out = append(out, judgeTransceiver(env, c, p))
	}
	return out, nil
}

func judgeTransceiver(env *checks.Env, c *ethtoolnl.Client, p portRef) engine.Finding {
	h := env.Host
	f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
	nds := p.port.Netdevs
	if len(nds) == 0 && p.dev.Parent != "" {
		nds = []string{p.dev.Parent}
	}
	if len(nds) == 0 {
		f.Severity = report.Skipped
		f.Summary = p.name() + ": no netdev is bound to the port, so its module cannot be read through ethtool"
		if p.ib() {
			f.Summary += " (mlxlink -d <pci> -m reads it on ConnectX)"
		}
		return f
	}
	nd := netdev(env, nds[0])
	name := fmt.Sprintf("%s (%s)", nd.Name, p.name())
	src := moduleSource(nd.Name)
	if c == nil {
		f.Summary = name + ": module EEPROM not recorded in this source"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", "not in this source", src))
		return f.SkippedBy(report.LimitSource, liftEthtool)
	}
	st, phys, stErr := states(h, p)
	m, err := xcvr.Read(c.PageReader(nd.Name))
	if err != nil {
		return moduleUnreadable(f, name, src, err, stErr == nil && st.Num == stateActive, refusalLift(h))
	}

	f.Evidence = append(f.Evidence, report.Ev("module", xcvr.Summary(m), src))
	for _, e := range []struct{ name, v string }{
		{"vendor", m.Vendor.Name}, {"part number", m.Vendor.PartNumber}, {"revision", m.Vendor.Revision},
		{"serial", m.Vendor.Serial}, {"interface", m.Interface},
	} {
		if e.v != "" {
			f.Evidence = append(f.Evidence, report.Ev(e.name, e.v, src))
		}
	}

	// A port someone turned off has no light to receive, so its latched Rx LOS says nothing
	// about the module (xcvr.Judge leaves that decision to the caller). On Ethernet only the
	// netdev's IFF_UP says so: mlx5 and bnxt_re report phys_state Disabled for any netdev
	// without carrier (mlx5_query_port_roce in drivers/infiniband/hw/mlx5/main.c,
	// bnxt_re_query_port), which is exactly when Rx LOS matters.
	adminDown, why := false, ""
	switch {
	case p.ib() && stErr == nil && phys.Num == physDisabled:
		adminDown, why = true, p.name()+" is physically Disabled"
	case !p.ib() && nd.AdminUp != nil && !*nd.AdminUp:
		adminDown, why = true, nd.Name+" is administratively down"
	}
	var alarms, warnings []xcvr.Verdict
	dropped := 0
	for _, v := range xcvr.Judge(m) {
		if adminDown && v.Kind == xcvr.KindFlag && v.Flag == xcvr.FlagRxLOS {
			dropped++
			continue
		}
		switch v.Level {
		case xcvr.LevelAlarm:
			alarms = append(alarms, v)
		case xcvr.LevelWarning:
			warnings = append(warnings, v)
		}
		f.Evidence = append(f.Evidence, report.Ev(verdictSubject(v), v.String(), src))
	}
	if dropped > 0 {
		f.Evidence = append(f.Evidence, report.Ev("Rx loss of signal flags", fmt.Sprintf("%d not judged: %s", dropped, why), src))
	}

	sum := xcvr.Summary(m)
	switch {
	case len(alarms) > 0:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: module %s: %s", name, sum, verdictList(alarms, warnings))
		f.Remediation = moduleFix(nd.Name, append(alarms, warnings...))
	case len(warnings) > 0:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s: module %s: %s", name, sum, verdictList(nil, warnings))
		f.Remediation = moduleFix(nd.Name, warnings)
	case !judgeable(m):
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s: %s: no diagnostics to judge", name, sum)
		if m.Media == xcvr.MediaCopperPassive {
			f.Summary = fmt.Sprintf("%s: %s: a passive cable has no diagnostics to judge", name, sum)
		}
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: %s; monitors within the module's thresholds, no fault flag", name, sum)
	}
	return f
}

// judgeable reports whether the module has monitors Judge could compare with thresholds: a
// decoded, powered module that is not a passive cable.
func judgeable(m *xcvr.Module) bool {
	switch {
	case m.Spec == xcvr.SpecUnknown, m.Media == xcvr.MediaCopperPassive, len(m.Monitors) == 0:
		return false
	case m.Spec != xcvr.SpecCMIS && m.NotReady != "":
		return false
	}
	return true
}

// verdictList names the verdicts for a summary: alarms first, at most three of each.
func verdictList(alarms, warnings []xcvr.Verdict) string {
	var parts []string
	for _, g := range []struct {
		vs   []xcvr.Verdict
		word string
	}{{alarms, "alarm"}, {warnings, "warning"}} {
		if len(g.vs) == 0 {
			continue
		}
		var names []string
		for i, v := range g.vs {
			if i == 3 {
				names = append(names, fmt.Sprintf("%d more", len(g.vs)-3))
				break
			}
			names = append(names, verdictName(v))
		}
		w := g.word
		if len(g.vs) > 1 {
			w += "s"
		}
		parts = append(parts, fmt.Sprintf("%d %s (%s)", len(g.vs), w, strings.Join(names, ", ")))
	}
	return strings.Join(parts, "; ")
}

// verdictName is a short name of a verdict: "lane 2 Rx power below low alarm".
func verdictName(v xcvr.Verdict) string {
	s := ""
	if v.Lane > 0 {
		s = fmt.Sprintf("lane %d ", v.Lane)
	}
	switch v.Kind {
	case xcvr.KindThreshold:
		dir := "above"
		if v.Bound == xcvr.LowAlarm || v.Bound == xcvr.LowWarning {
			dir = "below"
		}
		return fmt.Sprintf("%s%s %s %s", s, v.Quantity.Label(), dir, v.Bound)
	case xcvr.KindFlag:
		if v.Flag == xcvr.FlagThreshold {
			return fmt.Sprintf("%s%s %s flag", s, v.Quantity.Label(), v.Bound)
		}
		return s + strings.ReplaceAll(string(v.Flag), "_", " ")
	case xcvr.KindState:
		return "module fault state"
	}
	return s + v.Detail
}

// verdictSubject names what a verdict is about, for its evidence line: "lane 2 Rx power",
// "temperature", "lane 3 rx los", "module".
func verdictSubject(v xcvr.Verdict) string {
	s := "module"
	switch {
	case v.Kind == xcvr.KindFlag && v.Flag != xcvr.FlagThreshold:
		s = strings.ReplaceAll(string(v.Flag), "_", " ")
	case v.Quantity != "":
		s = v.Quantity.Label()
	}
	if v.Lane > 0 {
		s = fmt.Sprintf("lane %d %s", v.Lane, s)
	}
	return s
}

// moduleFix says what to do for the quantities the verdicts are about.
func moduleFix(nd string, vs []xcvr.Verdict) string {
	seen := map[string]bool{}
	var fixes []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			fixes = append(fixes, s)
		}
	}
	add("Read the module's diagnostics with ethtool -m " + nd + " (mlxlink -d <pci> -m on ConnectX) to confirm.")
	for _, v := range vs {
		q := v.Quantity
		switch {
		case v.Flag == xcvr.FlagRxLOS || q == xcvr.RxPower:
			add("Low or lost Rx power is light not arriving from the far end: clean and reseat both connectors, check the fibre and patch panel, and read the far end's Tx power; replace the cable or the far module if it stays low.")
		case q == xcvr.Temperature:
			add("A hot module: check the chassis airflow and fans, blanking panels and the ambient temperature; a module hotter than its neighbours in the same airflow is failing.")
		case q == xcvr.Voltage:
			add("Supply voltage out of range: reseat the module; if it persists in another cage the module is faulty, otherwise the host's cage power is.")
		case q == xcvr.TxPower || q == xcvr.TxBias || v.Flag == xcvr.FlagTxFault:
			add("Tx power, bias or a transmitter fault point at the module's laser: replace the module.")
		case v.Kind == xcvr.KindState || v.Flag == xcvr.FlagFirmware:
			add("The module reports a fault: reseat it, and replace it if the fault returns.")
		default:
			add("Latched CDR or equalisation flags often come from link bring-up: run the check again; if they are set again, reseat and then replace the module or cable.")
		}
	}
	return strings.Join(fixes, " ")
}

// refusalLift says how to lift a permission refusal of the module EEPROM, or "" when a refusal
// is not a privilege limit. Live, the refusal is this run's own. A snapshot replays the refusal
// its recording user got: recorded without root (facts.json euid), that recording's limit; a root
// recording that was refused says something about the host, which stays unknown.
func refusalLift(h *host.Host) string {
	if h.RefusalsAreThisRun() {
		return "run rdmadiag as root (or with CAP_NET_ADMIN) to read the module"
	}
	if facts, err := h.Facts(); err == nil && facts != nil && facts.EUID != 0 {
		return fmt.Sprintf("record the snapshot as root (or with CAP_NET_ADMIN): it was recorded by uid %d, whose module EEPROM read was refused", facts.EUID)
	}
	return ""
}

// moduleUnreadable turns a failed read of the module's first pages into a finding: a source
// without the answers, or a run (or recording) without the privilege to ask, is a skip held back
// by that limit (refusalLift says how to lift it), a driver or kernel without module access is
// information, anything else unknown.
func moduleUnreadable(f engine.Finding, name, src string, err error, active bool, lift string) engine.Finding {
	en, kernel := ethtoolnl.Errno(err)
	switch {
	case kernel && lift != "" && (en == syscall.EPERM || en == syscall.EACCES):
		// Some ethtool "get" requests are admin-only (Documentation/networking/ethtool-netlink.rst,
		// "Basic information"); Debian's 6.1 refuses MODULE_EEPROM_GET to an ordinary user with
		// EPERM (lab scenario unprivileged): the run's or the recording's limit, not the module's
		// state.
		f.Summary = name + ": module EEPROM not read: reading it needs CAP_NET_ADMIN"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", en.Error(), src))
		return f.SkippedBy(report.LimitPrivilege, lift)
	case errors.Is(err, host.ErrNotRecorded):
		f.Summary = name + ": module EEPROM not recorded in this source"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", "not in this source", src))
		return f.SkippedBy(report.LimitSource, liftEthtool)
	case errors.Is(err, ethtoolnl.ErrNoEthtool):
		f.Severity = report.Info
		f.Summary = name + ": the kernel has no ethtool netlink, so the module cannot be read"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", "kernel has no ethtool netlink family (before 5.6)", src))
	case kernel && (en == syscall.EOPNOTSUPP || en == syscall.ENODEV):
		// EOPNOTSUPP: the driver has no get_module_eeprom(_by_page) op (virtio_net, rxe's
		// parent) or the kernel predates MODULE_EEPROM_GET (5.13); ENODEV: drivers such as
		// sfp/phylink say there is no module.
		f.Severity = report.Info
		f.Summary = name + ": no pluggable module information from this driver"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", en.Error()+" ("+errnoName(en)+"): the driver has no module EEPROM access, no module is plugged, or the kernel predates MODULE_EEPROM_GET (5.13)", src))
	case kernel && en == syscall.EIO && !active:
		// mlx5 answers EIO when the MCIA register read fails, as it does for an empty cage
		// (mlx5_query_mcia in drivers/net/ethernet/mellanox/mlx5/core/port.c); on a port
		// without link that is most likely an unplugged cable, which port.state judges.
		f.Severity = report.Info
		f.Summary = name + ": no module answered (empty cage or unplugged cable; the port has no link)"
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", "EIO: the module did not answer", src))
	default:
		f.Severity = report.Unknown
		f.Summary = name + ": module EEPROM unreadable: " + err.Error()
		f.Evidence = append(f.Evidence, report.Ev("module EEPROM", "unreadable: "+err.Error(), src))
	}
	return f
}

func errnoName(en syscall.Errno) string {
	switch en {
	case syscall.EOPNOTSUPP:
		return "EOPNOTSUPP"
	case syscall.ENODEV:
		return "ENODEV"
	}
	return fmt.Sprint(int(en))
}
