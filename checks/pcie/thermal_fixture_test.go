package pcie_test

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestThermalFixtures(t *testing.T) {
	hot := checktest.Run(t, checktest.Fixture(t, "pcie-nic-hot"), checks.Options{}, "pcie.thermal")
	f := checktest.One(t, hot, "pcie.thermal", "0000:3b:00.0")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "mlx5 sensor0", "107 °C (crit 105 °C, highest 108 °C)")
	checktest.WantEvidence(t, f, "mlx5 sensor64", "46 °C")
	if f.Remediation == "" {
		t.Error("a critical temperature has no fix")
	}

	// The same card on 6.1 has no hwmon: skipped, not unknown, and not a limit --strict counts.
	cold := checktest.Run(t, checktest.Fixture(t, "fw-inbox-cx6dx"), checks.Options{}, "pcie.thermal")
	g := checktest.One(t, cold, "pcie.thermal", "0000:3b:00.0")
	checktest.WantSeverity(t, g, report.Skipped)
	if g.Limit != nil {
		t.Errorf("no hwmon is reported as limit %+v", g.Limit)
	}
}
