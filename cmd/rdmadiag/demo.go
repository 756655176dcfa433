package main

import "github.com/rdmadiag/rdmadiag/fixtures"

// demoSnapshot returns the embedded demo snapshot and a file name for it.
func demoSnapshot() (string, []byte) {
	b, err := fixtures.Snapshot(fixtures.DemoScenario)
	if err != nil {
		// The embed pattern guarantees the file at build time; reaching this is a build defect.
		panic(err)
	}
	return fixtures.DemoScenario + ".tar.gz", b
}
