package pcie

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// A dual-port ConnectX-6 Dx: each 100 Gb/s port is its own PF, both on one Gen3 x16 link
// (~126 Gb/s). Each port alone fits; together they need 200 Gb/s, so both PFs warn.
func TestDualPFSharedLink(t *testing.T) {
	fs := checktest.Run(t, "pcie-dual-pf-shared", checks.Options{}, "pcie")
	for _, tc := range []struct{ bdf, dev, sib, sibPort string }{
		{"0000:3b:00.0", "mlx5_0", "0000:3b:00.1 (mlx5_1)", "port mlx5_1/1"},
		{"0000:3b:00.1", "mlx5_1", "0000:3b:00.0 (mlx5_0)", "port mlx5_0/1"},
	} {
		bw := checktest.One(t, fs, "pcie.bandwidth", tc.bdf)
		checktest.WantSeverity(t, bw, report.Warning)
		if bw.Subject.Device != tc.dev || bw.Subject.PCI != tc.bdf {
			t.Errorf("%s: subject %+v", tc.bdf, bw.Subject)
		}
		checktest.WantEvidence(t, bw, "usable PCIe bandwidth", "126.0 Gb/s (8 GT/s x16 at 0000:3a:00.0)")
		checktest.WantEvidence(t, bw, "shares the PCIe link with", tc.sib)
		checktest.WantEvidence(t, bw, tc.sibPort, "ACTIVE at 100 Gb/s")
		checktest.WantEvidence(t, bw, "active port demand", "200 Gb/s on the shared link (100 Gb/s on 0000:3b:00.0 + 100 Gb/s on 0000:3b:00.1)")
		if !strings.Contains(bw.Summary, "shares with "+tc.sib) || !strings.Contains(bw.Remediation, "Gen4 x16") {
			t.Errorf("%s: the warning must name the sibling and the link both ports need: %q / %q", tc.bdf, bw.Summary, bw.Remediation)
		}
		link := checktest.One(t, fs, "pcie.link", tc.bdf)
		checktest.WantSeverity(t, link, report.Warning)
		if !strings.Contains(link.Summary, "slot limits the card") {
			t.Errorf("%s: link %q", tc.bdf, link.Summary)
		}
		// One link, one problem: every finding about it carries the link's identity, its
		// downstream port.
		for _, x := range []engine.Finding{bw, link} {
			if strings.Join(x.Events, ",") != "pcie-link:0000:3a:00.0" {
				t.Errorf("%s %s: events %v", x.CheckID, tc.bdf, x.Events)
			}
		}
	}
	// ...which the report makes one root cause.
	r := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	if len(r.Summary.RootCauses) != 1 {
		t.Errorf("one shared link, root causes %v", r.Summary.RootCauses)
	}
}

// The same card with only one PF registered (the second function dropped from the fixture):
// one 100 Gb/s port on a ~126 Gb/s link is fine, and nothing claims a sibling.
func TestSinglePFOfDualCard(t *testing.T) {
	b, err := os.ReadFile(checktest.Fixture(t, "pcie-dual-pf-shared"))
	if err != nil {
		t.Fatal(err)
	}
	a := txtar.Parse(b)
	var kept []txtar.File
	for _, f := range a.Files {
		if !strings.Contains(f.Name, "0000:3b:00.1") && !strings.Contains(f.Name, "mlx5_1") &&
			!strings.Contains(f.Name, "ens1f1np1") && !strings.Contains(f.Name, "uverbs1") {
			kept = append(kept, f)
		}
	}
	if len(kept) == len(a.Files) {
		t.Fatal("the variant dropped nothing: the fixture no longer has a second PF")
	}
	a.Files = kept
	p := filepath.Join(t.TempDir(), "single-pf.txtar")
	if err := os.WriteFile(p, txtar.Format(a), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, p, checks.Options{}, "pcie.bandwidth")
	if got := checktest.Find(fs, "pcie.bandwidth", "0000:3b:00.1"); len(got) != 0 {
		t.Fatalf("the dropped PF is still judged: %+v", got)
	}
	bw := checktest.One(t, fs, "pcie.bandwidth", "0000:3b:00.0")
	checktest.WantSeverity(t, bw, report.OK)
	checktest.WantEvidence(t, bw, "usable PCIe bandwidth", "126.0 Gb/s")
	checktest.WantEvidence(t, bw, "active port demand", "100 Gb/s")
	if v, _ := checktest.Evidence(bw, "active port demand"); v != "100 Gb/s" {
		t.Errorf("single function: demand %q, want its own ports only", v)
	}
	if _, ok := checktest.Evidence(bw, "shares the PCIe link with"); ok {
		t.Errorf("single function claims a sibling: %+v", bw.Evidence)
	}
}

func TestSharedLinks(t *testing.T) {
	for _, tc := range []struct {
		name string
		bdfs []string
		vf   []bool
		want [][]int
	}{
		{"dual PF", []string{"0000:3b:00.0", "0000:3b:00.1"}, []bool{false, false}, [][]int{{1}, {0}}},
		{"single PF", []string{"0000:3b:00.0"}, []bool{false}, [][]int{nil}},
		// A VF's traffic counts through its PF: it is nobody's sibling.
		{"VF beside PFs", []string{"0000:3b:00.0", "0000:3b:00.1", "0000:3b:00.2"}, []bool{false, false, true}, [][]int{{1}, {0}, nil}},
		{"other device on the bus", []string{"0000:00:02.0", "0000:00:03.0"}, []bool{false, false}, [][]int{nil, nil}},
		{"other bus", []string{"0000:3b:00.0", "0000:5e:00.0"}, []bool{false, false}, [][]int{nil, nil}},
		{"other domain", []string{"0000:3b:00.0", "0001:3b:00.1"}, []bool{false, false}, [][]int{nil, nil}},
		{"four functions", []string{"0000:3b:00.0", "0000:3b:00.1", "0000:3b:00.2", "0000:3b:00.3"}, []bool{false, false, false, false},
			[][]int{{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}}},
		{"no function number", []string{"eth0", "eth1"}, []bool{false, false}, [][]int{nil, nil}},
	} {
		if got := sharedLinks(tc.bdfs, tc.vf); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: sharedLinks = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestJudgeBandwidthShared(t *testing.T) {
	mk := func(bdf, dev string, usable float64, ports ...float64) *measured {
		m := &measured{t: &target{BDF: bdf, Nodes: []node{{BDF: bdf, Dir: "/sys/devices/pci0000:3a/0000:3a:00.0/" + bdf}},
			Devices: []*inventory.Device{{Name: dev}}}}
		m.b = Budget{BDF: bdf, UsableGbps: usable, Limit: "8 GT/s x16 at 0000:3a:00.0"}
		for _, p := range ports {
			m.b.PortGbps += p
			m.b.MaxPortGbps = max(m.b.MaxPortGbps, p)
			m.b.Ports = append(m.b.Ports, report.Ev("port "+dev+"/1", "ACTIVE", ""))
		}
		return m
	}
	unreadable := mk("0000:3b:00.1", "mlx5_1", 126)
	unreadable.portErrs = []error{errors.New("/sys/class/infiniband/mlx5_1/ports/1/rate: permission denied")}
	for _, tc := range []struct {
		name    string
		m       *measured
		sibs    []*measured
		sev     report.Severity
		summary string
	}{
		{"both fit", mk("0000:3b:00.0", "mlx5_0", 126, 50), []*measured{mk("0000:3b:00.1", "mlx5_1", 126, 50)}, report.OK, "shares with 0000:3b:00.1 (mlx5_1)"},
		{"together too much", mk("0000:3b:00.0", "mlx5_0", 126, 100), []*measured{mk("0000:3b:00.1", "mlx5_1", 126, 100)}, report.Warning, "200 Gb/s"},
		// One port alone faster than the link stays critical, sibling or not.
		{"own port too fast", mk("0000:3b:00.0", "mlx5_0", 126, 200), []*measured{mk("0000:3b:00.1", "mlx5_1", 126, 100)}, report.Critical, "a port runs at 200 Gb/s"},
		// The sibling's port is too fast: the sibling's finding is critical, this one warns.
		{"sibling port too fast", mk("0000:3b:00.0", "mlx5_0", 126, 25), []*measured{mk("0000:3b:00.1", "mlx5_1", 126, 200)}, report.Warning, "225 Gb/s"},
		{"sibling down", mk("0000:3b:00.0", "mlx5_0", 126, 100), []*measured{mk("0000:3b:00.1", "mlx5_1", 126)}, report.OK, "100 Gb/s"},
		{"own ports down", mk("0000:3b:00.0", "mlx5_0", 126), []*measured{mk("0000:3b:00.1", "mlx5_1", 126, 100)}, report.Info, "no active port"},
		// Its own 100 fits, but the sibling's demand is unread: healthy would be a guess.
		{"sibling unreadable", mk("0000:3b:00.0", "mlx5_0", 126, 100), []*measured{unreadable}, report.Unknown, "could not be read"},
		// Already over budget with what could be read: the warning stands.
		{"sibling partly unreadable, over", mk("0000:3b:00.0", "mlx5_0", 126, 100), []*measured{func() *measured {
			s := mk("0000:3b:00.1", "mlx5_1", 126, 100)
			s.portErrs = unreadable.portErrs
			return s
		}()}, report.Warning, "200 Gb/s"},
		{"no sibling", mk("0000:3b:00.0", "mlx5_0", 126, 100), nil, report.OK, "covers the 100 Gb/s of the active ports"},
	} {
		f := judgeBandwidth(tc.m, tc.sibs)
		if f.Severity != tc.sev || !strings.Contains(f.Summary, tc.summary) {
			t.Errorf("%s: %v %q; want %v containing %q", tc.name, f.Severity, f.Summary, tc.sev, tc.summary)
		}
		_, shared := checktest.Evidence(f, "shares the PCIe link with")
		if shared != (len(tc.sibs) > 0) {
			t.Errorf("%s: sibling evidence present=%v with %d siblings", tc.name, shared, len(tc.sibs))
		}
	}
}
