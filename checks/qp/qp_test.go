package qp_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/internal/qptest"
	"github.com/rdmadiag/rdmadiag/checks/qp"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
	"github.com/rdmadiag/rdmadiag/report"
)

func model(qps ...nldev.QP) *nltest.Model {
	return &nltest.Model{Devices: []nldev.Device{qptest.RXE()}, QPs: qps}
}

func TestStateGroupsErrorsByOwner(t *testing.T) {
	h := qptest.Host{
		Model: model(qptest.GSI(),
			qptest.QP(17, nldev.QPStateRTS, 812, ""), qptest.QP(18, nldev.QPStateErr, 812, ""),
			qptest.QP(20, nldev.QPStateErr, 812, ""), qptest.QP(19, nldev.QPStateErr, 900, ""),
			qptest.QP(21, nldev.QPStateSQE, 812, ""), qptest.QP(22, nldev.QPStateInit, 812, "")),
		Files:       map[string]string{"/proc/812/comm": "trainer\n"},
		SoftDevices: []string{"rxe0"},
	}
	fs := h.Run(t, checks.Options{}, "qp.state")
	if len(fs) != 3 {
		t.Fatalf("want 3 groups (812 ERR, 812 SQE, 900 ERR), got %d: %+v", len(fs), fs)
	}
	f := checktest.One(t, fs, "qp.state", "rxe0/1 pid 812 (trainer) ERR")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidenceIs(t, f, "QP numbers (lqpn)", "18 20")
	if f.Subject.Kind != "qp" || f.Subject.Device != "rxe0" || f.Fault != "qp-context" {
		t.Errorf("subject/fault %+v %s", f.Subject, f.Fault)
	}
	// A process that exited (no /proc/<pid>/comm) is still named by pid.
	checktest.WantSeverity(t, checktest.One(t, fs, "qp.state", "rxe0/1 pid 900 (command unknown) ERR"), report.Warning)
	checktest.WantSeverity(t, checktest.One(t, fs, "qp.state", "rxe0/1 pid 812 (trainer) SQE"), report.Warning)
	checktest.WantEvidenceIs(t, f, "device QPs by state", "INIT 1, RTS 2, SQE 1, ERR 3")
}

func TestStateKernelOwnedIsCritical(t *testing.T) {
	gsi := qptest.GSI()
	gsi.State = nldev.QPStateErr
	h := qptest.Host{Model: model(gsi, qptest.QP(17, nldev.QPStateErr, 812, "")), SoftDevices: []string{"rxe0"}}
	fs := h.Run(t, checks.Options{}, "qp.state")
	f := checktest.One(t, fs, "qp.state", "rxe0/1 [ib_core] ERR")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "QPs", "1 (GSI 1)")
	checktest.WantSeverity(t, checktest.One(t, fs, "qp.state", "rxe0/1 pid 812 (command unknown) ERR"), report.Warning)
}

func TestStateHealthy(t *testing.T) {
	h := qptest.Host{Model: model(qptest.GSI(), qptest.QP(17, nldev.QPStateInit, 113, "")), SoftDevices: []string{"rxe0"}}
	f := checktest.One(t, h.Run(t, checks.Options{}, "qp.state"), "qp.state", "rxe0")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidenceIs(t, f, "QPs by state", "INIT 1, RTS 1")
}

func TestStateNetlinkFailures(t *testing.T) {
	// The device list answers but the QP dump is refused: that device is unknown.
	c := nltest.NewConn()
	c.Reply(nldev.DevicesRequest(), nltest.DevDump([]nldev.Device{qptest.RXE()}))
	c.Fail(nldev.QPsRequest(0), syscall.EPERM)
	h := qptest.Host{Conn: c, SoftDevices: []string{"rxe0"}}
	f := checktest.One(t, h.Run(t, checks.Options{}, "qp.state"), "qp.state", "rxe0")
	checktest.WantSeverity(t, f, report.Unknown)
	if !strings.Contains(f.Summary, "operation not permitted") {
		t.Errorf("summary %q", f.Summary)
	}
	// No netlink at all (a plain root tree): skipped, not unknown.
	h = qptest.Host{SoftDevices: []string{"rxe0"}}
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "qp.state"), "qp.state", ""), report.Skipped)
	// Netlink fails and there is no device: skipped, the driver layer explains.
	c = nltest.NewConn()
	c.Fail(nldev.DevicesRequest(), syscall.EPROTONOSUPPORT)
	checktest.WantSeverity(t, checktest.One(t, qptest.Host{Conn: c}.Run(t, checks.Options{}, "qp.state"), "qp.state", ""), report.Skipped)
	// Netlink fails although devices exist: unknown.
	checktest.WantSeverity(t, checktest.One(t, qptest.Host{Conn: c, SoftDevices: []string{"rxe0"}}.Run(t, checks.Options{}, "qp.state"), "qp.state", ""), report.Unknown)
	// Garbled reply: unknown naming the decoder error.
	c = nltest.NewConn()
	c.Reply(nldev.DevicesRequest(), []byte{1, 2, 3})
	f = checktest.One(t, qptest.Host{Conn: c, SoftDevices: []string{"rxe0"}}.Run(t, checks.Options{}, "qp.state"), "qp.state", "")
	checktest.WantSeverity(t, f, report.Unknown)
	if !strings.Contains(f.Summary, "malformed") {
		t.Errorf("summary %q", f.Summary)
	}
}

func TestLevel(t *testing.T) {
	for _, c := range []struct {
		n, max int64
		want   report.Severity
	}{
		{0, 100, report.OK}, {80, 100, report.OK}, {81, 100, report.Warning}, {95, 100, report.Warning},
		{96, 100, report.Critical}, {100, 100, report.Critical}, {62914, 65536, report.Critical},
		{52428, 65536, report.OK}, {52429, 65536, report.Warning},
	} {
		if got := qp.Level(c.n, c.max); got != c.want {
			t.Errorf("Level(%d, %d) = %s, want %s", c.n, c.max, got, c.want)
		}
	}
}

func manyQPs(n int) []nldev.QP {
	qps := make([]nldev.QP, n)
	for i := range qps {
		qps[i] = qptest.QP(uint32(i+17), nldev.QPStateReset, 812, "")
	}
	return qps
}

func TestExhaustion(t *testing.T) {
	facts := func(max int64) *host.Facts {
		return &host.Facts{VerbsDevices: []host.VerbsDevice{{Name: "rxe0", MaxQP: max, NumCompVectors: 1}}}
	}
	for _, c := range []struct {
		name  string
		qps   int
		facts *host.Facts
		want  report.Severity
		obs   string
	}{
		{"ok", 50, facts(100), report.OK, "50 / 100 (50.0%)"},
		{"warning", 85, facts(100), report.Warning, "85 / 100 (85.0%)"},
		{"critical", 97, facts(100), report.Critical, "97 / 100 (97.0%)"},
		{"no facts", 97, nil, report.Skipped, ""},
		{"no verbs query", 97, &host.Facts{}, report.Skipped, ""},
		{"query failed", 97, &host.Facts{VerbsDevices: []host.VerbsDevice{{Name: "rxe0", Error: "ibv_open_device: EACCES"}}}, report.Skipped, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := qptest.Host{Model: model(manyQPs(c.qps)...), Facts: c.facts, SoftDevices: []string{"rxe0"}}
			f := checktest.One(t, h.Run(t, checks.Options{}, "qp.exhaustion"), "qp.exhaustion", "rxe0")
			checktest.WantSeverity(t, f, c.want)
			if c.obs != "" {
				checktest.WantEvidenceIs(t, f, "QPs / max_qp", c.obs)
			} else if !strings.Contains(f.Summary, "device limits unknown") {
				t.Errorf("summary %q", f.Summary)
			}
		})
	}
}

func TestExhaustionUsesSummaryWhenLarger(t *testing.T) {
	m := model(manyQPs(10)...)
	m.Summary = []nldev.ResSummary{{DevIndex: 0, DevName: "rxe0", Counts: map[string]uint64{"qp": 99}}}
	h := qptest.Host{Model: m, Facts: &host.Facts{VerbsDevices: []host.VerbsDevice{{Name: "rxe0", MaxQP: 100}}}, SoftDevices: []string{"rxe0"}}
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "qp.exhaustion"), "qp.exhaustion", "rxe0"), report.Critical)
}

func TestStuck(t *testing.T) {
	before := []nldev.QP{qptest.QP(17, nldev.QPStateInit, 812, ""), qptest.QP(18, nldev.QPStateRTR, 812, ""),
		qptest.QP(19, nldev.QPStateInit, 812, ""), qptest.QP(20, nldev.QPStateRTS, 812, "")}
	after := []nldev.QP{qptest.QP(17, nldev.QPStateInit, 812, ""), qptest.QP(18, nldev.QPStateRTS, 812, ""),
		qptest.QP(19, nldev.QPStateRTR, 812, ""), qptest.QP(20, nldev.QPStateRTS, 812, ""), qptest.QP(21, nldev.QPStateInit, 812, "")}
	got := qp.Stuck(before, after)
	if len(got) != 1 || got[0].LQPN != 17 {
		t.Fatalf("stuck %+v, want only QP 17 (same INIT in both readings)", got)
	}
}

// twoReadings answers the QP dump with one reply the first time and another afterwards.
type twoReadings struct {
	*nltest.Conn
	second []byte
	n      int
}

func (c *twoReadings) Exchange(req host.Request) ([]byte, error) {
	if req.Key() == nldev.QPsRequest(0).Key() {
		c.n++
		if c.n > 1 {
			return c.second, nil
		}
	}
	return c.Conn.Exchange(req)
}

func TestStuckCheck(t *testing.T) {
	first := model(qptest.GSI(), qptest.QP(17, nldev.QPStateInit, 812, ""), qptest.QP(18, nldev.QPStateRTR, 812, ""))
	second := nltest.QPDump(0, "rxe0", []nldev.QP{qptest.GSI(), qptest.QP(17, nldev.QPStateInit, 812, ""), qptest.QP(18, nldev.QPStateRTS, 812, "")})
	h := qptest.Host{Kind: host.KindLive, Conn: &twoReadings{Conn: first.Conn(), second: second}, SoftDevices: []string{"rxe0"}}
	fs := h.Run(t, checks.Options{Interval: 1}, "qp.stuck")
	f := checktest.One(t, fs, "qp.stuck", "rxe0/1 pid 812 (command unknown) INIT")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidenceIs(t, f, "QP numbers (lqpn)", "17")
	// Without --interval, and on a snapshot, there is only one reading.
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "qp.stuck"), "qp.stuck", ""), report.Skipped)
	h.Kind = host.KindSnapshot
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{Interval: 1}, "qp.stuck"), "qp.stuck", ""), report.Skipped)
}

func TestQPNList(t *testing.T) {
	var n []uint32
	for i := 40; i > 0; i-- {
		n = append(n, uint32(i))
	}
	got := qp.QPNList(n)
	if !strings.HasPrefix(got, "1 2 3 ") || !strings.HasSuffix(got, "32 ... and 8 more") {
		t.Errorf("%q", got)
	}
}

// The lab recording: labqp held 4 RTS, 3 ERR and 1 INIT QPs next to the kernel's GSI QP.
func TestLabQPErrFixture(t *testing.T) {
	fs := checktest.Run(t, "qp-err", checks.Options{}, "qp")
	f := checktest.One(t, fs, "qp.state", "rxe0/1 pid * (labqp) ERR")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidenceIs(t, f, "QP numbers (lqpn)", "21 22 23")
	checktest.WantEvidenceIs(t, f, "device QPs by state", "INIT 1, RTS 5, ERR 3")
	if n := len(checktest.Find(fs, "qp.state", "")); n != 1 {
		t.Errorf("%d qp.state findings, want only the ERR group", n)
	}
	f = checktest.One(t, fs, "qp.exhaustion", "rxe0")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidenceIs(t, f, "QPs / max_qp", "9 / 1048560 (0.0%)")
}

func TestExhaustedFixture(t *testing.T) {
	f := checktest.One(t, checktest.Run(t, "qp-exhausted", checks.Options{}, "qp.exhaustion"), "qp.exhaustion", "mlx5_0")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "QPs / max_qp", "485 / 500 (97.0%)")
	if f.Subject.PCI != "0000:3b:00.0" {
		t.Errorf("%+v", f.Subject)
	}
}

// The probes' own QPs and CQs (this process's threads) are not the host's, live; on a snapshot
// a pid equal to ours is a coincidence and is judged.
func TestOwnResourcesIgnoredLive(t *testing.T) {
	status := fmt.Sprintf("Name:\trdmadiag\nTgid:\t%d\nPid:\t777\n", os.Getpid())
	h := qptest.Host{Kind: host.KindLive, Model: model(qptest.GSI(), qptest.QP(30, nldev.QPStateErr, 777, "")),
		Files: map[string]string{"/proc/777/status": status}, SoftDevices: []string{"rxe0"}}
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "qp.state"), "qp.state", "rxe0"), report.OK)
	h.Kind = host.KindSnapshot
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "qp.state"), "qp.state", "rxe0/1 pid 777 (command unknown) ERR"), report.Warning)
}

// Kernel-owned QPs in ERR are critical (no process will recreate them), and 86 % of max_qp is in
// the warning band.
func TestKernelQPErrAndExhaustionWarning(t *testing.T) {
	fs := checktest.Run(t, "qp-kernel-err", checks.Options{}, "qp")
	for _, owner := range []string{"ib_core", "rdma_cm"} {
		f := checktest.One(t, fs, "qp.state", "mlx5_0/1 ["+owner+"] ERR")
		checktest.WantSeverity(t, f, report.Critical)
		if f.Fault != "qp-context" {
			t.Errorf("%s: fault %s", owner, f.Fault)
		}
	}
	if len(checktest.Find(fs, "qp.state", "mlx5_0/1 pid * (trainer) ERR")) != 0 {
		t.Error("the application's healthy QPs reported in ERR")
	}
	f := checktest.One(t, fs, "qp.exhaustion", "mlx5_0")
	checktest.WantSeverity(t, f, report.Warning)
	checktest.WantEvidence(t, f, "QPs / max_qp", "430 / 500")
}
