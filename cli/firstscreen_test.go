package cli

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report/render"
)

// screenLines is the height of the terminal the first screen is judged on (80x24).
const screenLines = 24

// On an 80x24 terminal the first screen answers the question: the verdict is the first line, and
// every root cause (or, when they do not all fit, as many as fit and how many more there are)
// is on the screen before anything else of the report, for every fixture.
func TestFirstScreenAnswers(t *testing.T) {
	rootLine := regexp.MustCompile(`^ +\d+\. (CRITICAL|WARNING|UNKNOWN) `)
	for name, r := range goldenReports(t) {
		var b bytes.Buffer
		if err := render.RenderTable(&b, r, render.RenderOptions{Width: goldenWidth}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(b.String(), "\n")
		if want := "VERDICT " + strings.ToUpper(r.Summary.Verdict) + " "; !strings.HasPrefix(lines[0], want) {
			t.Errorf("%s: first line %q, want the verdict (%q...)", name, lines[0], want)
		}
		named, more := 0, false
		for i, l := range lines {
			if strings.HasPrefix(l, "rdmadiag ") { // the host line ends the first screen's answer
				break
			}
			if rootLine.MatchString(l) || strings.HasPrefix(l, "  +") && strings.HasSuffix(l, "more, under Problems below") {
				if i >= screenLines {
					t.Errorf("%s: root cause line %d is below the first %d lines: %q", name, i+1, screenLines, l)
				}
				if strings.HasPrefix(l, "  +") {
					more = true
				} else {
					named++
				}
			}
		}
		if roots := len(r.RootCauses()); r.Summary.Verdict != "healthy" && named != roots && !more {
			t.Errorf("%s: %d of %d root causes named on the first screen and no count of the rest:\n%s", name, named, roots, b.String())
		}
	}
}

// --all and --verbose still list every finding, one row each, in the table.
func TestAllListsEveryFinding(t *testing.T) {
	row := regexp.MustCompile(`^│ .* │ (OK|INFO|SKIPPED|UNKNOWN|WARNING|CRITICAL) +│ `)
	for name, r := range goldenReports(t) {
		for _, o := range []render.RenderOptions{{All: true}, {Verbose: true}} {
			o.Width = goldenWidth
			var b bytes.Buffer
			if err := render.RenderTable(&b, r, o); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, l := range strings.Split(b.String(), "\n") {
				if row.MatchString(l) {
					n++
				}
			}
			if n != len(r.Findings) {
				t.Errorf("%s %+v: %d finding rows, the report has %d findings", name, o, n, len(r.Findings))
			}
		}
	}
}

// The fixtures an operator meets first fit their verdict and root causes in 24 lines whole.
func TestFirstScreenOfKnownFixtures(t *testing.T) {
	reports := goldenReports(t)
	for _, name := range []string{"pcie-degraded", "pcie-signal-integrity", "drv-mlx5-health", "healthy", "port-cx7-ib"} {
		r := reports[name]
		if r == nil {
			t.Fatalf("no fixture %s", name)
		}
		var b bytes.Buffer
		render.RenderTable(&b, r, render.RenderOptions{Width: goldenWidth})
		first := strings.Join(strings.SplitN(b.String(), "\n", screenLines+1)[:screenLines], "\n")
		for i, f := range r.RootCauses() {
			if want := fmt.Sprintf("%d. %s %s (%s)", i+1, strings.ToUpper(f.Severity.String()), f.Subject, f.CheckID); !strings.Contains(first, want) {
				t.Errorf("%s: root cause %q not in the first %d lines:\n%s", name, want, screenLines, first)
			}
		}
	}
}
