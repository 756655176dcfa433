// Package engine builds a report from the checks' findings: it fills the fault rows (the fault
// table, faults.json), links consequences to their causes (the table's rows and observations,
// and the events findings share), orders everything as the troubleshooting flow does, and
// computes the verdict and its summary line.
package engine

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

func countChecks(fs []report.Finding, notRun int) *report.CheckCounts {
	order, outcome := report.CheckOutcomes(fs)
	c := &report.CheckCounts{Run: len(order), NotRun: notRun}
	for _, id := range order {
		switch outcome[id] {
		case report.Critical:
			c.Critical++
		case report.Warning:
			c.Warning++
		case report.Unknown:
			c.Unknown++
		case report.Skipped:
			c.Skipped++
		default:
			c.Passed++
		}
	}
	return c
}

// BuildOptions are the run's circumstances that change the verdict, not the findings.
type BuildOptions struct {
	// Strict counts a skip held back by a limit (no root, no kernel log in a tree) as unknown.
	Strict bool
	// Interrupted: the run was stopped (Ctrl-C, SIGTERM); the verdict says so and exits 130.
	Interrupted bool
	NotRun      []report.NotRun
	NotSelected int
}

// Build assembles a report: it fills the fault rows, links consequences to their causes, sorts
// the findings in troubleshooting order and computes the verdict.
func Build(findings []Finding, faults *FaultTable, tool report.Tool, host report.HostInfo) *report.Report {
	return BuildWith(findings, faults, tool, host, BuildOptions{})
}

// BuildWith is Build for a run with options that change the verdict.
func BuildWith(findings []Finding, faults *FaultTable, tool report.Tool, host report.HostInfo, o BuildOptions) *report.Report {
	r, _ := BuildLinked(findings, faults, tool, host, o)
	return r
}

// BuildLinked is BuildWith that also returns the findings as the engine linked them, in the
// report's order (linked[i] is r.Findings[i] with what the document leaves out), for a caller
// that checks what the links were made from.
func BuildLinked(findings []Finding, faults *FaultTable, tool report.Tool, host report.HostInfo, o BuildOptions) (r *report.Report, linked []Finding) {
	fs := make([]Finding, len(findings))
	copy(fs, findings)
	for i := range fs {
		f := &fs[i]
		if o.Strict && f.Severity == report.Skipped && f.Limit != nil {
			f.Severity = report.Unknown
		}
		if f.Layer == "" {
			f.Layer = report.LayerOf(f.CheckID)
		}
		if f.Ref == "" {
			f.Ref = ref(f)
		}
		// Links are the engine's: checks state what they saw (Observation, Events), the fault
		// table and the shared events link.
		f.ExplainedBy = nil
		f.Evidence = slices.Clip(f.Evidence)
		// The action follows the severity the report gives (--strict's unknown included).
		f.Action = faults.ActionOf(&f.Finding)
	}
	sortFindings(fs)
	link(fs, faults)
	linkEvents(fs, faults)

	// The document carries what the engine made of the findings, not what it read to link them.
	doc := make([]report.Finding, len(fs))
	for i := range fs {
		doc[i] = fs[i].Finding
	}
	r = &report.Report{SchemaVersion: report.SchemaVersion, Tool: tool, Host: host, Findings: doc}
	if r.Host.Devices == nil {
		r.Host.Devices = []string{}
	}
	used := map[string]bool{}
	for _, f := range fs {
		used[f.Fault] = true
	}
	// A row's log signatures are those of the kernel log signature table (internal/kevent)
	// that this run's findings of the row were drawn from: the table is the one list, so the
	// fault table keeps none of its own.
	sigs := map[string][]string{}
	for _, f := range fs {
		for _, e := range f.Evidence {
			if e.Name == "signature" && !slices.Contains(sigs[f.Fault], e.Observed) {
				sigs[f.Fault] = append(sigs[f.Fault], e.Observed)
			}
		}
	}
	r.Faults = []report.FaultRow{}
	for _, row := range faults.Rows {
		if used[row.ID] {
			row.LogSignatures = append([]string{}, sigs[row.ID]...)
			sort.Strings(row.LogSignatures)
			r.Faults = append(r.Faults, row)
		}
	}
	r.Summary = summarize(doc, len(r.Host.Devices), o)
	return r, fs
}

// ref is a finding's ref: its check id and its subject's identity (Key, else the subject's name).
func ref(f *Finding) string {
	id := f.Key
	if id == "" {
		id = f.Subject.Name
	}
	return report.RefOf(f.CheckID, id)
}

func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := &fs[i], &fs[j]
		if ra, rb := report.LayerRank(a.Layer), report.LayerRank(b.Layer); ra != rb {
			return ra < rb
		}
		if a.CheckID != b.CheckID {
			return a.CheckID < b.CheckID
		}
		if a.Subject.Name != b.Subject.Name {
			return report.NaturalLess(a.Subject.Name, b.Subject.Name)
		}
		return a.Summary < b.Summary
	})
	disambiguate(fs)
}

// disambiguate gives findings that share a ref distinct ones derived from their content, never
// from their order, so that a ref names the same finding in every run that produces it. Checks
// set Key so that this is rare (two processes of one command with the same problem on one
// port); the suffix is then a hash of the summary with its numbers masked, so that values that
// change across restarts (PIDs, counts, sizes) do not change it, and only findings that differ
// in nothing but such values fall back to a hash of their full content.
func disambiguate(fs []Finding) {
	byRef := map[string][]int{}
	for i := range fs {
		byRef[fs[i].Ref] = append(byRef[fs[i].Ref], i)
	}
	for ref, idx := range byRef {
		if len(idx) < 2 {
			continue
		}
		masked := map[string]int{}
		for _, i := range idx {
			masked[contentHash(fs[i].Finding, true)]++
		}
		seen := map[string]int{}
		for _, i := range idx {
			h := contentHash(fs[i].Finding, true)
			if masked[h] > 1 {
				h = contentHash(fs[i].Finding, false)
			}
			n := seen[h]
			seen[h] = n + 1
			fs[i].Ref = ref + "~" + h
			if n > 0 {
				// Identical findings: nothing in them tells them apart.
				fs[i].Ref += fmt.Sprintf("-%d", n+1)
			}
		}
	}
}

// contentHash is a short hash of what a finding says; mask replaces every run of digits so that
// PIDs, counts and sizes do not change it.
func contentHash(f report.Finding, mask bool) string {
	h := fnv.New32a()
	text := f.Severity.String() + "\x00" + f.Fault + "\x00" + f.Summary
	if !mask {
		text = f.Subject.Name + "\x00" + text
		for _, e := range f.Evidence {
			text += "\x00" + e.Name + "=" + e.Observed
		}
	} else {
		text = digitRuns.ReplaceAllString(text, "N")
	}
	h.Write([]byte(text))
	return fmt.Sprintf("%08x", h.Sum32())
}

var digitRuns = regexp.MustCompile(`[0-9]+`)

// link marks every problem finding that a lower-or-equal layer problem explains. A cause must be a
// warning or critical finding (an unknown explains nothing), on the same device or host-wide,
// whose fault row lists the effect. Probes are evidence, never causes.
func link(fs []Finding, faults *FaultTable) {
	for i := range fs {
		e := &fs[i]
		// A skipped probe was usually skipped because of the cause (port down, no uverbs); other
		// checks skip for their own reasons (not applicable, not declared), which no lower-layer
		// problem explains.
		// An unknown finding could not be judged because something could not be read: that is its
		// own cause, and no host fault explains it.
		switch {
		case e.Severity == report.Warning || e.Severity == report.Critical:
		case e.Severity == report.Skipped && e.Probe:
		default:
			continue
		}
		for j := range fs {
			c := &fs[j]
			if i == j || !(c.Severity == report.Warning || c.Severity == report.Critical) {
				continue
			}
			if c.Probe {
				continue
			}
			if c.Subject.Device != "" && c.Subject.Device != e.Subject.Device {
				continue
			}
			if c.Fault == e.Fault && c.CheckID == e.CheckID {
				continue
			}
			ev, ok := logLink(c, e)
			if !ok {
				continue
			}
			if faults.canExplain(c, e) && !slices.Contains(e.ExplainedBy, c.Ref) {
				e.ExplainedBy = append(e.ExplainedBy, c.Ref)
				if ev != nil {
					e.Evidence = append(e.Evidence, *ev)
				}
			}
		}
	}
}

// linkEvents makes one root cause of the problem findings drawn from one event (Finding.Events):
// a PCIe link shared by two functions, an AER error the root port counts and the function
// reports, a kernel log record two checks read. The first of them in eventOrder is the cause of
// the others, which say so in their evidence; no fault row is needed, since one event is one
// fault. A pair the fault table already links, either way, is left as it is, so that the two
// rules never make findings explain each other.
func linkEvents(fs []Finding, faults *FaultTable) {
	holders := map[string][]int{}
	var events []string
	for i := range fs {
		f := &fs[i]
		if f.Probe || !(f.Severity == report.Warning || f.Severity == report.Critical) {
			continue
		}
		for _, ev := range f.Events {
			hs := holders[ev]
			if len(hs) > 0 && hs[len(hs)-1] == i {
				continue // named twice by one finding
			}
			if hs == nil {
				events = append(events, ev)
			}
			holders[ev] = append(hs, i)
		}
	}
	for _, ev := range events {
		hs := holders[ev]
		if len(hs) < 2 {
			continue
		}
		best := hs[0]
		for _, i := range hs[1:] {
			if eventOrder(faults, &fs[i], &fs[best]) {
				best = i
			}
		}
		c := &fs[best]
		for _, i := range hs {
			e := &fs[i]
			if i == best || slices.Contains(e.ExplainedBy, c.Ref) || slices.Contains(c.ExplainedBy, e.Ref) {
				continue
			}
			e.ExplainedBy = append(e.ExplainedBy, c.Ref)
			e.Evidence = append(e.Evidence, report.Evidence{Name: "same event as its cause",
				Observed: fmt.Sprintf("%s was drawn from %s too", c.Ref, ev),
				Source:   "link rule: findings drawn from one event have one root cause"})
		}
	}
}

// eventOrder reports whether a comes before b as the cause of an event both were drawn from: the
// lower layer, then the earlier fault row, then the graver, then the subject, the check and the
// ref, so that the choice never depends on the order checks reported in.
func eventOrder(faults *FaultTable, a, b *Finding) bool {
	if ra, rb := report.LayerRank(a.Layer), report.LayerRank(b.Layer); ra != rb {
		return ra < rb
	}
	if ra, rb := faults.rank(a.Fault), faults.rank(b.Fault); ra != rb {
		return ra < rb
	}
	if a.Severity != b.Severity {
		return a.Severity > b.Severity
	}
	if a.Subject.Name != b.Subject.Name {
		return report.NaturalLess(a.Subject.Name, b.Subject.Name)
	}
	if a.CheckID != b.CheckID {
		return a.CheckID < b.CheckID
	}
	return a.Ref < b.Ref
}

// LogLinkWindow is how far apart a cause drawn from the kernel log and a consequence drawn from
// it too may have been logged and still be linked. A fault's consequences follow it within its
// own recovery: the slowest steps of the mlx5 flow are a command timeout (60 s) and waiting for
// the firmware after a reset (120 s; drivers/net/ethernet/mellanox/mlx5/core/lib/tout.c), and
// the lines of one health event come at most five minutes apart. Ten minutes is twice that:
// what the device logs while it is still failing or recovering is linked, a CQ overrun an hour
// after a page-allocation failure is not, since the device has run in between.
const LogLinkWindow = 10 * time.Minute

// logLink decides whether c, when drawn from the kernel log, may explain e: only on the same
// device (lines that name no RDMA device, such as a module's load failure or a page-allocation
// failure, explain only host-wide findings, never one device's), and, when e is drawn from the
// log too, only within LogLinkWindow. A present state (a port down now) may have lasted since the
// cause, whenever that was, so only the device is required of it. ev is the evidence the link
// adds to e; nil when c is not from the kernel log (no condition applies).
func logLink(c, e *Finding) (ev *report.Evidence, ok bool) {
	if c.LogSpan == nil {
		return nil, true
	}
	if c.Subject.Device != e.Subject.Device {
		return nil, false
	}
	where := "on " + c.Subject.Device
	if c.Subject.Device == "" {
		where = "for no RDMA device in particular"
	}
	rule := fmt.Sprintf("same device; kernel log lines within %s of each other", LogLinkWindow)
	if e.LogSpan == nil {
		if c.Subject.Device == "" {
			return nil, true // host-wide cause and state: nothing to state beyond the fault table
		}
		return &report.Evidence{Name: "cause in the kernel log", Source: "link rule: " + rule,
			Observed: fmt.Sprintf("%s, logged %s %s after boot; the state judged here may have lasted since",
				c.Ref, where, seconds(c.LogSpan.First))}, true
	}
	gap := spanGap(c.LogSpan, e.LogSpan)
	if gap > LogLinkWindow {
		return nil, false
	}
	return &report.Evidence{Name: "cause in the kernel log", Source: "link rule: " + rule,
		Observed: fmt.Sprintf("%s, logged %s %s after boot, %s from this finding's lines", c.Ref, where,
			seconds(c.LogSpan.First), gap.Round(time.Millisecond))}, true
}

// spanGap is the time between two spans of log lines, 0 when they overlap.
func spanGap(a, b *LogSpan) time.Duration {
	switch {
	case b.First > a.Last:
		return b.First - a.Last
	case a.First > b.Last:
		return a.First - b.Last
	}
	return 0
}

// seconds formats a time since boot as dmesg does.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) + "s"
}

func summarize(fs []report.Finding, devices int, o BuildOptions) report.Summary {
	s := report.Summary{Devices: devices, Counts: map[string]int{}, RootCauses: []string{}, NotRun: o.NotRun, NotSelected: o.NotSelected, Strict: o.Strict}
	for _, v := range report.Severities {
		s.Counts[v.String()] = 0
	}
	worst := report.OK
	for _, f := range fs {
		s.Counts[f.Severity.String()]++
		if f.Severity > worst {
			worst = f.Severity
		}
		if f.Severity.Problem() && len(f.ExplainedBy) == 0 {
			s.RootCauses = append(s.RootCauses, f.Ref)
		}
	}
	judged := len(fs) - s.Counts["skipped"]
	switch {
	case o.Interrupted:
		// A partial run proves nothing either way; scripts see the shell's convention.
		s.Verdict, s.ExitCode = "interrupted", report.ExitInterrupted
	case s.Counts["critical"] > 0:
		s.Verdict, s.ExitCode = "critical", report.ExitCritical
	case s.Counts["unknown"] > 0:
		// Something could not be checked: the host cannot be called healthy. Unknown outranks
		// warning so that a script never keeps a node whose state it does not know.
		s.Verdict, s.ExitCode = "unknown", report.ExitUnknown
	case s.Counts["warning"] > 0:
		s.Verdict, s.ExitCode = "warning", report.ExitWarning
	case judged == 0:
		// Nothing was judged (every selected check skipped or not run): that is not health.
		s.Verdict, s.ExitCode = "unknown", report.ExitUnknown
	default:
		s.Verdict, s.ExitCode = "healthy", report.ExitHealthy
	}
	s.Checks = countChecks(fs, len(o.NotRun))
	s.Line = summaryLine(s, fs)
	return s
}

func summaryLine(s report.Summary, fs []report.Finding) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, verdict %s", words.Plural(s.Devices, "RDMA device"), strings.ToUpper(s.Verdict))
	judged := len(fs) - s.Counts["skipped"]
	switch {
	case s.Verdict == "interrupted":
		b.WriteString(": the run was stopped before every check finished; the findings below are partial")
	case judged == 0 && s.Verdict == "unknown":
		b.WriteString(": nothing was judged")
	}
	b.WriteString(": " + words.ChecksText(s, fs))
	// Every root cause, gravest first, is what an operator should read first.
	if roots := report.RootCauses(fs); len(roots) > 0 && s.Verdict != "healthy" {
		if len(roots) == 1 {
			b.WriteString("; root cause: " + rootText(roots[0], fs))
		} else {
			fmt.Fprintf(&b, "; %d root causes:", len(roots))
			for i, f := range roots {
				if i > 0 {
					b.WriteByte(';')
				}
				fmt.Fprintf(&b, " (%d) %s", i+1, rootText(f, fs))
			}
		}
	}
	return b.String()
}

// rootText names a root cause with its subject and the first clause of its summary, and says how
// many findings it explains and what to do about it.
func rootText(f *report.Finding, fs []report.Finding) string {
	t := words.Short(f)
	var notes []string
	if n := words.Consequences(f, fs); n > 0 {
		notes = append(notes, "explains "+words.Plural(n, "other finding"))
	}
	if f.Action != "" {
		notes = append(notes, "action "+string(f.Action))
	}
	if len(notes) > 0 {
		t += " (" + strings.Join(notes, "; ") + ")"
	}
	return t
}
