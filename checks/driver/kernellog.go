package driver

import (
	"context"
	"fmt"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.kernel_log",
		Description: "Kernel log events of the RDMA drivers and their PCIe path, classified by the drivers' own format strings (internal/kevent/signatures): firmware health and command timeouts, probe and module load failures, transmit timeouts, port module events, unrecognised driver errors; link changes, CQ/EQ errors and IOMMU faults are judged by port.flaps, cq.errors and pcie.dma",
		Fault:       "driver-module",
		Run:         runKernelLog,
		KernelLog:   true,
	})
}

// inInventory reports whether a device name or PCI function is one of this host's RDMA devices.
func inInventory(inv *inventory.Inventory, dev, bdf string) bool {
	for _, d := range inv.Devices {
		if (dev != "" && d.Name == dev) || (bdf != "" && d.PCI != nil && d.PCI.BDF == bdf) {
			return true
		}
	}
	return false
}

type logGroup struct {
	sig         *kevent.Signature
	detail      string
	dev, bdf    string
	module      string
	evs         []kevent.Event
	recs        []kmsg.Record
	rdmaFrames  bool
	recoveredAt *kmsg.Record
	folded      map[string]bool // the groups a folded group stands for
}

// maxGroupsPerKind bounds the findings one kind of line can make: a log with thousands of
// distinct lines of one kind (failing work requests, each with its own text, or a hostile file)
// gets its first groups one by one and the rest in one folded finding.
const maxGroupsPerKind = 12

func runKernelLog(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	ke, err := env.KernelEvents()
	if err != nil {
		return []engine.Finding{checks.KernelLogFinding(err, "RDMA fault signatures")}, nil
	}
	klog := ke.Log
	recs, skipped := klog.Records, klog.Skipped
	subj := checks.KernelLogSubject
	inv := env.Inventory()
	var matches, unknown []kevent.Event
	var recovered []kmsg.Record
	quiet := 0
	for _, ev := range ke.For(checks.JudgeKernelLog) {
		switch {
		case !ev.Recognised():
			unknown = append(unknown, ev)
			continue
		case ev.Sig.Benign && !errorLevel(ev.Sig.Level):
			// Known noise the driver itself does not call an error (a port service enabled
			// at boot): counted, not reported.
			quiet++
			continue
		case ev.Sig.Outcome == kevent.OutcomeRecovered:
			recovered = append(recovered, ev.Record)
		}
		matches = append(matches, ev)
	}
	if len(matches) == 0 && len(unknown) == 0 {
		f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.OK,
			Summary:  fmt.Sprintf("kernel log: %d record(s) read, no RDMA fault signature", len(recs)),
			Evidence: []report.Evidence{report.Ev("records", fmt.Sprint(len(recs)), klog.Cite), report.Ev("unparsed records", fmt.Sprint(skipped), klog.Cite)}}}
		if quiet > 0 {
			f.Evidence = append(f.Evidence, report.Ev("known benign lines", fmt.Sprint(quiet), klog.Cite))
		}
		return []engine.Finding{f}, nil
	}
	events, merged := healthEvents(matches)
	var out []engine.Finding
	for _, ev := range events {
		out = append(out, eventFinding(ev, klog))
	}
	groups := map[string]*logGroup{}
	opened := map[string]int{} // groups opened per kind of line
	var order []string
	for mi, ev := range matches {
		if merged[mi] {
			continue
		}
		s, r := ev.Sig, ev.Record
		g := logGroup{sig: s, dev: ev.Device, bdf: ev.PCI, detail: ev.Detail()}
		if ev.Module != "" && g.bdf == "" && g.dev == "" {
			g.module = ev.Module
		}
		fam := s.ID
		if s.Family != "" {
			fam = s.Family
		}
		key := strings.Join([]string{fam, g.detail, g.dev, g.bdf, g.module}, "|")
		// A family's lines belong to one event; after a silence as long as a health event's,
		// the same family starts a new one.
		for n := 2; s.Family != "" && groups[key] != nil; n++ {
			prev := groups[key].recs[len(groups[key].recs)-1]
			if r.Usec >= prev.Usec && r.Usec-prev.Usec <= healthEventGap {
				break
			}
			key = strings.Join([]string{fam, g.detail, g.dev, g.bdf, g.module, fmt.Sprint(n)}, "|")
		}
		gp := groups[key]
		if gp == nil && opened[fam] >= maxGroupsPerKind {
			// Folded per RDMA device of this host (so a later line still links to its device's
			// findings), the rest host-wide: either way a bounded number of groups.
			fk, fold := fam+"|folded", logGroup{sig: s, folded: map[string]bool{}}
			if inInventory(inv, g.dev, g.bdf) {
				fk, fold.dev, fold.bdf = fk+"|"+g.dev+"|"+g.bdf, g.dev, g.bdf
			}
			if gp = groups[fk]; gp == nil {
				gp = &fold
				groups[fk] = gp
				order = append(order, fk)
			}
			gp.folded[key] = true
		}
		if gp == nil {
			gp = &g
			groups[key] = gp
			order = append(order, key)
			opened[fam]++
		} else if s.Sev > gp.sig.Sev {
			gp.sig = s
		}
		gp.evs = append(gp.evs, ev)
		gp.recs = append(gp.recs, r)
		if hostMemory(s, ev) && rdmaFramesFollow(recs, ev.Index) {
			gp.rdmaFrames = true
		}
	}
	for _, key := range order {
		g := groups[key]
		if g.folded != nil {
			g.detail = fmt.Sprintf("%d more groups of these lines, not listed one by one", len(g.folded))
		}
		f := groupFinding(g, recovered, klog, inv)
		if g.sig.Family == "module-load" && g.module != "" {
			f = moduleLoadFailure(env, f, g)
		}
		out = append(out, f)
	}
	return append(out, unrecognisedFindings(unknown, klog, inv)...), nil
}

// hostMemory is a failure of the host's memory allocator (fault row dma-engine, no function
// named): the call trace after it says whose allocation failed.
func hostMemory(s *kevent.Signature, ev kevent.Event) bool {
	return s.Fault == "dma-engine" && ev.PCI == "" && s.Sev == report.Info
}

// A firmware-health event prints several lines (health.c and cmd.c): the poll detects the fatal
// sensor or misses, the health buffer is dumped, commands in flight time out, and the recovery
// flow fails or succeeds. Their signatures carry a step (signatures/*.json "step"): the lines
// with one, of one family and device, are one fault and make one finding, whose summary lists
// the steps.

// healthEventGap is the longest silence between two lines of one firmware-health event. The
// slowest steps of the mlx5 flow are a command timeout (MLX5_TO_CMD_MS, 60 s) and waiting for
// the firmware to come back during recovery (MLX5_TO_FW_PRE_INIT_TIMEOUT_MS, 120 s; both in
// drivers/net/ethernet/mellanox/mlx5/core/lib/tout.c); five minutes covers either with margin,
// while a new fault after five quiet minutes is a separate event.
const healthEventGap = 300 * 1000 * 1000 // microseconds

// healthEvent is the firmware-health lines of one device that belong to one event.
type healthEvent struct {
	dev, bdf string
	family   string
	members  []kevent.Event
	recs     []kmsg.Record
}

// healthEvents groups the lines of signatures with a step, per family and device, into events.
// Only events that span two or more signatures are returned (one signature alone is reported as
// before, counted); merged marks the matches they consumed.
func healthEvents(matches []kevent.Event) ([]*healthEvent, map[int]bool) {
	open := map[string]*healthEvent{}
	var all []*healthEvent
	idxOf := map[*healthEvent][]int{}
	for mi, m := range matches {
		if m.Sig.Step == "" || (m.Device == "" && m.PCI == "") {
			continue
		}
		key := m.Sig.Family + "|" + m.Device + "|" + m.PCI
		r := m.Record
		ev := open[key]
		if ev != nil {
			last := ev.recs[len(ev.recs)-1]
			if r.Usec < last.Usec || r.Usec-last.Usec > healthEventGap {
				ev = nil
			}
		}
		if ev == nil {
			ev = &healthEvent{dev: m.Device, bdf: m.PCI, family: m.Sig.Family}
			open[key] = ev
			all = append(all, ev)
		}
		ev.members = append(ev.members, m)
		ev.recs = append(ev.recs, r)
		idxOf[ev] = append(idxOf[ev], mi)
	}
	merged := map[int]bool{}
	var out []*healthEvent
	for _, ev := range all {
		sigs := map[string]bool{}
		for _, m := range ev.members {
			sigs[m.Sig.ID] = true
		}
		if len(sigs) < 2 {
			continue
		}
		out = append(out, ev)
		for _, mi := range idxOf[ev] {
			merged[mi] = true
		}
	}
	return out, merged
}

// maxEventLines bounds the log lines one event finding carries; a recovery loop can print
// hundreds, and the first ones say what happened.
const maxEventLines = 12

// eventFinding turns one firmware-health event into one finding: the worst of its lines decides
// the severity, except that a recovery that succeeded after the last critical line makes the
// event history (a warning), as the kernel reset the device and it runs again.
func eventFinding(ev *healthEvent, klog *kmsg.Log) engine.Finding {
	cite := klog.Cite
	first, last := ev.recs[0], ev.recs[len(ev.recs)-1]
	sev := report.Info
	var outcome *kevent.Event
	// A line count per step would mislead: one syndrome or one timeout prints two lines.
	type part struct{ label, detail string }
	var parts []*part
	byLabel := map[string]*part{}
	for i := range ev.members {
		m := &ev.members[i]
		if m.Sig.Outcome == kevent.OutcomeRecovered {
			sev = report.Warning
			outcome = m
		} else {
			if m.Sig.Outcome == kevent.OutcomeFailed {
				outcome = m
			}
			if m.Sig.Sev > sev {
				sev = m.Sig.Sev
			}
		}
		label := m.Sig.Step
		detail := m.Detail()
		k := label + "|" + detail
		if byLabel[k] != nil {
			continue
		}
		p := &part{label: label, detail: detail}
		byLabel[k] = p
		parts = append(parts, p)
	}
	var texts []string
	for _, p := range parts {
		t := p.label
		if p.detail != "" {
			t += " (" + p.detail + ")"
		}
		texts = append(texts, t)
	}
	headline := "firmware failed, no recovery logged"
	fix := ""
	switch {
	case outcome != nil && outcome.Sig.Outcome == kevent.OutcomeRecovered:
		headline = "firmware failed, then the kernel reset the device and it recovered"
		fix = outcome.Sig.Fix
	case outcome != nil:
		headline = "firmware failed and its recovery failed: unusable until reset"
		fix = outcome.Sig.Fix
	default:
		for _, m := range ev.members {
			if m.Sig.Sev == sev && m.Sig.Fix != "" {
				fix = m.Sig.Fix
				break
			}
		}
	}
	// The event's fault row is its gravest line's (the fatal sensor's, not an EQ syndrome's).
	fault, action, worst := ev.members[0].Sig.Fault, ev.members[0].Sig.Action, ev.members[0].Sig.Sev
	for _, m := range ev.members {
		if m.Sig.Sev > worst {
			fault, action, worst = m.Sig.Fault, m.Sig.Action, m.Sig.Sev
		}
	}
	f := engine.Finding{Finding: report.Finding{Severity: sev, Fault: fault, Action: action, Remediation: fix}}
	if ev.dev != "" {
		f.Subject = report.Subject{Kind: "device", Name: ev.dev, Device: ev.dev, PCI: ev.bdf}
	} else {
		f.Subject = report.Subject{Kind: "pci", Name: ev.bdf, PCI: ev.bdf}
	}
	f.Key = f.Subject.Name + "/" + ev.family + "-event"
	f.Summary = fmt.Sprintf("%s: %s (%d log lines %s): %s",
		f.Subject.Name, headline, len(ev.recs), klog.Between(first, last), strings.Join(texts, "; "))
	f.LogSpan = &engine.LogSpan{First: first.Since(), Last: last.Since()}
	f.Events = kevent.RecordKeys(ev.recs)
	var ids []string
	seen := map[string]bool{}
	for _, m := range ev.members {
		if !seen[m.Sig.ID] {
			seen[m.Sig.ID] = true
			ids = append(ids, m.Sig.ID)
		}
	}
	f.Evidence = []report.Evidence{
		report.Ev("signature", ev.family+"-event", cite),
		report.Ev("signatures", strings.Join(ids, ", "), cite),
		report.Ev("count", fmt.Sprint(len(ev.recs)), cite),
	}
	for i, r := range ev.recs {
		if i == maxEventLines {
			f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more line(s) up to %s", len(ev.recs)-i, klog.Quote(last)), cite))
			break
		}
		f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("log %d", i+1), klog.Quote(r), cite))
	}
	return f
}

// rdmaFramesFollow reports whether the call trace printed after an allocation failure runs
// through an RDMA driver: the allocation was the NIC's.
func rdmaFramesFollow(recs []kmsg.Record, i int) bool {
	for j := i + 1; j < len(recs) && j <= i+40; j++ {
		t := recs[j].Text
		if strings.Contains(t, "page allocation failure") {
			return false
		}
		if strings.Contains(t, "[mlx5_") || strings.Contains(t, "[ib_") || strings.Contains(t, "[rdma_") || strings.Contains(t, "[irdma") || strings.Contains(t, "[bnxt_re") {
			return true
		}
	}
	return false
}

func groupFinding(g *logGroup, recovered []kmsg.Record, klog *kmsg.Log, inv *inventory.Inventory) engine.Finding {
	cite := klog.Cite
	s := g.sig
	first, last := g.recs[0], g.recs[len(g.recs)-1]
	f := engine.Finding{Finding: report.Finding{Severity: s.Sev, Fault: s.Fault, Action: s.Action, Remediation: s.Fix}}
	switch {
	case g.dev != "":
		f.Subject = report.Subject{Kind: "device", Name: g.dev, Device: g.dev, PCI: g.bdf}
	case g.bdf != "":
		f.Subject = report.Subject{Kind: "pci", Name: g.bdf, PCI: g.bdf}
	case g.module != "":
		f.Subject = report.Subject{Kind: "module", Name: g.module}
	default:
		f.Subject = report.Subject{Kind: "host", Name: "kernel log"}
	}
	what := s.What
	if g.detail != "" {
		what += " (" + g.detail + ")"
	}
	if g.rdmaFrames {
		f.Severity = report.Warning
		what += ", in an RDMA driver's allocation"
	}
	// A fatal error the driver later recovered from is history, not the present state.
	if s.Step != "" && s.Outcome == "" && f.Severity == report.Critical {
		for _, r := range recovered {
			if r.Seq > last.Seq && (r.BDF() == g.bdf || g.bdf == "") {
				f.Severity = report.Warning
				what += ", then health recovery succeeded " + klog.At(r)
				rr := r
				g.recoveredAt = &rr
				break
			}
		}
	}
	// A probe or firmware start-up that failed before the device registered is history: the
	// device works now, but whatever made it fail may come back at the next reset.
	if s.HistoryIfRegistered && f.Severity > report.Info && g.bdf != "" && inInventory(inv, "", g.bdf) {
		f.Severity = report.Info
		what += "; the device registered afterwards and is present now"
	}
	// The message family, not the order of the groups, tells apart a subject's findings.
	f.Key = f.Subject.Name + "/" + s.ID
	if d := slug(g.detail); d != "" && d != f.Subject.Name {
		f.Key += "/" + d
	}
	where := f.Subject.Name
	switch {
	case len(g.recs) == 1:
		f.Summary = fmt.Sprintf("%s: %s, once, %s", where, what, klog.At(first))
	case s.Family != "":
		// The lines of a family are one event's, not repeats.
		f.Summary = fmt.Sprintf("%s: %s (%d log lines, %s)", where, what, len(g.recs), klog.Between(first, last))
	default:
		f.Summary = fmt.Sprintf("%s: %s, %d times %s", where, what, len(g.recs), klog.Between(first, last))
	}
	f.LogSpan = &engine.LogSpan{First: first.Since(), Last: last.Since()}
	f.Events = kevent.RecordKeys(g.recs)
	f.Evidence = []report.Evidence{
		report.Ev("signature", s.ID, cite),
		report.Ev("count", fmt.Sprint(len(g.recs)), cite),
		report.Ev("first", klog.Quote(first), cite),
	}
	switch {
	case s.Family != "" && len(g.recs) > 1:
		// A family's lines say together what happened (the queue, then the EQ the driver
		// polled): quote them, bounded as a health event's are.
		for i, r := range g.recs[1:] {
			if i+1 == maxEventLines {
				f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more line(s) up to %s", len(g.recs)-i-1, klog.Quote(last)), cite))
				break
			}
			f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("log %d", i+2), klog.Quote(r), cite))
		}
	case len(g.recs) > 1:
		f.Evidence = append(f.Evidence, report.Ev("last", klog.Quote(last), cite))
	}
	if g.recoveredAt != nil {
		f.Evidence = append(f.Evidence, report.Ev("recovered", klog.Quote(*g.recoveredAt), cite))
	}
	return f
}

// slug turns a signature's detail ("sensor 1 (PCI communication error...)", "ACCESS_REG: bad
// parameter") into a short ref component: lower case, words joined by '-', at most 32 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
		default:
			dash = true
		}
		if b.Len() >= 32 {
			break
		}
	}
	return b.String()
}

// layerFault is the fault row an unrecognised line of a driver of that layer belongs to: the
// row of the layer that judges the component's own health.
var layerFault = map[string]string{
	"pcie": "pcie-interface", "firmware": "firmware-health", "driver": "driver-module",
	"port": "port-link", "qp": "qp-context", "cq": "cq-eq",
}

// maxUnknownGroups bounds the findings of unrecognised lines, and maxUnknownQuoted the distinct
// texts each quotes: a driver repeating an unknown error thousands of times is one finding.
const (
	maxUnknownGroups = 12
	maxUnknownQuoted = 5
)

// unrecognisedFindings reports the errors of RDMA and PCIe-path drivers that no signature
// knows, grouped per driver and device: never dropped, as the table cannot know every line. A
// line the kernel logged at KERN_ERR or worse is a warning; one whose source gave no priority,
// taken as an error by its words, is information.
func unrecognisedFindings(evs []kevent.Event, klog *kmsg.Log, inv *inventory.Inventory) []engine.Finding {
	type group struct {
		driver, layer, dev, bdf string
		evs                     []kevent.Event
	}
	groups := map[string]*group{}
	var order []string
	for _, ev := range evs {
		drv, layer := "a driver", ev.Layer()
		if ev.Driver != nil {
			drv = ev.Driver.Name
		}
		key := drv + "|" + ev.Device + "|" + ev.PCI
		if groups[key] == nil && len(order) >= maxUnknownGroups {
			key = "|folded"
			if groups[key] == nil {
				groups[key] = &group{driver: "several drivers", layer: "driver"}
				order = append(order, key)
			}
		}
		g := groups[key]
		if g == nil {
			g = &group{driver: drv, layer: layer, dev: ev.Device, bdf: ev.PCI}
			groups[key] = g
			order = append(order, key)
		}
		g.evs = append(g.evs, ev)
	}
	var out []engine.Finding
	for _, key := range order {
		g := groups[key]
		f := engine.Finding{Finding: report.Finding{Severity: report.Info, Fault: layerFault[g.layer]}}
		for _, ev := range g.evs {
			if !ev.Record.NoLevel {
				f.Severity = report.Warning
			}
		}
		switch {
		case g.dev != "":
			f.Subject = report.Subject{Kind: "device", Name: g.dev, Device: g.dev, PCI: g.bdf}
		case g.bdf != "":
			f.Subject = report.Subject{Kind: "pci", Name: g.bdf, PCI: g.bdf}
		default:
			f.Subject = checks.KernelLogSubject
		}
		f.Key = f.Subject.Name + "/unrecognised/" + slug(g.driver)
		first, last := g.evs[0].Record, g.evs[len(g.evs)-1].Record
		when := "once, " + klog.At(first)
		if len(g.evs) > 1 {
			when = fmt.Sprintf("%d times %s", len(g.evs), klog.Between(first, last))
		}
		f.Summary = fmt.Sprintf("%s: %s logged an error no signature of rdmadiag knows, %s", f.Subject.Name, g.driver, when)
		f.Remediation = "Read the quoted lines and the ones around them (dmesg): the driver reported an error this tool does not classify; " +
			"search the text in the driver's source or its vendor's knowledge base, and report it to rdmadiag so that it gets a signature."
		f.LogSpan = &engine.LogSpan{First: first.Since(), Last: last.Since()}
		for _, ev := range g.evs {
			f.Events = append(f.Events, ev.Key())
		}
		f.Evidence = []report.Evidence{report.Ev("signature", "unrecognised", klog.Cite), report.Ev("count", fmt.Sprint(len(g.evs)), klog.Cite)}
		seen := map[string]bool{}
		for _, ev := range g.evs {
			t := strings.TrimSpace(ev.Record.Text)
			if seen[t] {
				continue
			}
			if len(seen) == maxUnknownQuoted {
				f.Evidence = append(f.Evidence, report.Ev("more", "more distinct lines, not quoted", klog.Cite))
				break
			}
			seen[t] = true
			f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("log %d", len(seen)), klog.Quote(ev.Record), klog.Cite))
		}
		out = append(out, f)
	}
	return out
}

// errorLevel says whether a printk level calls the line an error or a warning: benign noise at
// such a level (ACCESS_REG failures on a restricted function) is reported, as information, so
// that an operator reading it in dmesg learns it is noise.
func errorLevel(level string) bool {
	switch level {
	case "emerg", "alert", "crit", "err", "warn":
		return true
	}
	return false
}
