package port

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func qosIEEE(pfc uint8, dscp bool) *dcbnl.IEEE {
	v := &dcbnl.IEEE{Ifname: "ens1f0np0", PFC: &dcbnl.PFC{Cap: 8, Enabled: pfc}, Apps: []dcbnl.App{}}
	if dscp {
		for d := uint16(0); d < 64; d++ {
			v.Apps = append(v.Apps, dcbnl.App{Selector: dcbnl.SelDSCP, Priority: uint8(d >> 3), Protocol: d})
		}
	}
	return v
}

func allECN(on bool) *ecnState {
	e := &ecnState{}
	for i := range e.np {
		e.np[i], e.rp[i] = on, on
	}
	return e
}

// Each rule of judgeRoCEQoS (NVIDIA's DSCP-based lossless RoCE configuration: PFC on the RoCE
// priority with ECN beside it; untagged frames carry no PCP).
func TestJudgeRoCEQoS(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sys/class/net/ens1f0np0"), 0o755); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Root: dir, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	p := portRef{dev: &inventory.Device{Name: "mlx5_0"}, port: &inventory.Port{Num: 1, LinkLayer: "Ethernet"}}
	noECN3 := allECN(true)
	noECN3.rp[3] = false
	pol := &optfile.Policy{Ports: &optfile.PortsPolicy{PFCPriorities: []int{3}, Trust: "dscp"}}
	for _, tc := range []struct {
		name    string
		ieee    *dcbnl.IEEE
		ecn     *ecnState
		policy  bool
		want    report.Severity
		summary string
	}{
		{"lossless, DSCP, ECN", qosIEEE(1<<3, true), allECN(true), true, report.OK, "PFC on priority 3, trust dscp, ECN on the PFC priorities"},
		{"lossy, ECN not exposed", qosIEEE(0, true), nil, false, report.OK, "runs lossy RoCE"},
		{"neither PFC nor ECN", qosIEEE(0, true), allECN(false), false, report.Warning, "neither PFC nor ECN"},
		{"PFC without ECN", qosIEEE(1<<3, true), noECN3, false, report.Warning, "PFC without ECN on priority 3"},
		{"PCP trust, untagged", qosIEEE(1<<3, false), nil, false, report.Warning, "carries no VLAN"},
		{"PFC off where the policy wants it", qosIEEE(0, true), nil, true, report.Critical, "PFC off on every priority, the fleet policy expects PFC on priority 3"},
		{"trust differs from the policy", qosIEEE(1<<3, false), nil, true, report.Critical, "the port trusts pcp, the fleet policy expects dscp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := checks.NewEnv(h, checks.Options{})
			if tc.policy {
				env.Opts = checks.Options{Policy: pol, PolicyFile: "p.json"}
			}
			f := engine.Finding{}
			judgeRoCEQoS(env, p, "ens1f0np0", tc.ieee, tc.ecn, &f)
			if f.Severity != tc.want || !strings.Contains(f.Summary, tc.summary) {
				t.Fatalf("%s %q; want %s containing %q", f.Severity, f.Summary, tc.want, tc.summary)
			}
			if f.Severity.Problem() && (f.Remediation == "" || f.Action != report.ActionFixConfiguration) {
				t.Errorf("fix %q, action %q", f.Remediation, f.Action)
			}
		})
	}
}

// The odd port of a kind of card is held to the majority; with two that differ, to the one that
// is sound on its own, else both are told.
func TestCompareRoCEQoS(t *testing.T) {
	pci := func(bdf string) *inventory.PCIFunction {
		return &inventory.PCIFunction{BDF: bdf, Vendor: 0x15b3, DeviceID: 0x101d}
	}
	mk := func(name, bdf string, v *dcbnl.IEEE, i int) qosPort {
		return qosPort{p: portRef{dev: &inventory.Device{Name: name, PCI: pci(bdf), BoardID: "MT_0000000359"}, port: &inventory.Port{Num: 1}}, ieee: v, idx: i}
	}
	lossless, lossy := qosIEEE(1<<3, true), qosIEEE(0, false)
	three := []qosPort{mk("mlx5_0", "0000:3b:00.0", lossless, 0), mk("mlx5_1", "0000:3b:00.1", lossless, 1), mk("mlx5_2", "0000:5e:00.0", lossy, 2)}
	out := make([]engine.Finding, 3)
	compareRoCEQoS(three, out)
	if out[0].Severity != report.OK || out[1].Severity != report.OK || out[2].Severity != report.Warning || !strings.Contains(out[2].Summary, "differ from those of 2 of the 3") {
		t.Errorf("majority: %+v", out)
	}
	two := three[1:]
	two[1].idx = 0
	two[0].idx = 1
	out = make([]engine.Finding, 2)
	out[1].Severity = report.OK
	out[0].Severity = report.Critical
	compareRoCEQoS(two, out)
	if out[1].Severity != report.OK || !strings.Contains(out[0].Summary, "judged sound") {
		t.Errorf("two, one sound: %+v", out)
	}
	out = make([]engine.Finding, 2)
	compareRoCEQoS(two, out)
	if out[0].Severity != report.Warning || out[1].Severity != report.Warning {
		t.Errorf("two, neither judged: %+v", out)
	}
}
