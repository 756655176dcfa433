package port_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func wantSummary(t *testing.T, f engine.Finding, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(f.Summary, p) {
			t.Errorf("%s summary %q lacks %q", f.Subject.Name, f.Summary, p)
		}
	}
}

// A lane below the module's low alarm threshold is critical; a temperature above its high
// warning threshold rides along as a warning in the same finding, on the port's device.
func TestTransceiverAlarm(t *testing.T) {
	f := checktest.One(t, checktest.Run(t, "port-xcvr-alarm", checks.Options{}, "port.transceiver"), "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Critical)
	if f.Subject.Device != "mlx5_0" || f.Subject.PCI != "0000:3b:00.0" || f.Fault != "port-module" {
		t.Errorf("subject %+v fault %q", f.Subject, f.Fault)
	}
	checktest.WantEvidence(t, f, "lane 2 Rx power", "-16.99 dBm (0.0200 mW) below the module's low alarm threshold -13.30 dBm")
	checktest.WantEvidence(t, f, "temperature", "warning: temperature 72.5 °C above the module's high warning threshold 70.0 °C")
	checktest.WantEvidence(t, f, "vendor", "EXAMPLE OPTICS")
	checktest.WantEvidence(t, f, "part number", "QSFP28-SR4-EX")
	checktest.WantEvidence(t, f, "serial", "SYNXCVR0001")
	wantSummary(t, f, "1 alarm (lane 2 Rx power below low alarm)", "1 warning (temperature above high warning)")
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "lane 1") || strings.HasPrefix(e.Name, "lane 3") || strings.HasPrefix(e.Name, "lane 4") {
			t.Errorf("healthy lane judged: %+v", e)
		}
	}
	if !strings.Contains(f.Remediation, "ethtool -m ens1f0np0") || !strings.Contains(f.Remediation, "airflow") {
		t.Errorf("fix %q", f.Remediation)
	}
}

// A CMIS module (OSFP, CMIS 5.2) read through the same MODULE_EEPROM_GET pages: one lane below
// its low warning threshold and a latched lane flag make a warning, and only lane 3 is judged.
func TestTransceiverCMIS(t *testing.T) {
	f := checktest.One(t, checktest.Run(t, "port-xcvr-cmis", checks.Options{}, "port.transceiver"), "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "module", "OSFP optical, EXAMPLE OPTICS OSFP-400G-SR4-EX, 4 lanes, 48.0 °C")
	checktest.WantEvidence(t, f, "interface", "400GBASE-SR4 (MMF), host interface 4fh, 4 host / 4 media lanes")
	checktest.WantEvidence(t, f, "lane 3 Rx power", "CMIS page 11h bytes 190-191; thresholds CMIS page 02h bytes 192-199")
	checktest.WantEvidence(t, f, "lane 3 rx lol", "CMIS page 11h byte 148 bit 2")
	wantSummary(t, f, "2 warnings (lane 3 rx lol, lane 3 Rx power below low warning)")
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "lane") && !strings.HasPrefix(e.Name, "lane 3 ") {
			t.Errorf("healthy lane judged: %+v", e)
		}
	}
	if strings.Contains(f.Summary, "alarm") {
		t.Errorf("no alarm expected: %q", f.Summary)
	}
}

// A module within all its thresholds is ok with its identity; a passive cable, which measures
// nothing, is information.
func TestTransceiverOKAndPassiveCable(t *testing.T) {
	fs := checktest.Run(t, "port-xcvr-ok", checks.Options{}, "port.transceiver")
	f := checktest.One(t, fs, "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "module", "EXAMPLE OPTICS QSFP56-SR4-EX, 4 lanes, 45.0 °C")
	checktest.WantEvidence(t, f, "serial", "SYNXCVR0002")
	checktest.WantEvidence(t, f, "interface", "200GBASE-SR4")
	wantSummary(t, f, "within the module's thresholds")

	f = checktest.One(t, fs, "port.transceiver", "mlx5_1/1")
	checktest.WantSeverity(t, f, report.Info)
	checktest.WantEvidence(t, f, "module", "passive copper 2m, EXAMPLE CABLES DAC-200G-CR4-2M")
	checktest.WantEvidence(t, f, "module", "passive copper") // not judged, said as evidence
	wantSummary(t, f, "passive cable has no diagnostics")
	if f.Subject.Device != "mlx5_1" {
		t.Errorf("subject %+v", f.Subject)
	}
}

// A snapshot without the module's pages, or a tree without ethtool netlink, is skipped with
// the source as its limit, as port.link_quality is.
func TestTransceiverNotRecorded(t *testing.T) {
	for _, fx := range []string{"fw-inbox-cx6dx", "port-roce"} {
		for _, f := range checktest.Find(checktest.Run(t, fx, checks.Options{}, "port.transceiver"), "port.transceiver", "") {
			checktest.WantSeverity(t, f, report.Skipped)
			if f.Limit == nil || f.Limit.Kind != report.LimitSource || !strings.Contains(f.Limit.Lift, "rdmadiag record") {
				t.Errorf("%s %s: limit %+v", fx, f.Subject.Name, f.Limit)
			}
		}
	}
}

// xcvrHost is port-roce's tree (mlx5_0/1 on ens1f0np0 ACTIVE, mlx5_1/1 on ens2f0np0 DOWN) as a
// live host with an ethtool model; ens2f0np0 is administratively down (IFF_UP clear).
func xcvrHost(t *testing.T, m ethtooltest.Model) (*host.Host, string) {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(checktest.Fixture(t, "port-roce"))
	if err != nil {
		t.Fatal(err)
	}
	if err := snapshot.UnpackTxtar(data, dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, snapshot.RootDir)
	for nd, flags := range map[string]string{"ens1f0np0": "0x1003", "ens2f0np0": "0x1002"} {
		if err := os.WriteFile(filepath.Join(root, "sys/class/net", nd, "flags"), []byte(flags+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.New(host.Options{Root: root, Kind: host.KindRoot, EthtoolNetlink: m.Conn()})
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

func runTransceiverOn(t *testing.T, h *host.Host) []engine.Finding {
	t.Helper()
	cs, err := checks.Default.Select([]string{"port.transceiver"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(context.Background(), checks.NewEnv(h, checks.Options{}), cs, 1)
}

// losModule is a healthy QSFP56 optical module whose lane 1 latched Rx loss of signal (SFF-8636
// byte 3 bit 0) while its Rx power is back within the thresholds now.
func losModule() map[uint16][]byte {
	s := opticalSpec{vendor: "EXAMPLE OPTICS", part: "QSFP56-SR4-EX", serial: "S1", date: "250101",
		compliance: 0x41, rateUnits: 212, tempC: 40, volts: 3.3,
		rxDBm: [4]float64{-2, -2, -2, -2}, txDBm: [4]float64{-1, -1, -1, -1}, biasMA: 8,
		rxThr: [4]float64{5.0, -10.9, 4.0, -7.9}, txThr: [4]float64{5.0, -8.5, 4.0, -6.5},
		flags: map[int]byte{3: 0x01}}
	return optical(s).view(false)
}

// A latched Rx LOS is judged on a port that is meant to be up, and dropped, with a note, on one
// whose netdev was set administratively down.
func TestTransceiverRxLOSAdminDown(t *testing.T) {
	h, _ := xcvrHost(t, ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{
		{Ifindex: 4, Ifname: "ens1f0np0", EEPROM: losModule()},
		{Ifindex: 5, Ifname: "ens2f0np0", EEPROM: losModule()}}})
	fs := runTransceiverOn(t, h)
	up := checktest.One(t, fs, "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, up, report.Warning)
	checktest.WantEvidence(t, up, "lane 1 rx los", "Rx loss of signal latched, light is back")
	wantSummary(t, up, "lane 1 rx los")

	down := checktest.One(t, fs, "port.transceiver", "mlx5_1/1")
	checktest.WantSeverity(t, down, report.OK)
	checktest.WantEvidence(t, down, "Rx loss of signal flags", "1 not judged: ens2f0np0 is administratively down")
	if _, ok := checktest.Evidence(down, "lane 1 rx los"); ok {
		t.Errorf("Rx LOS judged on an administratively down port: %+v", down.Evidence)
	}
}

// Drivers and kernels without module access are information, not unknown; an empty cage on a
// port without link is information too, but a module that does not answer on a port with link
// is unknown.
func TestTransceiverDriverLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model ethtooltest.Model
		sub   string
		want  report.Severity
		text  string
	}{
		{"EOPNOTSUPP", ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0"}}},
			"mlx5_0/1", report.Info, "no pluggable module information from this driver"},
		{"ENODEV", ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROMErrno: syscall.ENODEV}}},
			"mlx5_0/1", report.Info, "no pluggable module information from this driver"},
		{"no ethtool family", ethtooltest.Model{}, "mlx5_0/1", report.Info, "no ethtool netlink"},
		{"EIO, port down", ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 5, Ifname: "ens2f0np0", EEPROMErrno: syscall.EIO}}},
			"mlx5_1/1", report.Info, "no module answered"},
		{"EIO, port up", ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROMErrno: syscall.EIO}}},
			"mlx5_0/1", report.Unknown, "module EEPROM unreadable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, _ := xcvrHost(t, tc.model)
			f := checktest.One(t, runTransceiverOn(t, h), "port.transceiver", tc.sub)
			checktest.WantSeverity(t, f, tc.want)
			wantSummary(t, f, tc.text)
		})
	}
}

// `record --minimal` keeps the module pages the check reads through the observed host, with
// nothing in snapshot/ about them: the replayed snapshot judges as the host did.
func TestTransceiverRecordReplay(t *testing.T) {
	alarm := optical(opticalSpec{vendor: "EXAMPLE OPTICS", part: "QSFP28-SR4-EX", serial: "S2", date: "250101",
		compliance: 0x02, rateUnits: 103, tempC: 80, volts: 3.3,
		rxDBm: [4]float64{-1, -1, -1, -1}, txDBm: [4]float64{-1, -1, -1, -1}, biasMA: 7.5,
		rxThr: [4]float64{3.4, -13.3, 2.4, -10.3}, txThr: [4]float64{3.4, -10.4, 2.4, -8.4}})
	h, _ := xcvrHost(t, ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{
		{Ifindex: 4, Ifname: "ens1f0np0", EEPROM: alarm.view(false)},
		{Ifindex: 5, Ifname: "ens2f0np0", EEPROM: passiveDAC().view(true)}}})
	live := runTransceiverOn(t, h)
	dir := filepath.Join(t.TempDir(), "snap")
	ask := func(view *host.Host) {
		var cs []checks.Check
		for _, c := range checks.Default.All() {
			if !c.Probe {
				cs = append(cs, c)
			}
		}
		checks.Run(context.Background(), checks.NewEnv(view, checks.Options{}), cs, 1)
	}
	if err := snapshot.Record(h, dir, snapshot.RecordOptions{ToolVersion: "test", Now: time.Unix(0, 0), Ask: ask, Minimal: true}); err != nil {
		t.Fatal(err)
	}
	replayHost, cleanup, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	replayed := runTransceiverOn(t, replayHost)
	if f := checktest.One(t, live, "port.transceiver", "mlx5_0/1"); f.Severity != report.Critical {
		t.Fatalf("live: %s %s", f.Severity, f.Summary)
	}
	if f := checktest.One(t, live, "port.transceiver", "mlx5_1/1"); f.Severity != report.Info {
		t.Fatalf("live: %s %s", f.Severity, f.Summary)
	}
	if !reflect.DeepEqual(live, replayed) {
		t.Errorf("replay differs:\nlive     %+v\nreplayed %+v", live, replayed)
	}
}

// An ordinary user is refused the module EEPROM (EPERM): on the live host that is the run's
// privilege limit, a skip with how to lift it; so is a snapshot recorded by an ordinary user
// (port-xcvr-eperm), lifted by recording as root. A refusal on a host read as root is not a
// privilege limit and stays unknown.
func TestTransceiverPermission(t *testing.T) {
	m := ethtooltest.Model{Family: 0x14, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROMErrno: syscall.EPERM}}}
	_, root := xcvrHost(t, m)
	live, err := host.New(host.Options{Root: root, Kind: host.KindLive, EthtoolNetlink: m.Conn()})
	if err != nil {
		t.Fatal(err)
	}
	f := checktest.One(t, runTransceiverOn(t, live), "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Skipped)
	if f.Limit == nil || f.Limit.Kind != report.LimitPrivilege {
		t.Errorf("limit %+v, want privilege", f.Limit)
	}
	wantSummary(t, f, "needs CAP_NET_ADMIN")
	rec, _ := xcvrHost(t, m)
	checktest.WantSeverity(t, checktest.One(t, runTransceiverOn(t, rec), "port.transceiver", "mlx5_0/1"), report.Unknown)

	f = checktest.One(t, checktest.Run(t, "port-xcvr-eperm", checks.Options{}, "port.transceiver"), "port.transceiver", "mlx5_0/1")
	checktest.WantSeverity(t, f, report.Skipped)
	if f.Limit == nil || f.Limit.Kind != report.LimitPrivilege || !strings.Contains(f.Limit.Lift, "record the snapshot as root") ||
		!strings.Contains(f.Limit.Lift, "uid 1000") {
		t.Errorf("recorded by uid 1000: limit %+v, want privilege, lifted by recording as root", f.Limit)
	}
	checktest.WantEvidence(t, f, "module EEPROM", "operation not permitted")
}
