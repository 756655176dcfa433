package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/internal/watch"
	"github.com/rdmadiag/rdmadiag/report"
)

type watchFlags struct {
	root, kmsg, stateDir, listen                          string
	poll, rescan, counters, full, clearAfter, readTimeout time.Duration
	probeEvery, checkTimeout                              time.Duration
	noKmsg                                                bool
	// once and onceProbes make the child of a full check (watchchild.go).
	once, onceProbes bool
	// sel holds --policy, --matrix, --exclude and --include, decoded and validated as check's.
	sel checkFlags
	// plugins are the site plugins the full check runs, found again at each full check.
	plugins pluginFlags
}

const watchHelp = `Watch the host's RDMA devices until stopped, with the judgement of ` + "`rdmadiag check`" + `:
  - each port's state and phys_state (and a RoCE port's netdev operstate and carrier) every
    --poll, from files held open; a device or port that disappears, reappears or is renamed
    is an event; /sys/class/infiniband is walked again every --rescan, or when a file vanishes
  - the error counters every --counters, judged as rates with the rules of check --interval
  - the kernel log, followed from its end (/dev/kmsg) and classified line by line
  - the full check every --full (without probes unless --probe-every), with the site plugins
    check would run (--plugins; docs/plugins.md), each time in a child process

Conditions are kept per device and port by identity (PCI address and port, else node GUID),
so a renamed device keeps its history, and set and clear with hysteresis: a port down sets
at once and clears after --clear-after up; 3 downs within 24 h set port_flap (a warning; 3
within 10 minutes, critical: port.flaps' lines), which clears after 30 minutes without one; a
kernel log fault clears only when the next full check finds the device healthy; a device is
gone after 3 walks in a row miss it. Events are written to stdout as JSON lines; --listen serves
/metrics (Prometheus), /healthz and /status. Conditions are kept in --state-dir across a
restart within one boot, and dropped at a new boot. docs/watch.md has the details.

Exit codes:
  0   stopped by SIGTERM
  3   could not start (the endpoint could not listen)
  64  usage error
  130 interrupted (SIGINT, SIGHUP)`

func (a *App) watchCmd() *cobra.Command {
	f := &watchFlags{}
	c := &cobra.Command{
		Use:   "watch",
		Short: "Watch this host's RDMA devices continuously: port state, counters, kernel log, periodic full check",
		Long:  watchHelp,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.plugins.resolve(cmd)
			return a.runWatch(cmd.Context(), cmd, f)
		},
	}
	fl := c.Flags()
	fl.DurationVar(&f.poll, "poll", time.Second, "how often each port's state files are read")
	fl.DurationVar(&f.rescan, "rescan", 30*time.Second, "how often /sys/class/infiniband is walked again for devices added, removed or renamed")
	fl.DurationVar(&f.counters, "counters", 10*time.Second, "how often the port error counters are sampled and their growth judged")
	fl.DurationVar(&f.full, "full", 5*time.Minute, "how often the full check runs")
	fl.DurationVar(&f.probeEvery, "probe-every", 0, "run the verbs probes with the full check at most this often (0: never)")
	fl.DurationVar(&f.clearAfter, "clear-after", watch.DefaultRules.ClearAfter, "how long a port must stay up (or its counters quiet) before its condition clears")
	fl.DurationVar(&f.readTimeout, "read-timeout", 500*time.Millisecond, "deadline of each read of the host; a read past it is abandoned and reported as stuck")
	fl.DurationVar(&f.checkTimeout, "check-timeout", defaultTimeout, "deadline of each full check")
	fl.StringVar(&f.stateDir, "state-dir", "/var/lib/rdmadiag", "directory keeping the conditions across restarts within one boot (\"\" keeps none)")
	fl.StringVar(&f.listen, "listen", "", "address to serve /metrics, /healthz and /status on (host:port; none by default)")
	fl.StringVar(&f.root, "root", "", "watch a directory laid out like a root (sys/, proc/) instead of this host")
	fl.StringVar(&f.kmsg, "kmsg", "", "kernel log to follow (default /dev/kmsg, none with --root)")
	fl.BoolVar(&f.noKmsg, "no-kmsg", false, "do not follow the kernel log")
	fl.StringVar(&f.sel.opts.PolicyFile, "policy", "", "JSON fleet policy the full check judges against, as check --policy (docs/options.md); its devices.exclude is not watched")
	fl.StringVar(&f.sel.opts.MatrixFile, "matrix", "", "JSON file extending the firmware/driver compatibility matrix, as check --matrix")
	fl.StringSliceVar(&f.sel.exclude, "exclude", nil, "leave these RDMA devices out of the watch and the full check: device names, PCI addresses or netdevs, globs allowed")
	fl.StringSliceVar(&f.sel.include, "include", nil, "watch these devices even though --exclude or the policy's devices.exclude names them")
	f.plugins.register(c, true)
	fl.BoolVar(&f.once, fullCheckOnceFlag, false, "run one full check, print its findings as JSON and exit (the child a watch runs for each)")
	fl.BoolVar(&f.onceProbes, fullCheckProbesFlag, false, "with --"+fullCheckOnceFlag+": run the probes too")
	_ = fl.MarkHidden(fullCheckOnceFlag)
	_ = fl.MarkHidden(fullCheckProbesFlag)
	return c
}

func (f *watchFlags) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"poll", f.poll}, {"rescan", f.rescan}, {"counters", f.counters}, {"full", f.full}, {"clear-after", f.clearAfter},
		{"read-timeout", f.readTimeout}, {"check-timeout", f.checkTimeout}} {
		if d.v <= 0 {
			return usageErr("--%s %s: must be positive", d.name, d.v)
		}
	}
	switch {
	case f.probeEvery < 0:
		return usageErr("--probe-every %s: must not be negative", f.probeEvery)
	case f.probeEvery > 0 && f.probeEvery < f.full:
		return usageErr("--probe-every %s is shorter than --full %s: probes run with the full check", f.probeEvery, f.full)
	case f.rescan < f.poll:
		return usageErr("--rescan %s is shorter than --poll %s", f.rescan, f.poll)
	case f.noKmsg && f.kmsg != "":
		return usageErr("--kmsg and --no-kmsg exclude each other")
	case f.plugins.timeout < 0 || f.plugins.timeout == 0 && f.plugins.timeoutGiven:
		return usageErr("--plugin-timeout %s: must be positive", f.plugins.timeout)
	}
	if f.root != "" {
		if st, err := os.Stat(f.root); err != nil || !st.IsDir() {
			return usageErr("--root %s: not a directory", f.root)
		}
	}
	return nil
}

func (a *App) runWatch(ctx context.Context, cmd *cobra.Command, f *watchFlags) error {
	if err := f.validate(); err != nil {
		return err
	}
	// The option files and the device selection are read once, before anything is watched,
	// exactly as check reads them: a bad file is a usage error.
	if err := loadOptionFiles(&f.sel.opts); err != nil {
		return err
	}
	if err := f.sel.selectDevices(); err != nil {
		return err
	}
	// The plugin directory's flags are judged now, as check judges them; its files are found
	// again at each full check, so a plugin added or removed takes effect at the next one.
	if _, err := f.plugins.directory(a, f.root == ""); err != nil {
		return err
	}
	if f.once {
		return a.printFullCheck(ctx, f)
	}
	// Main collects at 5x the live heap, for a run that ends in seconds. watch runs for months
	// with a live heap of a few MB and polls that allocate nothing: collecting at 1.5x costs
	// little CPU and keeps its resident size near what it uses (docs/watch.md, "Cost").
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
	// Where transparent huge pages are "always" (RHEL's default, the lab guest's), the heap's
	// arena is backed by 2 MB pages and khugepaged collapses the pages the collector gives back
	// into huge pages again (max_ptes_none 511: Documentation/admin-guide/mm/transhuge.rst): in
	// the lab a 6 MB heap kept 24 MB resident. A process that runs for months opts out; since
	// Linux 4.13 the flag applies to its existing mappings too (commit 1860033237d4, "mm: make
	// PR_SET_THP_DISABLE immediately active"). Best effort: a kernel without THP refuses it.
	_ = unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0)
	// Main's soft limit (32 MiB) stays: a tighter one (20 MiB was tried) sits near the lab
	// guest's live heap after a full check, where the collector runs back to back: it doubled
	// the idle CPU and delayed a kernel-log condition past 1 s (docs/watch.md, "Cost").
	var excluded func(names ...string) (string, bool)
	if sel := f.sel.opts.Select; sel != nil {
		excluded = func(names ...string) (string, bool) {
			r, ex := sel.Excluded(names...)
			return r.String(), ex
		}
	}
	var expectUp func(names ...string) bool
	if pol := f.sel.opts.Policy; pol != nil && pol.Ports != nil && len(pol.Ports.ExpectUp) > 0 {
		globs := pol.Ports.ExpectUp
		expectUp = func(names ...string) bool {
			for _, g := range globs {
				for _, n := range names {
					if ok, _ := path.Match(g, n); ok {
						return true
					}
				}
			}
			return false
		}
	}
	// SIGTERM is how a service manager stops watch: a clean stop, exit 0 (runMain).
	a.termExitsZero.Store(true)
	root, kmsgPath := "/", "/dev/kmsg"
	if f.root != "" {
		root, kmsgPath = f.root, ""
	}
	if f.kmsg != "" {
		kmsgPath = f.kmsg
	}
	if f.noKmsg {
		kmsgPath = ""
	}
	rules := watch.DefaultRules
	rules.ClearAfter = f.clearAfter
	var notify func(string)
	if os.Getenv("NOTIFY_SOCKET") != "" {
		notify = func(s string) { watch.SDNotify(s) }
		if wd := watch.WatchdogInterval(); wd > 0 && wd/2 < f.poll {
			fmt.Fprintf(a.Stderr, "rdmadiag: watchdog %s is shorter than twice --poll %s: systemd may restart a healthy watch\n", wd, f.poll)
		}
	}
	w, err := watch.New(watch.Config{Root: root, Kmsg: kmsgPath, StateDir: f.stateDir, Listen: f.listen,
		Poll: f.poll, Rescan: f.rescan, Counters: f.counters, Full: f.full, ReadTimeout: f.readTimeout, ProbeEvery: f.probeEvery,
		Rules: rules, Out: a.Stdout, Notify: notify, Now: a.Now, Excluded: excluded, ExpectUp: expectUp,
		FullCheck: func(ctx context.Context, probes bool) ([]watch.CheckResult, error) {
			return a.fullCheck(ctx, f, probes)
		}})
	if err != nil {
		return usageErr("%v", err)
	}
	if err := w.Run(ctx); err != nil {
		return &exitError{code: report.ExitUnknown, err: err}
	}
	return nil
}

// watchFullCheck runs every registered check as `rdmadiag check` does (probes only when asked)
// and returns the findings as watch judges them.
func (a *App) watchFullCheck(ctx context.Context, f *watchFlags, probes bool) ([]watch.CheckResult, error) {
	reg, ps, _, err := f.plugins.registry(a, f.root == "")
	if err != nil {
		return nil, err
	}
	selected, err := reg.Select(nil, nil, false)
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithTimeoutCause(ctx, f.checkTimeout, fmt.Errorf("--check-timeout %s reached", f.checkTimeout))
	defer cancel()
	var h *host.Host
	cleanup := func() {}
	if f.root != "" {
		h, err = snapshot.OpenRoot(filepath.Clean(f.root))
	} else {
		h, cleanup, err = (&source{}).open(runCtx)
	}
	if err != nil {
		return nil, err
	}
	defer cleanup()
	toRun, _ := probeLimits(selected, h.Kind(), !probes)
	toRun = a.bindPlugins(toRun, ps, h, f.plugins.timeout, a.Registry)
	opts := f.sel.opts
	opts.ProbeTimeout = defaultProbeTimeout
	env := checks.NewEnv(h, opts)
	env.Now = a.Now
	env.InventoryOptions = checks.InventoryOptions(toRun)
	findings := checks.Run(runCtx, env, toRun, max(2*runtime.NumCPU(), 4))
	if ctx.Err() != nil {
		return nil, errors.New("stopped")
	}
	out := make([]watch.CheckResult, 0, len(findings))
	for _, fd := range findings {
		out = append(out, watch.CheckResult{CheckID: fd.CheckID, Device: fd.Subject.Device, PCI: fd.Subject.PCI,
			Severity: fd.Severity, Summary: fd.Summary})
	}
	return out, nil
}
