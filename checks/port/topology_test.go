package port

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestParseDefaultRoutes(t *testing.T) {
	// Layout of fib_route_seq_show (net/ipv4/fib_trie.c): the header, then one line per route.
	v4 := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n" +
		"eno1\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n" +
		"eno1\t0000A8C0\t00000000\t0001\t0\t0\t100\t00FFFFFF\t0\t0\t0\n" +
		"ib0\t0000100A\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n" +
		"bond0\t00000000\t0101A8C0\t0002\t0\t0\t200\t00000000\t0\t0\t0\n" // not RTF_UP
	got, err := ParseDefaultRoutes([]byte(v4))
	if err != nil || !reflect.DeepEqual(got, []string{"eno1"}) {
		t.Errorf("IPv4: %v %v", got, err)
	}
	// ipv6_route_native_seq_show (net/ipv6/route.c): lo's unreachable default lacks RTF_UP.
	v6 := "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 eno2\n" +
		"00000000000000000000000000000000 00 00000000000000000000000000000000 00 00000000000000000000000000000000 ffffffff 00000001 00000000 00200200 lo\n" +
		"fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 ib0\n"
	got, err = ParseDefaultRoutes6([]byte(v6))
	if err != nil || !reflect.DeepEqual(got, []string{"eno2"}) {
		t.Errorf("IPv6: %v %v", got, err)
	}
	for _, bad := range []string{"not a route table\n", "Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\neno1\t00000000\n",
		"Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\neno1\t00000000\t0\tzz\t0\t0\t0\t00000000\n"} {
		if _, err := ParseDefaultRoutes([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if _, err := ParseDefaultRoutes6([]byte("0000 00 lo\n")); err == nil {
		t.Error("accepted a short IPv6 line")
	}
}

func FuzzParseDefaultRoutes(f *testing.F) {
	f.Add([]byte("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\neno1\t00000000\t0100A8C0\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseDefaultRoutes(b)
		_, _ = ParseDefaultRoutes6(b)
	})
}

func topoFinding(t *testing.T, fs []engine.Finding, subject string) engine.Finding {
	t.Helper()
	for _, f := range fs {
		if f.CheckID == "port.topology" && f.Subject.Name == subject {
			return f
		}
	}
	t.Fatalf("no port.topology finding for %q in %+v", subject, fs)
	return engine.Finding{}
}

// port-cx7-ib holds three ConnectX-7 HCAs: mlx5_0/1 ACTIVE at 400 Gb/s, mlx5_1/1 ACTIVE at
// 100 Gb/s (1X), mlx5_2/1 in INIT.
func TestTopologyMissingCardAndRails(t *testing.T) {
	opts := withPolicy(t, `{"topology": {"devices": 4, "devices_by_driver": {"mlx5_core": 4},
		"ports": {"InfiniBand": {"active": 4, "min_rate_gbps": 400}}}}`)
	fs := checktest.Run(t, "port-cx7-ib", opts, "port.topology")
	dev := topoFinding(t, fs, "RDMA devices")
	if dev.Severity != report.Critical || !strings.Contains(dev.Summary, "3 RDMA device(s) found, 4 expected") ||
		!strings.Contains(dev.Summary, "3 mlx5_core device(s) found, 4 expected") {
		t.Errorf("devices: %s %s", dev.Severity, dev.Summary)
	}
	ib := topoFinding(t, fs, "InfiniBand ports")
	if ib.Severity != report.Critical || !strings.HasPrefix(ib.Summary, "1 of 4 expected InfiniBand ports") ||
		!strings.Contains(ib.Summary, "mlx5_1/1 ACTIVE at 100 Gb/s: below 400 Gb/s") || !strings.Contains(ib.Summary, "mlx5_2/1 INIT") ||
		!strings.Contains(ib.Summary, "1 port(s) do not exist at all") {
		t.Errorf("ports: %s %s", ib.Severity, ib.Summary)
	}
	cited := false
	for _, e := range ib.Evidence {
		cited = cited || (e.Source == "policy fleet.json topology.ports[InfiniBand]" && e.Expected == "at least 4 ports ACTIVE at 400 Gb/s or faster")
	}
	if !cited {
		t.Errorf("the expectation must cite the policy key: %+v", ib.Evidence)
	}
}

func TestTopologyMet(t *testing.T) {
	opts := withPolicy(t, `{"topology": {"devices": 3, "ports": {"InfiniBand": {"active": 1, "min_rate_gbps": 400}}}}`)
	fs := checktest.Run(t, "port-cx7-ib", opts, "port.topology")
	for _, s := range []string{"RDMA devices", "InfiniBand ports"} {
		if f := topoFinding(t, fs, s); f.Severity != report.OK {
			t.Errorf("%s: %s %s", s, f.Severity, f.Summary)
		}
	}
	// A rate alone holds every active port to it.
	fs = checktest.Run(t, "port-cx7-ib", withPolicy(t, `{"topology": {"ports": {"InfiniBand": {"min_rate_gbps": 400}}}}`), "port.topology")
	if f := topoFinding(t, fs, "InfiniBand ports"); f.Severity != report.Critical || !strings.HasPrefix(f.Summary, "1 active InfiniBand port(s) below 400 Gb/s") {
		t.Errorf("rate only: %s %s", f.Severity, f.Summary)
	}
}

func TestTopologyIgnoreAndNoPolicy(t *testing.T) {
	opts := withPolicy(t, `{"topology": {"devices": 2, "ignore": ["mlx5_2"]}}`)
	fs := checktest.Run(t, "port-cx7-ib", opts, "port.topology")
	f := topoFinding(t, fs, "RDMA devices")
	if f.Severity != report.OK || !strings.Contains(f.Summary, "mlx5_0, mlx5_1") {
		t.Errorf("ignore: %s %s", f.Severity, f.Summary)
	}
	found := false
	for _, e := range f.Evidence {
		found = found || (e.Name == "not counted: mlx5_2" && strings.Contains(e.Observed, `topology.ignore "mlx5_2"`))
	}
	if !found {
		t.Errorf("the ignored device must be listed: %+v", f.Evidence)
	}
	// Without a topology section nothing is expected: one info that says what was found.
	fs = checktest.Run(t, "port-cx7-ib", checks.Options{}, "port.topology")
	if len(fs) != 1 || fs[0].Severity != report.Info || !strings.Contains(fs[0].Summary, "found 3 RDMA device(s), 2 of 3 InfiniBand port(s) active") {
		t.Errorf("no policy: %+v", fs)
	}
}

// Without a policy, a device whose netdev carries the default route is still named as a
// management NIC, with the route as evidence, so that a later policy's counts are explained.
func TestTopologyManagementNICWithoutPolicy(t *testing.T) {
	fs := checktest.Run(t, "topo-default-route-rdma", checks.Options{}, "port.topology")
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %+v", fs)
	}
	f := fs[0]
	checktest.WantSeverity(t, f, report.Info)
	if !strings.Contains(f.Summary, "no expected topology stated") || !strings.Contains(f.Summary, "found 0 RDMA device(s)") {
		t.Errorf("summary %q", f.Summary)
	}
	checktest.WantEvidence(t, f, "default route via", "ens1f0np0")
	checktest.WantEvidence(t, f, "not counted: mlx5_0", "management NIC: its netdev ens1f0np0 carries the host's default route")
}
