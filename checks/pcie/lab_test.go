package pcie

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
)

// labFixture returns a scenario recorded in the QEMU lab (lab/fixtures.sh), skipping the test
// until the recorded snapshot is committed. The same assertions were run on snapshots recorded
// by hand in the lab (lab/vm.sh -s aer|pcie-degraded, then rdmadiag record).
func labFixture(t *testing.T, scenario string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "fixtures", "sysfs", scenario, "snapshot.txtar")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("lab fixture %s not recorded yet (%v)", scenario, err)
	}
	return p
}

// pcie-degraded: QEMU's root port 0000:00:02.0 advertises 16 GT/s x32 while the virtio endpoint
// behind it (eth0, under rxe0) can do only 2.5 GT/s x1: the card sets the link, which is healthy.
func TestLabPCIeDegraded(t *testing.T) {
	fs := checktest.Run(t, labFixture(t, "pcie-degraded"), checks.Options{}, "pcie")
	link := checktest.One(t, fs, "pcie.link", "0000:01:00.0")
	checktest.WantSeverity(t, link, report.OK)
	checktest.WantEvidence(t, link, "judged as", "netdev eth0 under software device rxe0")
	checktest.WantEvidence(t, link, "link at 0000:00:02.0 (root port)", "trained 2.5 GT/s x1")
	checktest.WantEvidence(t, link, "config space at 0000:00:02.0", "LnkCap 16 GT/s x32")
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", "0000:00:02.0"), report.OK)
	// virtio-net reports speed -1, so rxe's "2.5 Gb/sec (1X SDR)" is a placeholder: nothing to compare.
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.bandwidth", "0000:01:00.0"), report.Info)
}

// aer: one uncorrectable non-fatal (Completion Timeout, injected through the QEMU monitor) and
// one correctable (BadTLP, aer_inject) error on the root port.
func TestLabAER(t *testing.T) {
	fs := checktest.Run(t, labFixture(t, "aer"), checks.Options{}, "pcie")
	rp := checktest.One(t, fs, "pcie.aer", "0000:00:02.0")
	checktest.WantSeverity(t, rp, report.Critical)
	checktest.WantEvidence(t, rp, "non-fatal errors", "CmpltTO=1")
	checktest.WantEvidence(t, rp, "correctable errors", "BadTLP=1")
	checktest.WantEvidence(t, rp, "kernel log", "PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer")
	// The endpoint has no AER capability; its failed recovery is in the log.
	ep := checktest.One(t, fs, "pcie.aer", "0000:01:00.0")
	checktest.WantSeverity(t, ep, report.Warning)
	checktest.WantEvidence(t, ep, "kernel log", "can't recover")
	// QEMU's default root port reports LnkCap "Unknown"/255: the link is judged on the endpoint's side.
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.link", "0000:01:00.0"), report.OK)
}
