package main

import (
	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/internal/checks/firmware"
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
