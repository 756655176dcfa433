package probes

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/checks/pcie"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/report"
)

var (
	hw  = target{&inventory.Device{Name: "mlx5_0", PCI: &inventory.PCIFunction{BDF: "0000:3b:00.0"}}, 1}
	rxe = target{&inventory.Device{Name: "rxe0", Parent: "eth0"}, 1}
)

func attrs() *probe.Attributes {
	return &probe.Attributes{FWVer: "28.39.1002", FWVerSysfs: "28.39.1002", FWVerMatch: true, PortState: "ACTIVE", LinkLayer: "InfiniBand",
		ActiveMTU: 4096, ActiveWidth: "4X", ActiveSpeed: "106.25 Gbps (NDR)", RateGbps: 400, MaxQP: 131072}
}

func TestDriverFinding(t *testing.T) {
	ok := driverFinding(hw, probe.Result{Status: probe.Pass, Attrs: attrs()})
	if ok.Severity != report.OK || ok.Subject.Name != "mlx5_0/1" || ok.Subject.Device != "mlx5_0" || ok.Subject.PCI != "0000:3b:00.0" {
		t.Errorf("pass: %+v", ok)
	}
	a := attrs()
	a.FWVerSysfs, a.FWVerMatch = "28.41.1000", false
	mis := driverFinding(hw, probe.Result{Status: probe.Pass, Attrs: a})
	if mis.Severity != report.Warning || mis.Fault != "firmware" {
		t.Errorf("fw mismatch: %+v", mis)
	}
	skip := driverFinding(hw, probe.Result{Status: probe.Skipped, Error: "libibverbs is not available", Remedy: "install rdma-core"})
	if skip.Severity != report.Skipped || skip.Remediation != "install rdma-core" {
		t.Errorf("skip: %+v", skip)
	}
	fail := driverFinding(hw, probe.Result{Status: probe.Fail, Stage: probe.StageOpen, Verb: "ibv_open_device", Errno: "EACCES", Error: "permission denied"})
	if fail.Severity != report.Critical || !strings.Contains(fail.Summary, "ibv_open_device EACCES") {
		t.Errorf("fail: %+v", fail)
	}
}

func TestLimitsFinding(t *testing.T) {
	r := probe.LimitsResult{Result: probe.Result{Status: probe.Fail, Stage: probe.StageCreateQP, Verb: "ibv_create_qp", Errno: "EINVAL"},
		Requested: verbs.QPCap{MaxSendWR: 32768, MaxSendSGE: 30}, Inconsistent: true}
	f := limitsFinding(hw, r)
	if f.Severity != report.Critical || !strings.Contains(f.Summary, "firmware and the driver disagree") || f.Remediation == "" {
		t.Errorf("%+v", f)
	}
}

func TestLoopbackFinding(t *testing.T) {
	r := probe.LoopbackResult{Result: probe.Result{Status: probe.Fail, Stage: probe.StageRTR, Verb: "ibv_modify_qp(RTR)", Errno: "ETIMEDOUT", Error: "x"},
		Transitions: []probe.Transition{{To: "INIT", OK: true}, {To: "RTR", Errno: "ETIMEDOUT"}}, QPState: "ERR"}
	f := loopbackFinding(hw, r)
	tr := ""
	for _, e := range f.Evidence {
		if e.Name == "transitions" {
			tr = e.Observed
		}
	}
	if f.Severity != report.Critical || tr != "RESET->INIT->RTR failed ETIMEDOUT" {
		t.Errorf("%+v", f)
	}
}

func TestCQFinding(t *testing.T) {
	undetected := cqFinding(hw, probe.CQResult{Result: probe.Result{Status: probe.Pass}, Requested: 64, Granted: 64, Completed: 64,
		Overrun: &probe.Overrun{Posted: 64, Granted: 1, Detected: false}})
	if undetected.Severity != report.Warning {
		t.Errorf("undetected overrun: %+v", undetected)
	}
	detected := cqFinding(hw, probe.CQResult{Result: probe.Result{Status: probe.Pass}, Requested: 64, Granted: 64, Completed: 64,
		Overrun: &probe.Overrun{Posted: 64, Granted: 1, Detected: true, CQErrEvents: 63}})
	if detected.Severity != report.OK || !strings.Contains(detected.Summary, "IBV_EVENT_CQ_ERR") {
		t.Errorf("detected overrun: %+v", detected)
	}
}

func TestBandwidthFinding(t *testing.T) {
	pass := probe.Result{Status: probe.Pass, Attrs: attrs()}
	slow := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 120, LatMedian: 3 * time.Microsecond}, pcie.Budget{})
	if slow.Severity != report.Warning {
		t.Errorf("120 of 400 Gb/s: %+v", slow)
	}
	fast := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 360}, pcie.Budget{})
	if fast.Severity != report.OK {
		t.Errorf("360 of 400 Gb/s: %+v", fast)
	}
	// In a Gen3 x8 slot the PCIe link (63 Gb/s) is the ceiling, not the 400 Gb/s port: 50 Gb/s is
	// what the slot allows (the pcie layer reports the slot), not a DMA-path fault.
	gen3 := pcie.Budget{UsableGbps: 63.0, Limit: "8.0 GT/s x8 at 0000:3a:00.0"}
	if f := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 50}, gen3); f.Severity != report.OK {
		t.Errorf("50 Gb/s under a 63 Gb/s PCIe budget: %+v", f)
	}
	if f := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 20}, gen3); f.Severity != report.Warning || !strings.Contains(f.Summary, "PCIe budget") {
		t.Errorf("20 Gb/s under a 63 Gb/s PCIe budget: %+v", f)
	}
	soft := bandwidthFinding(rxe, probe.BandwidthResult{Result: pass, Gbps: 0.2}, pcie.Budget{})
	if soft.Severity != report.Info || !strings.Contains(soft.Summary, "software device") {
		t.Errorf("rxe: %+v", soft)
	}
}
