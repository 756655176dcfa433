package port

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestExpectedRatePrecedence(t *testing.T) {
	p := &optfile.PortsPolicy{ExpectRateGbps: 400, ByBoardID: map[string]float64{"MT_S": 200}}
	for _, tc := range []struct {
		flag  float64
		pol   *optfile.PortsPolicy
		board string
		want  float64
		src   string
	}{
		{800, p, "MT_S", 800, "--expect-rate"}, // the command line wins
		{0, p, "MT_S", 200, "ports.by_board_id[MT_S]"},
		{0, p, "MT_OTHER", 400, "ports.expect_rate_gbps"},
		{0, p, "", 400, "ports.expect_rate_gbps"},
		{0, &optfile.PortsPolicy{ByBoardID: map[string]float64{"MT_S": 200}}, "MT_OTHER", 0, ""},
		{0, nil, "MT_S", 0, ""},
	} {
		got := expectedRate(checks.Options{ExpectRate: tc.flag, PolicyFile: "fleet.json"}, tc.pol, tc.board)
		if got.gbps != tc.want || !strings.Contains(got.source, tc.src) {
			t.Errorf("flag %g board %q: %+v, want %g from %q", tc.flag, tc.board, got, tc.want, tc.src)
		}
	}
}

// withPolicy is the options a run with --policy gets: the document decoded before the run.
func withPolicy(t *testing.T, doc string) checks.Options {
	t.Helper()
	p, err := optfile.DecodePolicy([]byte(doc), "fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	return checks.Options{Policy: p, PolicyFile: "fleet.json"}
}

// TestPolicyOnFixture runs the port checks with a policy on the ConnectX-7 IB host: the PSID's
// rate applies, the command line overrides it, the link layer is held to the policy, and a bad
// policy never reaches them (it is a usage error before the run, see cli).
func TestPolicyOnFixture(t *testing.T) {
	pol := withPolicy(t, `{"firmware":{"allowed_psids":["MT_0000000838"]},"ports":{"expect_rate_gbps":100,"by_board_id":{"MT_0000000838":800},"link_layer":"InfiniBand"}}`)
	fs := checktest.Run(t, "port-cx7-ib", pol, "port.rate", "port.state")
	f := checktest.One(t, fs, "port.rate", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "expected rate", "400 Gb/s")
	if !strings.Contains(f.Summary, "below the expected 800 Gb/s") || !strings.Contains(f.Summary, "policy fleet.json ports.by_board_id[MT_0000000838]") {
		t.Errorf("summary %q does not name the policy's board rate", f.Summary)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), report.OK)
	checktest.WantEvidence(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), "policy link_layer", "InfiniBand")

	pol.ExpectRate = 400
	fs = checktest.Run(t, "port-cx7-ib", pol, "port.rate")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), report.OK)
	checktest.WantEvidence(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), "expected rate", "400 Gb/s")

	fs = checktest.Run(t, "port-cx7-ib", withPolicy(t, `{"ports":{"link_layer":"Ethernet"}}`), "port.state")
	f = checktest.One(t, fs, "port.state", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	if !strings.Contains(f.Summary, "runs InfiniBand but the fleet policy expects Ethernet") || !strings.Contains(f.Remediation, "LINK_TYPE_P1=2") {
		t.Errorf("link layer mismatch: %q / %q", f.Summary, f.Remediation)
	}
	// mlx5_2/1 was already critical (INIT): both reasons stay in the summary.
	if f := checktest.One(t, fs, "port.state", "mlx5_2/1"); !strings.Contains(f.Summary, "also:") {
		t.Errorf("mlx5_2/1: %q", f.Summary)
	}
}
