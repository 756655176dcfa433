// Package words is the text the engine's summary line and the renderers share: a finding in one
// short line, the counts of checks and limits, and Printable, which every text output passes a
// host's strings through.
package words

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
)

// ShortText says in at most max bytes (valid UTF-8, no line breaks) what a finding found: the
// first clause of its summary, which is the observation (what follows a "; " is a second
// observation or the consequence), preceded by the subject unless the summary already starts
// with the subject, its device or its port ("rxe0/1 is DOWN", "mlx5_0: 1 CQ(s) of ...").
func ShortText(f *report.Finding, max int) string { return Truncate(Short(f), max) }

// Short is ShortText without a bound.
func Short(f *report.Finding) string {
	summary := f.Summary
	if i := strings.Index(summary, "; "); i > 0 {
		summary = summary[:i]
	}
	text := summary
	if !NamedBy(f, summary) {
		text = f.Subject.String() + ": " + summary
	}
	return OneLine(text)
}

// Tag is how the one-line formats lead a problem with its action, "[reseat-or-clean-cable] ",
// or "" for a finding without one.
func Tag(f *report.Finding) string {
	if f.Action == "" || f.Action == report.ActionNone {
		return ""
	}
	return "[" + string(f.Action) + "] "
}

// NamedBy reports whether a summary's first word names the finding's subject: the subject
// itself, its device, or a leading part of its name ("rxe0/1" of "rxe0/1 pid 120 (labqp) ERR").
func NamedBy(f *report.Finding, summary string) bool {
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

// OneLine makes text one line of valid UTF-8 that acts on no consumer: Printable (a line break
// in a hostile file's content would otherwise start a second status line).
func OneLine(s string) string { return Printable(s) }

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

// minItem is the fewest bytes JoinBounded gives an item it names at all: enough for a subject
// and the start of what was found, and a quarter of the room where there is more.
func minItem(limit int) int { return max(32, limit/4) }

// JoinBounded joins items with sep in at most limit bytes. When they do not all fit whole, the
// longest are cut ("...", at a character boundary) to the same length, as many items as can keep
// minItem bytes each are named, and " +N more" says how many were left out; the first item is
// always named.
func JoinBounded(items []string, sep string, limit int) string {
	return JoinTagged(nil, items, sep, limit)
}

// JoinTagged is JoinBounded with a tag before each item (tags[i], "" for none; nil for none at
// all) that is never cut: only the items' text is, so a bounded line keeps every named item's
// tag (the action a script reads).
func JoinTagged(tags, items []string, sep string, limit int) string {
	tag := func(i int) string {
		if i < len(tags) {
			return tags[i]
		}
		return ""
	}
	whole := make([]string, len(items))
	for i, it := range items {
		whole[i] = tag(i) + it
	}
	if all := strings.Join(whole, sep); len(all) <= limit {
		return all
	}
	more := func(k int) string {
		if k == len(items) {
			return ""
		}
		return fmt.Sprintf(" +%d more", len(items)-k)
	}
	// room(k, c) is the length of the first k items, each cut to c bytes after its tag, with
	// their separators and the count of the rest.
	room := func(k, c int) int {
		n := len(sep)*(k-1) + len(more(k))
		for i, it := range items[:k] {
			n += len(tag(i)) + min(len(it), c)
		}
		return n
	}
	least := minItem(limit)
	k := 1
	for k < len(items) && room(k+1, least) <= limit {
		k++
	}
	c := least
	for c < limit && room(k, c+1) <= limit {
		c++
	}
	if room(k, c) > limit {
		c = limit - len(more(k)) - len(tag(0)) // one item that cannot keep minItem bytes: as much of it as fits
	}
	parts := make([]string, k)
	for i, it := range items[:k] {
		parts[i] = tag(i) + Truncate(it, max(c, 0))
	}
	return strings.Join(parts, sep) + more(k)
}

// Consequences counts the findings that name f as their cause.
func Consequences(f *report.Finding, fs []report.Finding) int {
	n := 0
	for i := range fs {
		if slices.Contains(fs[i].ExplainedBy, f.Ref) {
			n++
		}
	}
	return n
}

// ChecksText counts the checks by outcome and, where a check found problems, its problem
// findings by severity: one check can report a critical and two warnings, and the count of checks
// alone would read as one critical finding.
func ChecksText(s report.Summary, fs []report.Finding) string {
	var b strings.Builder
	c := s.Checks
	fmt.Fprintf(&b, "%s run: %d passed", Plural(c.Run, "check"), c.Passed)
	if bad := c.Critical + c.Warning + c.Unknown; bad > 0 {
		var sev []string
		for _, n := range []string{"critical", "warning", "unknown"} {
			if s.Counts[n] > 0 {
				sev = append(sev, fmt.Sprintf("%d %s", s.Counts[n], n))
			}
		}
		fmt.Fprintf(&b, ", %d with problems (findings: %s)", bad, strings.Join(sev, ", "))
	}
	if c.Skipped > 0 {
		fmt.Fprintf(&b, ", %d skipped", c.Skipped)
	}
	// Say how many of the skipped checks a limit held back (no root, a source without the kernel
	// log): the others were not applicable, which nothing can lift.
	var kinds, limited []string
	for _, f := range fs {
		if f.Severity != report.Skipped || f.Limit == nil {
			continue
		}
		if !slices.Contains(kinds, LimitWords(f.Limit.Kind)) {
			kinds = append(kinds, LimitWords(f.Limit.Kind))
		}
		if !slices.Contains(limited, f.CheckID) {
			limited = append(limited, f.CheckID)
		}
	}
	if c.Skipped > 0 && len(kinds) > 0 {
		_, outcome := report.CheckOutcomes(fs)
		n := 0
		for _, id := range limited {
			if outcome[id] == report.Skipped {
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(&b, " (%d by a limit: %s)", n, strings.Join(kinds, ", "))
		}
	}
	if c.NotRun > 0 {
		kinds = kinds[:0]
		for _, n := range s.NotRun {
			if !slices.Contains(kinds, LimitWords(n.Limit.Kind)) {
				kinds = append(kinds, LimitWords(n.Limit.Kind))
			}
		}
		fmt.Fprintf(&b, "; %d not run (limit: %s)", c.NotRun, strings.Join(kinds, ", "))
	}
	return b.String()
}

// LimitWords says what a limit kind means, for the summary line.
func LimitWords(kind string) string {
	switch kind {
	case report.LimitPrivilege:
		return "not root"
	case report.LimitSource:
		return "not in the source"
	case report.LimitSelection:
		return "left out by an option"
	case report.LimitLiveOnly:
		return "live host only"
	}
	return kind
}

// Plural writes "1 check", "2 checks".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
