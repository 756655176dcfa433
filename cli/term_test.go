package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

// widest is the display width of the longest line of s.
func widest(s string) (int, string) {
	w, line := 0, ""
	for _, l := range strings.Split(s, "\n") {
		if n := runewidth.StringWidth(l); n > w {
			w, line = n, l
		}
	}
	return w, line
}

// runEnv runs the CLI with this environment, stdout a terminal of termWidth columns when
// termWidth > 0.
func runEnv(t *testing.T, env map[string]string, termWidth int, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.Getenv = fixedEnv(env)
	if termWidth > 0 {
		app.IsTerminal = true
		app.TermWidth = func() int { return termWidth }
	}
	code := app.Execute(context.Background(), args)
	return out.String(), errb.String(), code
}

// goldenReports decodes every fixture's JSON golden: the report its table golden renders.
func goldenReports(t *testing.T) map[string]*report.Report {
	t.Helper()
	out := map[string]*report.Report{}
	for _, s := range scenarios(t) {
		b, err := os.ReadFile(filepath.Join(s.dir, "check.golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		var r report.Report
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		out[s.name] = &r
	}
	return out
}

// With COLUMNS=80 no line of any fixture's table is wider than 80 columns, passing findings'
// evidence included (--verbose); on a wide terminal the table uses the room and still fits.
// (TestGolden checks the same of the goldens, which are laid out for 80 columns by the CLI.)
func TestTableFitsTheTerminal(t *testing.T) {
	reports := goldenReports(t)
	for _, width := range []int{80, 200} {
		var out, errb bytes.Buffer
		app := testApp(&out, &errb)
		app.Getenv = fixedEnv(map[string]string{"COLUMNS": strconv.Itoa(width), "LANG": "en_US.UTF-8"})
		o := app.renderOptions(false, false)
		o.Verbose = true
		overall := 0
		for name, r := range reports {
			var b bytes.Buffer
			if err := render.RenderTable(&b, r, o); err != nil {
				t.Fatal(err)
			}
			w, line := widest(b.String())
			if w > width {
				t.Errorf("%s at COLUMNS=%d: a line is %d columns wide: %q", name, width, w, line)
			}
			overall = max(overall, w)
		}
		if width > 100 && overall <= 100 {
			t.Errorf("COLUMNS=%d: no fixture's table is wider than 100 columns: the width is not used", width)
		}
	}
}

// The width comes from COLUMNS, else from the terminal stdout is, else it is 80.
func TestTableWidthSource(t *testing.T) {
	snap := filepath.Join(fixturesDir, "aer", "snapshot.txtar")
	for _, c := range []struct {
		name      string
		env       map[string]string
		termWidth int
		want      int
	}{
		{"piped", map[string]string{}, 0, 80},
		{"terminal", map[string]string{}, 150, 150},
		{"COLUMNS wins over the terminal", map[string]string{"COLUMNS": "100"}, 150, 100},
		{"COLUMNS when piped", map[string]string{"COLUMNS": "120"}, 0, 120},
		{"garbled COLUMNS", map[string]string{"COLUMNS": "wide"}, 0, 80},
	} {
		out, _, _ := runEnv(t, c.env, c.termWidth, "check", "--snapshot", snap, "--no-color")
		// The aer fixture has findings long enough to fill any of these widths.
		if w, line := widest(out); w > c.want || w < c.want-5 {
			t.Errorf("%s: widest line %d, want %d: %q", c.name, w, c.want, line)
		}
	}
}

// Colour only on a terminal, and never with a non-empty NO_COLOR or --no-color.
func TestColour(t *testing.T) {
	snap := filepath.Join(fixturesDir, "aer", "snapshot.txtar")
	utf8 := map[string]string{"LANG": "en_US.UTF-8"}
	for _, c := range []struct {
		name      string
		env       map[string]string
		terminal  bool
		args      []string
		wantColor bool
	}{
		{"terminal", utf8, true, nil, true},
		{"piped", utf8, false, nil, false},
		{"NO_COLOR", map[string]string{"LANG": "en_US.UTF-8", "NO_COLOR": "1"}, true, nil, false},
		{"empty NO_COLOR", map[string]string{"LANG": "en_US.UTF-8", "NO_COLOR": ""}, true, nil, true},
		{"--no-color", utf8, true, []string{"--no-color"}, false},
	} {
		tw := 0
		if c.terminal {
			tw = 100
		}
		out, _, _ := runEnv(t, c.env, tw, append([]string{"check", "--snapshot", snap}, c.args...)...)
		if got := strings.Contains(out, "\x1b["); got != c.wantColor {
			t.Errorf("%s: colour %v, want %v", c.name, got, c.wantColor)
		}
	}
}

// Under a locale that is not UTF-8 the table is plain ASCII: no box drawing, no escape.
func TestASCIILocale(t *testing.T) {
	snap := filepath.Join(fixturesDir, "aer", "snapshot.txtar")
	for _, c := range []struct {
		name  string
		env   map[string]string
		ascii bool
	}{
		{"LANG=C", map[string]string{"LANG": "C", "NO_COLOR": "1"}, true},
		{"unset", map[string]string{"NO_COLOR": "1"}, true},
		{"LANG=POSIX", map[string]string{"LANG": "POSIX", "NO_COLOR": "1"}, true},
		{"LC_ALL=C wins", map[string]string{"LC_ALL": "C", "LANG": "en_US.UTF-8", "NO_COLOR": "1"}, true},
		{"LC_CTYPE before LANG", map[string]string{"LC_CTYPE": "de_DE.utf8", "LANG": "C", "NO_COLOR": "1"}, false},
		{"latin-1", map[string]string{"LANG": "de_DE.ISO-8859-1", "NO_COLOR": "1"}, true},
	} {
		out, _, _ := runEnv(t, c.env, 100, "check", "--snapshot", snap, "--verbose")
		nonASCII := strings.IndexFunc(out, func(r rune) bool { return r >= 0x80 })
		if c.ascii && (nonASCII >= 0 || strings.Contains(out, "\x1b")) {
			t.Errorf("%s: non-ASCII or escape at %d:\n%s", c.name, nonASCII, out)
		}
		if !c.ascii && !strings.Contains(out, "┌") {
			t.Errorf("%s: no box drawing under a UTF-8 locale", c.name)
		}
	}
	// Every fixture's report, whatever its hosts' strings hold, is ASCII under LANG=C.
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.Getenv = fixedEnv(map[string]string{"LANG": "C"})
	app.IsTerminal = true
	o := app.renderOptions(false, false)
	o.Verbose = true
	for name, r := range goldenReports(t) {
		var b bytes.Buffer
		if err := render.RenderTable(&b, r, o); err != nil {
			t.Fatal(err)
		}
		if i := bytes.IndexFunc(b.Bytes(), func(r rune) bool { return r >= 0x80 }); i >= 0 {
			t.Errorf("%s under LANG=C: non-ASCII at %d", name, i)
		}
		if !strings.Contains(b.String(), "\x1b[") {
			t.Errorf("%s: no colour on a terminal under LANG=C (colour is not a matter of the locale)", name)
		}
	}
}

func TestIsUTF8Locale(t *testing.T) {
	for in, want := range map[string]bool{
		"en_US.UTF-8": true, "C.UTF-8": true, "C.utf8": true, "de_DE.utf-8@euro": true,
		"C": false, "POSIX": false, "en_US": false, "en_US.ISO-8859-1": false, "": false,
	} {
		if got := isUTF8Locale(in); got != want {
			t.Errorf("isUTF8Locale(%q) = %v", in, got)
		}
	}
}

// Progress goes to stderr only when it is a terminal, is erased before the report is written,
// and never reaches stdout.
func TestProgressOnlyOnATerminal(t *testing.T) {
	snap := sharedFixture(t, "healthy")
	root := filepath.Join(snap, "root")
	for _, terminal := range []bool{true, false} {
		var out, errb bytes.Buffer
		app := testApp(&out, &errb)
		app.OpenHost = liveOn(root)
		app.StderrIsTerminal = terminal
		code := app.Execute(context.Background(), []string{"check", "--no-probe", "--only", "port.counters", "--interval", "10ms", "--format", "json"})
		if code > 3 {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		shown := strings.Contains(errb.String(), "waiting 10ms for the second reading")
		if shown != terminal {
			t.Errorf("stderr a terminal %v: progress shown %v: %q", terminal, shown, errb.String())
		}
		if terminal && !strings.HasSuffix(errb.String(), "\r\x1b[K") {
			t.Errorf("progress line not erased: %q", errb.String())
		}
		if strings.ContainsAny(out.String(), "\r\x1b") || strings.Contains(out.String(), "waiting 10ms") {
			t.Errorf("progress on stdout at %d: %q", strings.IndexAny(out.String(), "\r\x1b"), out.String()[:80])
		}
		decode(t, out.String())
	}
}
