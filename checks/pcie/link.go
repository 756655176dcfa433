package pcie

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// linkState is what one function says about its link.
type linkState struct {
	node
	CurSpeed, MaxSpeed Speed
	CurWidth, MaxWidth int
	// NoLink is set when the function has no link files at all (conventional PCI, VFs), or
	// NoLinkCap when they report no link capability at all (an integrated endpoint).
	NoLink, NoLinkCap bool
	Cap               *ExpressCap
	// CapErr says why the config space gave no PCIe capability (not root, short read).
	CapErr error
	Errs   []error
}

func (l linkState) cur() string { return linkString(l.CurSpeed, l.CurWidth) }
func (l linkState) max() string { return linkString(l.MaxSpeed, l.MaxWidth) }

func linkString(s Speed, w int) string {
	ws := "x?"
	if w > 0 {
		ws = fmt.Sprintf("x%d", w)
	}
	return s.String() + " " + ws
}

// gbps is the usable bandwidth of a speed and width; 0 when either is unknown.
func gbps(s Speed, w int) float64 { return s.LaneGbps() * float64(w) }

func readLinkState(h *host.Host, n node) linkState {
	l := linkState{node: n}
	read := func(file string) (string, bool) {
		s, err := h.ReadString(path.Join(n.Dir, file))
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				l.Errs = append(l.Errs, err)
			}
			return "", false
		}
		return s, true
	}
	cs, ok1 := read("current_link_speed")
	cw, ok2 := read("current_link_width")
	ms, ok3 := read("max_link_speed")
	mw, ok4 := read("max_link_width")
	if !ok1 && !ok2 && !ok3 && !ok4 && len(l.Errs) == 0 {
		l.NoLink = true
	}
	parse := func(file, s string, ok bool, sp *Speed, w *int) {
		if !ok {
			return
		}
		var err error
		if sp != nil {
			*sp, err = ParseSpeed(s)
		} else {
			*w, err = ParseWidth(s)
		}
		if err != nil {
			l.Errs = append(l.Errs, fmt.Errorf("%s: %w", path.Join(n.Dir, file), err))
		}
	}
	parse("current_link_speed", cs, ok1, &l.CurSpeed, nil)
	parse("current_link_width", cw, ok2, nil, &l.CurWidth)
	parse("max_link_speed", ms, ok3, &l.MaxSpeed, nil)
	parse("max_link_width", mw, ok4, nil, &l.MaxWidth)
	if b, err := h.ReadFile(path.Join(n.Dir, "config")); err == nil {
		c, err := ParseConfig(b)
		if err == nil {
			l.Cap = &c
			// The sysfs files are primary; config space fills what they leave unknown.
			if l.CurSpeed == 0 {
				l.CurSpeed = c.StaSpeed
			}
			if l.CurWidth == 0 {
				l.CurWidth = c.StaWidth
			}
			if l.MaxSpeed == 0 {
				l.MaxSpeed = c.CapSpeed
			}
			if l.MaxWidth == 0 {
				l.MaxWidth = c.CapWidth
			}
		} else {
			l.CapErr = fmt.Errorf("%s: %w", path.Join(n.Dir, "config"), err)
		}
	}
	// Link files that all read "Unknown" and 0, capability included, belong to a function with
	// no link: a Root Complex Integrated Endpoint has no Link registers (pcie_cap_has_lnkctl,
	// drivers/pci/access.c, 6.12), so pci-sysfs reads them as 0. A link that failed to train
	// still reports its capability.
	if !l.NoLink && len(l.Errs) == 0 && ok3 && ok4 && l.MaxSpeed == 0 && l.MaxWidth == 0 && l.CurSpeed == 0 && l.CurWidth == 0 {
		l.NoLink, l.NoLinkCap = true, true
	}
	return l
}

// link is one physical link of the path: the function facing up (endpoint or switch upstream
// port) and the port above it (root or switch downstream port). Both report the same trained
// link in current_link_*; each reports its own capability in max_link_*.
type link struct {
	Child, Port linkState
}

// pairLinks groups the path's functions into links. Port types come from config space when it
// is readable; otherwise the usual alternation is assumed (endpoint, downstream port, upstream
// port, downstream port, ..., root port), which is how switches appear in sysfs.
func pairLinks(ls []linkState) []link {
	var out []link
	for i := 0; i < len(ls); i++ {
		if ls[i].NoLink {
			continue
		}
		if ls[i].Cap != nil && ls[i].Cap.Downstream() {
			// A downstream port with no child on the path (the judged function itself is a
			// bridge): its link is still worth showing, alone.
			out = append(out, link{Child: ls[i], Port: ls[i]})
			continue
		}
		if i+1 < len(ls) {
			out = append(out, link{Child: ls[i], Port: ls[i+1]})
			i++
			continue
		}
		out = append(out, link{Child: ls[i], Port: ls[i]})
	}
	return out
}

// verdict of one link.
type linkVerdict struct {
	L        link
	Severity report.Severity
	Trained  string
	Why      string // one line
	Fix      string
	// Action, when set, replaces the fault row's: a link held back by a setting or by the slot
	// is fixed by configuration (the BIOS, where the card sits), not by reseating the card.
	Action report.Action
	GBps   float64 // usable Gb/s of the trained link
}

// minKnown is the lower of two capabilities (speed or width) where 0 means unknown: the known
// one when the other is not.
func minKnown[T Speed | int](a, b T) T {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	case a < b:
		return a
	}
	return b
}

func judgeLink(l link) linkVerdict {
	c, p := l.Child, l.Port
	sp, w := c.CurSpeed, c.CurWidth
	if sp == 0 {
		sp = p.CurSpeed
	}
	if w == 0 {
		w = p.CurWidth
	}
	v := linkVerdict{L: l, Trained: linkString(sp, w), GBps: gbps(sp, w)}
	at := fmt.Sprintf("link %s <-> %s", c.BDF, p.BDF)
	if c.BDF == p.BDF {
		at = "link at " + c.BDF
	}
	if sp == 0 || w == 0 {
		v.Severity = report.Unknown
		v.Why = at + ": the trained speed or width is unknown (the kernel reports \"Unknown\" or 0)"
		return v
	}
	expS := minKnown(c.MaxSpeed, p.MaxSpeed)
	expW := minKnown(c.MaxWidth, p.MaxWidth)
	if c.BDF == p.BDF {
		expS, expW = c.MaxSpeed, c.MaxWidth
	}
	if expS == 0 || expW == 0 {
		v.Severity = report.Unknown
		v.Why = at + ": neither end reports its capability (max_link_speed/width unknown)"
		return v
	}
	target := Speed(0)
	for _, e := range []linkState{c, p} {
		if e.Cap != nil && e.Cap.TargetSpeed != 0 && (target == 0 || e.Cap.TargetSpeed < target) {
			target = e.Cap.TargetSpeed
		}
	}
	switch {
	case sp < expS || w < expW:
		v.Severity = report.Warning
		v.Why = fmt.Sprintf("%s trained at %s although both ends support %s", at, linkString(sp, w), linkString(expS, expW))
		switch {
		case target != 0 && target < expS && sp <= target:
			v.Why += fmt.Sprintf(" (Target Link Speed is set to %s)", target)
			v.Fix = fmt.Sprintf("The link's Target Link Speed (LnkCtl2) is %s: raise the slot's PCIe speed setting in the BIOS (often \"PCIe Link Speed\" per slot, or Auto) and reboot.", target)
			v.Action = report.ActionFixConfiguration
		case w < expW:
			v.Fix = "Lanes failed to train: power down, reseat the card, check or replace the riser/cable, try another slot; if it persists the card or slot is faulty (signal integrity)."
		default:
			v.Fix = "The link trained below the speed both ends support (signal integrity): reseat the card, check the riser/retimer and the slot's BIOS speed setting; if it persists try another slot or card."
		}
	case c.BDF != p.BDF && p.MaxSpeed != 0 && p.MaxWidth != 0 && c.MaxSpeed != 0 && c.MaxWidth != 0 &&
		(p.MaxSpeed < c.MaxSpeed || p.MaxWidth < c.MaxWidth):
		v.Severity = report.Warning
		v.Why = fmt.Sprintf("%s: the upstream port %s is capable of only %s but %s is capable of %s; the slot limits the card",
			at, p.BDF, p.max(), c.BDF, c.max())
		v.Fix = fmt.Sprintf("Move the card to a slot whose port supports %s (check the board manual for which slots are wired x16 and to which CPU), or accept the lower bandwidth.", c.max())
		v.Action = report.ActionFixConfiguration
	default:
		v.Severity = report.OK
		v.Why = fmt.Sprintf("%s trained at %s, the most both ends support", at, linkString(sp, w))
		if c.BDF != p.BDF && p.MaxSpeed != 0 && c.MaxSpeed != 0 && (p.MaxSpeed > c.MaxSpeed || p.MaxWidth > c.MaxWidth) {
			v.Why += fmt.Sprintf(" (the port is capable of %s; the card's own maximum %s sets the link)", p.max(), c.max())
		}
	}
	return v
}

// bwReport is one of the kernel's reports of the bandwidth a function's link gives
// (drivers/pci/pci.c __pcie_print_link_status(), signatures pcie-bw-limited and
// pcie-bw-full): what is available, and when limited, by which hop and link.
type bwReport struct {
	rec     kmsg.Record
	limited bool
	// speed and width of the limiting link, hop its downstream function; avail and capable in
	// Gb/s as printed.
	speed, width, hop, avail, capable string
}

func newBWReport(e kevent.Event) bwReport {
	a := e.Args
	r := bwReport{rec: e.Record}
	switch {
	case len(a) >= 9: // 6.15 appends a %s (", in Flit mode")
		r.limited = true
		r.avail, r.speed, r.width, r.hop = a[0]+"."+a[1]+" Gb/s", a[2], a[3], a[4]
		r.capable = a[5] + "." + a[6] + " Gb/s"
	case len(a) >= 4:
		r.avail, r.speed, r.width = a[0]+"."+a[1]+" Gb/s", a[2], a[3]
		r.capable = r.avail
	}
	return r
}

// bandwidthReports are the run's link bandwidth reports about one of bdfs, in log order.
func bandwidthReports(ke *checks.KernelEvents, bdfs []string) []bwReport {
	if ke == nil {
		return nil
	}
	var out []bwReport
	for _, e := range ke.For(checks.JudgePCIeLink) {
		b := e.Record.BDF()
		for _, x := range bdfs {
			if b == x || e.PCI == x {
				out = append(out, newBWReport(e))
				break
			}
		}
	}
	return out
}

// pcieLog is the run's kernel log as the pcie checks use it: its records, the source lines are
// cited by, and the error that kept it away (the records are then empty).
type pcieLog struct {
	recs   []kmsg.Record
	events *checks.KernelEvents
	cite   string
	err    error
	log    *kmsg.Log
}

func kernelLog(env *checks.Env) pcieLog {
	ke, err := env.KernelEvents()
	if err != nil {
		return pcieLog{err: err, cite: "kmsg"}
	}
	return pcieLog{recs: ke.Log.Records, events: ke, cite: ke.Log.Cite, log: ke.Log}
}

// evidence quotes the last max of recs (lines of this log) under name.
func (l pcieLog) evidence(name string, recs []kmsg.Record, max int) []report.Evidence {
	var ev []report.Evidence
	start := 0
	if len(recs) > max {
		start = len(recs) - max
		ev = append(ev, report.Ev(name, fmt.Sprintf("%d matching lines; the last %d follow", len(recs), max), l.cite))
	}
	for _, r := range recs[start:] {
		ev = append(ev, report.Ev(name, l.log.Quote(r), l.cite))
	}
	return ev
}

func runLink(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if f := noDevices(inv); f != nil {
		return f, nil
	}
	ts, out := sharedTargets(env)
	klog := kernelLog(env)
	for _, t := range ts {
		out = append(out, judgePath(env.Host, t, klog))
	}
	// The links are judged from sysfs alone; only the kernel's own bandwidth report is missing.
	if klog.err != nil && len(ts) > 0 {
		out = append(out, checks.KernelLogFinding(klog.err, "the kernel's PCIe bandwidth reports (\"limited by\" lines)"))
	}
	return out, nil
}

func judgePath(h *host.Host, t *target, klog pcieLog) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: t.subject(), Evidence: viaEvidence(t)}}
	var states []linkState
	for _, n := range t.Nodes {
		states = append(states, readLinkState(h, n))
	}
	var readErrs []error
	for _, s := range states {
		readErrs = append(readErrs, s.Errs...)
		role := "function"
		if s.BDF != t.BDF {
			role = "bridge"
			if s.Dir == t.Nodes[len(t.Nodes)-1].Dir {
				role = "root port"
			}
		}
		if s.Cap != nil {
			role = s.Cap.PortTypeName()
		}
		if s.NoLinkCap {
			f.Evidence = append(f.Evidence, report.Ev("link at "+s.BDF+" ("+role+")", "no link capability (link files read Unknown and 0: an integrated endpoint)",
				s.Dir+"/{current,max}_link_{speed,width}"))
			continue
		}
		if s.NoLink {
			f.Evidence = append(f.Evidence, report.Ev("link at "+s.BDF+" ("+role+")", "no link files (not a PCIe link)", s.Dir))
			continue
		}
		f.Evidence = append(f.Evidence, report.EvExp("link at "+s.BDF+" ("+role+")", "trained "+s.cur(), "up to "+s.max()+", its capability",
			s.Dir+"/{current,max}_link_{speed,width}"))
		if s.Cap != nil {
			c := s.Cap
			obs := fmt.Sprintf("LnkCap %s, LnkSta %s", linkString(c.CapSpeed, c.CapWidth), linkString(c.StaSpeed, c.StaWidth))
			if c.TargetSpeed != 0 {
				obs += ", target speed " + c.TargetSpeed.String()
			}
			obs += fmt.Sprintf(", MaxPayload %d (supported %d), MaxReadReq %d", c.MaxPayload, c.MaxPayloadSupported, c.MaxReadRequest)
			f.Evidence = append(f.Evidence, report.Ev("config space at "+s.BDF, obs, s.Dir+"/config"))
		}
	}
	if len(t.Nodes) == 1 {
		f.Evidence = append(f.Evidence, report.Ev("upstream path", "none: the function sits directly on the root complex", t.Nodes[0].Dir))
	}
	links := pairLinks(states)
	var worst *linkVerdict
	var vs []linkVerdict
	for _, l := range links {
		vs = append(vs, judgeLink(l))
	}
	for i := range vs {
		v := &vs[i]
		if worst == nil || v.Severity > worst.Severity ||
			(v.Severity == worst.Severity && v.GBps > 0 && (worst.GBps == 0 || v.GBps < worst.GBps)) {
			worst = v
		}
	}
	if lim := bandwidthReports(klog.events, bdfList(t)); len(lim) > 0 {
		recs := make([]kmsg.Record, len(lim))
		for i, r := range lim {
			recs[i] = r.rec
		}
		f.Evidence = append(f.Evidence, klog.evidence("kernel link report", recs, 2)...)
		if r := lim[len(lim)-1]; r.limited {
			f.Evidence = append(f.Evidence, report.Ev("kernel names the limiting hop", r.hop+" ("+r.speed+" x"+r.width+")", klog.cite))
		}
	} else if klog.err != nil {
		f.Evidence = append(f.Evidence, checks.KernelLogNote(klog.err))
	}
	switch {
	case len(readErrs) > 0 && (worst == nil || worst.Severity < report.Warning):
		f.Severity = report.Unknown
		f.Summary = fmt.Sprintf("PCIe link of %s (%s) could not be read: %v", t.BDF, t.deviceNames(), readErrs[0])
		for _, e := range readErrs {
			f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
		}
	case worst == nil:
		// No link file to judge: the kernel's own report, made when the driver probed the
		// function, is then the only word on the link (a tree made of ibstat and a log).
		if r, ok := kernelLimited(klog.events, t.BDF); ok {
			f.Severity = report.Warning
			f.Events = []string{linkEvent(r.hop)}
			f.Summary = fmt.Sprintf("%s (%s): the kernel reported the PCIe link limited by %s x%s at %s, below what the card is capable of (%s available, capable of %s)",
				t.BDF, t.deviceNames(), r.speed, r.width, r.hop, r.avail, r.capable)
			f.Remediation = fmt.Sprintf("The kernel measured this when the driver probed the card; check current_link_speed/current_link_width of %s on the host. If they still show the lower link, move the card to a slot wired for its full width and speed (the board manual says which slots are x16 and to which CPU), or check the slot's BIOS link setting.", r.hop)
			if b := r.rec.BDF(); b != t.BDF {
				f.Evidence = append(f.Evidence, report.Ev("shares the PCIe link with", b+": functions of one multi-function device share one physical link", ""))
				f.Evidence = append(f.Evidence, klog.evidence("kernel link report", []kmsg.Record{r.rec}, 1)...)
			}
			break
		}
		f.Severity = report.Skipped
		f.Summary = fmt.Sprintf("skipped: %s (%s) has no PCIe link files", t.BDF, t.deviceNames())
		if len(states) > 0 && states[0].NoLinkCap {
			f.Summary = fmt.Sprintf("skipped: %s (%s) reports no PCIe link capability (an integrated endpoint has no link)", t.BDF, t.deviceNames())
		}
		if nh := h.Lacks(host.PartPCIeLink); nh != nil {
			f.Summary = fmt.Sprintf("PCIe link of %s (%s) not judged: %s", t.BDF, t.deviceNames(), nh.Reason)
			f = f.SkippedBy(report.LimitSource, nh.Lift)
		}
	default:
		f.Severity = worst.Severity
		f.Summary = fmt.Sprintf("%s (%s): %s", t.BDF, t.deviceNames(), worst.Why)
		f.Remediation = worst.Fix
		f.Action = worst.Action
		for _, v := range vs {
			if v.Severity >= report.Warning && v.Why != worst.Why {
				f.Evidence = append(f.Evidence, report.Ev("also", v.Why, ""))
			}
			if v.Severity >= report.Warning {
				f.Events = append(f.Events, linkEvent(v.L.Port.BDF))
			}
		}
		f.Evidence = append(f.Evidence, report.Ev("limiting hop", worst.Trained+fmt.Sprintf(" = %.1f Gb/s usable", worst.GBps), worst.L.Port.Dir))
	}
	return f
}

// kernelLimited returns the last "limited by" report of the kernel for the function or for
// another function of its device: one multi-function device has one link (see sharedLinks),
// and pcie_print_link_status runs for whichever function's driver asks. The kernel prints
// "limited by" only when the available bandwidth is below the device's capability
// (drivers/pci/pci.c __pcie_print_link_status: bw_avail < bw_cap).
func kernelLimited(ke *checks.KernelEvents, bdf string) (bwReport, bool) {
	j := strings.LastIndexByte(bdf, '.')
	if ke == nil || j < 0 {
		return bwReport{}, false
	}
	dev := bdf[:j]
	evs := ke.For(checks.JudgePCIeLink)
	for i := len(evs) - 1; i >= 0; i-- {
		b := evs[i].Record.BDF()
		if i := strings.LastIndexByte(b, '.'); i < 0 || b[:i] != dev {
			continue
		}
		if r := newBWReport(evs[i]); r.limited {
			return r, true
		}
	}
	return bwReport{}, false
}

func bdfList(t *target) []string {
	out := make([]string, len(t.Nodes))
	for i, n := range t.Nodes {
		out[i] = n.BDF
	}
	return out
}
