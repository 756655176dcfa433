package cli

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/report"
)

// completeValues offers a fixed set of values for a flag, and nothing of the file system.
func completeValues(c *cobra.Command, flag string, values []string) {
	// Registration fails only for a flag that does not exist or a second registration, both
	// programming errors the completion test would show.
	_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// selectionTerms are what --only and --skip accept: the layers and every registered check id.
func (a *App) selectionTerms() []string {
	terms := slices.Clone(report.Layers)
	if a.Registry != nil {
		for _, c := range a.Registry.All() {
			terms = append(terms, c.ID)
		}
	}
	return terms
}

// completeSelection offers the layers and check ids for a comma-separated list flag: after
// "pcie,dri" it offers "pcie,driver", "pcie,driver.modules", ..., leaving out the terms already
// listed, so that each completion extends the list instead of replacing it.
func (a *App) completeSelection(c *cobra.Command, flag string) {
	_ = c.RegisterFlagCompletionFunc(flag, func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		done, last := "", toComplete
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			done, last = toComplete[:i+1], toComplete[i+1:]
		}
		given := strings.Split(done, ",")
		var out []string
		for _, t := range a.selectionTerms() {
			if strings.HasPrefix(t, last) && !slices.Contains(given, t) {
				out = append(out, done+t)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}
