package port

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"golang.org/x/tools/txtar"
)

func TestFlapsFixture(t *testing.T) {
	fs := checktest.Run(t, "port-flaps", checks.Options{}, "port.flaps")
	f := checktest.One(t, fs, "port.flaps", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "link downs within 10 minutes", "4")
	checktest.WantEvidence(t, f, "link down", "ens1f0np0: Link down")
	checktest.WantEvidence(t, f, "counter", "carrier_up_count 5")

	// No times in the log (its one "Link down" came before any "Link up": the interface was
	// opened without a link), but the carrier counters of a host up 5 h put four downs in the
	// window.
	f = checktest.One(t, fs, "port.flaps", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "log link-down lines", "0")
	checktest.WantEvidence(t, f, "link downs in the last 24 h", "4")
}

func TestFlapsLab(t *testing.T) {
	// port-down: "ip link set eth0 down" logged rxe's "set down" once and counted one
	// link_downed; virtio_net's carrier did not change.
	fs := checktest.Run(t, "port-down", checks.Options{}, "port.flaps")
	f := checktest.One(t, fs, "port.flaps", "rxe0/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "link down", "infiniband rxe0: set down")
	checktest.WantEvidence(t, f, "counter", "link_downed 1")

	// link-flap: the QEMU monitor took the virtio link down and up four times in a few seconds.
	fs = checktest.Run(t, "link-flap", checks.Options{}, "port.flaps")
	f = checktest.One(t, fs, "port.flaps", "rxe0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "link downs within 10 minutes", "4")
	checktest.WantEvidence(t, f, "counter", "carrier_up_count 5")

	fs = checktest.Run(t, "healthy", checks.Options{}, "port.flaps")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.flaps", "rxe0/1"), report.OK)
}

func TestFlapsWithoutLog(t *testing.T) {
	// The port-flaps host recorded without its kernel log: the log's part is skipped with its
	// limit, the counters are still judged.
	b, err := os.ReadFile(checktest.Fixture(t, "port-flaps"))
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(b)
	var kept []txtar.File
	for _, f := range ar.Files {
		if f.Name != "kmsg" {
			kept = append(kept, f)
		}
	}
	ar.Files = kept
	snap := filepath.Join(t.TempDir(), "snapshot.txtar")
	if err := os.WriteFile(snap, txtar.Format(ar), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, snap, checks.Options{}, "port.flaps")
	f := checktest.One(t, fs, "port.flaps", "kernel log")
	checktest.WantSeverity(t, f, report.Skipped)
	if f.Limit == nil {
		t.Errorf("kernel log finding without a limit: %+v", f)
	}
	// Without times, mlx5_0's four downs still fall in the window (uptime 5 h), but the
	// 10-minute burst is not visible: a warning, not critical.
	f = checktest.One(t, fs, "port.flaps", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "link downs in the last 24 h", "4")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.flaps", "mlx5_1/1"), report.Warning)
}

func TestParseLinkEvents(t *testing.T) {
	tests := []struct {
		text, name string
		down       bool
	}{
		{"mlx5_core 0000:3b:00.0 ens1f0np0: Link down", "ens1f0np0", true},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: Link up", "ens1f0np0", false},
		{"mlx4_en: eth2: Link Down", "eth2", true},
		{"ice 0000:17:00.0 ens785f0: NIC Link is up 100 Gbps Full Duplex, Requested FEC: RS-FEC, Negotiated FEC: RS-FEC, Autoneg Advertised: On, Autoneg Negotiated: False, Flow Control: None", "ens785f0", false},
		{"ice 0000:17:00.0 ens785f0: NIC Link is Down", "ens785f0", true},
		{"bnxt_en 0000:41:00.0 enp65s0f0np0: NIC Link is Up, 100000 Mbps (NRZ) full duplex, Flow control: none", "enp65s0f0np0", false},
		{"hns3 0000:7d:00.0 eth1: link down", "eth1", true},
		{"infiniband rxe0: set down", "rxe0", true},
		{"infiniband rxe0: set active", "rxe0", false},
	}
	for _, tc := range tests {
		evs := parseLinks(t, tc.text, tc.name)
		if len(evs) != 1 {
			t.Errorf("%q: %d events", tc.text, len(evs))
			continue
		}
		if name := evs[0].netdev + evs[0].device; name != tc.name || evs[0].down != tc.down {
			t.Errorf("%q: got %s down=%v, want %s down=%v", tc.text, name, evs[0].down, tc.name, tc.down)
		}
	}
	for _, text := range []string{
		"IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
		"mlx5_core 0000:3b:00.0: Port module event: module 0, Cable plugged",
		"bond0: link status definitely down for interface eno50, disabling it",
	} {
		if evs := parseLinks(t, text, "eth0"); len(evs) != 0 {
			t.Errorf("%q is not a link transition, got %+v", text, evs[0])
		}
	}
}

func TestFlapCounting(t *testing.T) {
	up := func(us uint64) linkEvent { return linkEvent{rec: kmsg.Record{Usec: us}} }
	down := func(us uint64) linkEvent { return linkEvent{rec: kmsg.Record{Usec: us}, down: true} }
	const min = 60 * 1000 * 1000
	evs := []linkEvent{down(1), up(2), down(3 * min), up(4 * min), down(5 * min), down(6 * min), up(7 * min), down(20 * min), up(21 * min), down(22 * min)}
	ds := logDowns(evs)
	// The first down preceded any up, and the repeated down at 6 min follows no up.
	if len(ds) != 4 {
		t.Fatalf("downs %d, want 4: %+v", len(ds), ds)
	}
	n, at := maxBurst(ds)
	if n != 2 || at.Usec != 3*min {
		t.Errorf("burst %d at %d, want 2 at %d", n, at.Usec, 3*min)
	}
}

// One flap is one root cause: port.counters flagging only link_downed is the flap port.flaps
// judges, and is explained by it; a counters finding with symbol errors too stays a root cause.
func TestOneFlapOneRootCause(t *testing.T) {
	for _, c := range []struct {
		fixture, port string
		roots         []string
		countersBy    []string
	}{
		{"link-flap", "rxe0/1", []string{"port.flaps@rxe0/1"}, []string{"port.flaps@rxe0/1"}},
		{"port-cx7-ib", "mlx5_0/1", []string{"port.counters@mlx5_0/1", "port.flaps@mlx5_0/1"}, nil},
	} {
		fs := checktest.Run(t, c.fixture, checks.Options{}, "port.flaps", "port.counters")
		rep := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
		var roots []string
		for _, r := range rep.Summary.RootCauses {
			if strings.HasSuffix(r, "@"+c.port) {
				roots = append(roots, r)
			}
		}
		if !slices.Equal(roots, c.roots) {
			t.Errorf("%s: root causes on %s %v, want %v", c.fixture, c.port, roots, c.roots)
		}
		for _, f := range rep.Findings {
			if f.CheckID == "port.counters" && f.Subject.Name == c.port && !slices.Equal(f.ExplainedBy, c.countersBy) {
				t.Errorf("%s: port.counters explained by %v, want %v", c.fixture, f.ExplainedBy, c.countersBy)
			}
		}
	}
}

// parseLinks is what port.flaps makes of one line on a host whose RDMA device has a port on
// netdev (a generic "NIC Link is Down" counts only about an RDMA device's netdev).
func parseLinks(t *testing.T, text, netdev string) []linkEvent {
	t.Helper()
	inv := &inventory.Inventory{Devices: []*inventory.Device{{Name: "dev0", Ports: []*inventory.Port{{Num: 1, Netdevs: []string{netdev}}}}}}
	ke, err := checks.NewKernelEvents(&kmsg.Log{Records: []kmsg.Record{{Level: 6, Text: text}}}, inv)
	if err != nil {
		t.Fatal(err)
	}
	return linkEvents(ke)
}
