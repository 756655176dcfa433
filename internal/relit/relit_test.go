package relit

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`unrecoverable hardware error`, []string{"unrecoverable hardware error"}},
		{`Fatal error (\d+) detected`, []string{"Fatal error "}},
		{`(?:^|\s)([^\s:]+): Link (up|down)$`, []string{": Link "}},
		{`health recovery failed|Cold reset is required`, []string{"health recovery failed", "Cold reset is required"}},
		{`(?i)error`, nil},
		{`a*`, nil},
		{`(ab)?`, nil},
		{`[0-9]+`, nil},
		{`x{2,}yz`, []string{"yz"}},
		{`(?:abc){1,3}`, []string{"abc"}},
		{`a|[0-9]`, nil},
		{``, nil},
	} {
		p, err := syntax.Parse(tc.expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		got := Required(p.Simplify())
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("Required(%q) = %q, want %q", tc.expr, got, want)
		}
	}
}

func TestFilteredMatchesAsRegexp(t *testing.T) {
	exprs := []string{`Fatal error (\d+) detected`, `(?:^|\s)([^\s:]+): Link (up|down)$`, `(?i)link`, `a|b`}
	texts := []string{"", "mlx5_core 0000:01:00.0: Fatal error 1 detected", "eth0: Link up", "eth0: link DOWN", "no match here", "\xff\xfe"}
	for _, e := range exprs {
		r, std := MustCompile(e), regexp.MustCompile(e)
		for _, s := range texts {
			if g, w := r.MatchString(s), std.MatchString(s); g != w {
				t.Errorf("%q on %q: MatchString %v, regexp says %v", e, s, g, w)
			}
			if g, w := r.FindStringSubmatch(s), std.FindStringSubmatch(s); !slices.Equal(g, w) {
				t.Errorf("%q on %q: FindStringSubmatch %q, regexp says %q", e, s, g, w)
			}
			if g, w := r.FindString(s), std.FindString(s); g != w {
				t.Errorf("%q on %q: FindString %q, regexp says %q", e, s, g, w)
			}
		}
	}
}

// FuzzPrefilter: the prefilter never rejects a text the expression matches.
func FuzzPrefilter(f *testing.F) {
	f.Add(`Fatal error (\d+) detected`, "Fatal error 3 detected")
	f.Add(`(?:^|\s)([^\s:]+): Link (up|down)$`, "x eth0: Link down")
	f.Add(`a\x{FFFD}b`, "a\xffb")
	f.Add(`(?:foo|ba[rz])+qux{2}`, "bazquxx")
	f.Fuzz(func(t *testing.T, expr, text string) {
		std, err := regexp.Compile(expr)
		if err != nil {
			return
		}
		r := newRegexp(expr)
		if std.MatchString(text) && !r.mayMatch(text) {
			t.Fatalf("prefilter %q of %q rejects %q, which matches", r.Literals(), expr, text)
		}
		// Split into records anywhere: an expression that matches one record is present.
		recs := strings.SplitAfter(text, "\n")
		for _, rec := range recs {
			if std.MatchString(rec) && !Present([]*Regexp{r}, recs)[0] {
				t.Fatalf("Present rules out %q (literals %q), which matches record %q", expr, r.lits, rec)
			}
		}
	})
}

func TestPresent(t *testing.T) {
	rs := []*Regexp{
		MustCompile(`Fatal error (\d+) detected`),
		MustCompile(`health recovery failed|Cold reset is required`),
		MustCompile(`(?i)link down`), // no literal under case folding: always present
		MustCompile(`error detected`),
	}
	for _, tc := range []struct {
		texts []string
		want  []bool
	}{
		{nil, []bool{false, false, true, false}},
		{[]string{"eth0: Link up", "mlx5_core: Cold reset is required"}, []bool{false, true, true, false}},
		{[]string{"Fatal error 3 detected"}, []bool{true, false, true, false}},
		{[]string{"uncorrectable error detected"}, []bool{false, false, true, true}},
		// A literal split across two records is not there.
		{[]string{"uncorrectable error", " detected"}, []bool{false, false, true, false}},
	} {
		got := Present(rs, tc.texts)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.texts, got, tc.want)
		}
	}
}

// The one-pass matcher finds exactly the strings strings.Contains finds, within one text.
func FuzzMatcher(f *testing.F) {
	f.Add("he|she|his|hers", "ushers\x00ahishers")
	f.Add("abc|bc|c|abcd", "xabcy")
	f.Add("aa|aaa|a", "aaaa")
	f.Fuzz(func(t *testing.T, set, text string) {
		var strs []string
		for _, s := range strings.Split(set, "|") {
			if s != "" {
				strs = append(strs, s)
			}
		}
		texts := strings.Split(text, "\x00")
		got := newMatcher(strs).scan(texts)
		for i, s := range strs {
			want := false
			for _, tx := range texts {
				want = want || strings.Contains(tx, s)
			}
			if got[i] != want {
				t.Fatalf("%q in %q: %v, want %v", s, texts, got[i], want)
			}
		}
	})
}

// An expression is compiled only for a text its prefilter lets through: a host whose log has
// none of a signature's words never pays for compiling it.
func TestCompiledOnlyPastPrefilter(t *testing.T) {
	r := newRegexp(`Fatal error (\d+) detected`)
	if r.MatchString("eth0: Link up") || r.FindString("no") != "" || r.FindStringSubmatch("x") != nil {
		t.Fatal("matched a text without the literal")
	}
	if r.re != nil {
		t.Fatal("compiled for texts the prefilter rejects")
	}
	if m := r.FindStringSubmatch("Fatal error 3 detected"); len(m) != 2 || m[1] != "3" {
		t.Fatalf("FindStringSubmatch = %q", m)
	}
	if r.re == nil {
		t.Fatal("not compiled after a match")
	}
}

// A bad expression does not stop the program from starting, says why through Compile (which the
// tests call on All), and panics with regexp's message at every use, not a nil dereference.
func TestInvalidExpression(t *testing.T) {
	r := MustCompile(`Fatal error (\d+ detected`)
	if !slices.Contains(All(), r) {
		t.Fatal("All does not list an expression made with MustCompile")
	}
	err := r.Compile()
	if err == nil || !strings.Contains(err.Error(), "missing closing )") {
		t.Fatalf("Compile() = %v, want the parser's error", err)
	}
	for i := 0; i < 2; i++ {
		func() {
			defer func() {
				p := recover()
				if msg := fmt.Sprint(p); !strings.HasPrefix(msg, "regexp: Compile(") || !strings.Contains(msg, "missing closing )") {
					t.Errorf("use %d: panic %q, want regexp.MustCompile's", i, msg)
				}
			}()
			r.MatchString("Fatal error 1 detected")
		}()
	}
	if err := MustCompile(`Link (up|down)$`).Compile(); err != nil {
		t.Errorf("Compile() of a valid expression: %v", err)
	}
}

// Checks run concurrently and share the package's expressions: the first uses race to compile.
func TestConcurrentFirstUse(t *testing.T) {
	r := newRegexp(`(?:^|\s)([^\s:]+): Link (up|down)$`)
	var wg sync.WaitGroup
	got := make([][]string, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = r.FindStringSubmatch("mlx5_core 0000:01:00.0 eth0: Link down")
		}()
	}
	wg.Wait()
	for i, m := range got {
		if !slices.Equal(m, []string{" eth0: Link down", "eth0", "down"}) {
			t.Errorf("goroutine %d: %q", i, m)
		}
	}
}
