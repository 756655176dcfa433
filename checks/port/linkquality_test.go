package port_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestLinkQualityFECErrors(t *testing.T) {
	fs := checktest.Run(t, "port-fec-errors", checks.Options{}, "port.link_quality")
	f := checktest.One(t, fs, "port.link_quality", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "FEC active", "RS")
	checktest.WantEvidence(t, f, "FEC uncorrectable blocks", "37")
	checktest.WantEvidence(t, f, "FEC corrected blocks", "1283492")
	// 36e6 corrected bits and 1800 symbol errors in 3600 s at 100 Gb/s = 3.6e14 bits.
	checktest.WantEvidence(t, f, "raw BER since boot", "1.0e-07")
	checktest.WantEvidence(t, f, "effective BER since boot", "5.0e-12")
	checktest.WantEvidence(t, f, "bits received since boot", "estimated as 100000 Mb/s x 3600 s")
	for _, want := range []string{"since boot: 37 uncorrectable FEC blocks", "effective BER 5.0e-12"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary %q lacks %q", f.Summary, want)
		}
	}
	if f.Remediation == "" || f.Fault != "port-phy" {
		t.Errorf("fix %q, fault %q", f.Remediation, f.Fault)
	}
}

func TestLinkQualityClean(t *testing.T) {
	fs := checktest.Run(t, "port-fec-ok", checks.Options{}, "port.link_quality")
	f := checktest.One(t, fs, "port.link_quality", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "FEC uncorrectable blocks", "0")
	checktest.WantEvidence(t, f, "raw BER since boot", "1.0e-10")
	checktest.WantEvidence(t, f, "effective BER since boot", "0.0e+00")
}

// A snapshot without ethtool netlink answers or PHY counters is a limit of the source; an
// InfiniBand port is port.counters' job; a port that is down is not judged.
func TestLinkQualityNotJudged(t *testing.T) {
	f := checktest.One(t, checktest.Run(t, "fw-inbox-cx6dx", checks.Options{}, "port.link_quality"), "port.link_quality", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Skipped)
	if f.Limit == nil || f.Limit.Kind != report.LimitSource || !strings.Contains(f.Limit.Lift, "rdmadiag record") {
		t.Errorf("limit %+v", f.Limit)
	}
	for _, f := range checktest.Find(checktest.Run(t, "port-cx7-ib", checks.Options{}, "port.link_quality"), "port.link_quality", "") {
		if f.Severity != report.Skipped || !strings.Contains(f.Summary, "InfiniBand") {
			t.Errorf("IB port: %s %s", f.Severity, f.Summary)
		}
	}
	f = checktest.One(t, checktest.Run(t, "port-roce", checks.Options{}, "port.link_quality"), "port.link_quality", "mlx5_1/1")
	if f.Severity != report.Skipped || !strings.Contains(f.Summary, "DOWN") {
		t.Errorf("down port: %s %s", f.Severity, f.Summary)
	}
}

// liveFEC is a live-kind host on the port-fec-errors tree whose ethtool answers come from a
// model the test changes while the check sleeps.
type liveFEC struct {
	root  string
	model ethtooltest.Model
	stats map[string]uint64
	conn  *swapConn
}

type swapConn struct{ host.NetlinkConn }

func newLiveFEC(t *testing.T, fec *ethtoolnl.FEC, errno syscall.Errno) *liveFEC {
	dir := t.TempDir()
	data, err := os.ReadFile(checktest.Fixture(t, "port-fec-errors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.UnpackTxtar(data, dir); err != nil {
		t.Fatal(err)
	}
	l := &liveFEC{root: filepath.Join(dir, snapshot.RootDir),
		model: ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", FEC: fec, FECErrno: errno}}},
		stats: map[string]uint64{"rx_pcs_symbol_err_phy": 10, "rx_corrected_bits_phy": 5000}}
	l.conn = &swapConn{l.model.Conn()}
	return l
}

func (l *liveFEC) run(t *testing.T, iv time.Duration, during func()) engine.Finding {
	t.Helper()
	h, err := host.New(host.Options{Root: l.root, Kind: host.KindLive, EthtoolNetlink: l.conn,
		Ethtool: func(string) (map[string]uint64, error) {
			out := map[string]uint64{}
			for k, v := range l.stats {
				out[k] = v
			}
			return out, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, checks.Options{Interval: iv})
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	env.Now = func() time.Time { return now }
	env.Sleep = func(_ context.Context, d time.Duration) error {
		now = now.Add(d)
		during()
		l.conn.NetlinkConn = l.model.Conn()
		return nil
	}
	cs, err := checks.Default.Select([]string{"port.link_quality"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checktest.One(t, checks.Run(context.Background(), env, cs, 1), "port.link_quality", "mlx5_0/1")
}

func TestLinkQualityInterval(t *testing.T) {
	fec := &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 100}, Uncorrectable: &ethtoolnl.FECStat{Total: 5}}
	l := newLiveFEC(t, fec, 0)
	f := l.run(t, 10*time.Second, func() {
		l.model.Netdevs[0].FEC = &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 400}, Uncorrectable: &ethtoolnl.FECStat{Total: 8}}
		l.stats["rx_corrected_bits_phy"] = 5000 + 10000 // 1e4 bits in 10 s at 100 Gb/s = 1e12 bits: 1e-8
		l.stats["rx_pcs_symbol_err_phy"] = 10           // no new symbol error
	})
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "FEC uncorrectable blocks over 10s", "+3 (5 -> 8)")
	checktest.WantEvidence(t, f, "FEC corrected blocks over 10s", "+300")
	checktest.WantEvidence(t, f, "raw BER over 10s", "1.0e-08")
	checktest.WantEvidence(t, f, "effective BER over 10s", "0.0e+00")
	if !strings.Contains(f.Summary, "over 10s: 3 new uncorrectable FEC blocks") {
		t.Errorf("summary %q", f.Summary)
	}

	// Nothing new while watched: the 5 since boot are history, the link is clean now.
	l = newLiveFEC(t, fec, 0)
	f = l.run(t, 10*time.Second, func() {})
	checktest.WantSeverity(t, f, report.OK)

	// Symbol errors while watched: 20 in 1e12 bits = 2e-11, above 1e-12.
	l = newLiveFEC(t, fec, 0)
	f = l.run(t, 10*time.Second, func() { l.stats["rx_pcs_symbol_err_phy"] = 30 })
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "effective BER over 10s", "2.0e-11")

	// Counters reset between the readings: the increase is unknown, not an alarm.
	l = newLiveFEC(t, fec, 0)
	f = l.run(t, 10*time.Second, func() {
		l.model.Netdevs[0].FEC = &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 0}, Uncorrectable: &ethtoolnl.FECStat{Total: 0}}
	})
	checktest.WantEvidence(t, f, "FEC uncorrectable blocks over 10s", "reset")
	if f.Severity == report.Warning {
		t.Errorf("reset counters raised %s: %s", f.Severity, f.Summary)
	}
}

// A driver without FEC statistics, or without FEC at all, is information, not unknown; a
// netdev the kernel no longer has is unknown.
func TestLinkQualityDriverLimits(t *testing.T) {
	l := newLiveFEC(t, &ethtoolnl.FEC{Active: ethtoolnl.FECRS}, 0)
	f := l.run(t, 0, func() {})
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "effective BER since boot", "2.8e-14") // the PHY counters are still judged
	if !strings.Contains(f.Summary, "driver does not report FEC statistics") {
		t.Errorf("summary %q", f.Summary)
	}

	l = newLiveFEC(t, nil, syscall.EOPNOTSUPP)
	l.stats = map[string]uint64{"rx_packets": 1}
	f = l.run(t, 0, func() {})
	checktest.WantSeverity(t, f, report.Info)
	if !strings.Contains(f.Summary, "driver does not report FEC") {
		t.Errorf("summary %q", f.Summary)
	}

	l = newLiveFEC(t, nil, syscall.ENODEV)
	l.stats = map[string]uint64{"rx_packets": 1}
	f = l.run(t, 0, func() {})
	checktest.WantSeverity(t, f, report.Unknown)
	checktest.WantEvidence(t, f, "FEC", "no such device")
}

// A clean port's summary claims only what was judged: FEC statistics without PHY counters (a
// non-mlx5 driver) give "no uncorrectable FEC block" but no effective BER.
func TestLinkQualityClaimsOnlyJudged(t *testing.T) {
	l := newLiveFEC(t, &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: 12}, Uncorrectable: &ethtoolnl.FECStat{Total: 0}}, 0)
	l.stats = map[string]uint64{"rx_packets": 1}
	f := l.run(t, 0, func() {})
	checktest.WantSeverity(t, f, report.OK)
	if !strings.Contains(f.Summary, "no uncorrectable FEC block") || strings.Contains(f.Summary, "effective BER") {
		t.Errorf("summary %q", f.Summary)
	}
}

// The real kernel's answers (lab ethtool-netdevsim, Linux 6.1): rxe1 sits on a netdevsim port
// whose driver reports its FEC (RS) but no FEC statistics, no ethtool -S strings and no module
// EEPROM; rxe0 on virtio_net has no FEC at all. Each is what the driver offers, so information,
// never "could not check"; and netdevsim's operstate "unknown" on an ACTIVE port is no fault.
func TestLinkQualityNetdevsimLab(t *testing.T) {
	fs := checktest.Run(t, "ethtool-netdevsim", checks.Options{}, "port")
	f := checktest.One(t, fs, "port.link_quality", "rxe1/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "FEC active", "RS")
	checktest.WantEvidence(t, f, "FEC statistics", "none reported by the driver")
	checktest.WantEvidence(t, f, "PHY counters", "the driver exposes no PHY bit counters")
	for _, want := range []string{"eth1 (rxe1/1) since boot: FEC RS active, driver does not report FEC statistics", "link errors are not judged"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("rxe1 summary %q lacks %q", f.Summary, want)
		}
	}
	if strings.Contains(f.Summary, "within") || f.Limit != nil {
		t.Errorf("rxe1: nothing was judged, yet %q (limit %+v)", f.Summary, f.Limit)
	}

	f = checktest.One(t, fs, "port.link_quality", "rxe0/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "FEC", "EOPNOTSUPP")

	for _, p := range []string{"rxe0/1", "rxe1/1"} {
		f = checktest.One(t, fs, "port.transceiver", p)
		checktest.WantSeverity(t, f, report.Info)
		checktest.WantEvidence(t, f, "module EEPROM", "EOPNOTSUPP")
		if !strings.Contains(f.Summary, "no pluggable module information from this driver") {
			t.Errorf("%s transceiver summary %q", p, f.Summary)
		}
	}

	f = checktest.One(t, fs, "port.addressing", "rxe1/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "port.state", "rxe1/1"), report.OK)
}
