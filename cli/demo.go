package cli

import "github.com/rdmadiag/rdmadiag/fixtures"

// demoSnapshot returns the embedded demo snapshot and a file name for it.
func demoSnapshot() (string, []byte) { return fixtures.Demo() }
