package report

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
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

// RenderTable writes the human view: a header, one row per finding in troubleshooting order
// (grouped under their check), then the details (evidence, fix, causal links) of every problem,
// root causes first, and the one-line summary last, where a terminal leaves the eye. Every line
// fits in o.Width columns (DefaultWidth when 0).
func RenderTable(w io.Writer, r *Report, o RenderOptions) error {
	t := &textOut{width: o.Width, ascii: o.ASCII, color: o.Color}
	if t.width <= 0 {
		t.width = DefaultWidth
	}
	t.width = max(t.width, minWidth)

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
	t.b.WriteString("\n")

	var shown []*Finding
	for i := range r.Findings {
		if !o.Problems || r.Findings[i].Severity.Problem() {
			shown = append(shown, &r.Findings[i])
		}
	}
	hidden := len(r.Findings) - len(shown)
	if len(shown) == 0 && len(r.Findings) > 0 {
		t.para("", "", fmt.Sprintf("no warning, critical or unknown finding; %d passing, informational or skipped finding(s) not shown (--problems)", len(r.Findings)))
		t.b.WriteString("\n")
		t.para("", "  ", r.Summary.Line)
		_, err := w.Write(t.b.Bytes())
		return err
	}
	t.table(shown)
	if hidden > 0 {
		t.para("", "", fmt.Sprintf("%d passing, informational or skipped finding(s) not shown (--problems)", hidden))
	}

	details := detailOrder(r.Findings, o.Verbose && !o.Problems)
	if len(details) > 0 {
		t.b.WriteString("\nDetails\n")
	}
	const field = "            " // under the text of "  evidence: "
	for _, f := range details {
		t.b.WriteString("\n")
		sev := strings.ToUpper(f.Severity.String())
		ls := t.lines("", "  ", sev+" "+f.CheckID+": "+withSubject(&f))
		ls[0] = paint(sev, f.Severity, t.color) + ls[0][len(sev):]
		t.b.WriteString(strings.Join(ls, "\n") + "\n")
		if row, ok := faultRow(r, f.Fault); ok && f.Severity.Problem() {
			t.para("  fault:    ", field, row.Component+": "+row.Symptom)
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
		if len(f.ExplainedBy) > 0 {
			t.para("  cause:    ", field, strings.Join(f.ExplainedBy, ", "))
		}
		if f.Limit != nil {
			t.para("  lift:     ", field, f.Limit.Lift)
		}
	}
	t.limits(r)
	t.b.WriteString("\n")
	t.para("", "  ", r.Summary.Line)
	_, err := w.Write(t.b.Bytes())
	return err
}

// table draws the findings in three columns: the check id as a group row, then each subject
// indented under it with its status and its finding. The check id carries the layer, and the
// finding leaves out the subject when it starts by naming it, so nothing is said twice.
func (t *textOut) table(fs []*Finding) {
	bx := boxUnicode
	if t.ascii {
		bx = boxASCII
	}
	const h1, h2, h3 = "CHECK / SUBJECT", "STATUS", "FINDING"
	type row struct {
		first, finding []string
		status         string
		sev            Severity
	}
	findingText := func(f *Finding) string {
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
	line := func(a, s string, sev Severity, c string) {
		status := padRight(s, statusW)
		if s != "" {
			status = paint(s, sev, t.color) + strings.Repeat(" ", statusW-len(s))
		}
		t.b.WriteString(bx.v + " " + padRight(a, first) + " " + bx.v + " " + status + " " + bx.v + " " + padRight(c, find) + " " + bx.v + "\n")
	}
	rule(bx.tl, bx.tm, bx.tr)
	line(h1, h2, OK, h3)
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
// findings and the checks that did not run.
func (t *textOut) limits(r *Report) {
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
		if f.Limit != nil && f.Severity == Skipped {
			add(f.Limit.Lift, f.CheckID)
		}
	}
	for _, n := range r.Summary.NotRun {
		add(n.Limit.Lift, n.CheckID+" (not run)")
	}
	if len(lifts) == 0 {
		return
	}
	t.b.WriteString("\nNot judged because of a limit\n")
	for _, l := range lifts {
		t.para("  ", "  ", strings.Join(what[l], ", "))
		t.para("    to judge them: ", "                   ", l)
	}
}

func pciSuffix(bdf string) string {
	if bdf == "" {
		return ""
	}
	return " (" + bdf + ")"
}
