// Command labtest runs the verbs probes against a real RDMA device (in the
// lab: Soft-RoCE rxe0 in a QEMU guest, see guest.sh) and checks that
//
//   - every probe passes;
//   - the probe's RDMA WRITE bandwidth is within 20% of ib_write_bw on the
//     same device in the same boot;
//   - runs cut short at 20 different points (injected error, deadline,
//     cancellation) leave no QP, CQ, MR or PD of this process behind
//     according to the kernel (`rdma res show ... -j`), and no uverbs fd open.
//
// It prints one JSON line per probe result and exits non-zero on failure.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
	"github.com/rdmadiag/rdmadiag/probe"
)

func main() {
	dev := flag.String("dev", "rxe0", "RDMA device")
	port := flag.Int("port", 1, "port number")
	perftest := flag.Bool("perftest", true, "compare bandwidth with ib_write_bw")
	perfHost := flag.String("perftest-host", "127.0.0.1", "address the ib_write_bw client connects to")
	runs := flag.Int("cleanup-runs", 20, "interrupted runs in the cleanup test (0 to skip)")
	flag.Parse()
	t := &lab{dev: *dev, port: *port}
	if err := t.run(*perftest, *perfHost, *runs); err != nil {
		fmt.Printf("LABTEST FAIL: %v\n", err)
		os.Exit(1)
	}
	if t.failures > 0 {
		fmt.Printf("LABTEST FAIL: %d check(s) failed\n", t.failures)
		os.Exit(1)
	}
	fmt.Println("LABTEST PASS")
}

type lab struct {
	dev      string
	port     int
	lib      *verbs.Lib
	failures int
}

func (t *lab) check(ok bool, format string, args ...any) {
	status := "ok  "
	if !ok {
		status = "FAIL"
		t.failures++
	}
	fmt.Printf("%s %s\n", status, fmt.Sprintf(format, args...))
}

func show(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Printf("marshal: %v\n", err)
		return
	}
	fmt.Printf("RESULT %s\n", b)
}

func (t *lab) run(perftest bool, perfHost string, runs int) error {
	lib, err := verbs.Load()
	if err != nil {
		return err
	}
	t.lib = lib
	ctx := context.Background()
	o := probe.Options{}

	d := probe.Device(ctx, lib, t.dev, t.port, o)
	show(d)
	t.check(d.Status == probe.Pass, "driver probe: %s %s", d.Status, d.Error)
	if a := d.Attrs; a != nil {
		t.check(a.UverbsPath == "/dev/infiniband/"+a.Uverbs, "context fd points at %s (listed %s)", a.UverbsPath, a.Uverbs)
		// rxe has no sysfs fw_ver; when sysfs has one, the verbs view must agree.
		t.check(a.FWVerSysfs == "" || a.FWVerMatch, "fw_ver verbs %q, sysfs %q (empty: no fw_ver file)", a.FWVer, a.FWVerSysfs)
		t.check(a.PortState == "ACTIVE" && a.ActiveMTU > 0 && a.MaxQPWR > 0 && a.MaxSGE > 0 && a.MaxCQE > 0,
			"port %s mtu %d max_qp_wr %d max_sge %d max_cqe %d max_qp %d max_mr_size %d speed %s width %s",
			a.PortState, a.ActiveMTU, a.MaxQPWR, a.MaxSGE, a.MaxCQE, a.MaxQP, a.MaxMRSize, a.ActiveSpeed, a.ActiveWidth)
		t.check(a.GID != nil && a.GID.IPv4Mapped && a.GID.Type == "RoCE v2", "GID chosen: %+v", a.GID)
		t.checkGIDAgainstSysfs(a)
	}

	l := probe.Limits(ctx, lib, t.dev, t.port, o)
	show(l)
	t.check(l.Status == probe.Pass, "firmware probe: %s %s requested %+v attempts %+v memory-bound %v", l.Status, l.Error, l.Requested, l.Attempts, l.MemoryBound)

	lb := probe.Loopback(ctx, lib, t.dev, t.port, o)
	show(lb)
	t.check(lb.Status == probe.Pass && lb.WritePayloadOK && lb.SendPayloadOK && len(lb.Completions) == 3,
		"qp probe: %s %s transitions %+v completions %d rtt %v", lb.Status, lb.Error, lb.Transitions, len(lb.Completions), lb.RoundTrip)

	cq := probe.CQ(ctx, lib, t.dev, t.port, true, o)
	show(cq)
	t.check(cq.Status == probe.Pass && cq.Completed == cq.Requested, "cq probe: %s %s %d/%d completions", cq.Status, cq.Error, cq.Completed, cq.Requested)
	if ov := cq.Overrun; ov != nil {
		t.check(ov.Detected, "cq overrun: cqe %d->%d, posted %d, CQ_ERR events %d, other %v, QP %s, polled %d",
			ov.Requested, ov.Granted, ov.Posted, ov.CQErrEvents, ov.OtherEvents, ov.QPState, ov.Polled)
	}

	// Bandwidth: same shape as the ib_write_bw run below, with a deadline
	// long enough that the run is not truncated.
	bo := probe.Options{Timeout: 60 * time.Second, MsgSize: 65536, TxDepth: 128, Iters: 1000}
	bw := probe.Bandwidth(ctx, lib, t.dev, t.port, bo)
	show(bw)
	t.check(bw.Status == probe.Pass && !bw.Truncated, "pcie probe: %s %s: %d x %d B in %v = %.1f MiB/s (%.3f Gb/s); latency %d B x %d: min %v median %v p99 %v max %v",
		bw.Status, bw.Error, bw.Iters, bw.MsgSize, bw.Duration, bw.MiBps, bw.Gbps, bw.LatSize, bw.LatIters, bw.LatMin, bw.LatMedian, bw.LatP99, bw.LatMax)

	t.checkNoLeftovers("after the passing probes")

	if perftest && bw.Status == probe.Pass {
		ref, err := ibWriteBW(t.dev, perfHost, bo.MsgSize, bo.TxDepth, bo.Iters)
		if err != nil {
			t.check(false, "ib_write_bw: %v", err)
		} else {
			ratio := bw.MiBps / ref
			t.check(ratio >= 0.8 && ratio <= 1.2, "bandwidth: probe %.2f MiB/s, ib_write_bw %.2f MiB/s (BW average, MiB/s), ratio %.3f (must be within 20%%)", bw.MiBps, ref, ratio)
		}
	}

	if runs > 0 {
		t.leakDetectorSelfTest()
		t.interruptedRuns(runs)
		// The device must still work after all the interruptions.
		lb := probe.Loopback(ctx, lib, t.dev, t.port, o)
		t.check(lb.Status == probe.Pass, "qp probe after the interrupted runs: %s %s", lb.Status, lb.Error)
		t.checkNoLeftovers("after the final probe")
	}
	return nil
}

// checkGIDAgainstSysfs compares the chosen GID with the kernel's table.
func (t *lab) checkGIDAgainstSysfs(a *probe.Attributes) {
	if a.GID == nil {
		return
	}
	base := filepath.Join("/sys/class/infiniband", t.dev, "ports", strconv.Itoa(t.port))
	g, err1 := os.ReadFile(filepath.Join(base, "gids", strconv.Itoa(a.GID.Index)))
	typ, err2 := os.ReadFile(filepath.Join(base, "gid_attrs/types", strconv.Itoa(a.GID.Index)))
	if err1 != nil || err2 != nil {
		t.check(false, "read sysfs GID %d: %v %v", a.GID.Index, err1, err2)
		return
	}
	want := fmt.Sprintf("%x", a.GID.Raw)
	got := strings.ReplaceAll(strings.TrimSpace(string(g)), ":", "")
	t.check(got == want && strings.TrimSpace(string(typ)) == a.GID.Type, "sysfs GID %d = %s (%s), probe %s (%s)",
		a.GID.Index, strings.TrimSpace(string(g)), strings.TrimSpace(string(typ)), a.GID.GID, a.GID.Type)
}

var bwAverage = regexp.MustCompile(`(?m)^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$`)

// ibWriteBW runs ib_write_bw server and client on the device and returns the
// client's "BW average[MB/sec]" (perftest's MB is MiB).
func ibWriteBW(dev, host string, size, depth, iters int) (float64, error) {
	args := []string{"-d", dev, "-x", "1", "-s", strconv.Itoa(size), "-t", strconv.Itoa(depth), "-n", strconv.Itoa(iters), "-F"}
	var srvOut bytes.Buffer
	srv := exec.Command("ib_write_bw", args...)
	srv.Stdout, srv.Stderr = &srvOut, &srvOut
	if err := srv.Start(); err != nil {
		return 0, fmt.Errorf("start server: %w", err)
	}
	defer func() {
		_ = srv.Process.Kill()
		_ = srv.Wait()
	}()
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ib_write_bw", append(args, host)...).CombinedOutput()
	fmt.Printf("--- ib_write_bw client ---\n%s--- ib_write_bw server ---\n%s---\n", out, srvOut.String())
	if err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	m := bwAverage.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("no result line in the client output")
	}
	return strconv.ParseFloat(string(m[4]), 64)
}

// ourTasks is the set of thread ids of this process. The kernel's restrack
// records the creating *thread* (task_pid_vnr of the task), and Go issues
// verbs from whichever OS thread the goroutine runs on.
func ourTasks() map[float64]bool {
	ids := map[float64]bool{float64(os.Getpid()): true}
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			ids[float64(n)] = true
		}
	}
	return ids
}

// resources lists this process's objects of one kind from the kernel:
// those whose pid is one of our threads, plus any with our command name
// (a thread that created an object may have exited since).
func resources(kind string) ([]map[string]any, error) {
	out, err := exec.Command("rdma", "-j", "res", "show", kind).Output()
	if err != nil {
		return nil, fmt.Errorf("rdma -j res show %s: %w", kind, err)
	}
	var all []map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(out), &all); err != nil {
		return nil, fmt.Errorf("rdma -j res show %s: %w (output %q)", kind, err, out)
	}
	tasks := ourTasks()
	comm, _ := os.ReadFile("/proc/self/comm")
	var mine []map[string]any
	for _, r := range all {
		p, _ := r["pid"].(float64)
		c, _ := r["comm"].(string)
		if tasks[p] || c == strings.TrimSpace(string(comm)) {
			mine = append(mine, r)
		}
	}
	return mine, nil
}

// leftovers reports this process's QPs, CQs, MRs and PDs and open uverbs fds.
func leftovers() (map[string]int, error) {
	counts := map[string]int{}
	for _, kind := range []string{"qp", "cq", "mr", "pd"} {
		r, err := resources(kind)
		if err != nil {
			return nil, err
		}
		counts[kind] = len(r)
	}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	for _, fd := range fds {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.HasPrefix(p, "/dev/infiniband/") {
			counts["uverbs_fd"]++
		}
	}
	return counts, nil
}

func (t *lab) checkNoLeftovers(when string) {
	c, err := leftovers()
	if err != nil {
		t.check(false, "leftovers %s: %v", when, err)
		return
	}
	t.check(c["qp"]+c["cq"]+c["mr"]+c["pd"]+c["uverbs_fd"] == 0, "no resources of pid %d %s: %v", os.Getpid(), when, c)
}

// leakDetectorSelfTest proves the detector sees resources that are left.
func (t *lab) leakDetectorSelfTest() {
	vc, err := t.lib.OpenDevice(t.dev)
	if err != nil {
		t.check(false, "self-test open: %v", err)
		return
	}
	defer vc.Close()
	pd, err := vc.AllocPD()
	if err != nil {
		t.check(false, "self-test alloc_pd: %v", err)
		return
	}
	cq, err := vc.CreateCQ(4)
	if err != nil {
		_ = pd.Dealloc()
		t.check(false, "self-test create_cq: %v", err)
		return
	}
	c, err := leftovers()
	if c["pd"] != 1 || c["cq"] != 1 {
		for _, kind := range []string{"pd", "cq"} {
			out, _ := exec.Command("rdma", "-j", "res", "show", kind).CombinedOutput()
			fmt.Printf("rdma -j res show %s (our pid %d, tasks %v):\n%s\n", kind, os.Getpid(), ourTasks(), out)
		}
	}
	t.check(err == nil && c["pd"] == 1 && c["cq"] == 1 && c["uverbs_fd"] >= 1, "leak detector sees a deliberately held PD and CQ: %v %v", c, err)
	_ = cq.Destroy()
	_ = pd.Dealloc()
	_ = vc.Close()
	t.checkNoLeftovers("after the self-test")
}

// interruption describes one cut-short run.
type interruption struct {
	name  string
	stage probe.Stage // where it must stop
	run   func(ctx context.Context, o probe.Options) probe.Result
	mode  string // "fail" (FailAt), "deadline" (stall until the deadline), "cancel" (Ctrl-C)
	nth   int    // which entry of the stage (stages repeat in the overrun)
	timer time.Duration
}

func (t *lab) interruptedRuns(n int) {
	lib, dev, port := t.lib, t.dev, t.port
	loop := func(ctx context.Context, o probe.Options) probe.Result {
		return probe.Loopback(ctx, lib, dev, port, o).Result
	}
	cqo := func(ctx context.Context, o probe.Options) probe.Result {
		return probe.CQ(ctx, lib, dev, port, true, o).Result
	}
	bw := func(ctx context.Context, o probe.Options) probe.Result {
		o.Iters = 1 << 30
		return probe.Bandwidth(ctx, lib, dev, port, o).Result
	}
	lim := func(ctx context.Context, o probe.Options) probe.Result {
		return probe.Limits(ctx, lib, dev, port, o).Result
	}
	devp := func(ctx context.Context, o probe.Options) probe.Result {
		return probe.Device(ctx, lib, dev, port, o)
	}
	cases := []interruption{
		{name: "driver: error at query_device", stage: probe.StageQueryDevice, run: devp, mode: "fail"},
		{name: "qp: error at open_device", stage: probe.StageOpen, run: loop, mode: "fail"},
		{name: "qp: error at alloc_pd", stage: probe.StageAllocPD, run: loop, mode: "fail"},
		{name: "qp: error at reg_mr", stage: probe.StageRegMR, run: loop, mode: "fail"},
		{name: "qp: deadline at create_cq", stage: probe.StageCreateCQ, run: loop, mode: "deadline"},
		{name: "qp: error at create_qp", stage: probe.StageCreateQP, run: loop, mode: "fail"},
		{name: "qp: error at INIT", stage: probe.StageInit, run: loop, mode: "fail"},
		{name: "qp: Ctrl-C at RTR", stage: probe.StageRTR, run: loop, mode: "cancel"},
		{name: "qp: error at RTS", stage: probe.StageRTS, run: loop, mode: "fail"},
		{name: "qp: deadline at post_recv", stage: probe.StagePostRecv, run: loop, mode: "deadline"},
		{name: "qp: error at post_send", stage: probe.StagePostSend, run: loop, mode: "fail"},
		{name: "qp: deadline with work in flight", stage: probe.StagePoll, run: loop, mode: "deadline"},
		{name: "qp: Ctrl-C at verify", stage: probe.StageVerify, run: loop, mode: "cancel"},
		{name: "firmware: Ctrl-C at create_qp", stage: probe.StageCreateQP, run: lim, mode: "cancel"},
		{name: "cq: deadline with N completions pending", stage: probe.StagePoll, run: cqo, mode: "deadline"},
		{name: "cq: error entering the overrun", stage: probe.StageOverrun, run: cqo, mode: "fail"},
		{name: "cq: Ctrl-C connecting the overrun QP", stage: probe.StageRTS, nth: 2, run: cqo, mode: "cancel"},
		{name: "pcie: Ctrl-C in the middle of the bandwidth run", stage: probe.StageBandwidth, run: bw, mode: "timer", timer: 700 * time.Millisecond},
		{name: "pcie: error at latency", stage: probe.StageLatency, run: bw, mode: "fail"},
		{name: "pcie: deadline at create_qp", stage: probe.StageCreateQP, run: bw, mode: "deadline"},
	}
	if n < len(cases) {
		cases = cases[:n]
	}
	for i, c := range cases {
		ctx, cancel := context.WithCancel(context.Background())
		o := probe.Options{Timeout: 3 * time.Second}
		seen := 0
		switch c.mode {
		case "fail":
			o.FailAt = c.stage
		case "deadline", "cancel":
			o.Timeout = 800 * time.Millisecond
			o.Hook = func(pctx context.Context, s probe.Stage) error {
				if s != c.stage {
					return nil
				}
				if seen++; seen < max(c.nth, 1) {
					return nil
				}
				if c.mode == "cancel" {
					cancel() // what a SIGINT handler does to the CLI's context
				}
				<-pctx.Done()
				return context.Cause(pctx)
			}
		case "timer":
			o.Timeout = 30 * time.Second
			time.AfterFunc(c.timer, cancel)
		}
		start := time.Now()
		r := c.run(ctx, o)
		cancel()
		fmt.Printf("run %2d %-48s -> %s at %s after %v: %s [cleanup errors: %v]\n", i+1, c.name, r.Status, r.Stage,
			time.Since(start).Round(time.Millisecond), r.Error, r.Cleanup)
		want := r.Status == probe.Fail && r.Stage == c.stage && len(r.Cleanup) == 0
		switch c.mode {
		case "fail":
			want = want && errors.Is(r.Err, probe.ErrInjected)
		case "deadline":
			want = want && errors.Is(r.Err, context.DeadlineExceeded)
		case "cancel", "timer":
			want = want && errors.Is(r.Err, context.Canceled)
		}
		t.check(want, "run %d stopped where intended (%s at %s, %s)", i+1, c.mode, c.stage, r.Status)
		t.checkNoLeftovers(fmt.Sprintf("after run %d", i+1))
	}
}
