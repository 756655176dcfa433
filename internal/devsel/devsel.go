// Package devsel decides which RDMA devices a run judges: the operator excludes a management
// NIC, a restricted PF or a lab card by device name, PCI address or netdev (globs), in the
// policy or on the command line, and may include one of them again for a run.
package devsel

import (
	"fmt"
	"path"
)

// Rule is one glob and where it was given ("--exclude", "policy fleet.json devices.exclude[0]").
type Rule struct {
	Glob string
	From string
}

func (r Rule) String() string { return fmt.Sprintf("%s %q", r.From, r.Glob) }

// Selector holds the exclusions and the inclusions that override them.
type Selector struct {
	Exclude []Rule
	Include []Rule
}

// Empty reports whether the selector excludes nothing.
func (s *Selector) Empty() bool { return s == nil || len(s.Exclude) == 0 }

// Valid reports whether a glob is one path.Match accepts, for validating option files and flags
// before the run.
func Valid(glob string) error {
	if glob == "" {
		return fmt.Errorf("empty name or glob")
	}
	if _, err := path.Match(glob, ""); err != nil {
		return fmt.Errorf("%q is not a glob (*, ?, [a-z]): %w", glob, err)
	}
	return nil
}

// Excluded says whether a device known by these names (device, PCI address, netdevs) is left
// out, and by which rule. A device an inclusion matches is never excluded.
func (s *Selector) Excluded(names ...string) (Rule, bool) {
	if s.Empty() {
		return Rule{}, false
	}
	if _, ok := match(s.Include, names); ok {
		return Rule{}, false
	}
	return match(s.Exclude, names)
}

func match(rules []Rule, names []string) (Rule, bool) {
	for _, r := range rules {
		for _, n := range names {
			if n == "" {
				continue
			}
			if ok, _ := path.Match(r.Glob, n); ok {
				return r, true
			}
		}
	}
	return Rule{}, false
}
