package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

// complete runs the shell completion request the bash, zsh and fish scripts make and returns the
// candidates and the directive line.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	out, errs, code := run(t, append([]string{"__complete"}, args...)...)
	if code != 0 {
		t.Fatalf("__complete %q: exit %d, %s", args, code, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// The shells complete the values of --format, --npd-threshold, --only and --skip, and offer no
// file names for them.
func TestFlagValuesComplete(t *testing.T) {
	var ids []string
	for _, c := range checks.Default.All() {
		ids = append(ids, c.ID)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"check", "--format", ""}, render.Formats()},
		{[]string{"demo", "--format", ""}, render.Formats()},
		{[]string{"list", "--format", ""}, []string{"table", "json"}},
		{[]string{"fleet", "--format", ""}, []string{"table", "json"}},
		{[]string{"inventory", "--format", ""}, []string{"table", "json"}},
		{[]string{"check", "--npd-threshold", ""}, []string{"critical", "warning"}},
		{[]string{"check", "--only", ""}, append(slices.Clone(report.Layers), ids...)},
		{[]string{"check", "--skip", ""}, append(slices.Clone(report.Layers), ids...)},
	} {
		got, directive := complete(t, c.args...)
		slices.Sort(got)
		want := slices.Sorted(slices.Values(c.want))
		if !slices.Equal(got, want) {
			t.Errorf("%q: %q, want %q", c.args, got, want)
		}
		// cobra.ShellCompDirectiveNoFileComp is 4, NoSpace 2.
		if directive != ":4" && directive != ":6" {
			t.Errorf("%q: directive %s offers file names", c.args, directive)
		}
	}
	// A comma-separated list is extended, not replaced, and a term is not offered twice.
	got, _ := complete(t, "check", "--only", "pcie,driver,dri")
	if len(got) == 0 || !slices.Contains(got, "pcie,driver,driver.modules") || slices.Contains(got, "pcie,driver,driver") {
		t.Errorf("--only pcie,driver,dri: %q", got)
	}
	for _, g := range got {
		if !strings.HasPrefix(g, "pcie,driver,driver.") {
			t.Errorf("--only pcie,driver,dri offers %q", g)
		}
	}
}
