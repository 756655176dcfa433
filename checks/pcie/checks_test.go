package pcie

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
)

// The documented case: a 200 Gb/s ConnectX-6 in a Gen3 x8 slot delivers at most about 63 Gb/s.
func TestGen3x8Slot(t *testing.T) {
	fs := checktest.Run(t, "pcie-gen3x8-slot", checks.Options{}, "pcie")
	bw := checktest.One(t, fs, "pcie.bandwidth", "0000:3b:00.0")
	checktest.WantSeverity(t, bw, report.Critical)
	checktest.WantEvidence(t, bw, "usable PCIe bandwidth", "63.0 Gb/s (8 GT/s x8 at 0000:3a:00.0)")
	checktest.WantEvidence(t, bw, "active port demand", "200 Gb/s")
	if bw.Subject.Device != "mlx5_0" || bw.Subject.PCI != "0000:3b:00.0" {
		t.Errorf("bandwidth subject %+v", bw.Subject)
	}
	if !strings.Contains(bw.Remediation, "Gen4 x16") {
		t.Errorf("bandwidth remediation %q should name the link a 200 Gb/s port needs", bw.Remediation)
	}

	link := checktest.One(t, fs, "pcie.link", "0000:3b:00.0")
	checktest.WantSeverity(t, link, report.Warning)
	checktest.WantEvidence(t, link, "kernel names the limiting hop", "0000:3a:00.0")
	checktest.WantEvidence(t, link, "link at 0000:3b:00.0 (function)", "trained 8 GT/s x8")
	if !strings.Contains(link.Summary, "slot limits the card") || !strings.Contains(link.Remediation, "Move the card") {
		t.Errorf("a slot narrower than the card must say so and say move the card: %q / %q", link.Summary, link.Remediation)
	}
	// The VF has no link of its own: it is judged through its PF, never on its own BDF.
	if got := checktest.Find(fs, "pcie.link", "0000:3b:00.2"); len(got) != 0 {
		t.Errorf("VF judged on its own: %+v", got)
	}
	checktest.WantEvidence(t, link, "judged as", "PF of VF 0000:3b:00.2 (mlx5_1)")

	dma := checktest.One(t, fs, "pcie.dma", "0000:3b:00.0")
	checktest.WantSeverity(t, dma, report.Warning)
	checktest.WantEvidence(t, dma, "netdev ens1f0np0", "rx_errors 37")
	for _, bdf := range []string{"0000:3b:00.0", "0000:3a:00.0"} {
		checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", bdf), report.OK)
	}
}

func TestSignalIntegrityAERAndIOMMU(t *testing.T) {
	fs := checktest.Run(t, "pcie-signal-integrity", checks.Options{}, "pcie")
	link := checktest.One(t, fs, "pcie.link", "0000:19:00.0")
	checktest.WantSeverity(t, link, report.Warning)
	if !strings.Contains(link.Summary, "although both ends support 32 GT/s x16") || !strings.Contains(link.Remediation, "reseat") {
		t.Errorf("trained below both ends must point at signal integrity: %q / %q", link.Summary, link.Remediation)
	}
	checktest.WantEvidence(t, link, "config space at 0000:19:00.0", "target speed 32 GT/s, MaxPayload 256 (supported 512), MaxReadReq 4096")
	checktest.WantEvidence(t, link, "link at 0000:18:00.0 (switch downstream port)", "trained 16 GT/s x16")
	checktest.WantEvidence(t, link, "limiting hop", "16 GT/s x16")

	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.bandwidth", "0000:19:00.0"), report.Critical)

	card := checktest.One(t, fs, "pcie.aer", "0000:19:00.0")
	checktest.WantSeverity(t, card, report.Critical)
	checktest.WantEvidence(t, card, "fatal errors", "DLP=1")
	checktest.WantEvidence(t, card, "non-fatal errors", "CmpltTO=2")
	checktest.WantEvidence(t, card, "kernel log", "severity=Uncorrected")
	dsp := checktest.One(t, fs, "pcie.aer", "0000:18:00.0")
	checktest.WantSeverity(t, dsp, report.Warning)
	if !strings.Contains(dsp.Summary, "since boot") {
		t.Errorf("correctable counts are since boot and must say so: %q", dsp.Summary)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", "0000:16:01.0"), report.Critical) // root-port totals
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", "0000:17:00.0"), report.OK)

	dma := checktest.One(t, fs, "pcie.dma", "0000:19:00.0")
	checktest.WantSeverity(t, dma, report.Critical)
	checktest.WantEvidence(t, dma, "IOMMU fault", "Request device [19:00.0]")
	checktest.WantEvidence(t, dma, "driver counters ib0", "tx_pci_signal_integrity=1471")
}

func TestDMACounters(t *testing.T) {
	got := DMACounters(map[string]uint64{
		"rx_packets": 5, "rx_crc_errors_phy": 9, // traffic and wire errors are not DMA-path counters
		"tx_pci_signal_integrity": 1471, "rx_pci_signal_integrity": 0,
		"rx_wqe_err": 2, "rx3_wqe_err": 2, // per-queue copy of the aggregate: not counted twice
		"tx_cqe_err": 1, "rx_buff_alloc_err": 4, "outbound_pci_buffer_overflow": 6,
		"tx_dma_failed": 3, "dma_map_err": 1, "tx_dma_packets": 100,
	})
	want := "dma_map_err=1, outbound_pci_buffer_overflow=6, rx_buff_alloc_err=4, rx_wqe_err=2, tx_cqe_err=1, tx_dma_failed=3, tx_pci_signal_integrity=1471"
	if s := countersString(got); s != want {
		t.Errorf("DMACounters = %s\nwant %s", s, want)
	}
	for _, c := range got {
		if (c.Name == "tx_pci_signal_integrity") != (c.Kind == "pcie") {
			t.Errorf("%s: kind %s", c.Name, c.Kind)
		}
	}
	if DMACounters(nil) != nil {
		t.Error("no statistics: no counters")
	}
}

// With --interval the correctable counters are judged by their growth: unchanged since-boot
// counts above the threshold are history, not a live problem.
func TestAERInterval(t *testing.T) {
	fs := checktest.RunLive(t, "pcie-signal-integrity", checks.Options{Interval: 30 * time.Second}, nil, "pcie.aer")
	dsp := checktest.One(t, fs, "pcie.aer", "0000:18:00.0")
	checktest.WantSeverity(t, dsp, report.Info)
	checktest.WantEvidence(t, dsp, "correctable errors", "+0 in 30s")
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", "0000:19:00.0"), report.Critical)
}

// A snapshot holds one reading: reading it twice would show "+0" and pass a replaying link for
// a quiet one, so --interval is not applied there (said once, with its limit), and the
// since-boot counts are judged as without it.
func TestIntervalOnSnapshotNotApplied(t *testing.T) {
	fs := checktest.Run(t, "pcie-signal-integrity", checks.Options{Interval: 30 * time.Second}, "pcie.aer", "pcie.dma")
	dsp := checktest.One(t, fs, "pcie.aer", "0000:18:00.0")
	checktest.WantSeverity(t, dsp, report.Warning)
	for _, id := range []string{"pcie.aer", "pcie.dma"} {
		skip := checktest.One(t, fs, id, "interval")
		checktest.WantSeverity(t, skip, report.Skipped)
		if skip.Limit == nil || skip.Limit.Kind != report.LimitLiveOnly {
			t.Errorf("%s: limit %+v", id, skip.Limit)
		}
	}
}

func TestSoftwareDevices(t *testing.T) {
	fs := checktest.Run(t, "testdata/soft-roce.txtar", checks.Options{}, "pcie")
	for _, id := range []string{"pcie.link", "pcie.bandwidth", "pcie.aer", "pcie.dma"} {
		f := checktest.One(t, fs, id, "rxe0")
		checktest.WantSeverity(t, f, report.Skipped)
		if !strings.Contains(f.Summary, "software device on netdev br0") {
			t.Errorf("%s: %q", id, f.Summary)
		}
	}
	link := checktest.One(t, fs, "pcie.link", "0000:02:00.0")
	checktest.WantSeverity(t, link, report.OK)
	checktest.WantEvidence(t, link, "judged as", "netdev eth1 under software device rxe1")
	bw := checktest.One(t, fs, "pcie.bandwidth", "0000:02:00.0")
	checktest.WantSeverity(t, bw, report.OK)
	checktest.WantEvidence(t, bw, "netdev eth1", "1 Gb/s")
	// 100 correctable errors is at the threshold, not above it.
	checktest.WantSeverity(t, checktest.One(t, fs, "pcie.aer", "0000:00:1c.0"), report.Info)
	dma := checktest.One(t, fs, "pcie.dma", "0000:02:00.0")
	checktest.WantSeverity(t, dma, report.Warning)
	checktest.WantEvidence(t, dma, "driver counters eth1", "tx_dma_failed=2")
	if !strings.Contains(dma.Summary, "driver counts PCIe/DMA errors") {
		t.Errorf("driver DMA counters must lead the summary: %q", dma.Summary)
	}
	// No AER counters on the NIC, but its failed recovery is in the log: reported, not dropped.
	nic := checktest.One(t, fs, "pcie.aer", "0000:02:00.0")
	checktest.WantSeverity(t, nic, report.Warning)
	checktest.WantEvidence(t, nic, "kernel log", "can't recover")
}

func ls(speed Speed, w int, ms Speed, mw int, bdf string) linkState {
	return linkState{node: node{BDF: bdf, Dir: "/sys/devices/pci0000:00/" + bdf}, CurSpeed: speed, CurWidth: w, MaxSpeed: ms, MaxWidth: mw}
}

func TestJudgeLink(t *testing.T) {
	bios := ls(8, 16, 16, 16, "0000:3b:00.0")
	bios.Cap = &ExpressCap{TargetSpeed: 8}
	for _, tc := range []struct {
		name  string
		l     link
		sev   report.Severity
		inWhy string
		inFix string
	}{
		// The lab's pcie-degraded: the root port advertises 16 GT/s x32, the virtio endpoint can do
		// only 2.5 GT/s x1: the card sets the link, which is healthy.
		{"card-limited", link{ls(2.5, 1, 2.5, 1, "0000:01:00.0"), ls(2.5, 1, 16, 32, "0000:00:02.0")}, report.OK, "card's own maximum", ""},
		// The lab's aer scenario: QEMU's root port reports "Unknown" and width 255.
		{"port capability unknown", link{ls(2.5, 1, 2.5, 1, "0000:01:00.0"), ls(2.5, 1, 0, 0, "0000:00:02.0")}, report.OK, "trained at 2.5 GT/s x1", ""},
		{"lanes lost", link{ls(16, 8, 16, 16, "0000:3b:00.0"), ls(16, 8, 16, 16, "0000:3a:00.0")}, report.Warning, "both ends support 16 GT/s x16", "Lanes failed to train"},
		{"bios target", link{bios, ls(8, 16, 16, 16, "0000:3a:00.0")}, report.Warning, "Target Link Speed is set to 8 GT/s", "BIOS"},
		{"narrow slot", link{ls(8, 8, 16, 16, "0000:3b:00.0"), ls(8, 8, 8, 8, "0000:3a:00.0")}, report.Warning, "slot limits the card", "Move the card"},
		{"trained unknown", link{ls(0, 0, 16, 16, "0000:3b:00.0"), ls(0, 0, 16, 16, "0000:3a:00.0")}, report.Unknown, "unknown", ""},
		{"no capability", link{ls(8, 8, 0, 0, "0000:3b:00.0"), ls(8, 8, 0, 0, "0000:3a:00.0")}, report.Unknown, "neither end", ""},
	} {
		v := judgeLink(tc.l)
		if v.Severity != tc.sev || !strings.Contains(v.Why, tc.inWhy) || !strings.Contains(v.Fix, tc.inFix) {
			t.Errorf("%s: %v %q fix %q; want %v containing %q / %q", tc.name, v.Severity, v.Why, v.Fix, tc.sev, tc.inWhy, tc.inFix)
		}
	}
}

func TestPairLinksSwitch(t *testing.T) {
	ep := ls(16, 16, 32, 16, "0000:19:00.0")
	dsp := ls(16, 16, 32, 16, "0000:18:00.0")
	usp := ls(32, 16, 32, 16, "0000:17:00.0")
	rp := ls(32, 16, 32, 16, "0000:16:01.0")
	got := pairLinks([]linkState{ep, dsp, usp, rp})
	if len(got) != 2 || got[0].Port.BDF != "0000:18:00.0" || got[1].Child.BDF != "0000:17:00.0" || got[1].Port.BDF != "0000:16:01.0" {
		t.Errorf("pairLinks = %+v", got)
	}
}

func TestJudgeAERRate(t *testing.T) {
	tg := &target{BDF: "0000:3b:00.0", Nodes: []node{{BDF: "0000:3b:00.0", Dir: "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"}}}
	tg.Devices = []*inventory.Device{{Name: "mlx5_0"}}
	snap := func(cor uint64) aerSnap {
		return aerSnap{node: tg.Nodes[0], AERCounters: observe.AERCounters{Present: true, Totals: map[string]uint64{"fatal": 0, "non-fatal": 0, "correctable": cor}}}
	}
	before, after := snap(5), snap(65)
	f := judgeAER(tg, before, &after, 60*time.Second, nil)
	checktest.WantSeverity(t, f, report.Warning)
	if !strings.Contains(f.Summary, "60 correctable PCIe errors in 1m0s (1.00/s)") {
		t.Errorf("rate summary: %q", f.Summary)
	}
	// A few since boot and no growth: notable, not a fault.
	same := snap(5)
	checktest.WantSeverity(t, judgeAER(tg, before, &same, time.Minute, nil), report.Info)
	checktest.WantSeverity(t, judgeAER(tg, snap(0), nil, 0, nil), report.OK)
	checktest.WantSeverity(t, judgeAER(tg, snap(101), nil, 0, nil), report.Warning)
}

// With --interval, netdev errors that did not grow are history: info, not a warning.
func TestDMAInterval(t *testing.T) {
	fs := checktest.RunLive(t, "pcie-gen3x8-slot", checks.Options{Interval: 10 * time.Second}, nil, "pcie.dma")
	dma := checktest.One(t, fs, "pcie.dma", "0000:3b:00.0")
	checktest.WantSeverity(t, dma, report.Info)
	checktest.WantEvidence(t, dma, "netdev ens1f0np0", "+0/+0 in 10s")
	checktest.WantEvidence(t, dma, "driver counters ens1f0np0", "no PCIe signal-integrity or DMA error counts")
	checktest.WantEvidence(t, dma, "driver counters ens1f0v0", "not recorded")
}
