package port

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

func TestJudgeCongestion(t *testing.T) {
	p := portRef{dev: &inventory.Device{Name: "mlx5_0"}, port: &inventory.Port{Num: 1, LinkLayer: "Ethernet"}, dir: "/sys/class/infiniband/mlx5_0/ports/1"}
	type stats = map[string]uint64
	for _, tc := range []struct {
		name   string
		a, b   stats // b nil: one reading, since boot
		want   report.Severity
		action report.Action
		says   string
	}{
		{name: "clean since boot", a: stats{"rx_prio3_pause": 0, "tx_pause_storm_error_events": 0, "rx_discards_phy": 0},
			want: report.OK, says: "no pause, PFC storm or discard (3 counter(s) read)"},
		{name: "storm error since boot", a: stats{"tx_pause_storm_error_events": 1},
			want: report.Warning, action: report.ActionFixConfiguration, says: "tx_pause_storm_error_events 1 since boot"},
		{name: "storm warning since boot is information", a: stats{"tx_pause_storm_warning_events": 7},
			want: report.Info, says: "tx_pause_storm_warning_events 7"},
		{name: "discards since boot are information", a: stats{"rx_discards_phy": 1e6, "rx_dropped.nic": 3},
			want: report.Info, says: "rx_discards_phy 1000000"},
		{name: "pauses since boot are information", a: stats{"rx_pfc_ena_frames_pri3": 10, "pfc_pri3_rx_duration_us": 500},
			want: report.Info, says: "pause frames on priority 3 10 received / 0 sent"},
		{name: "storm error while watched", a: stats{"tx_pause_storm_error_events": 1}, b: stats{"tx_pause_storm_error_events": 2},
			want: report.Critical, action: report.ActionFixConfiguration, says: "tx_pause_storm_error_events 1 over 1m0s"},
		{name: "storm warning while watched", a: stats{"tx_pause_storm_warning_events": 1}, b: stats{"tx_pause_storm_warning_events": 3},
			want: report.Warning, action: report.ActionFixConfiguration},
		{name: "discards above 100/s while watched", a: stats{"rx_discards_phy": 0}, b: stats{"rx_discards_phy": 12000},
			want: report.Warning, action: report.ActionFixConfiguration, says: "rx_discards_phy +12000 over 1m0s, 200/s"},
		{name: "discards below 100/s while watched", a: stats{"rx_discard_packets_cos3": 0}, b: stats{"rx_discard_packets_cos3": 3000},
			want: report.Info, says: "rx_discard_packets_cos3 +3000"},
		{name: "quiet while watched", a: stats{"rx_discards_phy": 5, "tx_prio3_pause": 9}, b: stats{"rx_discards_phy": 5, "tx_prio3_pause": 9},
			want: report.OK, says: "over 1m0s: no pause"},
		{name: "a reset is not growth", a: stats{"rx_discards_phy": 50000}, b: stats{"rx_discards_phy": 10},
			want: report.Info, says: "rx_discards_phy reset between the readings"},
		{name: "no known counter", a: stats{"rx_packets": 5}, want: report.Skipped, says: "no pause, storm or discard counter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judgeCongestion(p, "ens1f0np0", tc.a, tc.b, time.Minute)
			if f.Severity != tc.want {
				t.Errorf("severity %s, want %s (%s)", f.Severity, tc.want, f.Summary)
			}
			if f.Action != tc.action {
				t.Errorf("action %q, want %q", f.Action, tc.action)
			}
			if f.Severity.Problem() && f.Remediation == "" {
				t.Error("a problem without a fix")
			}
			if !strings.Contains(f.Summary, tc.says) {
				t.Errorf("summary %q does not say %q", f.Summary, tc.says)
			}
		})
	}
}

// Pause time over --interval is shown as a share of it.
func TestCongestionPauseShare(t *testing.T) {
	p := portRef{dev: &inventory.Device{Name: "mlx5_0"}, port: &inventory.Port{Num: 1, LinkLayer: "Ethernet"}}
	f := judgeCongestion(p, "ens1f0np0", map[string]uint64{"rx_prio3_pause": 0, "rx_prio3_pause_duration": 0},
		map[string]uint64{"rx_prio3_pause": 400, "rx_prio3_pause_duration": 6e6}, time.Minute)
	checktest.WantEvidence(t, f, "priority 3 pauses", "paused by the partner 6s, pausing it 0s (10.0% / 0.0% of 1m0s)")
	checktest.WantSeverity(t, f, report.Info)
}

func TestCongestionOnFixtures(t *testing.T) {
	fs := checktest.Run(t, "port-congestion-mlx5", checks.Options{}, "port.congestion", "port.counters")
	f := checktest.One(t, fs, "port.congestion", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "tx_pause_storm_error_events", "1")
	checktest.WantEvidence(t, f, "priority 3 pauses", "pause frames received 1204332, sent 52118; paused by the partner 8.41s")
	if f.Action != report.ActionFixConfiguration {
		t.Errorf("action %q", f.Action)
	}
	c := checktest.One(t, fs, "port.counters", "mlx5_0/1")
	checktest.WantSeverity(t, c, report.Info)
	checktest.WantEvidence(t, c, "out_of_buffer", "135")

	fs = checktest.Run(t, "port-congestion-bnxt", checks.Options{}, "port.congestion", "port.counters")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.congestion", "bnxt_re0/1"), report.Info)
	c = checktest.One(t, fs, "port.counters", "bnxt_re0/1")
	checktest.WantSeverity(t, c, report.Info)
	checktest.WantEvidence(t, c, "to_retransmits", "12")
	checktest.WantEvidence(t, c, "seq_err_naks_rcvd", "3")

	// A snapshot without ethtool -S is held back by the source; an InfiniBand port is not this check's.
	fs = checktest.Run(t, "fw-inbox-cx6dx", checks.Options{}, "port.congestion")
	f = checktest.One(t, fs, "port.congestion", "mlx5_0/1")
	if f.Severity != report.Skipped || f.Limit == nil || f.Limit.Kind != report.LimitSource {
		t.Errorf("fw-inbox-cx6dx: %s %+v, want skipped by the source", f.Severity, f.Limit)
	}
	fs = checktest.Run(t, "port-cx7-ib", checks.Options{}, "port.congestion")
	checktest.WantSeverity(t, checktest.One(t, fs, "port.congestion", "mlx5_0/1"), report.Skipped)
}

// Over --interval on a live host the Broadcom port's growing discards and retransmissions are
// judged as mlx5's would be.
func TestCongestionIntervalBnxt(t *testing.T) {
	// Each check gets a tree of its own: with both in one run, one check's second reading can
	// change the files before the other has taken its first.
	grow := func(root string) {
		p := filepath.Join(filepath.Dir(root), snapshot.EthtoolDir, "ens1f0np0.json")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]uint64
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		st["rx_discard_packets_cos3"] += 12000 // 200/s
		st["rx_pfc_ena_frames_pri3"] += 5000
		b, _ = json.Marshal(st)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		hc := filepath.Join(root, "sys/class/infiniband/bnxt_re0/ports/1/hw_counters")
		for n, v := range map[string]string{"to_retransmits": "17", "rnr_naks_rcvd": "4"} {
			if err := os.WriteFile(filepath.Join(hc, n), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fs := checktest.RunLive(t, "port-congestion-bnxt", checks.Options{Interval: time.Minute}, grow, "port.congestion")
	fs = append(fs, checktest.RunLive(t, "port-congestion-bnxt", checks.Options{Interval: time.Minute}, grow, "port.counters")...)
	f := checktest.One(t, fs, "port.congestion", "bnxt_re0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "rx_discard_packets_cos3", "+12000 in 1m0s (200.0/s)")
	c := checktest.One(t, fs, "port.counters", "bnxt_re0/1")
	checktest.WantSeverity(t, c, report.Warning)
	checktest.WantEvidence(t, c, "to_retransmits", "+5 in 1m0s")
	checktest.WantEvidence(t, c, "rnr_naks_rcvd", "+4 in 1m0s")
	if c.Action != "" {
		t.Errorf("retransmissions beside RNR NAKs keep the row's action, got %q", c.Action)
	}
}

// A counters finding whose alarms are all the receiver's asks to fix its buffers; one with a
// link counter among them keeps the fault row's cable action.
func TestCounterAction(t *testing.T) {
	byName := map[string]counterDef{}
	for _, d := range counterDefs {
		byName[d.dir+"/"+d.name] = d
	}
	act, fix := counterAction([]counterDef{byName["hw_counters/out_of_buffer"], byName["hw_counters/rnr_nak_retry_err"]}, "cable")
	if act != report.ActionFixConfiguration || strings.Contains(fix, "cable") || !strings.Contains(fix, "out_of_buffer") {
		t.Errorf("receiver alarms: %q, %q", act, fix)
	}
	act, fix = counterAction([]counterDef{byName["counters/symbol_error"], byName["hw_counters/out_of_buffer"]}, "cable")
	if act != "" || !strings.HasPrefix(fix, "cable") || !strings.Contains(fix, "out_of_buffer") {
		t.Errorf("mixed alarms: %q, %q", act, fix)
	}
}

// A saturated congestion counter (port_xmit_wait) says the port waited long: information, not
// the warning of an error counter that stopped counting.
func TestXmitWaitSaturated(t *testing.T) {
	p := portRef{dev: &inventory.Device{Name: "mlx5_0"}, port: &inventory.Port{Num: 1, LinkLayer: "InfiniBand"}, dir: "/sys/class/infiniband/mlx5_0/ports/1"}
	r := reading{vals: map[string]uint64{"counters/port_xmit_wait": 1<<32 - 1, "counters/symbol_error": 0}, failed: map[string]error{}}
	fs := judge(p, span{uptime: 3600}, r, r)
	checktest.WantSeverity(t, fs[0], report.Info)
	checktest.WantEvidence(t, fs[0], "port_xmit_wait", "saturated")
}

// Every counter's name and directory is one entry: a name several drivers share with one
// meaning is not listed twice.
func TestCounterDefsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range counterDefs {
		if seen[d.key()] {
			t.Errorf("%s listed twice", d.key())
		}
		seen[d.key()] = true
		if d.why == "" || (d.act != "" && d.fix == "") {
			t.Errorf("%s: a meaning, and a fix with any action of its own, are required", d.key())
		}
	}
}
