package cli

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"github.com/rdmadiag/rdmadiag/report/render"
)

const (
	defaultTimeout      = 2 * time.Minute
	defaultProbeTimeout = 5 * time.Second
)

type checkFlags struct {
	src source
	outputFlags
	only     []string
	skip     []string
	noProbe  bool
	timeout  time.Duration
	verbose  bool
	all      bool
	problems bool
	opts     checks.Options
	noColor  bool
	parallel int
	strict   bool
	// npdThreshold is the least verdict for which --format npd exits 1 (a problem to npd).
	npdThreshold string
	// exclude and include are --exclude and --include: devices left out of the run, and
	// devices judged although the policy or --exclude leaves them out.
	exclude, include []string
	plugins          pluginFlags
}

func (a *App) checkCmd() *cobra.Command {
	f := &checkFlags{}
	c := &cobra.Command{
		Use:   "check",
		Short: "Check this host (or a snapshot) and report per layer",
		Long: "Run the registered checks bottom-up and print the findings with their evidence and fixes.\n" +
			"Layers: " + strings.Join(report.Layers, ", ") + ". `rdmadiag list` shows every check id.\n\n" + exitCodesHelp +
			"\n\n" + formatsHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("timeout") {
				// The default deadline covers a requested --interval; an explicit one is checked.
				f.timeout = defaultTimeout + f.opts.Interval
			}
			f.resolve(a, cmd)
			f.plugins.resolve(cmd)
			return a.runCheck(cmd.Context(), f)
		},
	}
	f.src.flags(c)
	f.register(c, "table", render.Formats(), "output format: "+strings.Join(render.Formats(), ", ")+
		" (npd and nagios map the exit codes onto their protocols: see \"Formats for fleet engines\")",
		"write the report to this file instead of stdout, atomically (temporary file in the same "+
			"directory, then rename), mode 0644: for node_exporter's textfile collector")
	fl := c.Flags()
	fl.StringVar(&f.npdThreshold, "npd-threshold", "critical", "--format npd: the least verdict that exits 1 (a problem to "+
		"node-problem-detector): critical, or warning for a rule that reports warnings too")
	fl.StringSliceVar(&f.only, "only", nil, "run only these layers or check ids (comma-separated; globs allowed)")
	fl.StringSliceVar(&f.skip, "skip", nil, "skip these layers or check ids")
	a.completeSelection(c, "only")
	a.completeSelection(c, "skip")
	completeValues(c, "npd-threshold", []string{"critical", "warning"})
	fl.BoolVar(&f.noProbe, "no-probe", false, "do not run verbs loopback probes (they create and destroy their own QPs, CQs and MRs)")
	fl.DurationVar(&f.timeout, "timeout", defaultTimeout, "deadline for the whole run")
	fl.DurationVar(&f.opts.ProbeTimeout, "probe-timeout", defaultProbeTimeout, "deadline for each verbs probe on each device")
	fl.BoolVar(&f.opts.ProbeCQOverrun, "probe-cq-overrun", false, "also overrun a small probe-owned CQ to prove overruns are detected")
	fl.IntVar(&f.opts.WRConcurrency, "wr-concurrency", 0, "work requests that can be outstanding on one CQ (judges CQ depth)")
	fl.BoolVar(&f.opts.RawContexts, "raw-contexts", false, "derive each CQ's work-request capacity from the drivers' raw QP/CQ contexts "+
		"(root; mlx5 and hns only; one firmware command per QP and CQ on mlx5)")
	fl.StringVar(&f.opts.WRProfileFile, "wr-profile", "", `JSON file {"applications": {"<command>|[module]": N}}: outstanding work requests per CQ of each application (docs/options.md)`)
	fl.Float64Var(&f.opts.ExpectRate, "expect-rate", 0, "port rate in Gb/s every active port should run at")
	fl.DurationVar(&f.opts.Interval, "interval", 0, "read counters twice this far apart and judge rates and flaps")
	fl.StringVar(&f.opts.MatrixFile, "matrix", "", "JSON file extending the firmware/driver compatibility matrix (docs/options.md)")
	fl.StringVar(&f.opts.PolicyFile, "policy", "", "JSON fleet policy: expected port rates and link layer, allowed PSIDs, minimum firmware (docs/options.md)")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "leave these RDMA devices out of every check and output: device names, PCI addresses or netdevs, globs allowed (adds to the policy's devices.exclude)")
	fl.StringSliceVar(&f.include, "include", nil, "judge these devices even though --exclude or the policy's devices.exclude names them")
	fl.BoolVarP(&f.all, "all", "a", false, "table: list every finding in a table, passing and skipped ones too (by default they are counted per layer)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "table: --all, and the evidence of passing and skipped findings too")
	fl.BoolVarP(&f.problems, "problems", "p", false, "table: leave passing, informational and skipped findings out, also of --all (JSON always has every finding)")
	fl.BoolVar(&f.noColor, "no-color", false, "never colour the table")
	// Twice the CPUs: a check spends much of its time waiting (for the kernel, or for a fact another
	// check is reading, such as the inventory behind the verbs query), and a slot held while it
	// waits leaves a CPU idle; in the lab, 4 slots on 2 CPUs took 0.83-0.99 of the time 2 took.
	fl.IntVar(&f.parallel, "parallel", max(2*runtime.NumCPU(), 4), "checks run at the same time")
	f.plugins.register(c, true)
	fl.BoolVar(&f.strict, "strict", false, "count what a limit kept from being judged (no root, no kernel log in a tree) as unknown (exit 3)")
	return c
}

// validate refuses values no run can honour, naming the flag, before anything is read.
func (f *checkFlags) validate() error {
	o := f.opts
	switch {
	case f.parallel < 1:
		return usageErr("--parallel %d: must be at least 1", f.parallel)
	case f.timeout <= 0:
		return usageErr("--timeout %s: must be positive", f.timeout)
	case o.ProbeTimeout <= 0:
		return usageErr("--probe-timeout %s: must be positive", o.ProbeTimeout)
	case o.WRConcurrency < 0:
		return usageErr("--wr-concurrency %d: must not be negative", o.WRConcurrency)
	case o.ExpectRate < 0 || math.IsNaN(o.ExpectRate) || math.IsInf(o.ExpectRate, 0):
		return usageErr("--expect-rate %g: want a rate in Gb/s, 0 or more", o.ExpectRate)
	case o.Interval < 0:
		return usageErr("--interval %s: must not be negative", o.Interval)
	case o.Interval > 0 && o.Interval >= f.timeout:
		return usageErr("--interval %s does not fit in --timeout %s: raise --timeout above the interval", o.Interval, f.timeout)
	case o.Interval > 0 && (f.src.snapshot != "" || f.src.root != ""):
		// Refused up front rather than waited for: a recording holds one reading of each counter.
		return usageErr("--interval needs a live host: a snapshot or --root tree holds one reading of each counter, so no rate can be judged")
	case f.npdThreshold != "" && f.npdThreshold != "critical" && f.npdThreshold != "warning":
		return usageErr("--npd-threshold %q: want critical or warning", f.npdThreshold)
	case f.plugins.timeout < 0 || f.plugins.timeout == 0 && f.plugins.timeoutGiven:
		return usageErr("--plugin-timeout %s: must be positive", f.plugins.timeout)
	case f.npdThreshold == "warning" && f.format != "npd":
		return usageErr("--npd-threshold applies to --format npd only")
	}
	return checkOutputPath(f.output)
}

func (a *App) runCheck(ctx context.Context, f *checkFlags) error {
	render, err := render.Lookup(f.format)
	if err != nil {
		return usageErr("%v", err)
	}
	// From here on an interruption ends the process with the format's code.
	a.interruptExit.Store(int32(interruptedExit(f.format)))
	prog := a.newProgress()
	rep, err := a.judge(ctx, f, prog)
	prog.clear()
	if err != nil {
		return a.noReport(f, err)
	}
	ro := a.renderOptions(f.noColor, f.output != "" && f.output != "-")
	ro.Verbose, ro.All, ro.Problems = f.verbose, f.all, f.problems
	var out bytes.Buffer
	if err := render(&out, rep, ro); err != nil {
		return err
	}
	if err := f.write(a, out.Bytes()); err != nil {
		return err
	}
	if code := f.exitFor(rep); code != 0 {
		return &exitCode{code: code}
	}
	return nil
}

// judge validates the flags, runs the selected checks and builds the report.
func (a *App) judge(ctx context.Context, f *checkFlags, prog *progress) (*report.Report, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	if err := loadOptionFiles(&f.opts); err != nil {
		return nil, err
	}
	if err := f.selectDevices(); err != nil {
		return nil, err
	}
	reg, ps, pdir, err := f.plugins.registry(a, f.src.snapshot == "" && f.src.root == "")
	if err != nil {
		return nil, err
	}
	f.plugins.used = pdir
	selected, err := reg.Select(f.only, f.skip, false)
	if err != nil {
		return nil, usageErr("%v", err)
	}
	if len(selected) == 0 {
		return nil, usageErr("--only %s --skip %s select no check (see `rdmadiag list`)", strings.Join(f.only, ","), strings.Join(f.skip, ","))
	}
	// The deadline covers reading the source too: a snapshot's unpack is part of the run.
	runCtx, cancel := context.WithTimeoutCause(ctx, f.timeout, fmt.Errorf("--timeout %s reached", f.timeout))
	defer cancel()
	h, cleanup, err := a.openHost(runCtx, f.src)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	toRun, notRun := probeLimits(selected, h.Kind(), f.noProbe)
	toRun = a.bindPlugins(toRun, ps, h, f.plugins.timeout, a.Registry)
	env := checks.NewEnv(h, f.opts)
	env.Now = a.Now
	env.InventoryOptions = checks.InventoryOptions(toRun)
	if prog.on {
		env.Progress = prog.show
		sleep := env.Sleep
		env.Sleep = func(ctx context.Context, d time.Duration) error {
			prog.show(fmt.Sprintf("waiting %s for the second reading (--interval)", d))
			return sleep(ctx, d)
		}
	}
	started := a.Now()
	findings := checks.Run(runCtx, env, toRun, f.parallel)
	hi := a.boundedHostInfo(runCtx, env, f.src)
	tool := a.tool(f, started)
	if !a.Golden {
		d := math.Round(a.Now().Sub(started).Seconds()*1000) / 1000
		tool.DurationSeconds = &d
	}
	rep, linked := engine.BuildLinked(findings, engine.DefaultFaults(), tool, hi, engine.BuildOptions{
		Strict:      f.strict,
		Interrupted: ctx.Err() != nil,
		NotRun:      notRun,
		NotSelected: len(reg.All()) - len(selected),
	})
	if a.judged != nil {
		a.judged(rep, linked)
	}
	return rep, nil
}

// probeLimits keeps the probes out of a run that cannot or may not create verbs resources and
// says why, so that the report lists them as not run instead of forgetting them.
func probeLimits(selected []checks.Check, kind host.Kind, noProbe bool) ([]checks.Check, []report.NotRun) {
	var run []checks.Check
	var notRun []report.NotRun
	for _, c := range selected {
		switch {
		case c.Probe && kind != host.KindLive:
			notRun = append(notRun, report.NotRun{CheckID: c.ID, Limit: report.Limit{Kind: report.LimitLiveOnly,
				Lift: "run rdmadiag check on the host itself (probes create verbs resources, so they run only live)"}})
		case c.Probe && noProbe:
			notRun = append(notRun, report.NotRun{CheckID: c.ID, Limit: report.Limit{Kind: report.LimitSelection,
				Lift: "run without --no-probe"}})
		default:
			run = append(run, c)
		}
	}
	return run, notRun
}

// boundedHostInfo describes the host without outliving the run: after the deadline or a signal
// the inventory or the facts may be what is blocked, and the report must still be printed. It
// waits for what is left of the grace checks.Run began (env.GraceLeft), not for a grace of its
// own: a run ends within one grace of its deadline.
func (a *App) boundedHostInfo(ctx context.Context, env *checks.Env, src source) report.HostInfo {
	ch := make(chan report.HostInfo, 1)
	go func() { ch <- a.hostInfo(env, src) }()
	select {
	case hi := <-ch:
		return hi
	case <-ctx.Done():
	}
	t := time.NewTimer(env.GraceLeft())
	defer t.Stop()
	select {
	case hi := <-ch:
		return hi
	case <-t.C:
		return report.HostInfo{Source: string(env.Host.Kind()), Origin: src.snapshot + src.root}
	}
}

func (a *App) tool(f *checkFlags, started time.Time) report.Tool {
	t := report.Tool{Name: "rdmadiag", Version: a.Version, Commit: a.Commit}
	if !a.Golden {
		s := started.UTC().Truncate(time.Second)
		t.Started = &s
	}
	o := f.opts
	add := func(cond bool, s string) {
		if cond {
			t.Options = append(t.Options, s)
		}
	}
	add(o.WRConcurrency > 0, fmt.Sprintf("wr-concurrency=%d", o.WRConcurrency))
	add(o.RawContexts, "raw-contexts")
	add(o.ExpectRate > 0, fmt.Sprintf("expect-rate=%g", o.ExpectRate))
	add(o.Interval > 0, "interval="+o.Interval.String())
	add(o.WRProfileFile != "", "wr-profile="+filepath.Base(o.WRProfileFile))
	add(o.MatrixFile != "", "matrix="+filepath.Base(o.MatrixFile))
	add(o.PolicyFile != "", "policy="+filepath.Base(o.PolicyFile))
	add(f.noProbe, "no-probe")
	add(len(f.only) > 0, "only="+strings.Join(f.only, ","))
	add(len(f.skip) > 0, "skip="+strings.Join(f.skip, ","))
	add(f.strict, "strict")
	add(f.plugins.used != "", "plugins="+filepath.Base(f.plugins.used))
	add(len(f.exclude) > 0, "exclude="+strings.Join(f.exclude, ","))
	add(len(f.include) > 0, "include="+strings.Join(f.include, ","))
	return t
}

func (a *App) hostInfo(env *checks.Env, src source) report.HostInfo {
	h := env.Host
	hi := report.HostInfo{Source: string(h.Kind()), Devices: env.Inventory().Names(), KernelLog: env.KernelLogSource()}
	hi.Inventory = reportInventory(env)
	for _, x := range env.Inventory().Excluded {
		hi.Excluded = append(hi.Excluded, report.ExcludedDevice{Device: x.Name, PCI: x.PCI, By: x.By})
	}
	switch {
	case src.snapshot != "":
		hi.Origin = filepath.Base(src.snapshot)
	case src.root != "" && !a.Golden:
		hi.Origin = src.root
	}
	if facts, err := h.Facts(); err == nil {
		hi.Hostname = facts.Hostname
		hi.KernelRelease = facts.KernelRelease
	}
	if rec := h.Meta().Recorded; rec != nil {
		if !rec.Time.IsZero() {
			hi.Recorded = rec.Time.UTC().Format(time.RFC3339)
		}
		for _, u := range rec.Unreadable {
			hi.Unreadable = append(hi.Unreadable, u.Path+": "+u.Reason)
		}
		sort.Strings(hi.Unreadable)
	}
	return hi
}
