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
// finding, checks); tests compile every expression through All so that it never does.
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

// New returns expr to be parsed and compiled at its first use, as MustCompile does, for
// expressions made at run time from data (the kernel-log signature table), which All does not
// list: their owner compiles them all in its tests (Compile).
func New(expr string) *Regexp { return newRegexp(expr) }

// NewLiteral is New for an expression whose caller knows a string every match contains (a
// literal word it wrote into the expression itself): the prefilter is that string, and the
// expression is not parsed for one.
func NewLiteral(expr, literal string) *Regexp {
	r := newRegexp(expr)
	r.parsed.Do(func() { r.lits = []string{literal} })
	return r
}

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

// FindStringSubmatchIndex is regexp.FindStringSubmatchIndex behind the prefilter.
func (r *Regexp) FindStringSubmatchIndex(s string) []int {
	if !r.mayMatch(s) {
		return nil
	}
	return r.std().FindStringSubmatchIndex(s)
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
// records and a list of signatures dozens of expressions: one pass over the log for all their
// literals (Aho-Corasick) replaces one search per expression per record, and a healthy log
// rules out nearly all.
func Present(rs []*Regexp, texts []string) []bool { return NewSet(rs).Present(texts) }

// Set is Present's matcher built once for a fixed list of expressions, for a caller that asks
// of many texts (the signature table, once per classified log).
type Set struct {
	always []bool  // the expression has no prefilter
	ids    [][]int // each expression's literals, as indexes into the matcher's strings
	m      *matcher
}

// NewSet builds the matcher of the expressions' literals.
func NewSet(rs []*Regexp) *Set {
	lits := make([][]string, len(rs))
	for i, r := range rs {
		lits[i] = r.Literals()
	}
	return NewLiteralSet(lits)
}

// NewLiteralSet is NewSet for expressions whose prefilters the caller keeps (lits[i] is
// expression i's Literals), without the expressions themselves.
func NewLiteralSet(lits [][]string) *Set {
	id := map[string]int{}
	var strs []string
	set := &Set{always: make([]bool, len(lits)), ids: make([][]int, len(lits))}
	for i, ls := range lits {
		set.always[i] = ls == nil
		for _, l := range ls {
			n, ok := id[l]
			if !ok {
				n = len(strs)
				id[l] = n
				strs = append(strs, l)
			}
			set.ids[i] = append(set.ids[i], n)
		}
	}
	set.m = newMatcher(strs)
	return set
}

// Present is the package's Present for the set's expressions.
func (s *Set) Present(texts []string) []bool {
	found := s.m.scan(texts)
	out := make([]bool, len(s.ids))
	for i, ids := range s.ids {
		out[i] = s.always[i]
		for _, n := range ids {
			if found[n] {
				out[i] = true
				break
			}
		}
	}
	return out
}

// matcher finds which of a set of strings occur in texts in one pass (Aho-Corasick).
type matcher struct {
	root  [256]int32 // the root's transitions, dense: most bytes of a log leave it at once
	nodes []acNode
	n     int
}

type acNode struct {
	edges []acEdge // a few at most below the root
	fail  int32    // the longest proper suffix that is a node
	dict  int32    // the nearest node on the fail chain that ends a string, -1 if none
	ends  []int32  // strings ending here
}

type acEdge struct {
	b  byte
	to int32
}

func (n *acNode) next(b byte) int32 {
	for _, e := range n.edges {
		if e.b == b {
			return e.to
		}
	}
	return -1
}

func newMatcher(strs []string) *matcher {
	m := &matcher{nodes: []acNode{{dict: -1}}, n: len(strs)}
	for i, s := range strs {
		cur := int32(0)
		for j := 0; j < len(s); j++ {
			var nx int32
			if cur == 0 {
				nx = m.root[s[j]]
			} else {
				nx = m.nodes[cur].next(s[j])
			}
			if nx <= 0 {
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, acNode{dict: -1})
				if cur == 0 {
					m.root[s[j]] = nx
				} else {
					m.nodes[cur].edges = append(m.nodes[cur].edges, acEdge{s[j], nx})
				}
			}
			cur = nx
		}
		m.nodes[cur].ends = append(m.nodes[cur].ends, int32(i))
	}
	// Fail and dictionary links, breadth first.
	var queue []int32
	for b := range 256 {
		if c := m.root[b]; c > 0 {
			queue = append(queue, c)
		}
	}
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		for _, e := range m.nodes[u].edges {
			v := e.to
			f := m.nodes[u].fail
			m.nodes[v].fail = m.step(f, e.b)
			if fl := m.nodes[v].fail; len(m.nodes[fl].ends) > 0 {
				m.nodes[v].dict = fl
			} else {
				m.nodes[v].dict = m.nodes[fl].dict
			}
			queue = append(queue, v)
		}
	}
	return m
}

// step is the transition from state on byte b, following fail links.
func (m *matcher) step(state int32, b byte) int32 {
	for state != 0 {
		if nx := m.nodes[state].next(b); nx >= 0 {
			return nx
		}
		state = m.nodes[state].fail
	}
	return m.root[b]
}

// scan reports which strings occur in one of texts (none across two of them).
func (m *matcher) scan(texts []string) []bool {
	found := make([]bool, m.n)
	if m.n == 0 {
		return found
	}
	left := m.n
	seen := make([]bool, len(m.nodes)) // nodes whose strings (and suffix chain) are marked
	for _, t := range texts {
		state := int32(0)
		for i := 0; i < len(t); i++ {
			state = m.step(state, t[i])
			for v := state; v > 0 && !seen[v]; v = m.nodes[v].dict {
				seen[v] = true
				for _, k := range m.nodes[v].ends {
					found[k] = true
					left--
				}
				if m.nodes[v].dict < 0 {
					break
				}
			}
			if left == 0 {
				return found
			}
		}
	}
	return found
}
