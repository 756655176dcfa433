package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/report"
)

const (
	defaultTimeout      = 2 * time.Minute
	defaultProbeTimeout = 5 * time.Second
)

type checkFlags struct {
	src      source
	format   string
	only     []string
	skip     []string
	noProbe  bool
	timeout  time.Duration
	verbose  bool
	problems bool
	opts     checks.Options
	noColor  bool
	parallel int
}

func (a *App) checkCmd() *cobra.Command {
	f := &checkFlags{}
	c := &cobra.Command{
		Use:   "check",
		Short: "Check this host (or a snapshot) and report per layer",
		Long: "Run the registered checks bottom-up and print the findings with their evidence and fixes.\n" +
			"Layers: " + strings.Join(report.Layers, ", ") + ". `rdmadiag list` shows every check id.\n\n" + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCheck(cmd.Context(), f)
		},
	}
	f.src.flags(c)
	fl := c.Flags()
	fl.StringVarP(&f.format, "format", "o", "table", "output format: "+strings.Join(report.Formats(), ", "))
	fl.StringSliceVar(&f.only, "only", nil, "run only these layers or check ids (comma-separated; globs allowed)")
	fl.StringSliceVar(&f.skip, "skip", nil, "skip these layers or check ids")
	fl.BoolVar(&f.noProbe, "no-probe", false, "do not run verbs loopback probes (they create and destroy their own QPs, CQs and MRs)")
	fl.DurationVar(&f.timeout, "timeout", defaultTimeout, "deadline for the whole run")
	fl.DurationVar(&f.opts.ProbeTimeout, "probe-timeout", defaultProbeTimeout, "deadline for each verbs probe on each device")
	fl.BoolVar(&f.opts.ProbeCQOverrun, "probe-cq-overrun", false, "also overrun a small probe-owned CQ to prove overruns are detected")
	fl.IntVar(&f.opts.WRConcurrency, "wr-concurrency", 0, "work requests that can be outstanding on one CQ (judges CQ depth)")
	fl.BoolVar(&f.opts.RawContexts, "raw-contexts", false, "derive each CQ's work-request capacity from the drivers' raw QP/CQ contexts "+
		"(root; mlx5 and hns only; one firmware command per QP and CQ on mlx5)")
	fl.StringVar(&f.opts.WRProfile, "wr-profile", "", `JSON file {"applications": {"<command>|[module]": N}}: outstanding work requests per CQ of each application`)
	fl.Float64Var(&f.opts.ExpectRate, "expect-rate", 0, "port rate in Gb/s every active port should run at")
	fl.DurationVar(&f.opts.Interval, "interval", 0, "read counters twice this far apart and judge rates and flaps")
	fl.StringVar(&f.opts.MatrixFile, "matrix", "", "JSON file extending the firmware/driver compatibility matrix")
	fl.StringVar(&f.opts.PolicyFile, "policy", "", "JSON fleet policy (allowed PSIDs, minimum firmware, expected rates)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "show the evidence of passing checks too")
	fl.BoolVarP(&f.problems, "problems", "p", false, "table: list only warnings, criticals and unknowns (JSON always has every finding)")
	fl.BoolVar(&f.noColor, "no-color", false, "never colour the table")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "checks run at the same time")
	return c
}

func (a *App) runCheck(ctx context.Context, f *checkFlags) error {
	render, err := report.Lookup(f.format)
	if err != nil {
		return usageErr("%v", err)
	}
	if f.opts.WRConcurrency < 0 || f.opts.ExpectRate < 0 || f.opts.Interval < 0 || f.timeout <= 0 {
		return usageErr("--wr-concurrency, --expect-rate, --interval must not be negative and --timeout must be positive")
	}
	h, cleanup, err := f.src.open()
	if err != nil {
		return err
	}
	defer cleanup()
	noProbe := f.noProbe || h.Kind() != host.KindLive
	selected, err := a.Registry.Select(f.only, f.skip, noProbe)
	if err != nil {
		return usageErr("%v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	env := checks.NewEnv(h, f.opts)
	env.Now = a.Now
	started := a.Now()
	findings := checks.Run(ctx, env, selected, f.parallel)
	rep := report.Build(findings, report.DefaultFaults(), a.tool(f, started), a.hostInfo(env, f.src))
	ro := report.RenderOptions{Color: a.IsTerminal && !f.noColor, Verbose: f.verbose, Problems: f.problems}
	if err := render(a.Stdout, rep, ro); err != nil {
		return err
	}
	if rep.Summary.ExitCode != 0 {
		return &exitCode{code: rep.Summary.ExitCode}
	}
	return nil
}

func (a *App) tool(f *checkFlags, started time.Time) report.Tool {
	t := report.Tool{Name: "rdmadiag", Version: a.Version}
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
	add(o.WRProfile != "", "wr-profile="+filepath.Base(o.WRProfile))
	add(o.MatrixFile != "", "matrix="+filepath.Base(o.MatrixFile))
	add(o.PolicyFile != "", "policy="+filepath.Base(o.PolicyFile))
	add(f.noProbe, "no-probe")
	add(len(f.only) > 0, "only="+strings.Join(f.only, ","))
	add(len(f.skip) > 0, "skip="+strings.Join(f.skip, ","))
	return t
}

func (a *App) hostInfo(env *checks.Env, src source) report.HostInfo {
	h := env.Host
	hi := report.HostInfo{Source: string(h.Kind()), Devices: env.Inventory().Names(), KernelLog: env.KernelLogSource()}
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
