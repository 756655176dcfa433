package all

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/report"
)

// Every fault id a check, a log signature or a fault-table link names must be a row of the fault
// table, and every check pattern of the table must match a registered check: a typo would
// silently drop a causal link or file a finding under no row.
func TestFaultIDsExist(t *testing.T) {
	faults := report.DefaultFaults()
	cs := checks.Default.All()
	for _, c := range cs {
		if _, ok := faults.Row(c.Fault); !ok {
			t.Errorf("check %s: fault %q is not a row of report/faults.json", c.ID, c.Fault)
		}
	}
	for _, r := range faults.Rows {
		for _, e := range r.Explains {
			g, ok := strings.CutPrefix(e, "check:")
			if !ok {
				continue
			}
			matched := false
			for _, c := range cs {
				if m, _ := path.Match(g, c.ID); m {
					matched = true
				}
			}
			if !matched {
				t.Errorf("row %s explains %q, which matches no registered check", r.ID, e)
			}
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
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			found++
			if _, ok := faults.Row(m[1]); !ok {
				t.Errorf("%s: fault %q is not a row of report/faults.json", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The scan must see the checks' literals (the kernel-log signatures alone name dozens).
	if found < 30 {
		t.Errorf("found only %d fault literals: the scan no longer sees the checks", found)
	}
}
