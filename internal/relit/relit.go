// Package relit runs a regular expression only on text that contains one of the literal strings
// every match must contain. Go's regexp has no such prefilter (only a literal prefix), and the
// kernel-log signatures are tried on every record: most records contain none of their words, and
// strings.Contains rejects them far faster than the backtracker (docs/speed.md).
//
// An expression is parsed for its prefilter at its first use and compiled only when a text
// passes the prefilter: the checks declare dozens of expressions as package variables, and
// compiling them all when the program started was a quarter of the start-up of every command,
// `rdmadiag version` included (docs/speed.md, "Start-up"). Every expression made with
// MustCompile is listed by All, so that a test compiles them all and a typo fails the tests, not
// a run.
package relit

import (
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Regexp is an expression with its prefilter, both made at first use. The zero set of literals
// means "no prefilter": every text goes to the expression.
type Regexp struct {
	expr string

	parsed   sync.Once
	lits     []string
	parseErr error

	compiled   sync.Once
	re         *regexp.Regexp
	compileErr error
}

var (
	allMu sync.Mutex
	all   []*Regexp
)

// MustCompile returns expr to be compiled at its first use, for a package variable. An invalid
// expression panics at that use as regexp.MustCompile would (a check's panic becomes an unknown
// finding, internal/checks); tests compile every expression through All so that it never does.
func MustCompile(expr string) *Regexp {
	r := newRegexp(expr)
	allMu.Lock()
	all = append(all, r)
	allMu.Unlock()
	return r
}

// newRegexp is MustCompile without the listing, for expressions made at run time (the fuzz
// target makes millions).
func newRegexp(expr string) *Regexp { return &Regexp{expr: expr} }

// All returns every expression made with MustCompile so far (all package variables, once the
// packages are initialised).
func All() []*Regexp {
	allMu.Lock()
	defer allMu.Unlock()
	return append([]*Regexp(nil), all...)
}

// Compile compiles the expression now and returns why it is invalid, if it is.
func (r *Regexp) Compile() error {
	if err := r.parse(); err != nil {
		return err
	}
	return r.compile()
}

// parse derives the prefilter once.
func (r *Regexp) parse() error {
	r.parsed.Do(func() {
		p, err := syntax.Parse(r.expr, syntax.Perl)
		if err != nil {
			r.parseErr = err
			return
		}
		r.lits = Required(p.Simplify())
	})
	return r.parseErr
}

// compile compiles the expression once.
func (r *Regexp) compile() error {
	r.compiled.Do(func() { r.re, r.compileErr = regexp.Compile(r.expr) })
	return r.compileErr
}

// must panics with regexp.MustCompile's message when err is set.
func (r *Regexp) must(err error) {
	if err != nil {
		panic(`regexp: Compile(` + strconv.Quote(r.expr) + `): ` + err.Error())
	}
}

// Literals is the prefilter: every match contains one of these strings (nil: no prefilter).
func (r *Regexp) Literals() []string {
	r.must(r.parse())
	return r.lits
}

// std is the compiled expression.
func (r *Regexp) std() *regexp.Regexp {
	r.must(r.compile())
	return r.re
}

// String is the expression's source text.
func (r *Regexp) String() string { return r.expr }

// mayMatch is false only when no match can exist in s.
func (r *Regexp) mayMatch(s string) bool {
	lits := r.Literals()
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if strings.Contains(s, l) {
			return true
		}
	}
	return false
}

// MatchString is regexp.MatchString behind the prefilter.
func (r *Regexp) MatchString(s string) bool { return r.mayMatch(s) && r.std().MatchString(s) }

// FindString is regexp.FindString behind the prefilter.
func (r *Regexp) FindString(s string) string {
	if !r.mayMatch(s) {
		return ""
	}
	return r.std().FindString(s)
}

// FindStringSubmatch is regexp.FindStringSubmatch behind the prefilter.
func (r *Regexp) FindStringSubmatch(s string) []string {
	if !r.mayMatch(s) {
		return nil
	}
	return r.std().FindStringSubmatch(s)
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
