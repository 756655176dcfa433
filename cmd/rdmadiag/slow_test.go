package main

import (
	"os"
	"slices"
	"testing"
)

// SlowEnv, set to 1, makes the tests that write a whole fixture again (a recording, a snapshot
// unpacked from it) run on every fixture; `make test-slow` sets it and CI runs that target.
// Without it they run on sampleFixtures, so that `make test` stays a few minutes on two cores:
// writing a tree of files is what costs, ten to a hundred times judging it.
const SlowEnv = "RDMADIAG_SLOW"

// sampleFixtures cover every part of a snapshot a round trip carries: netlink QP/CQ dumps and
// raw contexts (cq-raw-mlx5), devlink (fw-devlink), ethtool netlink with module pages
// (port-xcvr-cmis), read errors and no kernel log (unprivileged), an option file (topo-missing-
// device), a lab recording (healthy) and trees built from real captures.
var sampleFixtures = []string{
	"healthy", "cq-raw-mlx5", "fw-devlink", "port-xcvr-cmis", "unprivileged",
	"topo-missing-device", "real-tree-ksmbd-mainline", "real-rp-ext-129-cx4lx-probe-fail",
}

// slowScenarios is every scenario with RDMADIAG_SLOW=1, the sample otherwise; a sample fixture
// that no longer exists fails the test, so that the sample stays what its comment says.
func slowScenarios(t *testing.T) []scenario {
	t.Helper()
	all := scenarios(t)
	if os.Getenv(SlowEnv) == "1" {
		return all
	}
	var out []scenario
	for _, s := range all {
		if slices.Contains(sampleFixtures, s.name) {
			out = append(out, s)
		}
	}
	if len(out) != len(sampleFixtures) {
		t.Fatalf("the sample names %d fixtures, %d exist: %v", len(sampleFixtures), len(out), sampleFixtures)
	}
	t.Logf("%d of %d fixtures; %s=1 (make test-slow) runs every one", len(out), len(all), SlowEnv)
	return out
}
