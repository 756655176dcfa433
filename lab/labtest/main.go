// Command labtest runs the verbs probes against a real RDMA device (in the
// lab: Soft-RoCE rxe0 in a QEMU guest, scenario lab/scenarios/probe-lab.sh)
// and checks that
//
//   - every probe passes;
//   - the probe's RDMA WRITE bandwidth is within 20% of ib_write_bw on the
//     same device in the same boot: several interleaved runs of both with the
//     same shape (message size, writes in flight, iterations, every write
//     signaled), medians compared, in MiB/s (2^20 bytes/s, perftest's
//     "MB/sec");
//   - runs cut short at 20 different points (injected error, deadline,
//     cancellation) leave no QP, CQ, MR or PD of this process behind
//     according to the kernel (`rdma res show ... -j`, matched by this
//     process's thread ids), and no uverbs fd open.
//
// The log (one line per check, one RESULT line per probe result, the
// ib_write_bw output) goes to stdout, or with -json to stderr while stdout
// gets one JSON summary (type Summary) for the lab's e2e expectations. The
// exit status is non-zero when a check failed.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/probe"
	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

func main() {
	dev := flag.String("dev", "rxe0", "RDMA device")
	port := flag.Int("port", 1, "port number")
	perftest := flag.Bool("perftest", true, "compare bandwidth with ib_write_bw")
	perfHost := flag.String("perftest-host", "127.0.0.1", "address the ib_write_bw client connects to")
	rounds := flag.Int("bw-rounds", 5, "interleaved bandwidth runs of the probe and of ib_write_bw (medians compared)")
	iters := flag.Int("bw-iters", 1000, "RDMA WRITEs per bandwidth run (ib_write_bw -n)")
	runs := flag.Int("cleanup-runs", 20, "interrupted runs in the cleanup test (0 to skip)")
	minRatio := flag.Float64("bw-min-ratio", 0.8, "lowest probe/ib_write_bw median ratio that passes (0.8: the probe's bandwidth within 20% of ib_write_bw)")
	jsonOut := flag.Bool("json", false, "log to stderr, print a JSON summary on stdout")
	flag.Parse()
	t := &lab{dev: *dev, port: *port, log: os.Stdout}
	if *jsonOut {
		t.log = os.Stderr
	}
	t.sum.Device, t.sum.Port = *dev, *port
	t.sum.Probes = map[string]probe.Status{}
	t.sum.Failed = []string{}
	if err := t.run(*perftest, *perfHost, *rounds, *iters, *runs, *minRatio); err != nil {
		t.check(false, "labtest: %v", err)
	}
	t.sum.Pass = t.failures == 0
	if *jsonOut {
		b, err := json.MarshalIndent(&t.sum, "", "  ")
		if err != nil {
			fmt.Fprintf(os.Stderr, "labtest: summary: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("%s\n", b)
	}
	if t.failures > 0 {
		fmt.Fprintf(t.log, "LABTEST FAIL: %d check(s) failed\n", t.failures)
		os.Exit(1)
	}
	fmt.Fprintln(t.log, "LABTEST PASS")
}

// Summary is what -json prints: the lab's e2e expectation
// (lab/e2e/expect/probe-lab.json) asserts on it.
type Summary struct {
	Pass   bool   `json:"pass"`
	Device string `json:"device"`
	Port   int    `json:"port"`
	// Probes is each probe's status, by the probe's layer name.
	Probes map[string]probe.Status `json:"probes"`
	// Checks is every check in the order made; Failed repeats the failed ones.
	Checks    []Check    `json:"checks"`
	Failed    []string   `json:"failed"`
	Bandwidth *Bandwidth `json:"bandwidth,omitempty"`
	Cleanup   *Cleanup   `json:"cleanup,omitempty"`
}

// Check is one assertion labtest made.
type Check struct {
	OK   bool   `json:"ok"`
	What string `json:"what"`
}

// Bandwidth is the probe against ib_write_bw, run by run.
type Bandwidth struct {
	Unit      string `json:"unit"`
	MsgSize   int    `json:"msg_size"`
	TxDepth   int    `json:"tx_depth"`
	Iters     int    `json:"iters"`
	CQMod     int    `json:"cq_mod"`
	Rounds    int    `json:"rounds"`
	Probe     []Run  `json:"probe_runs"`
	IBWriteBW []Run  `json:"ib_write_bw_runs"`
	// Medians of the runs that completed, in Unit, and their ratio.
	ProbeMedian     float64 `json:"probe_median"`
	IBWriteBWMedian float64 `json:"ib_write_bw_median"`
	MedianRatio     float64 `json:"median_ratio"`
	// RoundRatios is probe/ib_write_bw of each round whose two runs
	// completed; Ratio, the verdict, is their median.
	RoundRatios []float64 `json:"round_ratios"`
	Ratio       float64   `json:"ratio"`
	Within20Pct bool      `json:"within_20_percent"`
	MinRatio    float64   `json:"min_ratio"` // the -bw-min-ratio this run was judged by
}

// Run is one bandwidth measurement with what the device counted meanwhile:
// on rxe a retransmission timeout (completer_retry_err) resends the
// unacknowledged writes, and a run with many is slow for that reason alone.
type Run struct {
	MiBps    float64          `json:"mib_per_s"`
	Seconds  float64          `json:"seconds"` // the probe's timed run; ib_write_bw's whole client
	Error    string           `json:"error,omitempty"`
	Counters map[string]int64 `json:"rxe_counters,omitempty"` // deltas of the port's hw_counters
	// CPUBusy is how long each guest CPU was not idle during the run
	// (/proc/stat), in seconds: where else than in the timed thread time went.
	CPUBusy map[string]float64 `json:"cpu_busy_s,omitempty"`
	// Busiest lists the threads that used the most CPU during the run.
	Busiest []string `json:"busiest_threads,omitempty"`
}

// Cleanup is the interrupted-runs test.
type Cleanup struct {
	Runs           int   `json:"runs"`
	StoppedAsMeant int   `json:"stopped_as_intended"`
	WithLeftovers  []int `json:"runs_with_leftovers"` // 1-based run numbers
	LeakDetectorOK bool  `json:"leak_detector_ok"`    // it saw a deliberately held PD and CQ
	FinalProbePass bool  `json:"final_probe_pass"`
	FinalLeftovers int   `json:"final_leftovers"`
	ThreadsMatched int   `json:"threads_matched"` // thread ids of this process at the last check
}

type lab struct {
	dev      string
	port     int
	lib      *verbs.Lib
	log      io.Writer
	failures int
	sum      Summary
}

func (t *lab) check(ok bool, format string, args ...any) bool {
	status := "ok  "
	what := fmt.Sprintf(format, args...)
	if !ok {
		status = "FAIL"
		t.failures++
		t.sum.Failed = append(t.sum.Failed, what)
	}
	t.sum.Checks = append(t.sum.Checks, Check{OK: ok, What: what})
	fmt.Fprintf(t.log, "%s %s\n", status, what)
	return ok
}

func (t *lab) show(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(t.log, "marshal: %v\n", err)
		return
	}
	fmt.Fprintf(t.log, "RESULT %s\n", b)
}

func (t *lab) run(perftest bool, perfHost string, rounds, iters, runs int, minRatio float64) error {
	lib, err := verbs.Load()
	if err != nil {
		return err
	}
	t.lib = lib
	ctx := context.Background()
	o := probe.Options{}

	d := probe.Device(ctx, lib, t.dev, t.port, o)
	t.show(d)
	t.sum.Probes[d.Probe] = d.Status
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
	t.show(l)
	t.sum.Probes[l.Probe] = l.Status
	t.check(l.Status == probe.Pass, "firmware probe: %s %s requested %+v attempts %+v memory-bound %v", l.Status, l.Error, l.Requested, l.Attempts, l.MemoryBound)

	lb := probe.Loopback(ctx, lib, t.dev, t.port, o)
	t.show(lb)
	t.sum.Probes[lb.Probe] = lb.Status
	t.check(lb.Status == probe.Pass && lb.WritePayloadOK && lb.SendPayloadOK && len(lb.Completions) == 3,
		"qp probe: %s %s transitions %+v completions %d rtt %v", lb.Status, lb.Error, lb.Transitions, len(lb.Completions), lb.RoundTrip)

	cq := probe.CQ(ctx, lib, t.dev, t.port, true, o)
	t.show(cq)
	t.sum.Probes[cq.Probe] = cq.Status
	t.check(cq.Status == probe.Pass && cq.Completed == cq.Requested, "cq probe: %s %s %d/%d completions", cq.Status, cq.Error, cq.Completed, cq.Requested)
	if ov := cq.Overrun; ov != nil {
		t.check(ov.Detected, "cq overrun: cqe %d->%d, posted %d, CQ_ERR events %d, other %v, QP %s, polled %d",
			ov.Requested, ov.Granted, ov.Posted, ov.CQErrEvents, ov.OtherEvents, ov.QPState, ov.Polled)
	}

	t.bandwidth(ctx, perftest, perfHost, max(rounds, 1), iters, minRatio)
	t.checkNoLeftovers("after the passing probes")

	if runs > 0 {
		t.sum.Cleanup = &Cleanup{WithLeftovers: []int{}}
		t.sum.Cleanup.LeakDetectorOK = t.leakDetectorSelfTest()
		t.interruptedRuns(runs)
		// The device must still work after all the interruptions.
		lb := probe.Loopback(ctx, lib, t.dev, t.port, o)
		t.sum.Cleanup.FinalProbePass = t.check(lb.Status == probe.Pass, "qp probe after the interrupted runs: %s %s", lb.Status, lb.Error)
		t.sum.Cleanup.FinalLeftovers = t.checkNoLeftovers("after the final probe")
		t.sum.Cleanup.ThreadsMatched = len(ourTasks())
	}
	return nil
}

// bandwidth runs the pcie probe and ib_write_bw in turns, rounds times each,
// with the same shape: 64 KiB writes, 128 in flight, every write signaled
// (ib_write_bw turns CQ moderation off above 8 KiB), iters writes per run.
// The order alternates so that neither tool always runs on a device the
// other has just warmed or loaded.
func (t *lab) bandwidth(ctx context.Context, perftest bool, perfHost string, rounds, iters int, minRatio float64) {
	bo := probe.Options{Timeout: 60 * time.Second, MsgSize: 65536, TxDepth: 128, Iters: iters, CQMod: 1}
	b := &Bandwidth{Unit: "MiB/s", MsgSize: bo.MsgSize, TxDepth: bo.TxDepth, Iters: iters, CQMod: bo.CQMod, Rounds: rounds}
	t.sum.Bandwidth = b
	probeRun := func() {
		before, cpu, th := t.counters(), cpuTimes(), threadTimes()
		bw := probe.Bandwidth(ctx, t.lib, t.dev, t.port, bo)
		run := Run{MiBps: bw.MiBps, Seconds: bw.Duration.Seconds(), Error: bw.Error, Counters: t.countersSince(before), CPUBusy: cpuBusySince(cpu), Busiest: busiestSince(th)}
		b.Probe = append(b.Probe, run)
		t.show(bw)
		if len(b.Probe) == 1 {
			t.sum.Probes[bw.Probe] = bw.Status
		} else if bw.Status != probe.Pass {
			t.sum.Probes[bw.Probe] = bw.Status
		}
		t.check(bw.Status == probe.Pass && !bw.Truncated && bw.Iters == iters,
			"pcie probe run %d: %s %s: %d x %d B in %v = %.2f MiB/s (%.3f Gb/s), cq_mod %d; latency %d B x %d: min %v median %v p99 %v max %v; rxe counters %v; guest CPU busy %v s; busiest threads %v",
			len(b.Probe), bw.Status, bw.Error, bw.Iters, bw.MsgSize, bw.Duration, bw.MiBps, bw.Gbps, bw.CQMod,
			bw.LatSize, bw.LatIters, bw.LatMin, bw.LatMedian, bw.LatP99, bw.LatMax, run.Counters, run.CPUBusy, run.Busiest)
	}
	refRun := func() {
		before, cpu, th := t.counters(), cpuTimes(), threadTimes()
		start := time.Now()
		v, err := t.ibWriteBW(perfHost, bo.MsgSize, bo.TxDepth, iters)
		run := Run{MiBps: v, Seconds: time.Since(start).Seconds(), Counters: t.countersSince(before), CPUBusy: cpuBusySince(cpu), Busiest: busiestSince(th)}
		if err != nil {
			run.Error = err.Error()
		}
		b.IBWriteBW = append(b.IBWriteBW, run)
		t.check(err == nil, "ib_write_bw run %d: %.2f MiB/s (BW average[MB/sec]) %v; rxe counters %v; guest CPU busy %v s (whole client and server); busiest threads %v", len(b.IBWriteBW), v, errText(err), run.Counters, run.CPUBusy, run.Busiest)
	}
	for i := range rounds {
		if !perftest {
			probeRun()
			continue
		}
		if i%2 == 0 {
			probeRun()
			refRun()
		} else {
			refRun()
			probeRun()
		}
	}
	b.ProbeMedian = median(b.Probe)
	if !perftest {
		return
	}
	b.IBWriteBWMedian = median(b.IBWriteBW)
	if b.IBWriteBWMedian > 0 {
		b.MedianRatio = b.ProbeMedian / b.IBWriteBWMedian
	}
	// The verdict is the median of the rounds' own ratios: the two runs of
	// a round are seconds apart, while the guest's speed under emulation
	// drifts by 20-30% over a minute with the host's load, which a ratio of
	// the two medians takes for a difference between the tools.
	for i := range min(len(b.Probe), len(b.IBWriteBW)) {
		p, q := b.Probe[i], b.IBWriteBW[i]
		if p.Error == "" && q.Error == "" && p.MiBps > 0 && q.MiBps > 0 {
			b.RoundRatios = append(b.RoundRatios, p.MiBps/q.MiBps)
		}
	}
	if len(b.RoundRatios) > 0 {
		r := slices.Clone(b.RoundRatios)
		slices.Sort(r)
		b.Ratio = r[len(r)/2]
		if len(r)%2 == 0 {
			b.Ratio = (r[len(r)/2-1] + r[len(r)/2]) / 2
		}
	}
	b.Within20Pct = b.Ratio >= 0.8 && b.Ratio <= 1.2
	b.MinRatio = minRatio
	// Faster than ib_write_bw by more than 20% would mean the probe does not
	// measure what ib_write_bw does; slower is judged against -bw-min-ratio.
	t.check(b.Ratio >= minRatio && b.Ratio <= 1.2, "bandwidth: probe median %.2f MiB/s %v, ib_write_bw median %.2f MiB/s %v (BW average[MB/sec], which is MiB/s); ratio of each round %v, median %.3f (must be in [%.2f, 1.2]; within 20%%: %v; ratio of the medians %.3f)",
		b.ProbeMedian, rates(b.Probe), b.IBWriteBWMedian, rates(b.IBWriteBW), rounded(b.RoundRatios), b.Ratio, minRatio, b.Within20Pct, b.MedianRatio)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// rounded is for the log only; verdicts use full precision.
func rounded(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*1000+0.5)) / 1000
	}
	return out
}

func rates(runs []Run) []float64 {
	var v []float64
	for _, r := range runs {
		v = append(v, float64(int(r.MiBps*100+0.5))/100)
	}
	return v
}

// median of the runs that produced a number; 0 when none did.
func median(runs []Run) float64 {
	var v []float64
	for _, r := range runs {
		if r.Error == "" && r.MiBps > 0 {
			v = append(v, r.MiBps)
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// cpuTimes reads each CPU's busy and total time from /proc/stat, in ticks.
func cpuTimes() map[string][2]int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil
	}
	m := map[string][2]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		var total, idle int64
		for i, v := range f[1:] {
			n, _ := strconv.ParseInt(v, 10, 64)
			total += n
			if i == 3 || i == 4 { // idle, iowait
				idle += n
			}
		}
		m[f[0]] = [2]int64{total - idle, total}
	}
	return m
}

// cpuBusySince is each CPU's busy time since before, in seconds (USER_HZ 100).
func cpuBusySince(before map[string][2]int64) map[string]float64 {
	if before == nil {
		return nil
	}
	d := map[string]float64{}
	for k, v := range cpuTimes() {
		d[k] = float64(v[0]-before[k][0]) / 100
	}
	return d
}

// threadTimes is utime+stime in ticks of every thread on the system, keyed
// "comm/tid (cpu N)" (the CPU it last ran on is read at the end).
func threadTimes() map[string]int64 {
	m := map[string]int64{}
	procs, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		j := bytes.IndexByte(b, '(')
		if i < 0 || j < 0 || j > i {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		tid := filepath.Base(filepath.Dir(p))
		m[string(b[j+1:i])+"/"+tid] = u + st
	}
	return m
}

// busiestSince lists the five threads with the most CPU time since before.
func busiestSince(before map[string]int64) []string {
	type use struct {
		name string
		d    int64
	}
	var all []use
	for k, v := range threadTimes() {
		if d := v - before[k]; d > 0 {
			all = append(all, use{k, d})
		}
	}
	slices.SortFunc(all, func(a, b use) int { return int(b.d - a.d) })
	var out []string
	for i := 0; i < len(all) && i < 5; i++ {
		out = append(out, fmt.Sprintf("%s %.2fs", all[i].name, float64(all[i].d)/100))
	}
	return out
}

// counters reads the port's hw_counters (rxe: retransmissions, duplicates).
func (t *lab) counters() map[string]int64 {
	dir := filepath.Join("/sys/class/infiniband", t.dev, "ports", strconv.Itoa(t.port), "hw_counters")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	c := map[string]int64{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			c[e.Name()] = n
		}
	}
	return c
}

// countersSince is the non-zero growth of the counters since before.
func (t *lab) countersSince(before map[string]int64) map[string]int64 {
	if before == nil {
		return nil
	}
	d := map[string]int64{}
	for k, v := range t.counters() {
		if k == "lifespan" {
			continue
		}
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
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
// client's "BW average[MB/sec]": perftest divides by 0x100000 (print_report_bw,
// format_factor), so that is MiB/s. Its time runs from the first post to the
// poll that returned the last completion, as the probe's does.
func (t *lab) ibWriteBW(host string, size, depth, iters int) (float64, error) {
	args := []string{"-d", t.dev, "-i", strconv.Itoa(t.port), "-x", "1", "-s", strconv.Itoa(size), "-t", strconv.Itoa(depth),
		"-n", strconv.Itoa(iters), "-F"}
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
	// What perftest's own run_perftest_loopback waits for the server.
	time.Sleep(time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ib_write_bw", append(args, host)...).CombinedOutput()
	fmt.Fprintf(t.log, "--- ib_write_bw %s %s ---\n%s--- ib_write_bw server ---\n%s---\n", strings.Join(args, " "), host, out, srvOut.String())
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

// checkNoLeftovers checks and returns how many objects of this process
// remain (-1 when they could not be listed).
func (t *lab) checkNoLeftovers(when string) int {
	c, err := leftovers()
	if err != nil {
		t.check(false, "leftovers %s: %v", when, err)
		return -1
	}
	n := c["qp"] + c["cq"] + c["mr"] + c["pd"] + c["uverbs_fd"]
	t.check(n == 0, "no resources of pid %d (threads %d) %s: %v", os.Getpid(), len(ourTasks()), when, c)
	return n
}

// leakDetectorSelfTest proves the detector sees resources that are left.
func (t *lab) leakDetectorSelfTest() bool {
	vc, err := t.lib.OpenDevice(t.dev)
	if err != nil {
		return t.check(false, "self-test open: %v", err)
	}
	defer vc.Close()
	pd, err := vc.AllocPD()
	if err != nil {
		return t.check(false, "self-test alloc_pd: %v", err)
	}
	cq, err := vc.CreateCQ(4)
	if err != nil {
		_ = pd.Dealloc()
		return t.check(false, "self-test create_cq: %v", err)
	}
	c, err := leftovers()
	if c["pd"] != 1 || c["cq"] != 1 {
		for _, kind := range []string{"pd", "cq"} {
			out, _ := exec.Command("rdma", "-j", "res", "show", kind).CombinedOutput()
			fmt.Fprintf(t.log, "rdma -j res show %s (our pid %d, tasks %v):\n%s\n", kind, os.Getpid(), ourTasks(), out)
		}
	}
	ok := t.check(err == nil && c["pd"] == 1 && c["cq"] == 1 && c["uverbs_fd"] >= 1, "leak detector sees a deliberately held PD and CQ: %v %v", c, err)
	_ = cq.Destroy()
	_ = pd.Dealloc()
	_ = vc.Close()
	return t.checkNoLeftovers("after the self-test") == 0 && ok
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
		fmt.Fprintf(t.log, "run %2d %-48s -> %s at %s after %v: %s [cleanup errors: %v]\n", i+1, c.name, r.Status, r.Stage,
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
		cl := t.sum.Cleanup
		cl.Runs++
		if t.check(want, "run %d stopped where intended (%s at %s, %s)", i+1, c.mode, c.stage, r.Status) {
			cl.StoppedAsMeant++
		}
		if t.checkNoLeftovers(fmt.Sprintf("after run %d", i+1)) != 0 {
			cl.WithLeftovers = append(cl.WithLeftovers, i+1)
		}
	}
}
