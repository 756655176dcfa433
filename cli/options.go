package cli

import (
	"fmt"
	"path/filepath"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/firmware"
	"github.com/rdmadiag/rdmadiag/internal/devsel"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
)

// loadOptionFiles decodes --policy, --matrix and --wr-profile into o, once and before the host
// is opened: a file the operator wrote wrongly is a usage error (exit 64) naming the flag, the
// file and the key, never an unknown finding that could hide a critical one. The formats are in
// docs/options.md.
func loadOptionFiles(o *checks.Options) error {
	var err error
	if o.PolicyFile != "" {
		if o.Policy, err = optfile.LoadPolicy(o.PolicyFile); err != nil {
			return usageErr("--policy: %w", err)
		}
	}
	if o.MatrixFile != "" {
		if o.MatrixAdditions, err = optfile.LoadMatrix(o.MatrixFile, firmware.KnownFamily); err != nil {
			return usageErr("--matrix: %w", err)
		}
	}
	if o.WRProfileFile != "" {
		if o.WRProfile, err = optfile.LoadWRProfile(o.WRProfileFile); err != nil {
			return usageErr("--wr-profile: %w", err)
		}
	}
	return nil
}

// selectDevices builds the run's device selection from the policy's devices.exclude and the
// --exclude and --include flags, refusing a name that is no glob before the host is opened.
func (f *checkFlags) selectDevices() error {
	sel := &devsel.Selector{}
	if p := f.opts.Policy; p != nil && p.Devices != nil {
		for i, g := range p.Devices.Exclude {
			sel.Exclude = append(sel.Exclude, devsel.Rule{Glob: g, From: fmt.Sprintf("policy %s devices.exclude[%d]", filepath.Base(f.opts.PolicyFile), i)})
		}
	}
	for _, fl := range []struct {
		name  string
		globs []string
		to    *[]devsel.Rule
	}{{"--exclude", f.exclude, &sel.Exclude}, {"--include", f.include, &sel.Include}} {
		for _, g := range fl.globs {
			if err := devsel.Valid(g); err != nil {
				return usageErr("%s: %v", fl.name, err)
			}
			*fl.to = append(*fl.to, devsel.Rule{Glob: g, From: fl.name})
		}
	}
	if !sel.Empty() {
		f.opts.Select = sel
	}
	return nil
}
