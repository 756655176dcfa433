package all

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Every fault id a check, a log signature or a fault-table link names must be a row of the fault
// table, every check pattern of the table must match a registered check, and every observation
// must be one a registered check states: a typo would silently drop a causal link or file a
// finding under no row.
func TestFaultIDsExist(t *testing.T) {
	faults := engine.DefaultFaults()
	cs := checks.Default.All()
	for _, c := range cs {
		if _, ok := faults.Row(c.Fault); !ok {
			t.Errorf("check %s: fault %q is not a row of report/engine/faults.json", c.ID, c.Fault)
		}
	}
	matchesCheck := func(where string, l engine.Link) {
		if l.Check == "" {
			return
		}
		for _, c := range cs {
			if m, _ := path.Match(l.Check, c.ID); m {
				return
			}
		}
		t.Errorf("%s: %s matches no registered check", where, l)
	}
	for _, r := range faults.Rows {
		for _, l := range faults.Explains(r.ID) {
			matchesCheck("row "+r.ID+" explains", l)
		}
	}
	registered := map[string]bool{}
	for _, c := range cs {
		registered[c.ID] = true
	}
	observations := map[string]bool{}
	for _, o := range faults.Observations() {
		observations[`"`+o.Observation+`"`] = false
		if !registered[o.Check] {
			t.Errorf("observation %s/%s: no such check", o.Check, o.Observation)
		}
		for _, l := range append(append([]engine.Link(nil), o.Explains...), o.ExplainedBy...) {
			matchesCheck("observation "+o.Check+"/"+o.Observation, l)
		}
	}
	// Fault ids written as literals anywhere in the checks (Fault: "x", fault: "x", .Fault = "x").
	lit := regexp.MustCompile(`(?:\b[Ff]ault:\s*|\.Fault\s*=\s*)"([^"]*)"`)
	root := filepath.Join("..")
	found := 0
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for o := range observations {
			if strings.Contains(string(b), o) {
				observations[o] = true
			}
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			found++
			if _, ok := faults.Row(m[1]); !ok {
				t.Errorf("%s: fault %q is not a row of report/engine/faults.json", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// An observation of the table that no check states is a link that can never be made.
	for o, seen := range observations {
		if !seen {
			t.Errorf("observation %s of report/engine/faults.json is stated by no check", o)
		}
	}
	// The scan must see the checks' literals (the kernel-log signatures alone name dozens).
	if found < 30 {
		t.Errorf("found only %d fault literals: the scan no longer sees the checks", found)
	}
}
