package render

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// box is the set of characters a table is drawn with.
type box struct{ h, v, tl, tm, tr, ml, mm, mr, bl, bm, br string }

var (
	boxUnicode = box{"─", "│", "┌", "┬", "┐", "├", "┼", "┤", "└", "┴", "┘"}
	boxASCII   = box{"-", "|", "+", "+", "+", "+", "+", "+", "+", "+", "+"}
)

// Column limits of the table, in terminal columns. The finding column gets what the terminal
// leaves, but no more than maxFinding (longer lines are hard to read) and, on a narrow terminal,
// no less than minFinding while the first column can give way down to minFirst.
const (
	maxFirst   = 34
	minFirst   = 18
	minFinding = 38
	maxFinding = 120
	// tableFrame is what the borders and the padding of three columns take: "│ a │ b │ c │".
	tableFrame = 10
)

// textOut collects the table view, every line wrapped to the width and made terminal-safe.
type textOut struct {
	b     bytes.Buffer
	width int
	ascii bool
	color bool
	// faultsSaid holds the fault rows whose text details has written.
	faultsSaid map[string]bool
}

// lines wraps text to the width, the first line after the prefix first, the others after rest.
func (t *textOut) lines(first, rest, text string) []string {
	w := max(t.width-max(textWidth(first), textWidth(rest)), 16)
	ls := wrap(termSafe(text, t.ascii), w)
	for i := range ls {
		p := rest
		if i == 0 {
			p = first
		}
		ls[i] = strings.TrimRight(p+ls[i], " ")
	}
	return ls
}

// para writes text as lines (see lines).
func (t *textOut) para(first, rest, text string) {
	for _, l := range t.lines(first, rest, text) {
		t.b.WriteString(l)
		t.b.WriteByte('\n')
	}
}

// headLines is the height of the screen the verdict and the root causes must fit in: the classic
// 80x24 terminal, so that `rdmadiag check | less` (or a ticket's first screen) answers the
// question before anything else.
const headLines = 24

// verdictMeaning says what each verdict's exit code means, as the exit code contract does.
var verdictMeaning = map[string]string{
	"healthy":     "nothing needs attention",
	"warning":     "something needs attention, nothing is broken",
	"critical":    "the host is unfit for RDMA traffic",
	"unknown":     "could not check; the host is not known to be healthy",
	"interrupted": "the run was stopped before every check finished; the findings are partial",
}

// RenderTable writes the human view, in the order an operator reads it:
//
//   - the verdict, what its exit code means and the counts, then every root cause with its
//     subject, its finding and its fix on one line each, all within the first headLines lines;
//   - the host the report is about;
//   - with All or Verbose, the table of every finding in troubleshooting order;
//   - the problems (warning, critical, unknown), root causes first, each once with its evidence
//     and fix, its fault row's text said once per row;
//   - the passing, informational and skipped findings counted per layer (each listed with All);
//   - what a limit kept from being judged, and the summary line.
//
// Every line fits in o.Width columns (DefaultWidth when 0).
func RenderTable(w io.Writer, r *report.Report, o RenderOptions) error {
	t := &textOut{width: o.Width, ascii: o.ASCII, color: o.Color}
	if t.width <= 0 {
		t.width = DefaultWidth
	}
	t.width = max(t.width, minWidth)
	all := o.All || o.Verbose

	t.head(r)
	t.b.WriteString("\n")
	t.host(r)

	var shown []*report.Finding
	for i := range r.Findings {
		if !o.Problems || r.Findings[i].Severity.Problem() {
			shown = append(shown, &r.Findings[i])
		}
	}
	hidden := len(r.Findings) - len(shown)
	if all && len(shown) > 0 {
		t.b.WriteString("\n")
		t.table(shown)
	}

	t.problems(r)
	if o.Verbose && !o.Problems {
		var rest []report.Finding
		for _, f := range r.Findings {
			if !f.Severity.Problem() {
				rest = append(rest, f)
			}
		}
		t.details(r, rest, "Passing, informational and skipped findings")
	}
	switch {
	case o.Problems && hidden > 0:
		t.b.WriteString("\n")
		none := ""
		if len(shown) == 0 {
			none = "no warning, critical or unknown finding; "
		}
		t.para("", "", fmt.Sprintf("%s%d passing, informational or skipped finding(s) not shown (--problems)", none, hidden))
	case !all && !o.Problems:
		t.byLayer(r)
	}
	t.limits(r, all)
	t.b.WriteString("\n")
	t.para("", "  ", r.Summary.Line)
	_, err := w.Write(t.b.Bytes())
	return err
}

// head writes the verdict, what it means, the counts, and each root cause in three lines of one
// line each (subject and check, finding, fix), as many as fit in headLines lines; the rest are
// counted and found under Problems.
func (t *textOut) head(r *report.Report) {
	s := r.Summary
	v := strings.ToUpper(s.Verdict)
	line := fmt.Sprintf("VERDICT %s (exit %d)", v, s.ExitCode)
	if m := verdictMeaning[s.Verdict]; m != "" {
		line += ": " + m
	}
	ls := t.lines("", "  ", line)
	ls[0] = strings.Replace(ls[0], v, paint(v, verdictSeverity(s.Verdict), t.color), 1)
	used := len(ls)
	t.b.WriteString(strings.Join(ls, "\n") + "\n")
	counts := words.Plural(s.Devices, "RDMA device") + "; " + words.ChecksText(s, r.Findings)
	ls = t.lines("", "  ", counts)
	used += len(ls)
	t.b.WriteString(strings.Join(ls, "\n") + "\n")
	if s.Verdict == "healthy" {
		return
	}
	roots := r.RootCauses()
	if len(roots) == 0 {
		return
	}
	title := "Root cause:"
	if len(roots) > 1 {
		title = fmt.Sprintf("%d root causes, gravest first:", len(roots))
	}
	t.b.WriteString("\n" + title + "\n")
	used += 2
	for i, f := range roots {
		block := t.rootLines(i+1, f, r.Findings)
		rest := len(roots) - i - 1
		reserve := 0
		if rest > 0 {
			reserve = 1
		}
		if used+len(block)+reserve > headLines {
			t.para("  ", "  ", fmt.Sprintf("+%d more, under Problems below", len(roots)-i))
			return
		}
		used += len(block)
		for _, l := range block {
			t.b.WriteString(l + "\n")
		}
	}
}

// rootLines are a root cause's lines in the head, each cut to the width: the number, severity,
// subject and check (and how many findings it explains) and its action, which the cut leaves
// whole, the first clause of its summary, and its fix.
func (t *textOut) rootLines(n int, f *report.Finding, fs []report.Finding) []string {
	sev := strings.ToUpper(f.Severity.String())
	num := fmt.Sprintf("%2d. ", n)
	first := f.Subject.String() + " (" + f.CheckID + ")"
	if c := words.Consequences(f, fs); c > 0 {
		first += ", explains " + words.Plural(c, "other finding")
	}
	indent := strings.Repeat(" ", len(num)+2)
	text := withoutSubject(f)
	if i := strings.Index(text, "; "); i > 0 {
		text = text[:i]
	}
	act := ""
	if f.Action != "" {
		act = " -> " + string(f.Action)
	}
	out := []string{
		"  " + num + paint(sev, f.Severity, t.color) + " " + t.cut(first, t.width-2-len(num)-len(sev)-1-len(act)) + act,
		indent + t.cut(text, t.width-len(indent)),
	}
	if f.Remediation != "" {
		out = append(out, indent+"fix: "+t.cut(f.Remediation, t.width-len(indent)-5))
	}
	return out
}

// cut makes s terminal-safe and at most width columns, marking a cut with "...".
func (t *textOut) cut(s string, width int) string {
	s = termSafe(s, t.ascii)
	if textWidth(s) <= width {
		return s
	}
	const mark = "..."
	var b strings.Builder
	w := 0
	for _, r := range s {
		rw := cells.RuneWidth(r)
		if w+rw > width-len(mark) {
			break
		}
		b.WriteRune(r)
		w += rw
	}
	return strings.TrimRight(b.String(), " ,;:") + mark
}

// verdictSeverity is the colour of a verdict.
func verdictSeverity(v string) report.Severity {
	switch v {
	case "healthy":
		return report.OK
	case "warning":
		return report.Warning
	case "critical":
		return report.Critical
	}
	return report.Unknown
}

// host says what the report is about: the tool, the source, the host, the devices.
func (t *textOut) host(r *report.Report) {
	head := fmt.Sprintf("rdmadiag %s on %s", r.Tool.Version, r.Host.Source)
	if r.Host.Hostname != "" {
		head += " (" + r.Host.Hostname
		if r.Host.KernelRelease != "" {
			head += ", kernel " + r.Host.KernelRelease
		}
		head += ")"
	}
	t.para("", "  ", head)
	if r.Host.Recorded != "" {
		t.para("", "  ", "snapshot recorded "+r.Host.Recorded)
	}
	if len(r.Host.Devices) > 0 {
		t.para("", "  ", "devices: "+strings.Join(r.Host.Devices, ", "))
	}
	for _, x := range r.Host.Excluded {
		t.para("", "  ", "excluded: "+x.Device+pciSuffix(x.PCI)+" by "+x.By)
	}
	if r.Host.KernelLog != "" {
		t.para("", "  ", "kernel log: "+r.Host.KernelLog)
	}
	for _, u := range r.Host.Unreadable {
		t.para("", "  ", "not readable: "+u)
	}
}

// problemOrder is the problems in the order they are detailed: root causes in RootCauses'
// order, then the consequences in troubleshooting order.
func problemOrder(r *report.Report) []report.Finding {
	var out []report.Finding
	for _, f := range r.RootCauses() {
		out = append(out, *f)
	}
	for _, f := range r.Findings {
		if f.Severity.Problem() && len(f.ExplainedBy) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// problems details every problem once.
func (t *textOut) problems(r *report.Report) {
	fs := problemOrder(r)
	if len(fs) == 0 {
		return
	}
	t.details(r, fs, fmt.Sprintf("Problems: %s, root causes first", words.Plural(len(fs), "finding")))
}

// details writes each finding's summary, fault row, evidence, fix, cause and limit. A fault row's
// text is the same for every finding of the row: it is written in full once, and named after.
func (t *textOut) details(r *report.Report, fs []report.Finding, title string) {
	if len(fs) == 0 {
		return
	}
	t.b.WriteString("\n")
	t.para("", "  ", title)
	const field = "            " // under the text of "  evidence: "
	for _, f := range fs {
		t.b.WriteString("\n")
		sev := strings.ToUpper(f.Severity.String())
		ls := t.lines("", "  ", sev+" "+f.CheckID+": "+withSubject(&f))
		ls[0] = paint(sev, f.Severity, t.color) + ls[0][len(sev):]
		t.b.WriteString(strings.Join(ls, "\n") + "\n")
		if row, ok := faultRow(r, f.Fault); ok && f.Severity.Problem() {
			if t.faultsSaid[row.ID] {
				t.para("  fault:    ", field, row.Component+" (as above)")
			} else {
				t.para("  fault:    ", field, row.Component+": "+row.Symptom)
				if t.faultsSaid == nil {
					t.faultsSaid = map[string]bool{}
				}
				t.faultsSaid[row.ID] = true
			}
		}
		for _, e := range f.Evidence {
			line := fmt.Sprintf("%s = %s", e.Name, e.Observed)
			if e.Expected != "" {
				line += fmt.Sprintf(" (expected %s)", e.Expected)
			}
			if e.Source != "" {
				line += fmt.Sprintf("  [%s]", e.Source)
			}
			t.para("  evidence: ", field, line)
		}
		if f.Remediation != "" {
			t.para("  fix:      ", field, f.Remediation)
		}
		if f.Action != "" && f.Action != report.ActionNone {
			t.para("  action:   ", field, string(f.Action))
		}
		if len(f.ExplainedBy) > 0 {
			t.para("  cause:    ", field, strings.Join(f.ExplainedBy, ", "))
		}
		if f.Limit != nil {
			t.para("  lift:     ", field, f.Limit.Lift)
		}
	}
}

// byLayer counts the findings that are not problems per layer, in troubleshooting order, one
// line each: what --all lists row by row.
func (t *textOut) byLayer(r *report.Report) {
	var layers []string
	counts := map[string]map[report.Severity]int{}
	for _, f := range r.Findings {
		if f.Severity.Problem() {
			continue
		}
		l := f.Layer
		if l == "" {
			l = report.LayerOf(f.CheckID)
		}
		if counts[l] == nil {
			counts[l] = map[report.Severity]int{}
			layers = append(layers, l)
		}
		counts[l][f.Severity]++
	}
	if len(layers) == 0 {
		return
	}
	t.b.WriteString("\n")
	t.para("", "  ", "Passing, informational and skipped findings by layer (--all lists each)")
	wl := 0
	for _, l := range layers {
		wl = max(wl, textWidth(termSafe(l, t.ascii)))
	}
	for _, l := range layers {
		var parts []string
		for _, sev := range []report.Severity{report.OK, report.Info, report.Skipped} {
			if n := counts[l][sev]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, sev))
			}
		}
		name := padRight(termSafe(l, t.ascii)+":", wl+1)
		t.para("  "+name+" ", strings.Repeat(" ", wl+4), strings.Join(parts, ", "))
	}
}

// table draws the findings in three columns: the check id as a group row, then each subject
// indented under it with its status and its finding. The check id carries the layer, and the
// finding leaves out the subject when it starts by naming it, so nothing is said twice.
func (t *textOut) table(fs []*report.Finding) {
	bx := boxUnicode
	if t.ascii {
		bx = boxASCII
	}
	const h1, h2, h3 = "CHECK / SUBJECT", "STATUS", "FINDING"
	type row struct {
		first, finding []string
		status         string
		sev            report.Severity
	}
	findingText := func(f *report.Finding) string {
		s := withoutSubject(f)
		if len(f.ExplainedBy) > 0 && f.Severity.Problem() {
			s += " (consequence)"
		}
		return termSafe(s, t.ascii)
	}
	statusW, firstN, findN := len(h2), len(h1), len(h3)
	for _, f := range fs {
		statusW = max(statusW, len(f.Severity.String()))
		firstN = max(firstN, textWidth(termSafe(f.CheckID, t.ascii)), 2+textWidth(termSafe(f.Subject.String(), t.ascii)))
		findN = max(findN, textWidth(findingText(f)))
	}
	first, find := min(firstN, maxFirst), min(findN, maxFinding)
	if over := tableFrame + statusW + first + find - t.width; over > 0 {
		d := min(over, max(find-minFinding, 0))
		find, over = find-d, over-d
		d = min(over, max(first-minFirst, 0))
		first, over = first-d, over-d
		find = max(find-over, 8)
	}

	var rows []row
	prev := ""
	for _, f := range fs {
		if f.CheckID != prev {
			rows = append(rows, row{first: wrap(termSafe(f.CheckID, t.ascii), first)})
			prev = f.CheckID
		}
		sub := wrap(termSafe(f.Subject.String(), t.ascii), first-2)
		for i := range sub {
			sub[i] = "  " + sub[i]
		}
		rows = append(rows, row{first: sub, status: strings.ToUpper(f.Severity.String()), sev: f.Severity,
			finding: wrap(findingText(f), find)})
	}

	rule := func(l, m, r string) {
		t.b.WriteString(l + strings.Repeat(bx.h, first+2) + m + strings.Repeat(bx.h, statusW+2) + m + strings.Repeat(bx.h, find+2) + r + "\n")
	}
	line := func(a, s string, sev report.Severity, c string) {
		status := padRight(s, statusW)
		if s != "" {
			status = paint(s, sev, t.color) + strings.Repeat(" ", statusW-len(s))
		}
		t.b.WriteString(bx.v + " " + padRight(a, first) + " " + bx.v + " " + status + " " + bx.v + " " + padRight(c, find) + " " + bx.v + "\n")
	}
	rule(bx.tl, bx.tm, bx.tr)
	line(h1, h2, report.OK, h3)
	rule(bx.ml, bx.mm, bx.mr)
	for _, rw := range rows {
		for i := range max(len(rw.first), len(rw.finding), 1) {
			a, s, c := "", "", ""
			if i < len(rw.first) {
				a = rw.first[i]
			}
			if i == 0 {
				s = rw.status
			}
			if i < len(rw.finding) {
				c = rw.finding[i]
			}
			line(a, s, rw.sev, c)
		}
	}
	rule(bx.bl, bx.bm, bx.br)
}

// limits says, once per way of lifting it, what a limit kept from being judged: the skipped
// findings and the checks that did not run. Probes that did not run (on a snapshot, with
// --no-probe) are one line per limit unless all asks for their ids.
func (t *textOut) limits(r *report.Report, all bool) {
	var lifts []string
	what := map[string][]string{}
	add := func(lift, item string) {
		if _, ok := what[lift]; !ok {
			lifts = append(lifts, lift)
		}
		if !slices.Contains(what[lift], item) {
			what[lift] = append(what[lift], item)
		}
	}
	for _, f := range r.Findings {
		if f.Limit != nil && f.Severity == report.Skipped {
			add(f.Limit.Lift, f.CheckID)
		}
	}
	var notRun []report.NotRun
	for _, n := range r.Summary.NotRun {
		if all {
			add(n.Limit.Lift, n.CheckID+" (not run)")
		} else {
			notRun = append(notRun, n)
		}
	}
	if len(lifts) > 0 {
		t.b.WriteString("\nNot judged because of a limit\n")
		for _, l := range lifts {
			t.para("  ", "  ", strings.Join(what[l], ", "))
			t.para("    to judge them: ", "                   ", l)
		}
	}
	// One line per way of lifting: "5 probes not run (live host only): run rdmadiag check on
	// the host itself"; the lift's explanation in parentheses is in --all and the JSON.
	var order []string
	byLift := map[string][]report.NotRun{}
	for _, n := range notRun {
		if _, ok := byLift[n.Limit.Lift]; !ok {
			order = append(order, n.Limit.Lift)
		}
		byLift[n.Limit.Lift] = append(byLift[n.Limit.Lift], n)
	}
	if len(order) > 0 && len(lifts) == 0 {
		t.b.WriteString("\n")
	}
	for _, l := range order {
		ns := byLift[l]
		lift := l
		if i := strings.Index(lift, " ("); i > 0 {
			lift = lift[:i]
		}
		t.para("", "  ", fmt.Sprintf("%s not run (%s): %s", words.Plural(len(ns), "probe"), words.LimitWords(ns[0].Limit.Kind), lift))
	}
}

func pciSuffix(bdf string) string {
	if bdf == "" {
		return ""
	}
	return " (" + bdf + ")"
}
