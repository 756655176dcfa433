package kevent

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
)

// dmesgStamp is the "[  445.937186] " time stamp dmesg prints before a line.
var dmesgStamp = regexp.MustCompile(`^\[\s*\d+\.\d+\] `)

// classifyLine is what the table makes of one line on its own, on a host with no RDMA device:
// the entry it matches (nil for none) and the PCI address, else the netdev, it names.
func classifyLine(t *testing.T, tb *Table, text string, level int, noLevel bool, devs ...Device) (*Signature, string) {
	t.Helper()
	evs := tb.Classify([]kmsg.Record{{Level: level, NoLevel: noLevel, Text: text}}, devs)
	if len(evs) == 0 {
		return nil, ""
	}
	dev := evs[0].PCI
	if dev == "" {
		dev = evs[0].Netdev
	}
	if dev == "" && evs[0].Device != "dut" {
		dev = evs[0].Device
	}
	return evs[0].Sig, dev
}

// TestKmsgCorpus runs every line of testdata/kmsg-corpus.txt, copied from public reports, through
// the signature table and holds it to the entry, device and severity written next to it.
func TestKmsgCorpus(t *testing.T) {
	tb := table(t)
	f, err := os.Open("testdata/kmsg-corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	source, lines, sources := "", 0, 0
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "## "):
			source = strings.TrimPrefix(l, "## ")
			if !strings.HasPrefix(source, "https://") {
				t.Errorf("line %d: a report's source must be its URL: %q", n, source)
			}
			sources++
			continue
		case l == "" || strings.HasPrefix(l, "#"):
			continue
		}
		if source == "" {
			t.Fatalf("line %d: a log line before any source", n)
		}
		want, line, ok := strings.Cut(l, " | ")
		w := strings.Fields(want)
		if !ok || len(w) != 3 {
			t.Fatalf("line %d: want \"<signature> <device> <severity> | <line>\": %q", n, l)
		}
		lines++
		text := dmesgStamp.ReplaceAllString(line, "")
		// The reports quote dmesg, which gives no priority: as a text log would.
		sig, dev := classifyLine(t, tb, text, kmsg.NeutralLevel, true, lineDevice(kmsg.Record{Text: text})...)
		gotID, gotSev := "-", "-"
		if sig != nil {
			gotID, gotSev = sig.ID, sig.Severity
		}
		if dev == "" {
			dev = "-"
		}
		if gotID != w[0] || dev != w[1] || gotSev != w[2] {
			t.Errorf("line %d (%s):\n  %s\n  got %s %s %s, want %s", n, source, text, gotID, dev, gotSev, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines < 30 || sources < 8 {
		t.Errorf("corpus shrank: %d lines from %d reports", lines, sources)
	}
}

// TestKnownLines holds lines formatted from the drivers' format strings (and a few of the lab
// guest's) to the entry, detail and device they must give.
func TestKnownLines(t *testing.T) {
	tb := table(t)
	// The transmit watchdog counts only on an RDMA device's netdev.
	devs := []Device{{Name: "mlx5_0", PCI: "0000:3b:00.0", Netdevs: map[string]int{"ens1f0np0": 1}}}
	for _, tc := range []struct {
		text, id, detail, device string
	}{
		{"mlx5_core 0000:3b:00.0: poll_health:800:(pid 0): Fatal error 5 detected", "mlx5-fatal", "sensor 5 (firmware syndrome, recovery flow required)", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: device's health compromised", "mlx5-health-compromised", "", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: mlx5_cmd_out_err:838:(pid 1): ACCESS_REG(0x805) op_mod(0x1) failed, status bad parameter(0x3), syndrome (0x6ec9f0), err(-22)", "mlx5-access-reg", "", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: mlx5_cmd_check:800:(pid 1): CREATE_QP(0x500) op_mod(0x0) failed, status bad resource(0x5), syndrome (0x1)", "mlx5-cmd-failed", "CREATE_QP: bad resource", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: Recovered 2 EQEs on cmd_eq", "cmd-eq-recovered", "", "0000:3b:00.0"},
		{"mlx5_ib: Unknown symbol ib_register_device (err -2)", "module-unknown-symbol", "mlx5_ib", ""},
		{"mlx5_core 0000:3b:00.0: probe with driver mlx5_core failed with error -22", "probe-failed", "", "0000:3b:00.0"},
		{"mlx5_core: probe of 0000:01:00.0 failed with error -22", "probe-failed-old", "", "0000:01:00.0"},
		{"mlx5_core 0000:3b:00.0: Port module event[error]: module 0, Cable error, Bad or shorted cable/module", "port-module-error", "module 0: Bad or shorted cable/module", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: Port module event: module 0, Cable unplugged", "port-module-event", "module 0: Cable unplugged", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: Detected insufficient power on the PCIe slot (27W).", "slot-power", "", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: mlx5e_cq_error_event: cqn=0x000403 event=0x04", "mlx5e-cq-error", "event 0x04", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0 ens1f0np0: NETDEV WATCHDOG: CPU: 3: transmit queue 5 timed out 8192 ms", "tx-timeout-cpu", "", "0000:3b:00.0"},
		{"NETDEV WATCHDOG: ens1f0np0 (mlx5_core): transmit queue 5 timed out 8192 ms", "tx-timeout", "", "0000:3b:00.0"},
		{"mlx5_core 0000:3b:00.0: wait_fw_init:338:(pid 9): Waiting for FW initialization, timeout abort in 100s (0x1)", "mlx5-fw-preinit-wait", "", "0000:3b:00.0"},
		{"mlx5_core 0000:b3:00.1: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:b2:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)", "pcie-bw-limited", "0000:b2:00.0", "0000:b3:00.1"},
		{"infiniband irdma0: abnormal ae_id = 0x503 bool qp=1 qp_id = 5, ae_src=0", "irdma-abnormal-ae", "ae_id 0x503", "irdma0"},
		{"bnxt_en 0000:41:00.0: QPLIB: cmdq[0x4d]=0x15 timedout (20000)msec", "bnxt-re-cmd-timeout", "", "0000:41:00.0"},
		{"infiniband efa_0: Failed to process command create_qp (opcode 1) comp_status 7 err -110", "efa-cmd-failed", "create_qp", "efa_0"},
		{"hns3 0000:7d:00.0: failed to wait mbox status 0x1", "hns-mbox-timeout", "", "0000:7d:00.0"},
		// kernel/dma/debug.c err_printk() since 5.x: pr_fmt, then the driver and the device.
		{"hfi1 0000:05:00.0: hfi1_0: 8051: Link up", "hfi1-link-up", "", "0000:05:00.0"},
		{"hfi1 0000:00:05.0: Could not allocate unit ID: error 1", "hfi1-could-not-allocate-unit-id-error", "", "0000:00:05.0"},
		{"ib_srpt srpt_add_one(mlx5_0) failed.", "srpt-ib-srpt-failed", "", ""},
		{"mlx5_cmd_check: 110 callbacks suppressed", "mlx5-ratelimited-firmware-health", "mlx5_cmd_check", ""},
		{"NMI: PCI system error (SERR) for reason a1 on CPU 0.", "nmi-pci-serr", "", ""},
		{"mana 7870:00:00.0: Failed to send mana message: -71, 0x1d", "manaen-failed-send-mana-message", "", "7870:00:00.0"},
		{"cxgb4 0000:5e:00.4 ens3f4: passive DA module inserted", "cxgb4-module-inserted", "", "ens3f4"},
		{"DMA-API: mlx5_core 0000:3b:00.0: device driver failed to check map error[device address=0x00000000fff80000] [size=4096 bytes] [mapped as single]", "dmadebug-device-driver-failed-check-map-error-device", "", "0000:3b:00.0"},
		// fs/smb/client/smbdirect.c log_rdma(): "CIFS: VFS: " and the function and line.
		{"CIFS: VFS: _smbd_get_connection:1602 rdma_create_qp failed -22", "smbd-rdma-create-qp-failed", "", ""},
		{"mana 7870:00:00.0: HWC: Failed hw_channel req: 0xc00000bb", "mana-hwc-failed-hw-channel-req", "", "7870:00:00.0"},
	} {
		sig, dev := classifyLine(t, tb, tc.text, 3, false, devs...)
		if sig == nil {
			t.Errorf("%q: no entry, want %s", tc.text, tc.id)
			continue
		}
		evs := tb.Classify([]kmsg.Record{{Level: 3, Text: tc.text}}, devs)
		if sig.ID != tc.id || evs[0].Detail() != tc.detail || dev != tc.device {
			t.Errorf("%q: got %s detail %q device %q, want %s %q %q", tc.text, sig.ID, evs[0].Detail(), dev, tc.id, tc.detail, tc.device)
		}
	}
	// Lines that must stay no event: the lab guest's boot lines, a link that becomes ready.
	for _, text := range []string{
		"pcieport 0000:00:02.0: AER: enabled with IRQ 24",
		"IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready",
	} {
		if sig, _ := classifyLine(t, tb, text, 6, false); sig != nil && !sig.Benign {
			t.Errorf("%q: classified as %s, want no event or a benign one", text, sig.ID)
		}
	}
}
