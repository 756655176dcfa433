package port

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestParsePolicy(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *Policy // nil with wantErr "" = no ports section
		wantErr  string  // substring of the error; every error names the file
	}{
		{"full", `{"ports":{"expect_rate_gbps":400,"by_board_id":{"MT_0000000838":400,"MT_0000000359":200},"link_layer":"InfiniBand"}}`,
			&Policy{ExpectRateGbps: 400, ByBoardID: map[string]float64{"MT_0000000838": 400, "MT_0000000359": 200}, LinkLayer: "InfiniBand"}, ""},
		{"other layers' sections are left to them", `{"firmware":{"allowed_psids":["X"]},"qp":{"anything":1},"ports":{"expect_rate_gbps":2.5}}`,
			&Policy{ExpectRateGbps: 2.5}, ""},
		{"no ports section", `{"firmware":{"allowed_psids":["X"]}}`, nil, ""},
		{"link layer spelt loosely", `{"ports":{"link_layer":"ethernet"}}`, &Policy{LinkLayer: "Ethernet"}, ""},
		{"empty ports section", `{"ports":{}}`, &Policy{}, ""},
		{"unknown key", `{"ports":{"expect_rate":400}}`, nil, `unknown field "expect_rate"`},
		{"unknown key in a typo'd casing", `{"ports":{"Link_Layers":"InfiniBand"}}`, nil, "unknown field"},
		{"ports not an object", `{"ports":400}`, nil, "want an object"},
		{"ports null", `{"ports":null}`, nil, "want an object"},
		{"rate as a string", `{"ports":{"expect_rate_gbps":"400"}}`, nil, "expect_rate_gbps"},
		{"negative rate", `{"ports":{"expect_rate_gbps":-1}}`, nil, "not a port rate"},
		{"rate in Mb/s", `{"ports":{"expect_rate_gbps":400000}}`, nil, "not a port rate"},
		{"zero board rate", `{"ports":{"by_board_id":{"MT_1":0}}}`, nil, `by_board_id["MT_1"]`},
		{"empty board id", `{"ports":{"by_board_id":{"":400}}}`, nil, "empty board id"},
		{"bad link layer", `{"ports":{"link_layer":"OmniPath"}}`, nil, "neither InfiniBand nor Ethernet"},
		{"not an object at all", `[]`, nil, "cannot unmarshal"},
		{"not JSON", `ports: 400`, nil, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePolicy([]byte(tc.in), "/etc/fleet.json")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "/etc/fleet.json") {
					t.Fatalf("error %v, want one naming /etc/fleet.json and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if got.ExpectRateGbps != tc.want.ExpectRateGbps || got.LinkLayer != tc.want.LinkLayer || len(got.ByBoardID) != len(tc.want.ByBoardID) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for k, v := range tc.want.ByBoardID {
				if got.ByBoardID[k] != v {
					t.Errorf("by_board_id[%s] = %g, want %g", k, got.ByBoardID[k], v)
				}
			}
		})
	}
}

func FuzzParsePolicy(f *testing.F) {
	f.Add([]byte(`{"ports":{"expect_rate_gbps":400,"by_board_id":{"MT_0000000838":400},"link_layer":"InfiniBand"}}`))
	f.Add([]byte(`{"ports":{"by_board_id":{"":1e308}}}`))
	f.Add([]byte(`{"ports":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b, "p.json")
		if err != nil || p == nil {
			return
		}
		// Whatever was accepted is usable: rates in range, link layer spelt as the kernel does.
		if p.ExpectRateGbps < 0 || p.ExpectRateGbps > maxRateGbps {
			t.Errorf("accepted rate %g", p.ExpectRateGbps)
		}
		for _, v := range p.ByBoardID {
			if v <= 0 || v > maxRateGbps {
				t.Errorf("accepted board rate %g", v)
			}
		}
		if p.LinkLayer != "" && p.LinkLayer != "InfiniBand" && p.LinkLayer != "Ethernet" {
			t.Errorf("accepted link layer %q", p.LinkLayer)
		}
	})
}

func TestExpectedRatePrecedence(t *testing.T) {
	p := &Policy{ExpectRateGbps: 400, ByBoardID: map[string]float64{"MT_S": 200}}
	for _, tc := range []struct {
		flag  float64
		pol   *Policy
		board string
		want  float64
		src   string
	}{
		{800, p, "MT_S", 800, "--expect-rate"}, // the command line wins
		{0, p, "MT_S", 200, "ports.by_board_id[MT_S]"},
		{0, p, "MT_OTHER", 400, "ports.expect_rate_gbps"},
		{0, p, "", 400, "ports.expect_rate_gbps"},
		{0, &Policy{ByBoardID: map[string]float64{"MT_S": 200}}, "MT_OTHER", 0, ""},
		{0, nil, "MT_S", 0, ""},
	} {
		got := expectedRate(checks.Options{ExpectRate: tc.flag, PolicyFile: "fleet.json"}, tc.pol, tc.board)
		if got.gbps != tc.want || !strings.Contains(got.source, tc.src) {
			t.Errorf("flag %g board %q: %+v, want %g from %q", tc.flag, tc.board, got, tc.want, tc.src)
		}
	}
}

func writePolicy(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fleet.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPolicyOnFixture runs the port checks with a policy on the ConnectX-7 IB host: the PSID's
// rate applies, the command line overrides it, the link layer is held to the policy, and a bad
// policy makes the checks unknown with the file named.
func TestPolicyOnFixture(t *testing.T) {
	pol := writePolicy(t, `{"firmware":{"allowed_psids":["MT_0000000838"]},"ports":{"expect_rate_gbps":100,"by_board_id":{"MT_0000000838":800},"link_layer":"InfiniBand"}}`)
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{PolicyFile: pol}, "port.rate", "port.state")
	f := checktest.One(t, fs, "port.rate", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "expected rate", "400 Gb/s")
	if !strings.Contains(f.Summary, "below the expected 800 Gb/s") || !strings.Contains(f.Summary, "by_board_id[MT_0000000838]") {
		t.Errorf("summary %q does not name the policy's board rate", f.Summary)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), report.OK)
	checktest.WantEvidence(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), "policy link_layer", "InfiniBand")

	fs = checktest.Run(t, "port-cx7-ib", checks.Options{PolicyFile: pol, ExpectRate: 400}, "port.rate")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), report.OK)
	checktest.WantEvidence(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), "expected rate", "400 Gb/s")

	eth := writePolicy(t, `{"ports":{"link_layer":"Ethernet"}}`)
	fs = checktest.Run(t, "port-cx7-ib", checks.Options{PolicyFile: eth}, "port.state")
	f = checktest.One(t, fs, "port.state", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	if !strings.Contains(f.Summary, "runs InfiniBand but the fleet policy expects Ethernet") || !strings.Contains(f.Remediation, "LINK_TYPE_P1=2") {
		t.Errorf("link layer mismatch: %q / %q", f.Summary, f.Remediation)
	}
	// mlx5_2/1 was already critical (INIT): both reasons stay in the summary.
	if f := checktest.One(t, fs, "port.state", "mlx5_2/1"); !strings.Contains(f.Summary, "also:") {
		t.Errorf("mlx5_2/1: %q", f.Summary)
	}

	bad := writePolicy(t, `{"ports":{"expect_rate":400}}`)
	fs = checktest.Run(t, "port-cx7-ib", checks.Options{PolicyFile: bad}, "port.rate", "port.state")
	for _, id := range []string{"port.rate", "port.state"} {
		f := checktest.One(t, fs, id, "")
		checktest.WantSeverity(t, f, report.Unknown)
		if !strings.Contains(f.Summary, bad) || !strings.Contains(f.Summary, "expect_rate") {
			t.Errorf("%s: %q does not name the file and the key", id, f.Summary)
		}
	}
}
