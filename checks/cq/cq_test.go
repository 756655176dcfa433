package cq_test

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/cq"
	"github.com/rdmadiag/rdmadiag/checks/internal/qptest"
	_ "github.com/rdmadiag/rdmadiag/checks/qp"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestRecommended(t *testing.T) {
	for _, c := range []struct{ conc, want int64 }{
		{256, 512}, // README "How CQ depth is judged": 256 gives 512
		{1, 2}, {2, 4}, {3, 8}, {100, 256}, {128, 256}, {129, 512}, {1000, 2048}, {0, 0}, {-5, 0},
	} {
		if got := cq.Recommended(c.conc); got != c.want {
			t.Errorf("Recommended(%d) = %d, want %d", c.conc, got, c.want)
		}
	}
	for _, c := range []struct {
		cqe, conc int64
		want      bool
	}{{128, 256, true}, {255, 256, true}, {256, 256, false}, {512, 256, false}} {
		if got := cq.Overruns(c.cqe, c.conc); got != c.want {
			t.Errorf("Overruns(%d, %d) = %v", c.cqe, c.conc, got)
		}
	}
}

// The documented case must come out exactly: depth 128, 256 concurrent work requests.
func TestDepthDocumentedCase(t *testing.T) {
	fs := checktest.Run(t, "cq-depth-128", checks.Options{WRConcurrency: 256}, "cq.depth")
	f := checktest.One(t, fs, "cq.depth", "mlx5_0 pid 4242 (trainer) cqe 128")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "recommended cqe", "512")
	checktest.WantEvidenceIs(t, f, "concurrency", "256, declared by --wr-concurrency")
	if f.Subject.Kind != "cq" || f.Subject.Device != "mlx5_0" || f.Subject.PCI != "0000:3b:00.0" || f.Fault != "cq-eq" {
		t.Errorf("subject %+v fault %s", f.Subject, f.Fault)
	}
	// The kernel's own CQ is not judged against an application figure.
	if n := len(checktest.Find(fs, "cq.depth", "")); n != 1 {
		t.Errorf("%d cq.depth findings, want only the undersized CQ", n)
	}
	// Without a declared concurrency nothing is judged, and the finding says why.
	f = checktest.One(t, checktest.Run(t, "cq-depth-128", checks.Options{}, "cq.depth"), "cq.depth", "mlx5_0")
	checktest.WantSeverity(t, f, report.Skipped)
	checktest.WantEvidence(t, f, "concurrency", "not derived")
	// Enough depth: OK.
	checktest.WantSeverity(t, checktest.One(t, checktest.Run(t, "cq-depth-128", checks.Options{WRConcurrency: 128}, "cq.depth"), "cq.depth", "mlx5_0"), report.OK)
}

func TestDepthLabRecording(t *testing.T) {
	// rxe granted 255 for a requested 128; one short of 256.
	f := checktest.One(t, checktest.Run(t, "cq-depth-rxe", checks.Options{WRConcurrency: 256}, "cq.depth"), "cq.depth", "rxe0 pid * (labqp) cqe 255")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "recommended cqe", "512")
}

func TestDepthProfile(t *testing.T) {
	prof, err := optfile.DecodeWRProfile([]byte(`{"applications": {"trainer": 100, "[ib_core]": 2048}}`), "profile.json")
	if err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, "cq-depth-128", checks.Options{WRProfile: prof, WRProfileFile: "profile.json", WRConcurrency: 4096}, "cq.depth")
	// The profile entry (100) wins over the flag for trainer; [ib_core] is judged by its entry.
	f := checktest.One(t, fs, "cq.depth", "mlx5_0 [ib_core] cqe 1023")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidenceIs(t, f, "concurrency", `2048, declared by --wr-profile entry "[ib_core]"`)
	if got := checktest.Find(fs, "cq.depth", "mlx5_0 pid 4242 (trainer) cqe 128"); len(got) != 0 {
		t.Errorf("trainer's CQ of 128 holds its 100 declared work requests: %+v", got)
	}
}

// The CQ and EQ lines of the log, each once, tied to the device they are about; a health
// syndrome naming an EQ is the firmware's event, judged by driver.kernel_log, not a second CQ
// finding.
func TestKernelLogEvents(t *testing.T) {
	h := qptest.Host{SoftDevices: []string{"rxe0"}}
	h.Kmsg = "3,10,100,-;infiniband rxe0: cq#5 rxe_cq_post: queue full\n" +
		"3,11,200,-;mlx5_core 0000:99:00.0: cq_err_event_notifier:735:(pid 0): CQ error on CQN 0x407, syndrome 0x1\n" +
		"3,12,300,-;mlx5_core 0000:99:00.0: mlx5_eq_cq_get:96:(pid 0): Async event for bogus CQ 0x1f\n" +
		"3,13,400,-;mlx5_core 0000:99:00.0: mlx5_eq_comp_int:120:(pid 0): Recovered 3 EQEs on cmd_eq\n" +
		"3,14,500,-;mlx5_core 0000:99:00.0: print_health_info:425:(pid 0): Health issue observed, async EQ buffer overrun, severity(3) ERROR:\n"
	fs := h.Run(t, checks.Options{}, "cq.errors")
	f := checktest.One(t, fs, "cq.errors", "rxe0")
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "rxe-queue-full", "queue full")
	host := checktest.One(t, fs, "cq.errors", "kernel log")
	for _, want := range []string{"CQ overrun (syndrome 0x1) x1", "a CQ the driver does not know"} {
		if !strings.Contains(host.Summary, want) {
			t.Errorf("summary %q lacks %q", host.Summary, want)
		}
	}
	// The command EQ's recovery and the health syndrome are lines of the firmware's health
	// flow (family mlx5-health), judged by driver.kernel_log.
	for _, not := range []string{"cmd_eq", "EQ buffer overrun"} {
		if strings.Contains(host.Summary, not) {
			t.Errorf("a line of the health flow is judged here too: %q", host.Summary)
		}
	}
}

func TestErrorsFixture(t *testing.T) {
	fs := checktest.Run(t, "cq-error-logged", checks.Options{}, "cq.errors")
	f := checktest.One(t, fs, "cq.errors", "mlx5_0")
	checktest.WantSeverity(t, f, report.Critical)
	if got, _ := checktest.Evidence(f, "cq-error"); !strings.Contains(got, "CQ error on CQN 0x407, syndrome 0x1") || !strings.HasPrefix(got, "[86400.123456]") {
		t.Errorf("%q", got)
	}
	if !strings.Contains(f.Summary, "CQ overrun (syndrome 0x1) x1") {
		t.Errorf("%q", f.Summary)
	}
	// mlx5 has devlink health, which this snapshot did not record: said once, as skipped.
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "devlink health"), report.Skipped)
	// The lab recording (rxe, no error logged): OK and no devlink note.
	fs = checktest.Run(t, "qp-err", checks.Options{}, "cq.errors")
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "rxe0"), report.OK)
	if len(fs) != 1 {
		t.Errorf("%d findings", len(fs))
	}
}

func TestErrorsNoKernelLog(t *testing.T) {
	h := qptest.Host{SoftDevices: []string{"rxe0"}}
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "cq.errors"), "cq.errors", ""), report.Skipped)
	// An unattributed record (no device the inventory knows) is still reported.
	h.Kmsg = "3,10,100,-;mlx5_core 0000:99:00.0: cq_err_event_notifier:735:(pid 0): CQ error on CQN 0x1, syndrome 0x1\n"
	fs := h.Run(t, checks.Options{}, "cq.errors")
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "kernel log"), report.Critical)
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.errors", "rxe0"), report.OK)
}

func TestVectors(t *testing.T) {
	fs := checktest.Run(t, "cq-depth-128", checks.Options{}, "cq.vectors")
	f := checktest.One(t, fs, "cq.vectors", "mlx5_0")
	checktest.WantSeverity(t, f, report.OK)
	checktest.WantEvidenceIs(t, f, "num_comp_vectors", "4")
	checktest.WantEvidenceIs(t, f, "MSI/MSI-X vectors", "5")
	if got, _ := checktest.Evidence(f, "IRQs"); !strings.HasPrefix(got, "5: mlx5_async0@pci:0000:3b:00.0 mlx5_comp0@pci:0000:3b:00.0") {
		t.Errorf("%q", got)
	}
	// On a snapshot, --interval cannot be judged: one reading.
	fs = checktest.Run(t, "cq-depth-128", checks.Options{Interval: 1}, "cq.vectors")
	if len(fs) != 2 || fs[1].Severity != report.Skipped || !strings.Contains(fs[1].Summary, "one reading") {
		t.Errorf("want the device finding and one skipped interval finding: %+v", fs)
	}
	// A device whose verbs query reports no completion vector.
	h := qptest.Host{SoftDevices: []string{"rxe0"}, Facts: &host.Facts{VerbsDevices: []host.VerbsDevice{{Name: "rxe0", MaxQP: 10}}}}
	checktest.WantSeverity(t, checktest.One(t, h.Run(t, checks.Options{}, "cq.vectors"), "cq.vectors", "rxe0"), report.Critical)
}

// counting answers the CQ dump from a model and counts how often it is asked.
type counting struct {
	*nltest.Conn
	n map[string]int
}

func (c *counting) Exchange(req host.Request) ([]byte, error) {
	c.n[req.Key()]++
	return c.Conn.Exchange(req)
}

// One run dumps each table once, however many checks judge it.
func TestOneDumpPerRun(t *testing.T) {
	m := &nltest.Model{Devices: []nldev.Device{qptest.RXE()}, QPs: []nldev.QP{qptest.GSI()},
		CQs: []nldev.CQ{{CQN: 0, CQE: 1023, KernName: "ib_core", HasPollCtx: true, PollCtx: 2}}}
	c := &counting{Conn: m.Conn(), n: map[string]int{}}
	h := qptest.Host{Conn: c, SoftDevices: []string{"rxe0"}, Facts: &host.Facts{}}
	h.Run(t, checks.Options{WRConcurrency: 8}, "qp", "cq")
	for _, req := range []host.Request{nldev.DevicesRequest(), nldev.QPsRequest(0), nldev.CQsRequest(0)} {
		if c.n[req.Key()] != 1 {
			t.Errorf("request %s sent %d times", req.Key(), c.n[req.Key()])
		}
	}
}

// No completion vector: critical; when driver.interrupts ran and saw the same, it is the cause.
func TestNoCompletionVectors(t *testing.T) {
	fs := checktest.Run(t, "cq-no-vectors", checks.Options{}, "cq.vectors")
	f := checktest.One(t, fs, "cq.vectors", "mlx5_0")
	// What driver.interrupts reports on this fixture (cli's golden runs both).
	fs = append(fs, engine.Finding{Finding: report.Finding{CheckID: "driver.interrupts", Subject: f.Subject, Severity: report.Critical, Fault: "cq-eq"}})
	checktest.WantSeverity(t, f, report.Critical)
	checktest.WantEvidence(t, f, "num_comp_vectors", "0")
	if f.Observation != "no-completion-vector" {
		t.Errorf("observation %q", f.Observation)
	}
	r := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	if strings.Join(r.Summary.RootCauses, ",") != "driver.interrupts@mlx5_0" {
		t.Errorf("cq.vectors should name driver.interrupts as its cause: root causes %v", r.Summary.RootCauses)
	}
}

// --raw-contexts on an mlx5 snapshot: the application CQ below its QPs' capacity is a warning
// (not the certain overrun of a declared concurrency), the one above it passes, and a declared
// concurrency still wins where given.
func TestDepthFromRawContexts(t *testing.T) {
	fs := checktest.Run(t, "cq-raw-mlx5", checks.Options{RawContexts: true}, "cq.depth")
	f := checktest.One(t, fs, "cq.depth", "mlx5_0 pid 4242 (trainer) cqe 255")
	checktest.WantSeverity(t, f, report.Warning)
	// The receive queues' exact 512: a capacity needs no headroom factor.
	checktest.WantEvidenceIs(t, f, "recommended cqe", "512")
	if got, _ := checktest.Evidence(f, "capacity"); !strings.HasPrefix(got, "1024, capacity of the 4 QP queue(s) attached") || !strings.Contains(got, "512 of it exact") {
		t.Errorf("capacity evidence %q", got)
	}
	// Only the send queues' block count exceeds the 512-entry CQ: info, not a warning.
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.depth", "mlx5_0 pid 4242 (trainer) cqe 511"), report.Info)
	if len(fs) != 2 {
		t.Errorf("%d findings, want the two undersized CQs (the cqe 1023 CQ holds its 768): %+v", len(fs), fs)
	}

	// Without the flag the same snapshot is not judged, and says how it could be.
	f = checktest.One(t, checktest.Run(t, "cq-raw-mlx5", checks.Options{}, "cq.depth"), "cq.depth", "mlx5_0")
	checktest.WantSeverity(t, f, report.Skipped)
	checktest.WantEvidence(t, f, "concurrency", "--raw-contexts")

	// A declared concurrency is what the application really keeps outstanding: it wins, and
	// above the depth it is critical.
	fs = checktest.Run(t, "cq-raw-mlx5", checks.Options{RawContexts: true, WRConcurrency: 300}, "cq.depth")
	checktest.WantSeverity(t, checktest.One(t, fs, "cq.depth", "mlx5_0 pid 4242 (trainer) cqe 255"), report.Critical)

	// A snapshot recorded without raw contexts says so instead of guessing.
	f = checktest.One(t, checktest.Run(t, "cq-depth-128", checks.Options{RawContexts: true}, "cq.depth"), "cq.depth", "mlx5_0")
	checktest.WantSeverity(t, f, report.Skipped)
	checktest.WantEvidence(t, f, "raw contexts", "recorded without --raw-contexts")
}
