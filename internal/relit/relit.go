// Package relit runs a regular expression only on text that contains one of the literal strings
// every match must contain. Go's regexp has no such prefilter (only a literal prefix), and the
// kernel-log signatures are tried on every record: most records contain none of their words, and
// strings.Contains rejects them far faster than the backtracker (docs/speed.md).
package relit

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Regexp is a compiled expression with its prefilter. The zero set of literals means "no
// prefilter": every text goes to the expression.
type Regexp struct {
	re   *regexp.Regexp
	lits []string
}

// MustCompile compiles expr like regexp.MustCompile and derives its prefilter.
func MustCompile(expr string) *Regexp {
	re := regexp.MustCompile(expr)
	r := &Regexp{re: re}
	if p, err := syntax.Parse(expr, syntax.Perl); err == nil {
		r.lits = Required(p.Simplify())
	}
	return r
}

// Literals is the prefilter: every match contains one of these strings (nil: no prefilter).
func (r *Regexp) Literals() []string { return r.lits }

// String is the expression's source text.
func (r *Regexp) String() string { return r.re.String() }

// mayMatch is false only when no match can exist in s.
func (r *Regexp) mayMatch(s string) bool {
	if r.lits == nil {
		return true
	}
	for _, l := range r.lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// MatchString is regexp.MatchString behind the prefilter.
func (r *Regexp) MatchString(s string) bool { return r.mayMatch(s) && r.re.MatchString(s) }

// FindString is regexp.FindString behind the prefilter.
func (r *Regexp) FindString(s string) string {
	if !r.mayMatch(s) {
		return ""
	}
	return r.re.FindString(s)
}

// FindStringSubmatch is regexp.FindStringSubmatch behind the prefilter.
func (r *Regexp) FindStringSubmatch(s string) []string {
	if !r.mayMatch(s) {
		return nil
	}
	return r.re.FindStringSubmatch(s)
}

// Required returns strings one of which every match of re contains, or nil when no such set is
// known (an empty-width match, case folding, a class of characters only). Adjacent literals are
// already merged by the parser, so a concatenation offers each child's set and the one whose
// shortest string is longest wins.
func Required(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		for _, c := range re.Rune {
			// The matcher reads an invalid byte as U+FFFD, which the text does not contain as such.
			if c == utf8.RuneError {
				return nil
			}
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return Required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return Required(re.Sub[0])
		}
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			r := Required(s)
			if r == nil {
				return nil
			}
			out = append(out, r...)
		}
		return out
	case syntax.OpConcat:
		var best []string
		for _, s := range re.Sub {
			if r := Required(s); r != nil && better(r, best) {
				best = r
			}
		}
		return best
	}
	return nil
}

// better prefers the set whose shortest string is longer, then the smaller set.
func better(a, b []string) bool {
	if b == nil {
		return true
	}
	ma, mb := shortest(a), shortest(b)
	if ma != mb {
		return ma > mb
	}
	return len(a) < len(b)
}

func shortest(ss []string) int {
	m := -1
	for _, s := range ss {
		if m < 0 || len(s) < m {
			m = len(s)
		}
	}
	return m
}

// Present tells, for each expression, whether it may match one of texts: false means it matches
// none of them, because no literal it requires occurs in any. A kernel log is thousands of
// records and a list of signatures dozens of expressions: one search per distinct literal over
// the whole log replaces one per expression per record, and a healthy log rules out nearly all.
func Present(rs []*Regexp, texts []string) []bool {
	// The texts are joined with a byte no literal of a signature contains, so that no literal is
	// found across two texts; a literal that does contain it is taken as present.
	const sep = "\x00"
	n := 0
	for _, t := range texts {
		n += len(t) + 1
	}
	var b strings.Builder
	b.Grow(n)
	for _, t := range texts {
		b.WriteString(t)
		b.WriteString(sep)
	}
	all := b.String()
	found := map[string]bool{}
	out := make([]bool, len(rs))
	for i, r := range rs {
		if r.lits == nil {
			out[i] = true
			continue
		}
		for _, l := range r.lits {
			f, ok := found[l]
			if !ok {
				f = strings.Contains(l, sep) || strings.Contains(all, l)
				found[l] = f
			}
			if f {
				out[i] = true
				break
			}
		}
	}
	return out
}
