package report

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Verdicts are every value Summary.Verdict takes.
var Verdicts = []string{"healthy", "warning", "unknown", "critical", "interrupted"}

// Decisive returns the finding a one-line format names for the verdict. For a critical or warning
// verdict it is the worst root cause, as in the summary line: it may be a warning that explains
// the criticals. For an unknown verdict it is the first finding that could not be judged: under
// an "UNKNOWN" status the operator needs what could not be checked, not a warning found besides.
// It is nil for a healthy or interrupted run and for one that judged nothing.
func (r *Report) Decisive() *Finding {
	var want Severity
	switch r.Summary.Verdict {
	case "critical":
		want = Critical
	case "warning":
		want = Warning
	case "unknown":
		want = Unknown
	default:
		return nil
	}
	if want != Unknown {
		if w := worstRoot(r.Findings); w != nil && w.Severity >= Warning {
			return w
		}
	}
	for i := range r.Findings {
		if r.Findings[i].Severity == want {
			return &r.Findings[i]
		}
	}
	return nil
}

// worstRoot is the gravest problem that no other finding explains, the first of equals in
// troubleshooting order.
func worstRoot(fs []Finding) *Finding {
	var worst *Finding
	for i := range fs {
		f := &fs[i]
		if !f.Severity.Problem() || len(f.ExplainedBy) > 0 {
			continue
		}
		if worst == nil || f.Severity > worst.Severity {
			worst = f
		}
	}
	return worst
}

// ShortText says in at most max bytes (valid UTF-8, no line breaks) what a finding found: the
// first clause of its summary, which is the observation (what follows a "; " is a second
// observation or the consequence), preceded by the subject unless the summary already starts
// with the subject, its device or its port ("rxe0/1 is DOWN", "mlx5_0: 1 CQ(s) of ...").
func (f *Finding) ShortText(max int) string {
	summary := f.Summary
	if i := strings.Index(summary, "; "); i > 0 {
		summary = summary[:i]
	}
	text := summary
	if !f.namedBy(summary) {
		text = f.Subject.String() + ": " + summary
	}
	return Truncate(OneLine(text), max)
}

// namedBy reports whether a summary's first word names the finding's subject: the subject
// itself, its device, or a leading part of its name ("rxe0/1" of "rxe0/1 pid 120 (labqp) ERR").
func (f *Finding) namedBy(summary string) bool {
	end := len(summary)
	for _, sep := range []string{" ", ": ", "("} {
		if i := strings.Index(summary, sep); i >= 0 && i < end {
			end = i
		}
	}
	word := summary[:end]
	if len(word) < 2 {
		return false
	}
	return word == f.Subject.Device || startsWithName(f.Subject.String(), word)
}

// startsWithName reports whether s begins with name as a whole word, not as a prefix of a longer
// name ("mlx5_1" is not "mlx5_10").
func startsWithName(s, name string) bool {
	if name == "" || !strings.HasPrefix(s, name) {
		return false
	}
	rest := s[len(name):]
	return rest == "" || rest[0] == ' ' || rest[0] == ':' || rest[0] == '('
}

// OneLine replaces control characters (a line break in a hostile file's content would start a
// second status line) and makes the text valid UTF-8.
func OneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// Truncate cuts s to at most max bytes without splitting a UTF-8 sequence, at a word boundary
// when one is near, marking the cut with "...".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	const mark = "..."
	if max <= len(mark) {
		return mark[:max]
	}
	cut := max - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > 0 && cut-sp <= 16 {
		cut = sp
	}
	return strings.TrimRight(s[:cut], " ,;:") + mark
}

// judgedChecks counts the checks that passed (a report built by an older version, without
// check counts, counts its passing and informational findings).
func (r *Report) judgedChecks() int {
	if c := r.Summary.Checks; c != nil {
		return c.Passed
	}
	return r.Summary.Counts["ok"] + r.Summary.Counts["info"]
}

// statusText says in at most max bytes why the verdict is what it is, for one-line formats.
func (r *Report) statusText(max int) string {
	s := r.Summary
	switch s.Verdict {
	case "healthy":
		return Truncate(fmt.Sprintf("healthy (%d checks)", r.judgedChecks()), max)
	case "interrupted":
		return Truncate(fmt.Sprintf("interrupted before every check finished (%d critical, %d warning, %d unknown so far)",
			s.Counts["critical"], s.Counts["warning"], s.Counts["unknown"]), max)
	}
	d := r.Decisive()
	if d == nil {
		return Truncate(fmt.Sprintf("could not check: nothing was judged (%d finding(s) skipped)", s.Counts["skipped"]), max)
	}
	if d.Severity == Unknown {
		const p = "could not check "
		return p + d.ShortText(max-len(p))
	}
	return d.ShortText(max)
}
