package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all"
	"github.com/rdmadiag/rdmadiag/internal/slowtest"
)

// Redaction changes what identifies a host, never what the checks conclude: every fixture,
// given a hostname that is a short word found inside other words of that fixture, gives the same
// findings (check, severity, subject with its identifiers mapped to their stand-ins) before and
// after redaction. Every fixture with RDMADIAG_SLOW=1 (make test-slow), slowtest.Sample without.
func TestRedactKeepsVerdict(t *testing.T) {
	fixtures, err := filepath.Glob("../../fixtures/sysfs/*/snapshot.txtar")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sel, err := checks.Default.Select(nil, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	// The hostname word rotates over every fixture's index, so that a fixture gets the same word
	// whether the sample or every fixture runs.
	index := map[string]int{}
	for i, fx := range fixtures {
		index[fx] = i
	}
	for _, fx := range slowtest.Pick(t, fixtures, func(p string) string { return filepath.Base(filepath.Dir(p)) }) {
		i, name := index[fx], filepath.Base(filepath.Dir(fx))
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(fx)
			if err != nil {
				t.Fatal(err)
			}
			hostname := innerWord(data, i)
			orig, red := t.TempDir(), t.TempDir()
			for _, d := range []string{orig, red} {
				if err := UnpackTxtar(data, d); err != nil {
					t.Fatal(err)
				}
				setHostname(t, d, hostname)
			}
			r, err := redactDir(red)
			if err != nil {
				t.Fatal(err)
			}
			opts := fixtureOptions(t, filepath.Dir(fx))
			want := findings(t, orig, sel, opts, func(s string) string { return r.text(s, textMode{}) })
			got := findings(t, red, sel, opts, func(s string) string { return s })
			if strings.Join(want, "\n") != strings.Join(got, "\n") {
				t.Errorf("host %q: redaction changed the findings:\n--- original (identifiers mapped)\n%s\n--- redacted\n%s",
					hostname, strings.Join(want, "\n"), strings.Join(got, "\n"))
			}
		})
	}
}

// innerWord picks, from short words the redactor must not take for the hostname inside others,
// one that the fixture holds inside a longer word (rotating, so that the fixtures share them).
func innerWord(data []byte, i int) string {
	words := []string{"vm", "rx", "e", "mlx", "ib"}
	for k := range words {
		w := words[(i+k)%len(words)]
		if regexp.MustCompile(`[A-Za-z0-9_]` + w + `|` + w + `[A-Za-z0-9_]`).Match(data) {
			return w
		}
	}
	return words[i%len(words)]
}

// setHostname makes an unpacked snapshot's host the given name, where a recording says it.
func setHostname(t *testing.T, dir, name string) {
	t.Helper()
	p := filepath.Join(dir, FactsFile)
	if b, err := os.ReadFile(p); err == nil {
		var f map[string]json.RawMessage
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		f["hostname"], _ = json.Marshal(name)
		b, _ = json.Marshal(f)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hn := filepath.Join(dir, RootDir, "proc/sys/kernel/hostname")
	os.MkdirAll(filepath.Dir(hn), 0o755)
	if err := os.WriteFile(hn, []byte(name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fixtureOptions reads the options of a fixture's args file that change what the checks read;
// the option files (--policy, --matrix) are the command's to decode and are left out.
func fixtureOptions(t *testing.T, dir string) checks.Options {
	var o checks.Options
	b, err := os.ReadFile(filepath.Join(dir, "args"))
	if err != nil {
		return o
	}
	f := strings.Fields(regexp.MustCompile(`(?m)#.*$`).ReplaceAllString(string(b), ""))
	for k := 0; k < len(f); k++ {
		switch f[k] {
		case "--raw-contexts":
			o.RawContexts = true
		case "--wr-concurrency":
			if k+1 < len(f) {
				o.WRConcurrency, _ = strconv.Atoi(f[k+1])
			}
		case "--expect-rate":
			if k+1 < len(f) {
				o.ExpectRate, _ = strconv.ParseFloat(f[k+1], 64)
			}
		}
	}
	return o
}

// findings runs the checks on an unpacked snapshot and returns one line per finding: check,
// severity and subject, the subject passed through mapID.
func findings(t *testing.T, dir string, sel []checks.Check, opts checks.Options, mapID func(string) string) []string {
	t.Helper()
	h, err := openDir(dir, dir)
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, opts)
	env.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	env.Sleep = func(context.Context, time.Duration) error { return nil }
	var out []string
	for _, f := range checks.Run(context.Background(), env, sel, 2) {
		out = append(out, fmt.Sprintf("%s %s %s %s", f.CheckID, f.Severity, f.Subject.Kind, mapID(f.Subject.Name)))
	}
	sort.Strings(out)
	return out
}
