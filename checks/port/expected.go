package port

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Whether a port that is not up should be is judged from evidence, not assumed: a dual-port
// card with one port cabled, a cloud shape's unprovisioned second port and a spare card are
// down by design. NVIDIA's NVSentinel NIC health monitor reported such ports fatal on first
// sight and changed its rule to "failed only if proven unexpected" (github.com/NVIDIA/NVSentinel
// pull 1462, issues 1361 and 1379: peer cards of the same role, or a runtime ACTIVE -> DOWN);
// GPUd dropped its default expected-port counts for the same false alarms (leptonai/gpud pull
// 295). The evidence rdmadiag accepts is listed by upEvidence.

// upReason is one piece of evidence that a port is meant to carry traffic.
type upReason struct {
	text  string
	where string
}

// portStateOf is a port with the state read for it in this run.
type portStateOf struct {
	p      portRef
	active bool
	ok     bool // the state was read
}

// peerKey groups the ports of identical cards at the same position: same PCI vendor and
// device, board (PSID), link layer, PCI function number (mlx5 gives each port a function of
// its own) and port number. Virtual functions and software devices have no peers: a VF follows
// its PF's link, and a software device's port is its netdev's.
func peerKey(p portRef) string {
	if p.dev.PCI == nil || p.dev.PCI.IsVF() || p.dev.BoardID == "" {
		return ""
	}
	fn := p.dev.PCI.BDF[strings.LastIndexByte(p.dev.PCI.BDF, '.')+1:]
	return fmt.Sprintf("%04x:%04x %s %s fn%s port%d", p.dev.PCI.Vendor, p.dev.PCI.DeviceID, p.dev.BoardID, p.port.LinkLayer, fn, p.port.Num)
}

// peerEvidence says which identical ports at the same position are up: when some are and this
// one is not, a rail is missing (one cable of eight on a GPU node).
func peerEvidence(p portRef, all []portStateOf) *upReason {
	key := peerKey(p)
	if key == "" {
		return nil
	}
	var up []string
	n := 0
	for _, o := range all {
		if !o.ok || peerKey(o.p) != key {
			continue
		}
		n++
		if o.active {
			up = append(up, o.p.name())
		}
	}
	if len(up) == 0 {
		return nil
	}
	return &upReason{
		text: fmt.Sprintf("%d of the %d identical ports at this position (PCI %04x:%04x, board %s, function and port alike) are ACTIVE: %s",
			len(up), n, p.dev.PCI.Vendor, p.dev.PCI.DeviceID, p.dev.BoardID, strings.Join(up, ", ")),
		where: "port state of identical cards"}
}

// policyEvidence matches the policy's ports.expect_up globs against the port ("mlx5_0/1"),
// its device, its PCI address and its netdevs.
func policyEvidence(env *checks.Env, p portRef) *upReason {
	pol := portsPolicy(env.Opts)
	if pol == nil {
		return nil
	}
	names := append([]string{p.name(), p.dev.Name}, p.port.Netdevs...)
	if p.dev.PCI != nil {
		names = append(names, p.dev.PCI.BDF)
	}
	for i, g := range pol.ExpectUp {
		for _, n := range names {
			if ok, _ := path.Match(g, n); ok {
				return &upReason{text: fmt.Sprintf("the policy expects it up (%q matches %s)", g, n),
					where: fmt.Sprintf("policy %s ports.expect_up[%d]", env.Opts.PolicyFile, i)}
			}
		}
	}
	return nil
}

// upEvidence lists what says the port is meant to be up, besides the policy and its peers:
//   - its link was up this boot: link_downed counts transitions from LinkUp (IBTA
//     LinkDownedCounter; rxe's hw_counters/link_downed), a netdev's carrier_up_count counts
//     carrier ups (net/core/net-sysfs.c, Linux 4.16 and later), the driver's link-down count
//     (ethtool LINKSTATE_GET, 6.6 and later), a port that received or sent data had a link, and
//     a driver's "Link up" line names it in the kernel log;
//   - its netdev is configured: a RoCE GID on an IP address (the kernel adds one per address
//     of the netdev, drivers/infiniband/core/roce_gid_mgmt.c), a global IPv6 address in
//     /proc/net/if_inet6, or membership of a bond (/sys/class/net/<if>/master).
//
// Read errors other than "not there" are returned: a port whose evidence cannot be read is not
// called unused.
func upEvidence(env *checks.Env, p portRef) ([]upReason, []error) {
	h := env.Host
	var out []upReason
	var errs []error
	if s, ok, err := linkDowned(h, p); err != nil {
		errs = append(errs, err)
	} else if ok && s.downs > 0 {
		out = append(out, upReason{text: fmt.Sprintf("its link went down %d time(s) this boot, so it was up", s.downs), where: s.where})
	}
	for _, c := range []string{"port_rcv_data", "port_xmit_data"} {
		f := p.file("counters/" + c)
		s, err := h.ReadString(f)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if v, err := ParseCounter(s); err == nil && v > 0 {
			out = append(out, upReason{text: fmt.Sprintf("%s %d: it moved data this boot", c, v), where: f})
			break
		}
	}
	if p.ib() {
		if r := smAssigned(h, p); r != nil {
			out = append(out, *r)
		}
	}
	for _, nd := range p.port.Netdevs {
		dir := "/sys/class/net/" + nd
		if up, err := readUint(h, dir+"/carrier_up_count"); err == nil && up > 0 {
			out = append(out, upReason{text: fmt.Sprintf("%s had carrier %d time(s) this boot", nd, up), where: dir + "/carrier_up_count"})
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		// The driver's own link-down count (mlx5e PPCNT link_down_events through ethtool's
		// get_link_ext_stats, Linux 6.6 and later): a link that went down was up.
		if ls, _ := linkStateOf(h, nd); ls != nil && ls.DownCount != nil && *ls.DownCount > 0 {
			out = append(out, upReason{text: fmt.Sprintf("the driver counted %d link down event(s) on %s, so it had a link", *ls.DownCount, nd), where: "ethtool netlink LINKSTATE_GET " + nd})
		}
		if m, err := h.Readlink(dir + "/master"); err == nil {
			out = append(out, upReason{text: fmt.Sprintf("%s is a member of %s", nd, path.Base(m)), where: dir + "/master"})
		}
	}
	gs, _ := gids(h, p) // an unreadable table is no evidence either way; port.addressing reports it
	for _, g := range gs {
		if g.IPBased() {
			a := g.Addr
			if ip := g.IPv4(); ip != "" {
				a = ip
			}
			out = append(out, upReason{text: fmt.Sprintf("it has a RoCE GID on address %s (%s)", a, orNone(g.Netdev)), where: p.file("gids/" + strconv.Itoa(g.Index))})
			break
		}
	}
	if a := globalIPv6(env, p.port.Netdevs); a != nil {
		out = append(out, *a)
	}
	if r := logLinkUp(env, p); r != nil {
		out = append(out, *r)
	}
	return out, errs
}

// globalIPv6 finds a global address of one of the netdevs in /proc/net/if_inet6 (net/ipv6/
// addrconf.c if6_seq_show: address, ifindex, prefix length, scope, flags, name; scope 00 is
// global). IPoIB ports have no GID per address, so this is their configured-netdev evidence.
func globalIPv6(env *checks.Env, netdevs []string) *upReason {
	if len(netdevs) == 0 {
		return nil
	}
	b, err := env.Host.ReadFile("/proc/net/if_inet6")
	if err != nil {
		return nil
	}
	want := map[string]bool{}
	for _, n := range netdevs {
		want[n] = true
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 6 || !want[f[5]] || f[3] != "00" {
			continue
		}
		return &upReason{text: fmt.Sprintf("%s has a global IPv6 address", f[5]), where: "/proc/net/if_inet6"}
	}
	return nil
}

// logLinkUp finds a driver's "link up" line for the port in the kernel log, when the log is
// available; without it this evidence is simply absent.
func logLinkUp(env *checks.Env, p portRef) *upReason {
	ke, err := env.KernelEvents()
	if err != nil {
		return nil
	}
	for _, e := range portEvents(p, linkEvents(ke)) {
		if !e.down {
			return &upReason{text: fmt.Sprintf("the kernel logged its link up: %q", truncate(e.rec.Text, 120)), where: ke.Log.Cite}
		}
	}
	return nil
}

// judgeExpected settles a port that has no link: with evidence that it should be up the
// finding stands as judged; without any it is "not cabled or unused", information, unless no
// RDMA port of the host is up at all (then the host cannot do RDMA, a warning).
func judgeExpected(env *checks.Env, p portRef, all []portStateOf, f *engine.Finding) {
	var reasons []upReason
	if r := policyEvidence(env, p); r != nil {
		reasons = append(reasons, *r)
	}
	if r := peerEvidence(p, all); r != nil {
		reasons = append(reasons, *r)
	}
	more, errs := upEvidence(env, p)
	reasons = append(reasons, more...)
	if len(reasons) > 0 {
		for _, r := range reasons {
			f.Evidence = append(f.Evidence, report.Ev("expected up", r.text, r.where))
		}
		return
	}
	if len(errs) > 0 {
		// What would tell an unused port from a broken one is unreadable: the judgement stands.
		for _, e := range errs {
			f.Evidence = append(f.Evidence, report.Ev("expected up", "not decidable: "+e.Error(), ""))
		}
		return
	}
	anyUp := false
	for _, o := range all {
		anyUp = anyUp || (o.ok && o.active)
	}
	f.Evidence = append(f.Evidence, report.Ev("expected up",
		"no evidence: never up this boot (link_downed, carrier, traffic, kernel log), no address or bond on its netdev, no identical port up, not in the policy's ports.expect_up", ""))
	declare := fmt.Sprintf("If %s should carry traffic, cable it (or enable the switch port); to have rdmadiag hold it to being up, list it in the policy: {\"ports\": {\"expect_up\": [%q]}}.", p.name(), p.name())
	if !anyUp {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s has no link, and no RDMA port of this host is up: %s", p.name(), f.Summary)
		f.Remediation = declare + " " + f.Remediation
		return
	}
	f.Severity = report.Info
	f.Summary = fmt.Sprintf("%s is not cabled or unused (no link since boot, nothing configured on it): %s", p.name(), f.Summary)
	f.Remediation = declare
}

// smAssigned is an InfiniBand port's LID: a subnet manager sets it in the port's PortInfo once
// the link is up (IBTA Volume 1, 14.2.5.6 and PortInfo's LID), and it stays when the link drops
// (a Down/Polling port keeping "Base lid: 868, SM lid: 334" in github.com/leptonai/gpud pull
// 482), so the port was in a fabric. 0 is unassigned and 0xffff the permissive LID.
func smAssigned(h *host.Host, p portRef) *upReason {
	var v [2]uint32
	for i, f := range []string{"lid", "sm_lid"} {
		s, err := p.attr(h, f)
		if err != nil {
			return nil
		}
		if v[i], err = ParseLID(s); err != nil {
			return nil
		}
	}
	if v[0] == 0 || v[0] >= 0xc000 || v[1] == 0 {
		return nil
	}
	return &upReason{text: fmt.Sprintf("a subnet manager (LID 0x%x) assigned it LID 0x%x: it was in a fabric", v[1], v[0]), where: p.file("lid")}
}
