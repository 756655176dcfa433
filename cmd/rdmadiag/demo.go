package main

import (
	"strings"

	"github.com/rdmadiag/rdmadiag/fixtures"
)

// demoSnapshot returns the embedded demo snapshot and a file name for it.
func demoSnapshot() (string, []byte) {
	name, b, err := fixtures.Snapshot(fixtures.DemoScenario)
	if err != nil {
		// The embed pattern and the fixtures test guarantee the file; reaching this is a build defect.
		panic(err)
	}
	return fixtures.DemoScenario + strings.TrimPrefix(name, "snapshot"), b
}
