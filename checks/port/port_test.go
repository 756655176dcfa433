package port

import (
	"context"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestCX7IB(t *testing.T) {
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{ExpectRate: 400}, "port")

	f := checktest.One(t, fs, "port.rate", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "width", "1X")
	if f.Subject.Device != "mlx5_1" || f.Subject.PCI != "0000:5e:00.0" {
		t.Errorf("subject %+v", f.Subject)
	}
	f = checktest.One(t, fs, "port.rate", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "rate", "400")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_2/1"), report.Skipped)

	f = checktest.One(t, fs, "port.state", "mlx5_2/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "state", "INIT")
	checktest.WantEvidence(t, f, "lid", "0x0")
	checktest.WantEvidence(t, f, "sm_lid", "0x0")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "mlx5_0/1"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.addressing", "mlx5_2/1"), report.Skipped)
	f = checktest.One(t, fs, "port.addressing", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "sm_lid", "0x1")

	f = checktest.One(t, fs, "port.counters", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "symbol_error", "5000.0/h")
	checktest.WantEvidence(t, f, "link_downed", "7")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.counters", "mlx5_1/1"), report.OK)
}

func TestCX7IBExpectRateBelow(t *testing.T) {
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{ExpectRate: 800}, "port.rate")
	f := checktest.One(t, fs, "port.rate", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "rate", "400 Gb/s")
}

func TestRoCE(t *testing.T) {
	fs := checktest.Run(t, "port-roce", checks.Options{}, "port")
	f := checktest.One(t, fs, "port.rate", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "netdev speed", "200000")
	checktest.WantEvidence(t, f, "note", "fallback")

	f = checktest.One(t, fs, "port.addressing", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "RoCE v2 GIDs on an IP address", "none")
	checktest.WantEvidence(t, f, "netdev ens1f0np0 mtu", "4096 (RoCE MTU 2048)")

	f = checktest.One(t, fs, "port.state", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "netdev ens2f0np0 operstate", "down")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.counters", "mlx5_0/1"), report.Info)
}

// TestInterval runs the counter check on a live-kind host whose counter files change while the
// check sleeps, as on a real machine, including a 32-bit hw counter that wraps and an
// unreadable counter.
func TestInterval(t *testing.T) {
	dir := t.TempDir()
	data, err := os.ReadFile(checktest.Fixture(t, "port-cx7-ib"))
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.UnpackTxtar(data, dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, snapshot.RootDir)
	h, err := host.New(host.Options{Root: root, Kind: host.KindLive})
	if err != nil {
		t.Fatal(err)
	}
	set := func(dev, file, v string) {
		p := filepath.Join(root, "sys/class/infiniband", dev, "ports/1", file)
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set("mlx5_1", "hw_counters/out_of_sequence", "4294967290")
	set("mlx5_2", "counters/port_rcv_errors", "garbage")
	env := checks.NewEnv(h, checks.Options{Interval: time.Minute})
	slept := time.Duration(0)
	env.Sleep = func(_ context.Context, d time.Duration) error {
		slept = d
		set("mlx5_0", "counters/link_downed", "9")        // 7 -> 9: the link flapped twice
		set("mlx5_0", "counters/symbol_error", "5001")    // 1 per minute = 60/h: below 120/h
		set("mlx5_1", "hw_counters/out_of_sequence", "4") // wrapped: +10
		set("mlx5_1", "hw_counters/local_ack_timeout_err", "0")
		return nil
	}
	cs, err := checks.Default.Select([]string{"port.counters"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	fs := checks.Run(context.Background(), env, cs, 1)
	if slept != time.Minute {
		t.Errorf("slept %s, want 1m", slept)
	}
	f := checktest.One(t, fs, "port.counters", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "link_downed", "+2 in 1m0s")
	checktest.WantEvidence(t, f, "symbol_error", "+1")
	f = checktest.One(t, fs, "port.counters", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "out_of_sequence", "+10 in 1m0s (4294967290 -> 4)")
	// mlx5_2/1: port_rcv_errors is unknown, the rest still judged.
	got := checktest.Find(fs, "port.counters", "mlx5_2/1")
	var sevs []report.Severity
	for _, g := range got {
		sevs = append(sevs, g.Severity)
	}
	if len(got) != 2 || got[0].Severity != report.OK || got[1].Severity != report.Unknown {
		t.Fatalf("mlx5_2/1: want OK then Unknown, got %v", sevs)
	}
	checktest.WantEvidence(t, got[1], "counters/port_rcv_errors", "not a decimal number")
}

func TestIntervalOnSnapshotSkipped(t *testing.T) {
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{Interval: time.Minute}, "port.counters")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.counters", "interval"), report.Skipped)
	// The since-boot judgement still happens.
	checktest.WantSeverity(t, checktest.One(t, fs, "port.counters", "mlx5_0/1"), report.Warning)
}

func TestNoDevices(t *testing.T) {
	fs := checktest.Run(t, "drv-no-ib-core", checks.Options{}, "port")
	for _, id := range []string{"port.state", "port.rate", "port.addressing", "port.counters"} {
		f := checktest.One(t, fs, id, "")
		checktest.WantSeverity(t, f, report.Skipped)
	}
}

func TestDelta(t *testing.T) {
	q := counterDef{name: "out_of_sequence", bits: 32}
	pma := counterDef{name: "link_downed", bits: 8, saturates: true}
	wide := counterDef{name: "np_cnp_sent", bits: 64}
	for _, tc := range []struct {
		d    counterDef
		a, b uint64
		want uint64
		ok   bool
	}{
		{q, 10, 15, 5, true},
		{q, 1<<32 - 6, 4, 10, true}, // 32-bit wrap
		{pma, 3, 1, 0, false},       // reset (perfquery -R)
		{pma, 255, 255, 0, false},   // saturated: increases invisible
		{pma, 254, 255, 1, true},
		{wide, 100, 50, 0, false}, // 64-bit counters do not wrap in practice: a reset
	} {
		got, ok := delta(tc.d, tc.a, tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("delta(%s, %d, %d) = %d, %v; want %d, %v", tc.d.name, tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
	}
}

func TestIdenticalCardsDiffer(t *testing.T) {
	mk := func(name string, gb float64) *rateInfo {
		p := portRef{dev: &inventory.Device{Name: name, PCI: &inventory.PCIFunction{BDF: "0000:01:00.0"}},
			port: &inventory.Port{Num: 1, LinkLayer: "InfiniBand"}, dir: "/x"}
		return &rateInfo{p: p, raw: inventory.Rate{Gbps: gb, Width: 4, Speed: "HDR"}, effective: gb, group: "15b3:1021 MT_1 InfiniBand"}
	}
	fast, slow := mk("mlx5_0", 400), mk("mlx5_1", 200)
	judgeRate(expectation{}, slow, fast)
	if slow.f.Severity != report.Warning || !strings.Contains(slow.f.Summary, "slower than mlx5_0/1") {
		t.Errorf("slow port: %s %q", slow.f.Severity, slow.f.Summary)
	}
	judgeRate(expectation{}, fast, fast)
	if fast.f.Severity != report.OK {
		t.Errorf("fast port: %s %q", fast.f.Severity, fast.f.Summary)
	}
}

// TestLabRecordings runs the port checks on snapshots recorded in the QEMU lab (real rxe0 on a
// real kernel): a healthy host passes, and a port whose netdev was set down names that as the
// cause, not the cable.
func TestLabRecordings(t *testing.T) {
	fs := checktest.Run(t, "healthy", checks.Options{}, "port")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "rxe0/1"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.addressing", "rxe0/1"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.counters", "rxe0/1"), report.OK)
	// virtio-net has no speed, so rxe's 2.5 Gb/s is a placeholder, neither OK nor a fault.
	f := checktest.One(t, fs, "port.rate", "rxe0/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "netdev speed", "unknown")

	fs = checktest.Run(t, "port-down", checks.Options{}, "port")
	f = checktest.One(t, fs, "port.state", "rxe0/1")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "netdev eth0 administratively up (IFF_UP)", "false")
	if !strings.Contains(f.Summary, "eth0 was set administratively down") || !strings.Contains(f.Remediation, "ip link set eth0 up") {
		t.Errorf("port-down: %q / %q", f.Summary, f.Remediation)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "rxe0/1"), report.Skipped)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.addressing", "rxe0/1"), report.Skipped)
	f = checktest.One(t, fs, "port.counters", "rxe0/1")
	checktest.WantSeverity(t, f, report.Info) // the one link_downed is this very event
	checktest.WantEvidence(t, f, "link_downed", "1")
}

func TestEthDownCauses(t *testing.T) {
	yes, no := true, false
	p := portRef{dev: &inventory.Device{Name: "mlx5_1"}, port: &inventory.Port{Num: 1, LinkLayer: "Ethernet"}, dir: "/x"}
	down := inventory.PortState{Num: 1, Name: "DOWN"}
	ext := func(s ethtoolnl.LinkExtState, sub uint8) map[string]linkWhy {
		return map[string]linkWhy{"ens2": {netdev: "ens2", ls: &ethtoolnl.LinkState{Link: &no, ExtState: &s, ExtSubstate: sub}}}
	}
	for _, tc := range []struct {
		nd        observe.NetdevAttrs
		why       map[string]linkWhy
		summary   string
		fixSubstr string
	}{
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &no}, nil, "ens2 was set administratively down", "ip link set ens2 up"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, nil, "ens2 is up but has no link (down)", "cable, transceiver and switch port"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "lowerlayerdown"}, nil, "ens2 is lowerlayerdown", "ip link set ens2 up"},
		// The driver's reason replaces the guess (mlx5e_link_ext_state_opcode_map).
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.ExtNoCable, 0), "no cable or module in the cage", "Plug a cable"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.ExtAutoneg, 1), "auto-negotiation failed (No partner detected): the far end does not answer", "switch port facing ens2"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.ExtLinkLogicalMismatch, 5), "(RS FEC is not locked)", "ethtool --set-fec ens2"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.ExtBadSignalIntegrity, 1), "too poor", "Clean the fibre"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.ExtPowerBudgetExceeded, 0), "more power", "power class"},
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &yes}, ext(ethtoolnl.LinkExtState(77), 0), "the driver reports link extended state 77", "switch port of ens2"},
		// A reason for a netdev set down by hand is not the cause: the admin state is.
		{observe.NetdevAttrs{Name: "ens2", Operstate: "down", AdminUp: &no}, ext(ethtoolnl.ExtNoCable, 0), "ens2 was set administratively down", "ip link set ens2 up"},
	} {
		f := engine.Finding{}
		judgeEthState(p, down, inventory.PortState{Num: 3, Name: "Disabled"}, []observe.NetdevAttrs{tc.nd}, tc.why, &f)
		if f.Severity != report.Critical || !strings.Contains(f.Summary, tc.summary) || !strings.Contains(f.Remediation, tc.fixSubstr) {
			t.Errorf("%+v %v: %s %q / %q", tc.nd, tc.why, f.Severity, f.Summary, f.Remediation)
		}
		if tc.why != nil && tc.nd.AdminUp != nil && *tc.nd.AdminUp {
			_, _, want := tc.why["ens2"].explain()
			if f.Action != want || want == "" {
				t.Errorf("%v: action %q, want the driver reason's %q", tc.why, f.Action, want)
			}
		}
	}
}

// An ACTIVE port's netdev is operational when it is "up", or "unknown" (a driver that never
// reports carrier, like netdevsim in lab ethtool-netdevsim) while administratively up.
func TestNetdevOperational(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		nd   observe.NetdevAttrs
		want bool
	}{
		{observe.NetdevAttrs{Operstate: "up", AdminUp: &yes}, true},
		{observe.NetdevAttrs{Operstate: "up"}, true},
		{observe.NetdevAttrs{Operstate: "unknown", AdminUp: &yes}, true},
		{observe.NetdevAttrs{Operstate: "unknown", AdminUp: &no}, false},
		{observe.NetdevAttrs{Operstate: "unknown"}, false}, // flags unreadable: nothing says it is up
		{observe.NetdevAttrs{Operstate: "down", AdminUp: &yes}, false},
		{observe.NetdevAttrs{Operstate: "dormant", AdminUp: &yes}, false},
		{observe.NetdevAttrs{Operstate: "", AdminUp: &yes}, false},
	} {
		if got := tc.nd.Operational(); got != tc.want {
			t.Errorf("operstate %q adminUp %v: operational %v, want %v", tc.nd.Operstate, tc.nd.AdminUp != nil && *tc.nd.AdminUp, got, tc.want)
		}
	}
}

// TestVFAndHomogeneity: identical cards at different rates warn on the slower port; a VF's
// "N/A (no PMA)" counters are not available (named, with the PF to read them on), never unknown.
func TestVFAndHomogeneity(t *testing.T) {
	fs := checktest.Run(t, "port-vf-homogeneity", checks.Options{}, "port")
	f := checktest.One(t, fs, "port.rate", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "rate of identical cards", "56 Gb/s")
	if !strings.Contains(f.Summary, "slower than mlx5_0/1") {
		t.Errorf("summary %q", f.Summary)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), report.OK)
	// The VF is another PCI id: not compared with the PFs.
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_2/1"), report.OK)

	got := checktest.Find(fs, "port.counters", "mlx5_2/1")
	if len(got) != 1 {
		t.Fatalf("mlx5_2/1 counters: %d findings (an unknown one besides?): %+v", len(got), got)
	}
	f = got[0]
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "not available", "symbol_error")
	checktest.WantEvidence(t, f, "not available", "N/A (no PMA)")
	checktest.WantEvidence(t, f, "out_of_sequence", "0")
	if !strings.Contains(f.Summary, "not available") || !strings.Contains(f.Summary, "mlx5_0/1") {
		t.Errorf("VF summary %q does not say the counters are not available and where to read them", f.Summary)
	}
	for _, fd := range fs {
		if fd.Severity == report.Unknown {
			t.Errorf("unknown finding %s@%s: %s", fd.CheckID, fd.Subject.Name, fd.Summary)
		}
	}

	// A policy's expectation for the PSID replaces the comparison: 56 Gb/s is below it.
	fs = checktest.Run(t, "port-vf-homogeneity", withPolicy(t, `{"ports":{"by_board_id":{"MT_0000000008":100}}}`), "port.rate")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_1/1"), report.Critical)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.rate", "mlx5_0/1"), report.OK)
}
