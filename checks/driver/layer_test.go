package driver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	_ "github.com/rdmadiag/rdmadiag/checks/port" // port findings the driver faults must explain
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// bySignature returns the kernel-log findings of one signature.
func bySignature(fs []engine.Finding, id string) []engine.Finding {
	var out []engine.Finding
	for _, f := range checktest.Find(fs, "driver.kernel_log", "") {
		if v, _ := checktest.Evidence(f, "signature"); v == id {
			out = append(out, f)
		}
	}
	return out
}

// rootCauses builds the report the CLI would and returns its root-cause refs.
func rootCauses(fs []engine.Finding) []string {
	return engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{}).Summary.RootCauses
}

func TestNoIBCore(t *testing.T) {
	fs := checktest.Run(t, "drv-no-ib-core", checks.Options{}, "driver")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "ib_core"), report.Critical)
	f := checktest.One(t, fs, "driver.registration", "0000:3b:00.0")
	checktest.WantSeverity(t, f, report.Critical)
	if !strings.Contains(f.Summary, "ib_core is not loaded") || f.Fault != "rdma-device" {
		t.Errorf("registration: %q fault %s", f.Summary, f.Fault)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.interrupts", "0000:3b:00.0"), report.OK)
	if rc := rootCauses(fs); len(rc) != 1 || rc[0] != "driver.modules@ib_core" {
		t.Errorf("root causes %v, want only driver.modules@ib_core", rc)
	}
}

func TestMlx5IBFirmwareMismatch(t *testing.T) {
	fs := checktest.Run(t, "drv-mlx5ib-fw-mismatch", checks.Options{}, "driver")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "mlx5_ib"), report.Critical)
	f := checktest.One(t, fs, "driver.registration", "0000:3b:00.0")
	checktest.WantSeverity(t, f, report.Critical)
	var logs []string
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "log ") {
			logs = append(logs, e.Observed)
		}
	}
	joined := strings.Join(logs, "\n")
	for _, want := range []string{"QUERY_HCA_CAP(0x100) op_mod(0x1) failed, status bad parameter", "mlx5_ib: Unknown symbol", "disagrees about version of symbol"} {
		if !strings.Contains(joined, want) {
			t.Errorf("registration evidence lacks %q:\n%s", want, joined)
		}
	}
	us := bySignature(fs, "module-unknown-symbol")
	if len(us) != 1 || us[0].Subject.Name != "mlx5_ib" || us[0].Severity != report.Critical {
		t.Fatalf("unknown symbol findings: %+v", us)
	}
	// One failed load: its "Unknown symbol" and "disagrees about version" lines together.
	if n, _ := checktest.Evidence(us[0], "count"); n != "3" {
		t.Errorf("module load lines %s, want 3", n)
	}
	cmd := bySignature(fs, "mlx5-cmd-failed")
	if len(cmd) != 1 || cmd[0].Fault != "firmware" || cmd[0].Subject.PCI != "0000:3b:00.0" {
		t.Fatalf("command failure findings: %+v", cmd)
	}
	rc := rootCauses(fs)
	if len(rc) != 1 || rc[0] != cmd[0].CheckID+"@0000:3b:00.0/mlx5-cmd-failed/query_hca_cap-bad-parameter" {
		t.Errorf("root causes %v, want only the firmware command failure", rc)
	}
	f = checktest.One(t, fs, "driver.modules", "mlx5_core")
	if !strings.Contains(f.Summary, "24.10-1.1.4") {
		t.Errorf("OFED version not identified: %s", f.Summary)
	}
}

func TestNoConfigInfiniband(t *testing.T) {
	fs := checktest.Run(t, "drv-no-config-ib", checks.Options{}, "driver")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.kernel_config", "CONFIG_INFINIBAND"), report.Critical)
	if rc := rootCauses(fs); len(rc) != 1 || rc[0] != "driver.kernel_config@CONFIG_INFINIBAND" {
		t.Errorf("root causes %v, want only CONFIG_INFINIBAND", rc)
	}
}

func TestMlx5Health(t *testing.T) {
	fs := checktest.Run(t, "drv-mlx5-health", checks.Options{}, "driver", "port.state")
	for _, tc := range []struct {
		sig   string
		sev   report.Severity
		fault string
		dev   string
		count string
	}{
		// One firmware-health event: fatal error, syndrome dump, missed polls, command timeouts
		// the recovery flow and its failure are one finding carrying all nine lines.
		{"mlx5-health-event", report.Critical, "firmware-health", "mlx5_0", "9"},
		{"mlx5-access-reg", report.Info, "firmware", "mlx5_0", "3"},
		{"page-alloc", report.Warning, "dma-engine", "", "1"},
	} {
		got := bySignature(fs, tc.sig)
		if len(got) != 1 {
			t.Errorf("%s: %d findings", tc.sig, len(got))
			continue
		}
		f := got[0]
		n, _ := checktest.Evidence(f, "count")
		if f.Severity != tc.sev || f.Fault != tc.fault || f.Subject.Device != tc.dev || n != tc.count {
			t.Errorf("%s: %s fault %s device %q count %s; want %s %s %q %s", tc.sig, f.Severity, f.Fault, f.Subject.Device, n, tc.sev, tc.fault, tc.dev, tc.count)
		}
	}
	// The CQ error is cq.errors' and the AER line pcie.aer's (checks.JudgeOf): not reported here
	// as well, so one line is one finding.
	for _, id := range []string{"mlx5-fatal", "mlx5-health-compromised", "mlx5-health-syndrome", "mlx5-cmd-timeout", "mlx5-recovery-failed", "cq-error", "aer"} {
		if got := bySignature(fs, id); len(got) != 0 {
			t.Errorf("%s reported on its own (%d findings), want it inside the health event", id, len(got))
		}
	}
	ev := bySignature(fs, "mlx5-health-event")[0]
	for _, want := range []string{"Fatal error 1 detected", "health compromised", "No done completion", "health recovery failed"} {
		found := false
		for _, e := range ev.Evidence {
			found = found || strings.HasPrefix(e.Name, "log ") && strings.Contains(e.Observed, want)
		}
		if !found {
			t.Errorf("health event evidence lacks the line %q", want)
		}
	}
	if !strings.Contains(ev.Summary, "recovery failed") || !strings.Contains(ev.Remediation, "Cold-reset") {
		t.Errorf("health event: %q / %q", ev.Summary, ev.Remediation)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.interrupts", "mlx5_1"), report.Critical)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.interrupts", "mlx5_0"), report.OK)
	// One event is one root cause on mlx5_0, not five.
	n := 0
	for _, rc := range rootCauses(fs) {
		if strings.HasPrefix(rc, "driver.kernel_log@mlx5_0") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d kernel-log root causes on mlx5_0, want 1: %v", n, rootCauses(fs))
	}
	// The firmware fatal error explains mlx5_0's port being down.
	rep := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	for _, f := range rep.Findings {
		if f.CheckID == "port.state" && f.Subject.Name == "mlx5_0/1" && len(f.ExplainedBy) == 0 {
			t.Errorf("mlx5_0/1 down is not explained by the firmware health findings")
		}
	}
}

func TestUserVerbsHealthy(t *testing.T) {
	fs := checktest.Run(t, "port-cx7-ib", checks.Options{}, "driver.user_verbs")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", "mlx5_0 uverbs"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", "provider mlx5"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", "libibverbs.so.1"), report.OK)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", "RLIMIT_MEMLOCK"), report.OK)
}

func TestMLX5IRQName(t *testing.T) {
	for _, name := range []string{"mlx5_comp12@pci:0000:3b:00.1", "mlx5_async@pci:0000:3b:00.0", "mlx5_combined0@pci:0000:af:00.0", "mlx5_cmd_eq@pci:0000:3b:00.0"} {
		if !mlx5IRQName.MatchString(name) {
			t.Errorf("%s not recognised", name)
		}
	}
	if mlx5IRQName.MatchString("virtio0-input.0") {
		t.Error("virtio vector taken for mlx5")
	}
}

// TestHealthEvents groups firmware-health lines into events per device and time: a recovery that
// succeeded makes the event a warning, five quiet minutes start a new event, another device's
// lines are another event, and a lone signature keeps its own counted finding.
func TestHealthEvents(t *testing.T) {
	inv := &inventory.Inventory{Devices: []*inventory.Device{
		{Name: "mlx5_0", PCI: &inventory.PCIFunction{BDF: "0000:3b:00.0"}},
		{Name: "mlx5_1", PCI: &inventory.PCIFunction{BDF: "0000:5e:00.0"}},
	}}
	line := func(seq int, sec float64, bdf, text string) kmsg.Record {
		return kmsg.Record{Level: 3, Seq: uint64(seq), Usec: uint64(sec * 1e6), Text: "mlx5_core " + bdf + ": " + text, Device: "+pci:" + bdf}
	}
	const a, b = "0000:3b:00.0", "0000:5e:00.0"
	for _, tc := range []struct {
		name string
		recs []kmsg.Record
		// want: per event, its device, severity and line count
		want []string
		lone int // matches left to the per-signature findings
	}{
		{"recovered", []kmsg.Record{
			line(1, 100, a, "poll_health:800:(pid 0): Fatal error 5 detected"),
			line(2, 100.1, a, "print_health_info:431:(pid 0): synd 0x1: firmware internal error"),
			line(3, 160, a, "mlx5_health_try_recover:356:(pid 9): health recovery succeeded"),
		}, []string{"mlx5_0 warning 3"}, 0},
		{"two events five quiet minutes apart", []kmsg.Record{
			line(1, 100, a, "Fatal error 1 detected"),
			line(2, 101, a, "device's health compromised - reached miss count"),
			line(3, 1000, a, "Fatal error 1 detected"),
			line(4, 1180, a, "health recovery failed"),
		}, []string{"mlx5_0 critical 2", "mlx5_0 critical 2"}, 0},
		{"two devices", []kmsg.Record{
			line(1, 100, a, "Fatal error 1 detected"),
			line(2, 100.5, b, "Fatal error 1 detected"),
			line(3, 101, a, "health recovery failed"),
			line(4, 101, b, "health recovery failed"),
		}, []string{"mlx5_0 critical 2", "mlx5_1 critical 2"}, 0},
		{"a lone signature stays counted", []kmsg.Record{
			line(1, 100, a, "cmd[0]: ACCESS_REG(0x805) No done completion"),
			line(2, 100.1, a, "ACCESS_REG(0x805) timeout. Will cause a leak of a command resource"),
		}, nil, 2},
		{"a timeout after the recovery keeps it critical", []kmsg.Record{
			line(1, 100, a, "Fatal error 5 detected"),
			line(2, 150, a, "health recovery succeeded"),
			line(3, 200, a, "cmd[0]: CREATE_CQ(0x400) No done completion"),
		}, []string{"mlx5_0 critical 3"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ke, err := checks.NewKernelEvents(&kmsg.Log{Records: tc.recs}, inv)
			if err != nil {
				t.Fatal(err)
			}
			ms := ke.For(checks.JudgeKernelLog)
			evs, merged := healthEvents(ms)
			var got []string
			for _, ev := range evs {
				f := eventFinding(ev, &kmsg.Log{Cite: "kmsg"})
				got = append(got, fmt.Sprintf("%s %s %d", f.Subject.Device, f.Severity, len(ev.recs)))
				if f.Fault != "firmware-health" {
					t.Errorf("fault %s", f.Fault)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("events %v, want %v", got, tc.want)
			}
			if lone := len(ms) - len(merged); lone != tc.lone {
				t.Errorf("%d matches left alone, want %d", lone, tc.lone)
			}
		})
	}
}

// TestContainerWithoutDevices: the host kernel has uverbs0, the container has no
// /dev/infiniband: the finding says so and asks for the device to be passed in, not for udev.
func TestContainerWithoutDevices(t *testing.T) {
	fs := checktest.Run(t, "drv-container", checks.Options{}, "driver")
	f := checktest.One(t, fs, "driver.user_verbs", "mlx5_0 uverbs")
	checktest.WantSeverity(t, f, report.Critical)
	if !strings.Contains(f.Summary, "container") || !strings.Contains(f.Remediation, "--device=/dev/infiniband/uverbs0") || strings.Contains(f.Remediation, "udevadm") {
		t.Errorf("container explanation missing: %q / %q", f.Summary, f.Remediation)
	}
	if v, _ := checktest.Evidence(f, "/dev/infiniband/uverbs0"); v != "absent" {
		t.Errorf("node evidence %q", v)
	}
	for _, s := range []string{"provider mlx5", "libibverbs.so.1", "RLIMIT_MEMLOCK"} {
		checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", s), report.OK)
	}
	if rc := rootCauses(fs); len(rc) != 1 || rc[0] != "driver.user_verbs@mlx5_0 uverbs" {
		t.Errorf("root causes %v, want only the missing node", rc)
	}
}

// TestModuleStates: a module stuck Unloading, a dependent without its dependency and in-box
// modules mixed with OFED ones, each reported once with its own severity.
func TestModuleStates(t *testing.T) {
	fs := checktest.Run(t, "drv-module-states", checks.Options{}, "driver.modules")
	f := checktest.One(t, fs, "driver.modules", "ib_umad") // the stuck finding only, no OK "loaded" beside it
	checktest.WantSeverity(t, f, report.Critical)
	if v, _ := checktest.Evidence(f, "state"); v != "Unloading" || !strings.Contains(f.Summary, "exit has not returned") {
		t.Errorf("stuck module: state %q, %q", v, f.Summary)
	}
	f = checktest.One(t, fs, "driver.modules", "rdma_ucm")
	checktest.WantSeverity(t, f, report.Critical)
	if v, _ := checktest.Evidence(f, "missing dependencies"); v != "rdma_cm" {
		t.Errorf("rdma_ucm missing dependencies %q", v)
	}
	f = checktest.One(t, fs, "driver.modules", "rdma stack")
	checktest.WantSeverity(t, f, report.Warning)
	if v, _ := checktest.Evidence(f, "out-of-tree"); v != "mlx5_core, mlx5_ib, mlx_compat" {
		t.Errorf("out-of-tree %q", v)
	}
	if v, _ := checktest.Evidence(f, "in-box"); !strings.Contains(v, "ib_core") {
		t.Errorf("in-box %q", v)
	}
	// A missing connection manager belongs with the modules but explains nothing.
	f = checktest.One(t, fs, "driver.modules", "rdma_cm")
	if f.Severity != report.Warning || f.Fault != "driver-module" || f.Observation != "connection-manager-missing" {
		t.Errorf("rdma_cm: %s %s observation %q", f.Severity, f.Fault, f.Observation)
	}
	f = checktest.One(t, fs, "driver.modules", "mlx5_core")
	if f.Severity != report.Info || !strings.Contains(f.Summary, "24.10-1.1.4") {
		t.Errorf("OFED not identified: %s %q", f.Severity, f.Summary)
	}
	for _, m := range []string{"ib_core", "ib_uverbs", "mlx5_ib"} {
		checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", m), report.OK)
	}
}

// A partial RDMA kernel config and a device with a missing file: the config findings are judged,
// and the device is unknown with the path, while the other checks still report.
func TestPartialConfigAndUnreadableDevice(t *testing.T) {
	fs := checktest.Run(t, "drv-partial-config", checks.Options{}, "driver")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.kernel_config", "CONFIG_INFINIBAND_ADDR_TRANS"), report.Warning)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.kernel_config", "CONFIG_PCIEAER"), report.Info)
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "rdma_cm"), report.Warning)
	dev := checktest.One(t, fs, "driver.devices", "rxe0")
	checktest.WantSeverity(t, dev, report.Unknown)
	checktest.WantEvidence(t, dev, "read error", "/sys/class/infiniband/rxe0/node_type")
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.user_verbs", "rxe0 uverbs"), report.OK)
}

// TestBuiltInWithoutModuleList: no /proc/modules, no module support, three registered devices.
// The built-in stack is recognised from the config and what it registered; the one missing
// module (ib_umad) is a warning whose fix is another kernel; no fix anywhere says modprobe.
func TestBuiltInWithoutModuleList(t *testing.T) {
	fs := checktest.Run(t, "drv-builtin-no-modules", checks.Options{}, "driver")
	noModprobe(t, fs)
	for _, f := range fs {
		if f.Severity == report.Critical || f.Severity == report.Unknown {
			t.Errorf("%s@%s is %s: %s", f.CheckID, f.Subject.Name, f.Severity, f.Summary)
		}
	}
	f := checktest.One(t, fs, "driver.modules", "ib_core")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidence(t, f, "/sys/class/infiniband", "3 device(s): mlx5_0, mlx5_1, mlx5_2")
	checktest.WantEvidence(t, f, "CONFIG_INFINIBAND", "y")
	for _, m := range []string{"mlx5_ib", "ib_uverbs", "rdma_cm", "rdma_ucm"} {
		checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", m), report.OK)
	}
	checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "/proc/modules"), report.Info)
	f = checktest.One(t, fs, "driver.modules", "ib_umad")
	checktest.WantSeverity(t, f, report.Warning)
	if !strings.Contains(f.Remediation, "CONFIG_INFINIBAND_USER_MAD=y") {
		t.Errorf("ib_umad fix %q", f.Remediation)
	}
	if rc := rootCauses(fs); len(rc) != 1 || rc[0] != "driver.modules@ib_umad" {
		t.Errorf("root causes %v, want only ib_umad", rc)
	}
}
