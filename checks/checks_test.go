package checks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func ok(_ context.Context, _ *Env) ([]engine.Finding, error) {
	return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.OK, Summary: "fine"}}}, nil
}

func testRegistry() *Registry {
	r := NewRegistry()
	r.Add(Check{ID: "pcie.link", Fault: "pcie-interface", Run: ok})
	r.Add(Check{ID: "qp.state", Fault: "qp-context", Run: ok})
	r.Add(Check{ID: "qp.loopback_probe", Fault: "qp-context", Run: ok, Probe: true})
	r.Add(Check{ID: "driver.modules", Fault: "driver-module", Run: ok})
	return r
}

func ids(cs []Check) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.ID)
	}
	return strings.Join(s, ",")
}

func TestSelect(t *testing.T) {
	r := testRegistry()
	cases := []struct {
		only, skip []string
		noProbe    bool
		want       string
	}{
		{nil, nil, false, "pcie.link,driver.modules,qp.loopback_probe,qp.state"},
		{nil, nil, true, "pcie.link,driver.modules,qp.state"},
		{[]string{"qp"}, nil, false, "qp.loopback_probe,qp.state"},
		{[]string{"qp"}, []string{"*probe*"}, false, "qp.state"},
		{[]string{"pcie.link", "DRIVER"}, nil, false, "pcie.link,driver.modules"},
	}
	for _, c := range cases {
		got, err := r.Select(c.only, c.skip, c.noProbe)
		if err != nil || ids(got) != c.want {
			t.Errorf("Select(%v,%v,%v) = %s, %v; want %s", c.only, c.skip, c.noProbe, ids(got), err, c.want)
		}
	}
	if _, err := r.Select([]string{"gpu"}, nil, false); err == nil {
		t.Error("an unknown term selects nothing silently")
	}
}

func TestAddRejectsBadChecks(t *testing.T) {
	for name, c := range map[string]Check{
		"no layer":  {ID: "link", Fault: "x", Run: ok},
		"bad layer": {ID: "gpu.link", Fault: "x", Run: ok},
		"upper":     {ID: "pcie.Link", Fault: "x", Run: ok},
		"no run":    {ID: "pcie.x", Fault: "x"},
		"dup":       {ID: "pcie.link", Fault: "x", Run: ok},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: accepted", name)
				}
			}()
			testRegistry().Add(c)
		}()
	}
}

func TestRunTurnsFailuresIntoUnknown(t *testing.T) {
	h, err := host.New(host.Options{Root: t.TempDir(), Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	env := NewEnv(h, Options{})
	cs := []Check{
		{ID: "pcie.link", Fault: "pcie-interface", Run: ok},
		{ID: "qp.state", Fault: "qp-context", Run: func(context.Context, *Env) ([]engine.Finding, error) {
			return nil, errors.New("netlink: boom")
		}},
		{ID: "cq.depth", Fault: "cq-eq", Run: func(context.Context, *Env) ([]engine.Finding, error) {
			var fs []engine.Finding
			_ = fs[len(fs)] // a bug in a check: index out of range
			return nil, nil
		}},
	}
	fs := Run(context.Background(), env, cs, 2)
	if len(fs) != 3 {
		t.Fatalf("%d findings: %+v", len(fs), fs)
	}
	if fs[0].Severity != report.OK || fs[0].CheckID != "pcie.link" || fs[0].Fault != "pcie-interface" || fs[0].Layer != "pcie" {
		t.Errorf("defaults not filled: %+v", fs[0])
	}
	if fs[1].Severity != report.Unknown || !strings.Contains(fs[1].Summary, "netlink: boom") {
		t.Errorf("error not reported: %+v", fs[1])
	}
	if fs[2].Severity != report.Unknown || !strings.Contains(fs[2].Summary, "internal error") || len(fs[2].Evidence) == 0 {
		t.Errorf("panic not reported: %+v", fs[2])
	}
}

// A check blocked in a read (a FIFO on a live host stands for a wedged firmware-backed sysfs
// file) must not hold the run past its deadline: Run returns within Grace, the blocked check is
// unknown and names the path, and the checks that finished keep their findings.
func TestRunEndsAtTheDeadlineWhateverAReadDoes(t *testing.T) {
	r := t.TempDir()
	os.MkdirAll(filepath.Join(r, "sys/class/infiniband/mlx5_0"), 0o755)
	fifo := filepath.Join(r, "sys/class/infiniband/mlx5_0/fw_ver")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	h, err := host.New(host.Options{Root: r, Kind: host.KindLive})
	if err != nil {
		t.Fatal(err)
	}
	blocked := Check{ID: "firmware.version", Fault: "firmware", Run: func(context.Context, *Env) ([]engine.Finding, error) {
		_, err := h.ReadFile("/sys/class/infiniband/mlx5_0/fw_ver")
		return nil, err
	}}
	fine := Check{ID: "pcie.link", Fault: "pcie-interface", Run: ok}
	ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, errors.New("--timeout 300ms reached"))
	defer cancel()
	start := time.Now()
	fs := Run(ctx, NewEnv(h, Options{}), []Check{blocked, fine}, 2)
	if took := time.Since(start); took > 300*time.Millisecond+Grace+time.Second {
		t.Errorf("Run took %s", took)
	}
	if len(fs) != 2 {
		t.Fatalf("findings: %+v", fs)
	}
	var got engine.Finding
	for _, f := range fs {
		if f.CheckID == "firmware.version" {
			got = f
		} else if f.Severity != report.OK {
			t.Errorf("finished check lost its finding: %+v", f)
		}
	}
	if got.Severity != report.Unknown || !strings.Contains(got.Summary, "--timeout 300ms reached") ||
		!strings.Contains(got.Summary, "read /sys/class/infiniband/mlx5_0/fw_ver") {
		t.Errorf("blocked check: %v %q", got.Severity, got.Summary)
	}
	// Unblock the abandoned reader so its goroutine ends with the test.
	if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
		w.Close()
	}
}

// A check that returns no finding at all is finished, not cut short.
func TestRunKeepsEmptyResults(t *testing.T) {
	empty := Check{ID: "qp.state", Fault: "qp-context", Run: func(context.Context, *Env) ([]engine.Finding, error) { return nil, nil }}
	if fs := Run(context.Background(), &Env{}, []Check{empty}, 1); len(fs) != 0 {
		t.Errorf("findings: %+v", fs)
	}
}

// A permission refusal is a limit of an unprivileged live run (skipped, with how to lift it), but
// a failure when root meets it.
func TestPermissionRefusalWithoutRootIsALimit(t *testing.T) {
	refused := Check{ID: "qp.state", Fault: "qp-context", Run: func(context.Context, *Env) ([]engine.Finding, error) {
		return nil, &os.PathError{Op: "open", Path: "/sys/x", Err: syscall.EACCES}
	}}
	for _, tc := range []struct {
		euid int
		kind host.Kind
		want report.Severity
	}{
		{1000, host.KindLive, report.Skipped},
		{0, host.KindLive, report.Unknown},
		{1000, host.KindSnapshot, report.Unknown},
	} {
		h, err := host.New(host.Options{Root: t.TempDir(), Kind: tc.kind,
			Facts: func() (*host.Facts, error) { return &host.Facts{EUID: tc.euid}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		fs := Run(context.Background(), NewEnv(h, Options{}), []Check{refused}, 1)
		if len(fs) != 1 || fs[0].Severity != tc.want || (tc.want == report.Skipped) != (fs[0].Limit != nil) {
			t.Errorf("euid %d on %s: %+v", tc.euid, tc.kind, fs)
		}
	}
}

// A fact is computed once per run however many checks ask at once, and a new run computes it
// again.
func TestFactComputedOncePerRun(t *testing.T) {
	var calls atomic.Int32
	f := NewFact("counter", func(*Env) int { return int(calls.Add(1)) })
	env := &Env{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v := f.Get(env); v != 1 {
				t.Errorf("Get = %d, want the first computation's 1", v)
			}
		}()
	}
	wg.Wait()
	if v := f.Get(&Env{}); v != 2 || calls.Load() != 2 {
		t.Errorf("a new run: Get = %d after %d computations", v, calls.Load())
	}
}

// The runner marks every finding of a probe, whatever its id, so that the report never takes a
// probe for a cause; findings of other checks stay unmarked.
func TestRunMarksProbes(t *testing.T) {
	cs := []Check{
		{ID: "qp.loopback_probe", Fault: "qp-context", Probe: true, Run: func(context.Context, *Env) ([]engine.Finding, error) {
			return []engine.Finding{{Finding: report.Finding{Severity: report.Critical}}}, nil
		}},
		{ID: "port.state", Fault: "port-link", Run: func(context.Context, *Env) ([]engine.Finding, error) {
			return []engine.Finding{{Finding: report.Finding{Severity: report.Critical}}}, nil
		}},
	}
	for _, f := range Run(context.Background(), &Env{}, cs, 2) {
		if f.Probe != (f.CheckID == "qp.loopback_probe") {
			t.Errorf("%s: probe %v", f.CheckID, f.Probe)
		}
	}
}

// Checks blocked on the host (a wedged device's file) give their parallel slot back after
// SlotHold, so the checks behind them still run before the deadline.
func TestBlockedChecksDoNotStarveTheRest(t *testing.T) {
	old := SlotHold
	SlotHold = 20 * time.Millisecond
	defer func() { SlotHold = old }()
	block := func(ctx context.Context, _ *Env) ([]engine.Finding, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	var cs []Check
	for i := 0; i < 10; i++ {
		cs = append(cs, Check{ID: fmt.Sprintf("port.blocked%d", i), Fault: "port-link", Run: block})
	}
	cs = append(cs, Check{ID: "driver.quick", Fault: "driver-module", Run: ok})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, f := range Run(ctx, &Env{}, cs, 1) {
		if f.CheckID == "driver.quick" && f.Severity != report.OK {
			t.Errorf("the quick check behind blocked ones: %s %s", f.Severity, f.Summary)
		}
	}
}

// A check that stops its loop at the run's end (CutShort) keeps the findings it made and is
// reported as cut short; one that returns after the end having judged an inventory whose
// discovery the end cut short is reported as cut short, saying how much of the inventory was read.
func TestRunReportsCutShortChecks(t *testing.T) {
	r := t.TempDir()
	for _, d := range []string{"rxe0", "rxe1"} {
		os.MkdirAll(filepath.Join(r, "sys/class/infiniband", d, "ports/1"), 0o755)
		os.WriteFile(filepath.Join(r, "sys/class/infiniband", d, "node_type"), []byte("1: CA\n"), 0o644)
	}
	h, err := host.New(host.Options{Root: r, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	summaries := func(fs []engine.Finding) string {
		var got []string
		for _, f := range fs {
			got = append(got, f.CheckID+" "+f.Severity.String()+" "+f.Summary)
		}
		return strings.Join(got, "\n")
	}
	// The inventory read whole; the end comes in the loop over its devices.
	ctx, cancel := context.WithCancelCause(context.Background())
	loop := Check{ID: "port.counters", Fault: "port-link", Run: func(ctx context.Context, env *Env) ([]engine.Finding, error) {
		var out []engine.Finding
		for _, d := range env.Inventory().Devices {
			if ctx.Err() != nil {
				return out, CutShort(ctx)
			}
			out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "device", Name: d.Name}, Severity: report.OK, Summary: "judged " + d.Name}})
			cancel(errors.New("--timeout 1s reached"))
		}
		return out, nil
	}}
	fs := Run(ctx, NewEnv(h, Options{}), []Check{loop}, 2)
	if got, want := summaries(fs), "port.counters ok judged rxe0\nport.counters unknown could not check: did not finish: --timeout 1s reached"; got != want {
		t.Errorf("findings\n%s\nwant\n%s", got, want)
	}
	// The end comes before the inventory is read: whatever the check judged of it is not kept.
	ctx, cancel = context.WithCancelCause(context.Background())
	cancel(errors.New("--timeout 1s reached"))
	env := NewEnv(h, Options{})
	env.Bind(ctx)
	env.Inventory()
	fin := judgedWhole(ctx, env, loop, []engine.Finding{{Finding: report.Finding{Summary: "no device"}}})
	if got, want := summaries(fin), "port.counters unknown could not check: did not finish: --timeout 1s reached; the inventory was cut short: 0 of 2 RDMA devices read"; got != want {
		t.Errorf("findings\n%s\nwant\n%s", got, want)
	}
}

func TestPackageOf(t *testing.T) {
	for _, tc := range []struct{ fn, want string }{
		{"github.com/rdmadiag/rdmadiag/checks/driver.init.0", "github.com/rdmadiag/rdmadiag/checks/driver"},
		{"example.com/site/checks.init.0", "example.com/site/checks"},
		{"main.init.0", "main"},
		{"example.com/a.b/c.(*T).m", "example.com/a.b/c"},
	} {
		if got := packageOf(tc.fn); got != tc.want {
			t.Errorf("packageOf(%q) = %q, want %q", tc.fn, got, tc.want)
		}
	}
}
