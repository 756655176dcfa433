// Package slowtest gates the tests that write a whole fixture again (a recording of it, an
// unpack of what was recorded or redacted): writing a tree of files costs ten to a hundred times
// what judging it does, so over every fixture these tests alone took minutes. `make test` runs
// them on Sample; `make test-slow` (RDMADIAG_SLOW=1, run by CI after make test) on every fixture.
package slowtest

import (
	"os"
	"slices"
	"testing"
)

// Env set to 1 runs the gated tests on every fixture.
const Env = "RDMADIAG_SLOW"

// Sample is the fixtures (directory names under fixtures/sysfs) the gated tests take without
// Env. Together they hold every part of a snapshot: netlink QP/CQ dumps and raw contexts
// (cq-raw-mlx5), devlink (fw-devlink), ethtool netlink with module pages (port-xcvr-cmis), a
// recording by an ordinary user, without the kernel log (unprivileged), an option file
// (fw-drift, --policy), a lab recording with read errors (port-down), and trees built from real
// captures with and without netlink replies.
var Sample = []string{
	"port-down", "cq-raw-mlx5", "fw-devlink", "port-xcvr-cmis", "unprivileged",
	"fw-drift", "real-tree-ksmbd-mainline", "real-rp-ext-129-cx4lx-probe-fail",
}

// All says whether the gated tests run on every fixture.
func All() bool { return os.Getenv(Env) == "1" }

// Pick returns every item with Env=1, else the items whose name is in Sample, in their order.
// A name of Sample that no item has fails t, so that the sample stays what its comment says.
func Pick[T any](t testing.TB, items []T, name func(T) string) []T {
	t.Helper()
	if All() {
		return items
	}
	var out []T
	for _, it := range items {
		if slices.Contains(Sample, name(it)) {
			out = append(out, it)
		}
	}
	if len(out) != len(Sample) {
		t.Fatalf("slowtest.Sample names %d fixtures, %d of them found: %v", len(Sample), len(out), Sample)
	}
	t.Logf("%d of %d fixtures; %s=1 (make test-slow) runs every one", len(out), len(items), Env)
	return out
}
