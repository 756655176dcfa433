package report

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Verdicts are every value Summary.Verdict takes.
var Verdicts = []string{"healthy", "warning", "unknown", "critical", "interrupted"}

// Decisive returns the finding a one-line format names first: the first of RootCauses, or for an
// unknown verdict the first finding that could not be judged (under an "UNKNOWN" status the
// operator needs what could not be checked first, not a warning found besides). It is nil for a
// healthy or interrupted run and for one that judged nothing.
func (r *Report) Decisive() *Finding {
	if d := r.named(); len(d) > 0 {
		return d[0]
	}
	return nil
}

// named is what the one-line formats name, in order: every root cause (RootCauses), under an
// unknown verdict those that could not be checked first; a report whose problems all explain
// each other names its first finding of the verdict's severity.
func (r *Report) named() []*Finding {
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
	if roots := r.RootCauses(); len(roots) > 0 {
		if want == Unknown {
			// Under "UNKNOWN" what could not be checked comes first, not a warning found besides.
			sort.SliceStable(roots, func(i, j int) bool { return roots[i].Severity == Unknown && roots[j].Severity != Unknown })
		}
		return roots
	}
	for i := range r.Findings {
		if r.Findings[i].Severity == want {
			return []*Finding{&r.Findings[i]}
		}
	}
	return nil
}

// RootCauses are the problems no other finding explains, each an independent fault, in the one
// order every output names them: gravest first as the verdict ranks them (critical, then could
// not check, then warning), a cause as grave as the gravest finding it explains (the warning
// behind a critical consequence decides a critical verdict), then in the troubleshooting order
// of layers (Layers), then by subject and check.
func (r *Report) RootCauses() []*Finding { return rootCauses(r.Findings) }

// gravity ranks the problem severities as the verdict does: a host with a critical finding is
// critical, one that could not be checked is unknown before it has warnings.
func gravity(s Severity) int {
	switch s {
	case Critical:
		return 3
	case Unknown:
		return 2
	case Warning:
		return 1
	}
	return 0
}

func rootCauses(fs []Finding) []*Finding {
	var roots []*Finding
	for i := range fs {
		if f := &fs[i]; f.Severity.Problem() && len(f.ExplainedBy) == 0 {
			roots = append(roots, f)
		}
	}
	if len(roots) == 0 {
		return nil
	}
	// explains[ref] are the findings that name ref as a cause.
	explains := map[string][]int{}
	for i := range fs {
		for _, c := range fs[i].ExplainedBy {
			explains[c] = append(explains[c], i)
		}
	}
	grave := make(map[*Finding]int, len(roots))
	for _, f := range roots {
		g := gravity(f.Severity)
		seen := map[string]bool{f.Ref: true}
		stack := []string{f.Ref}
		for len(stack) > 0 {
			ref := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, i := range explains[ref] {
				g = max(g, gravity(fs[i].Severity))
				if !seen[fs[i].Ref] {
					seen[fs[i].Ref] = true
					stack = append(stack, fs[i].Ref)
				}
			}
		}
		grave[f] = g
	}
	sort.SliceStable(roots, func(i, j int) bool {
		a, b := roots[i], roots[j]
		if grave[a] != grave[b] {
			return grave[a] > grave[b]
		}
		if ra, rb := LayerRank(layerOf(a.CheckID)), LayerRank(layerOf(b.CheckID)); ra != rb {
			return ra < rb
		}
		if a.Subject.Name != b.Subject.Name {
			return naturalLess(a.Subject.Name, b.Subject.Name)
		}
		return a.CheckID < b.CheckID
	})
	return roots
}

// ShortText says in at most max bytes (valid UTF-8, no line breaks) what a finding found: the
// first clause of its summary, which is the observation (what follows a "; " is a second
// observation or the consequence), preceded by the subject unless the summary already starts
// with the subject, its device or its port ("rxe0/1 is DOWN", "mlx5_0: 1 CQ(s) of ...").
func (f *Finding) ShortText(max int) string { return Truncate(f.shortText(), max) }

func (f *Finding) shortText() string {
	summary := f.Summary
	if i := strings.Index(summary, "; "); i > 0 {
		summary = summary[:i]
	}
	text := summary
	if !f.namedBy(summary) {
		text = f.Subject.String() + ": " + summary
	}
	return OneLine(text)
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

// judgedChecks counts the checks that passed (a report built by an older version, without
// check counts, counts its passing and informational findings).
func (r *Report) judgedChecks() int {
	if c := r.Summary.Checks; c != nil {
		return c.Passed
	}
	return r.Summary.Counts["ok"] + r.Summary.Counts["info"]
}

// statusText says in at most max bytes why the verdict is what it is, for one-line formats: every
// root cause, or as many as fit followed by "+N more".
func (r *Report) statusText(max int) string {
	s := r.Summary
	switch s.Verdict {
	case "healthy":
		return Truncate(fmt.Sprintf("healthy (%d checks)", r.judgedChecks()), max)
	case "interrupted":
		return Truncate(fmt.Sprintf("interrupted before every check finished (%d critical, %d warning, %d unknown so far)",
			s.Counts["critical"], s.Counts["warning"], s.Counts["unknown"]), max)
	}
	named := r.named()
	if len(named) == 0 {
		return Truncate(fmt.Sprintf("could not check: nothing was judged (%d finding(s) skipped)", s.Counts["skipped"]), max)
	}
	items := make([]string, len(named))
	for i, f := range named {
		items[i] = f.shortText()
		if f.Severity == Unknown {
			items[i] = "could not check " + items[i]
		}
	}
	return JoinBounded(items, "; ", max)
}

// minItem is the fewest bytes JoinBounded gives an item it names at all: enough for a subject
// and the start of what was found, and a quarter of the room where there is more.
func minItem(limit int) int { return max(32, limit/4) }

// JoinBounded joins items with sep in at most limit bytes. When they do not all fit whole, the
// longest are cut ("...", at a character boundary) to the same length, as many items as can keep
// minItem bytes each are named, and " +N more" says how many were left out; the first item is
// always named.
func JoinBounded(items []string, sep string, limit int) string {
	if all := strings.Join(items, sep); len(all) <= limit {
		return all
	}
	more := func(k int) string {
		if k == len(items) {
			return ""
		}
		return fmt.Sprintf(" +%d more", len(items)-k)
	}
	// room(k, c) is the length of the first k items, each cut to c bytes, with their separators
	// and the count of the rest.
	room := func(k, c int) int {
		n := len(sep)*(k-1) + len(more(k))
		for _, it := range items[:k] {
			n += min(len(it), c)
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
		c = limit - len(more(k)) // one item that cannot keep minItem bytes: as much of it as fits
	}
	parts := make([]string, k)
	for i, it := range items[:k] {
		parts[i] = Truncate(it, max(c, 0))
	}
	return strings.Join(parts, sep) + more(k)
}
