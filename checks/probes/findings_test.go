package probes

import (
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks/pcie"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
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
	slow := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 120, LatMedian: 3 * time.Microsecond}, pcie.Budget{}, 0)
	if slow.Severity != report.Warning {
		t.Errorf("120 of 400 Gb/s: %+v", slow)
	}
	fast := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 360}, pcie.Budget{}, 0)
	if fast.Severity != report.OK {
		t.Errorf("360 of 400 Gb/s: %+v", fast)
	}
	// In a Gen3 x8 slot the PCIe link (63 Gb/s) is the ceiling, not the 400 Gb/s port: 50 Gb/s is
	// what the slot allows (the pcie layer reports the slot), not a DMA-path fault.
	gen3 := pcie.Budget{UsableGbps: 63.0, Limit: "8.0 GT/s x8 at 0000:3a:00.0"}
	if f := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 50}, gen3, 0); f.Severity != report.OK {
		t.Errorf("50 Gb/s under a 63 Gb/s PCIe budget: %+v", f)
	}
	if f := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 20}, gen3, 0); f.Severity != report.Warning || !strings.Contains(f.Summary, "PCIe budget") {
		t.Errorf("20 Gb/s under a 63 Gb/s PCIe budget: %+v", f)
	}
	soft := bandwidthFinding(rxe, probe.BandwidthResult{Result: pass, Gbps: 0.2}, pcie.Budget{}, 0)
	if soft.Severity != report.Info || !strings.Contains(soft.Summary, "software device") {
		t.Errorf("rxe: %+v", soft)
	}
	if hasEvidence(soft, "run beside") {
		t.Errorf("rxe probed alone says it ran beside others: %+v", soft.Evidence)
	}
	// Run beside seven others, a software device's figure is its share of the CPU; the finding
	// says so and stays information.
	shared := bandwidthFinding(rxe, probe.BandwidthResult{Result: pass, Gbps: 0.03, Truncated: true}, pcie.Budget{}, 7)
	if shared.Severity != report.Info || !evidenceContains(shared, "run beside", "7 other software device(s)' bandwidth probes") ||
		!evidenceContains(shared, "run beside", "share of the CPU") {
		t.Errorf("rxe beside seven others: %s %+v", shared.Severity, shared.Evidence)
	}
	// A hardware device measured beside another on a separate path is judged as alone.
	beside := bandwidthFinding(hw, probe.BandwidthResult{Result: pass, Gbps: 360}, pcie.Budget{}, 1)
	if beside.Severity != report.OK || !evidenceContains(beside, "run beside", "none on a PCIe link this device's path crosses") {
		t.Errorf("hardware beside another path: %s %+v", beside.Severity, beside.Evidence)
	}
}

// A device whose QP at both limits at once does not fit the probe's memory budget is judged on
// each limit alone, and the finding says which were verified and why the other was not tried.
func TestLimitsFindingMemoryBound(t *testing.T) {
	both := verbs.QPCap{MaxSendWR: 1 << 20, MaxRecvWR: 1 << 20, MaxSendSGE: 32, MaxRecvSGE: 32}
	r := probe.LimitsResult{Result: probe.Result{Status: probe.Pass}, Requested: both, MemoryBound: true,
		Attempts: []probe.LimitAttempt{
			{What: "max_qp_wr and max_sge", Cap: both, NotTried: "needs at least 1040 MiB of queue memory, over the probe's budget of 200 MiB"},
			{What: "max_qp_wr, one SGE", Cap: verbs.QPCap{MaxSendWR: 1 << 20, MaxSendSGE: 1}, Granted: verbs.QPCap{MaxSendWR: 1 << 20, MaxSendSGE: 1}},
			{What: "max_sge, one WR", Cap: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 32}, Granted: verbs.QPCap{MaxSendWR: 1, MaxSendSGE: 32}},
		}}
	f := limitsFinding(hw, r)
	if want := "mlx5_0/1 accepts a QP at max_qp_wr, one SGE and at max_sge, one WR; not tried: a QP at max_qp_wr and max_sge " +
		"(needs at least 1040 MiB of queue memory, over the probe's budget of 200 MiB)"; f.Severity != report.Info || f.Summary != want ||
		f.Remediation != probe.MemoryBudgetRemedy {
		t.Errorf("memory-bound: %s %q\nwant %q", f.Severity, f.Summary, want)
	}
	var ev []string
	for _, e := range f.Evidence {
		if strings.HasPrefix(e.Name, "QP at ") {
			ev = append(ev, e.Name+" = "+e.Observed)
		}
	}
	want := []string{
		"QP at max_qp_wr and max_sge (send wr/sge) = not tried: needs at least 1040 MiB of queue memory, over the probe's budget of 200 MiB",
		"QP at max_qp_wr, one SGE (send wr/sge) = granted 1048576/1",
		"QP at max_sge, one WR (send wr/sge) = granted 1/32",
	}
	if strings.Join(ev, "\n") != strings.Join(want, "\n") {
		t.Errorf("evidence:\n%s\nwant:\n%s", strings.Join(ev, "\n"), strings.Join(want, "\n"))
	}
	r.Attempts[0].NotTried, r.Attempts[0].Errno = "", "ENOMEM"
	if f := limitsFinding(hw, r); !strings.Contains(f.Summary, "a QP at both limits at once was refused with ENOMEM") || strings.Contains(f.Summary, "not tried") ||
		f.Severity != report.OK {
		t.Errorf("ENOMEM: %q", f.Summary)
	}
	// Only the small QP fitted (as rxe in a small guest): the summary claims max_sge alone.
	r.Attempts[0].Errno, r.Attempts[0].NotTried = "", "needs at least 4096 MiB of queue memory, over the probe's budget of 199 MiB"
	r.Attempts[1].NotTried, r.Attempts[1].Granted = "needs at least 640 MiB of queue memory, over the probe's budget of 199 MiB", verbs.QPCap{}
	f = limitsFinding(hw, r)
	if !strings.HasPrefix(f.Summary, "mlx5_0/1 accepts a QP at max_sge, one WR; not tried: a QP at max_qp_wr and max_sge (needs at least 4096 MiB") ||
		!strings.Contains(f.Summary, "a QP at max_qp_wr, one SGE (needs at least 640 MiB") {
		t.Errorf("only max_sge: %q", f.Summary)
	}
}

func TestMeminfoKB(t *testing.T) {
	const mi = "MemTotal:        1013396 kB\nMemFree:          512000 kB\nMemAvailable:     801234 kB\nHugePages_Total:       0\n"
	for _, c := range []struct {
		in, name string
		want     uint64
		ok       bool
	}{
		{mi, "MemAvailable", 801234, true},
		{mi, "MemTotal", 1013396, true},
		{mi, "HugePages_Total", 0, false}, // no unit
		{mi, "Missing", 0, false},
		{"MemAvailable: lots kB\n", "MemAvailable", 0, false},
		{"MemAvailable: 99999999999999999999 kB\n", "MemAvailable", 0, false},
		{"", "MemAvailable", 0, false},
	} {
		got, ok := meminfoKB(c.in, c.name)
		if got != c.want || ok != c.ok {
			t.Errorf("%s in %q: %d %v, want %d %v", c.name, c.in, got, ok, c.want, c.ok)
		}
	}
}

func hasEvidence(f engine.Finding, name string) bool {
	for _, e := range f.Evidence {
		if e.Name == name {
			return true
		}
	}
	return false
}

func evidenceContains(f engine.Finding, name, text string) bool {
	for _, e := range f.Evidence {
		if e.Name == name && strings.Contains(e.Observed, text) {
			return true
		}
	}
	return false
}
