// Package e2e checks what rdmadiag says about a real kernel in a lab scenario against a table of
// expectations, one JSON file per scenario (lab/e2e/expect/<scenario>.json).
//
// The matching is independent of rdmadiag's types on purpose: expectations name fields by their
// JSON path, so they keep working (or fail loudly) when the report format changes, and the same
// mechanism can assert on any JSON a guest tool prints (see testdata/rdma-link).
package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Expectation is the content of one expect/<scenario>.json file.
type Expectation struct {
	// Todo, when set, says why the finding expectations are not written yet. The output is still
	// checked for being valid JSON with an allowed exit code; the test then skips with this text.
	Todo string `json:"todo,omitempty"`
	// Payload, when set, replaces the default payload (`rdmadiag check --format json`, or
	// LAB_E2E_PAYLOAD) for this scenario, e.g. a test program whose JSON summary is asserted.
	Payload string `json:"payload,omitempty"`
	// Log lists dotted paths of the output whose values are written to the test log on every
	// run, passing or not (e.g. measured numbers a reviewer wants to see).
	Log []string `json:"log,omitempty"`
	// Args are appended to the payload command (e.g. ["--wr-concurrency", "256"]); they are
	// rdmadiag flags that the scenario's verdict depends on.
	Args []string `json:"args,omitempty"`
	// ExitCodes lists the exit statuses the payload may end with; empty means any.
	ExitCodes []int `json:"exit_codes,omitempty"`
	// FindingsPath is the dotted path of the findings array in the output ("findings" for
	// rdmadiag's report); "." means the output itself is the array.
	FindingsPath string `json:"findings_path,omitempty"`
	// Document holds predicates on the whole output (e.g. "summary.verdict").
	Document Predicates `json:"document,omitempty"`
	// Present: for each entry, at least one finding must satisfy all its predicates.
	Present []Predicates `json:"present,omitempty"`
	// Absent: no finding may satisfy all the predicates of any entry.
	Absent []Predicates `json:"absent,omitempty"`
}

// Predicates maps a dotted field path ("check_id", "subject.name", "evidence") to a matcher.
type Predicates map[string]Matcher

// Matcher is one test on a JSON value; exactly one of its fields is set.
type Matcher struct {
	// Eq: the value equals this JSON value (numbers compare numerically).
	Eq any `json:"eq,omitempty"`
	// In: the value equals one of these.
	In []any `json:"in,omitempty"`
	// Contains: a string value contains this text; any other value's compact JSON does. This is
	// how evidence lists are matched without depending on their shape.
	Contains string `json:"contains,omitempty"`
	// Re: like Contains, with a Go regular expression.
	Re string `json:"re,omitempty"`
	// Exists: the path is present (true) or absent (false).
	Exists *bool `json:"exists,omitempty"`
	// Min: the value is a number at least this large (a measured ratio, a count).
	Min *float64 `json:"min,omitempty"`
	// Max: the value is a number at most this large (a run's duration).
	Max *float64 `json:"max,omitempty"`

	re *regexp.Regexp
}

// LoadExpectation reads and validates one expectation file.
func LoadExpectation(path string) (*Expectation, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading expectation %s: %w", path, err)
	}
	e, err := ParseExpectation(b)
	if err != nil {
		return nil, fmt.Errorf("expectation %s: %w", path, err)
	}
	return e, nil
}

// ParseExpectation decodes an expectation, rejecting unknown fields and malformed matchers so a
// typo cannot turn an assertion into one that always passes.
func ParseExpectation(b []byte) (*Expectation, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var e Expectation
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decoding: trailing data after the object")
	}
	if e.FindingsPath == "" {
		e.FindingsPath = "findings"
	}
	for i, p := range e.Log {
		if p == "" {
			return nil, fmt.Errorf("log[%d]: empty field path", i)
		}
	}
	if err := e.Document.compile("document"); err != nil {
		return nil, err
	}
	for i := range e.Present {
		if len(e.Present[i]) == 0 {
			return nil, fmt.Errorf("present[%d]: no predicates (it would match anything)", i)
		}
		if err := e.Present[i].compile(fmt.Sprintf("present[%d]", i)); err != nil {
			return nil, err
		}
	}
	for i := range e.Absent {
		if len(e.Absent[i]) == 0 {
			return nil, fmt.Errorf("absent[%d]: no predicates (it would forbid every finding)", i)
		}
		if err := e.Absent[i].compile(fmt.Sprintf("absent[%d]", i)); err != nil {
			return nil, err
		}
	}
	return &e, nil
}

func (p Predicates) compile(where string) error {
	for path, m := range p {
		if path == "" {
			return fmt.Errorf("%s: empty field path", where)
		}
		set := 0
		if m.Eq != nil {
			set++
		}
		if m.In != nil {
			set++
		}
		if m.Contains != "" {
			set++
		}
		if m.Re != "" {
			set++
			re, err := regexp.Compile(m.Re)
			if err != nil {
				return fmt.Errorf("%s.%s: %w", where, path, err)
			}
			m.re = re
		}
		if m.Exists != nil {
			set++
		}
		if m.Min != nil {
			set++
		}
		if m.Max != nil {
			set++
		}
		if set != 1 {
			return fmt.Errorf("%s.%s: want exactly one of eq, in, contains, re, exists, min, max; have %d", where, path, set)
		}
		p[path] = m
	}
	return nil
}

// Result is what a payload produced in the guest.
type Result struct {
	Output   []byte // the payload's stdout
	ExitCode int
}

// Check returns one line per unmet expectation; none means the result is as expected.
func (e *Expectation) Check(r Result) []string {
	var fails []string
	if len(e.ExitCodes) > 0 && !containsInt(e.ExitCodes, r.ExitCode) {
		fails = append(fails, fmt.Sprintf("exit code %d, want one of %v", r.ExitCode, e.ExitCodes))
	}
	doc, err := decode(r.Output)
	if err != nil {
		return append(fails, fmt.Sprintf("output is not JSON: %v", err))
	}
	if bad := e.Document.unmet(doc); len(bad) > 0 {
		fails = append(fails, "document: "+strings.Join(bad, "; "))
	}
	findings, err := findingsAt(doc, e.FindingsPath)
	if err != nil {
		return append(fails, err.Error())
	}
	for i, p := range e.Present {
		if matchAny(findings, p) < 0 {
			fails = append(fails, fmt.Sprintf("present[%d]: no finding has %s", i, p))
		}
	}
	for i, p := range e.Absent {
		if j := matchAny(findings, p); j >= 0 {
			fails = append(fails, fmt.Sprintf("absent[%d]: finding %d has %s: %s", i, j, p, compact(findings[j])))
		}
	}
	return fails
}

// Logged is one "path = value" line per Log path, in order; a path the output lacks says so.
func (e *Expectation) Logged(out []byte) []string {
	if len(e.Log) == 0 {
		return nil
	}
	doc, err := decode(out)
	if err != nil {
		return []string{fmt.Sprintf("output is not JSON: %v", err)}
	}
	lines := make([]string, 0, len(e.Log))
	for _, p := range e.Log {
		if v, ok := lookup(doc, p); ok {
			lines = append(lines, p+" = "+compact(v))
		} else {
			lines = append(lines, p+" missing")
		}
	}
	return lines
}

// HasFindingExpectations reports whether anything beyond the exit code and the JSON shape is
// asserted.
func (e *Expectation) HasFindingExpectations() bool {
	return len(e.Present)+len(e.Absent)+len(e.Document) > 0
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func findingsAt(doc any, path string) ([]any, error) {
	v, ok := lookup(doc, path)
	if !ok {
		return nil, fmt.Errorf("no %q in the output", path)
	}
	if v == nil { // "findings": null is an empty report
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%q in the output is %T, not an array", path, v)
	}
	return list, nil
}

func matchAny(findings []any, p Predicates) int {
	for i, f := range findings {
		if len(p.unmet(f)) == 0 {
			return i
		}
	}
	return -1
}

// unmet lists the predicates v fails, in a stable order.
func (p Predicates) unmet(v any) []string {
	var bad []string
	for _, path := range p.paths() {
		m := p[path]
		got, ok := lookup(v, path)
		if !m.match(got, ok) {
			if ok {
				bad = append(bad, fmt.Sprintf("%s=%s, want %s", path, compact(got), m))
			} else {
				bad = append(bad, fmt.Sprintf("%s missing, want %s", path, m))
			}
		}
	}
	return bad
}

func (p Predicates) paths() []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (p Predicates) String() string {
	parts := make([]string, 0, len(p))
	for _, path := range p.paths() {
		parts = append(parts, path+" "+p[path].String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// lookup follows a dotted path through objects; "." is the value itself. Numeric segments index
// arrays ("evidence.0.observed").
func lookup(v any, path string) (any, bool) {
	if path == "." {
		return v, true
	}
	for _, seg := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			next, ok := t[seg]
			if !ok {
				return nil, false
			}
			v = next
		case []any:
			i, err := parseIndex(seg)
			if err != nil || i >= len(t) {
				return nil, false
			}
			v = t[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func parseIndex(s string) (int, error) {
	if s == "" || len(s) > 9 {
		return 0, errors.New("bad index")
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("bad index")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func (m Matcher) match(v any, present bool) bool {
	switch {
	case m.Exists != nil:
		return present == *m.Exists
	case !present:
		return false
	case m.Eq != nil:
		return equal(v, m.Eq)
	case m.In != nil:
		for _, w := range m.In {
			if equal(v, w) {
				return true
			}
		}
		return false
	case m.Contains != "":
		return strings.Contains(text(v), m.Contains)
	case m.re != nil:
		return m.re.MatchString(text(v))
	case m.Min != nil:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f >= *m.Min
	case m.Max != nil:
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		f, err := n.Float64()
		return err == nil && f <= *m.Max
	}
	return false
}

func (m Matcher) String() string {
	switch {
	case m.Exists != nil:
		return fmt.Sprintf("exists=%t", *m.Exists)
	case m.Eq != nil:
		return "eq " + compact(m.Eq)
	case m.In != nil:
		return "in " + compact(m.In)
	case m.Contains != "":
		return fmt.Sprintf("contains %q", m.Contains)
	case m.Min != nil:
		return fmt.Sprintf("min %g", *m.Min)
	case m.Max != nil:
		return fmt.Sprintf("max %g", *m.Max)
	default:
		return fmt.Sprintf("re %q", m.Re)
	}
}

func equal(a, b any) bool {
	an, aok := a.(json.Number)
	bn, bok := b.(json.Number)
	if aok && bok {
		af, err1 := an.Float64()
		bf, err2 := bn.Float64()
		if err1 == nil && err2 == nil {
			return af == bf
		}
		return an == bn
	}
	return compact(a) == compact(b)
}

func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return compact(v)
}

// compact is the JSON text of a value as a reader would write it in an expectation: without the
// HTML escaping json.Marshal applies ("->" stays "->", not "-\u003e").
func compact(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
