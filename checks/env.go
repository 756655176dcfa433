package checks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/devsel"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Options are the verdict-changing settings of a run. They come from flags; checks read them from
// the Env, never from package state. The option files (--policy, --matrix, --wr-profile) arrive
// decoded and validated (internal/optfile): a check never reads them, so a bad file is a usage
// error before the run, not an unknown finding.
type Options struct {
	// WRConcurrency is the number of work requests the operator says can be outstanding on one CQ
	// (--wr-concurrency); 0 means not declared.
	WRConcurrency int
	// RawContexts makes the CQ depth check read the drivers' raw QP and CQ contexts
	// (--raw-contexts): admin only, and on mlx5 one firmware command per object, so opt-in.
	RawContexts bool
	// WRProfile maps applications (command names, "[module]" for kernel owners) to the work
	// requests each can have outstanding on one CQ (--wr-profile); nil without one.
	WRProfile *optfile.WRProfile
	// WRProfileFile names the --wr-profile file.
	WRProfileFile string
	// ExpectRate is the port rate in Gb/s every active port should run at (--expect-rate); 0 = any.
	ExpectRate float64
	// Interval, when non-zero, makes counter checks read twice and judge rates (--interval).
	Interval time.Duration
	// ProbeTimeout bounds each verbs probe on each device (--timeout).
	ProbeTimeout time.Duration
	// ProbeCQOverrun opts in to overrunning a probe-owned CQ (--probe-cq-overrun).
	ProbeCQOverrun bool
	// MatrixAdditions extend or override the rows of the firmware/driver matrix (--matrix); each
	// row's From names its file.
	MatrixAdditions []optfile.MatrixRow
	// MatrixFile names the --matrix file.
	MatrixFile string
	// Policy is the fleet policy: expected port rates and link layer, allowed PSIDs, minimum
	// firmware (--policy); nil without one.
	Policy *optfile.Policy
	// PolicyFile names the --policy file, for evidence.
	PolicyFile string
	// Select leaves devices out of the run (policy devices.exclude, --exclude, --include);
	// nil judges every device.
	Select *devsel.Selector
}

// Env is everything a check may consult: the host, the options and the shared inventory.
type Env struct {
	Host *host.Host
	Opts Options
	// Now is the clock; tests fix it.
	Now func() time.Time
	// Sleep waits for d or until ctx ends; tests replace it to make --interval instantaneous.
	Sleep func(ctx context.Context, d time.Duration) error
	// Progress, when set, is told what a long step is doing (a probe on a port), for a line on
	// the operator's terminal; it never changes a finding. Checks call Progressf.
	Progress func(msg string)

	// InventoryOptions choose the inventory's sources (InventoryOptions of the checks run); the
	// zero value reads everything from sysfs.
	InventoryOptions inventory.Options

	invOnce sync.Once
	inv     *inventory.Inventory
	invRead atomic.Pointer[inventory.Inventory] // inv, once read

	// ctx is the run's context, which Run binds (Bind): the inventory's discovery ends with it.
	ctx atomic.Pointer[context.Context]
	// ended is when ctx ended, for GraceLeft.
	ended atomic.Pointer[time.Time]

	klogOnce sync.Once
	klog     *kmsg.Log
	klogErr  error
	// klogRead is set once the log was read, for KernelLogSource.
	klogRead atomic.Pointer[kmsg.Log]

	memoMu sync.Mutex
	memo   map[any]*memoEntry // by *Fact
}

type memoEntry struct {
	once sync.Once
	v    any
}

// Fact is a value computed once per run and shared by the checks that ask for it (the RDMA
// resource tables, the kernel config, the verbs library handle). A package declares it once as a
// variable and every user names that variable, so the coupling is visible in the code and typed:
// no string key, no assertion at the call site.
type Fact[T any] struct {
	// name says what the fact is, for panics and debugging only.
	name    string
	compute func(*Env) T
}

// NewFact declares a fact computed by compute at most once per Env, even when checks ask for it
// concurrently.
func NewFact[T any](name string, compute func(*Env) T) *Fact[T] {
	return &Fact[T]{name: name, compute: compute}
}

// Get returns the fact for this run, computing it on first use.
func (f *Fact[T]) Get(e *Env) T {
	e.memoMu.Lock()
	if e.memo == nil {
		e.memo = map[any]*memoEntry{}
	}
	m, ok := e.memo[f]
	if !ok {
		m = &memoEntry{}
		e.memo[f] = m
	}
	e.memoMu.Unlock()
	m.once.Do(func() { m.v = f.compute(e) })
	return m.v.(T)
}

// NewEnv builds an environment with the real clock.
func NewEnv(h *host.Host, o Options) *Env {
	return &Env{Host: h, Opts: o, Now: time.Now, Sleep: sleepCtx}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Inventory discovers the RDMA devices once per run and shares the result among checks. The
// discovery ends with the run's context (Bind): a cut short one says so (Inventory.Cut), and Run
// reports the checks that judged it as cut short too.
func (e *Env) Inventory() *inventory.Inventory {
	e.invOnce.Do(func() {
		e.inv = applySelection(e.Opts.Select, inventory.DiscoverContext(e.context(), e.Host, e.InventoryOptions))
		e.invRead.Store(e.inv)
	})
	return e.inv
}

// Bind makes ctx the run's context: the inventory's discovery and the ports' reads end with it,
// and GraceLeft counts from its end. Run binds its context; a caller that reads the inventory
// without Run (rdmadiag inventory) binds its own. Only the first binding counts.
func (e *Env) Bind(ctx context.Context) {
	if e.ctx.CompareAndSwap(nil, &ctx) {
		context.AfterFunc(ctx, func() {
			now := time.Now()
			e.ended.Store(&now)
		})
	}
}

func (e *Env) context() context.Context {
	if c := e.ctx.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// inventoryCut is why the run's inventory is incomplete, nil when it is whole or not read.
func (e *Env) inventoryCut() error {
	if inv := e.invRead.Load(); inv != nil {
		return inv.Cut
	}
	return nil
}

// GraceLeft is how much of Grace is left since the run's context ended (all of it while it has
// not): what runs after Run (the report's inventory) shares the one grace, so that a run ends
// within Grace of its deadline, not within one Grace per step.
func (e *Env) GraceLeft() time.Duration {
	t := e.ended.Load()
	if t == nil {
		return Grace
	}
	return max(0, Grace-time.Since(*t))
}

// Grace is how long Run waits, once the run's context has ended, for checks to return on their
// own (probes destroy what they created); checks still running after it are abandoned.
const Grace = 750 * time.Millisecond

// KernelLog reads and parses the host's kernel log once per run, so that every check judges the
// same records: a live ring buffer changes between two reads. The Log is shared and read-only.
// When a limit of the run keeps the log away the error is a *host.LogUnavailable (see
// KernelLogFinding); any other error is a failure.
func (e *Env) KernelLog() (*kmsg.Log, error) {
	e.klogOnce.Do(func() {
		b, o, err := e.Host.ReadKernelLog()
		if err != nil {
			e.klogErr = err
			return
		}
		recs, skipped := kmsg.Parse(b)
		sort.SliceStable(recs, func(i, j int) bool { return recs[i].Seq < recs[j].Seq })
		e.klog = &kmsg.Log{Records: recs, Skipped: skipped, Source: o.Source, Cite: o.Cite(), Latest: logNow(recs, e.captureTime())}
		if o.Part != nil {
			e.klog.Partial = o.Part.String()
		}
		// Without a boot time the log's times stay relative to boot: nothing is lost but the
		// wall clock, so a failure to read it is not reported.
		if bt, err := e.Host.BootTime(); err == nil {
			e.klog.Boot = bt
		}
		e.klogRead.Store(e.klog)
	})
	return e.klog, e.klogErr
}

// KernelLogSource names where this run's kernel log was read, for the report; empty when no
// check read it (the run did not use one) or it could not be read. It never reads the log.
func (e *Env) KernelLogSource() string {
	if l := e.klogRead.Load(); l != nil {
		return l.Source
	}
	return ""
}

// SlotHold is how long a check may hold one of Run's parallel slots: one still running after it
// is blocked on the host (checks read small files and tables in milliseconds), and the checks
// behind it must not wait for it.
var SlotHold = 2 * time.Second

// Run executes checks concurrently (at most parallel at a time) and returns all findings. Probe
// checks do not count against parallel: they mostly wait for the device (and for each other:
// package probes serialises each device's probes), so holding a slot would only delay the
// checks that read files and netlink. When a check is marked KernelLog, the log is read from the
// start, beside the checks. A check that returns an error or panics yields one
// "unknown" finding saying why; the others are unaffected. When ctx ends (the deadline, Ctrl-C) Run returns within Grace whatever a check is
// doing: a check still running becomes "unknown" with the cause of the end (context.Cause) and
// the reads it may be blocked in; its goroutine is left behind. Order is made deterministic later
// by engine.Build.
func Run(ctx context.Context, env *Env, cs []Check, parallel int) []engine.Finding {
	if parallel < 1 {
		parallel = 1
	}
	env.Bind(ctx)
	type result struct {
		i   int
		fs  []engine.Finding
		ran bool
	}
	for _, c := range cs {
		if c.KernelLog {
			// Read once for every check that asks (the Once in KernelLog); a read still blocked
			// when the run ends is named by the checks waiting for it, as before.
			go env.KernelLog()
			// The signature table is loaded meanwhile (tens of milliseconds of decoding),
			// beside the inventory the classifier waits for.
			go kevent.Default()
			break
		}
	}
	done := make(chan result, len(cs)) // buffered: an abandoned check can still finish and exit
	sem := make(chan struct{}, parallel)
	for i, c := range cs {
		go func() {
			if !c.Probe {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					done <- result{i: i}
					return
				}
			}
			if ctx.Err() != nil {
				if !c.Probe {
					<-sem
				}
				done <- result{i: i}
				return
			}
			if c.Probe {
				done <- result{i, runOne(ctx, env, c), true}
				return
			}
			// A check still running after SlotHold is waiting on the host (a wedged device's
			// sysfs file, a FIFO): it gives its slot back so that the checks behind it run.
			fin := make(chan []engine.Finding, 1)
			go func() { fin <- judgedWhole(ctx, env, c, runOne(ctx, env, c)) }()
			select {
			case fs := <-fin:
				<-sem
				done <- result{i, fs, true}
			case <-time.After(SlotHold):
				<-sem
				done <- result{i, <-fin, true}
			}
		}()
	}
	results := make([][]engine.Finding, len(cs))
	finished := make([]bool, len(cs))
	var grace <-chan time.Time
	ctxDone := ctx.Done()
	for n := 0; n < len(cs); {
		select {
		case r := <-done:
			results[r.i], finished[r.i] = r.fs, r.ran
			n++
		case <-ctxDone:
			ctxDone = nil
			t := time.NewTimer(Grace)
			defer t.Stop()
			grace = t.C
		case <-grace:
			n = len(cs)
		}
	}
	var all []engine.Finding
	for i, r := range results {
		start := len(all)
		if !finished[i] {
			all = append(all, unfinished(ctx, env, cs[i]))
		} else {
			all = append(all, r...)
		}
		// The registry says what is a probe; the report's linking must not guess it from ids.
		for j := start; j < len(all); j++ {
			all[j].Probe = cs[i].Probe
		}
	}
	return env.dropExcluded(all)
}

// judgedWhole keeps the findings of a check unless it returned after the run's end with the
// inventory cut short: it may then have judged only the devices read, and says nothing of the
// others, so it is reported as cut short.
func judgedWhole(ctx context.Context, env *Env, c Check, fs []engine.Finding) []engine.Finding {
	if ctx.Err() != nil && env.inventoryCut() != nil {
		return []engine.Finding{unfinished(ctx, env, c)}
	}
	return fs
}

// CutShort is the error a check returns when it stops its loop over devices or ports because
// the run ended: Run reports the check as cut short, with the findings it made before.
func CutShort(ctx context.Context) error { return fmt.Errorf("cut short: %w", context.Cause(ctx)) }

// unfinished is the finding of a check that the run's end cut short: what ended the run, and
// where the host was still blocked, so that a wedged device or a planted FIFO is named; and the
// inventory, when its discovery was cut short too.
func unfinished(ctx context.Context, env *Env, c Check) engine.Finding {
	why := "did not finish: " + context.Cause(ctx).Error()
	if err := env.inventoryCut(); err != nil {
		why += "; " + strings.TrimSuffix(err.Error(), ": "+context.Cause(ctx).Error())
	}
	var blocked []string
	if env.Host != nil {
		for _, op := range env.Host.Pending() {
			blocked = append(blocked, fmt.Sprintf("%s (for %s)", op.What, time.Since(op.Since).Round(100*time.Millisecond)))
		}
	}
	f := unknown(c, errors.New(why), "")
	f.Summary = "could not check: " + why
	if len(blocked) > 0 {
		f.Summary += "; blocked in " + blocked[0]
		for _, b := range blocked {
			f.Evidence = append(f.Evidence, report.Ev("blocked in", b, "host reads in progress at the deadline"))
		}
	}
	return f
}

func runOne(ctx context.Context, env *Env, c Check) (fs []engine.Finding) {
	defer func() {
		if p := recover(); p != nil {
			// A bug in one check must not take the report down with it; the stack goes into the
			// evidence so that the bug can be fixed from a pasted ticket.
			fs = []engine.Finding{unknown(c, fmt.Errorf("internal error: %v", p), firstLines(string(debug.Stack()), 12))}
		}
	}()
	out, err := c.Run(ctx, env)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Cause(ctx)) {
		// Stopped by the run's end (CutShort): the findings made before stand.
		out = append(out, unfinished(ctx, env, c))
		err = nil
	}
	if err != nil {
		f := unknown(c, err, "")
		if lift := privilegeLimit(env, err); lift != "" {
			// An ordinary user may not read everything (root-only files, admin-only netlink
			// dumps): that is the run's limit, not the host's failure.
			f.Summary = "skipped: " + err.Error()
			f = f.SkippedBy(report.LimitPrivilege, lift)
		}
		return append(out, f)
	}
	// A judgement drawn from part of the log says which part: lines older than it were not seen.
	var partial *kmsg.Log
	if l := env.klogRead.Load(); c.KernelLog && l != nil && l.Partial != "" {
		partial = l
	}
	for i := range out {
		if partial != nil && out[i].Severity != report.Skipped {
			out[i].Evidence = append(out[i].Evidence, report.Ev("kernel log read", partial.Partial, partial.Cite))
		}
		if out[i].CheckID == "" {
			out[i].CheckID = c.ID
		}
		if out[i].Layer == "" {
			out[i].Layer = c.Layer()
		}
		if out[i].Fault == "" {
			out[i].Fault = c.Fault
		}
	}
	return out
}

// privilegeLimit says how to lift a permission refusal met by a run without root on a live host,
// or "" when err is not one (as root, EACCES is a real fault worth an unknown).
func privilegeLimit(env *Env, err error) string {
	if env.Host == nil || !env.Host.RefusalsAreThisRun() || !errors.Is(err, fs.ErrPermission) {
		return ""
	}
	if facts, ferr := env.Host.Facts(); ferr != nil || facts.EUID == 0 {
		return ""
	}
	return "run as root (or with the capability the refused read needs: CAP_SYS_ADMIN for sysfs, CAP_NET_ADMIN for admin netlink)"
}

func unknown(c Check, err error, stack string) engine.Finding {
	f := engine.Finding{Finding: report.Finding{
		CheckID:  c.ID,
		Layer:    c.Layer(),
		Subject:  report.Subject{Kind: "host"},
		Severity: report.Unknown,
		Summary:  "could not check: " + err.Error(),
		Fault:    c.Fault,
	}}
	if stack != "" {
		f.Evidence = []report.Evidence{{Name: "stack", Observed: stack}}
	}
	return f
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// Progressf tells Progress, when one is set, what a long step is doing.
func (e *Env) Progressf(format string, a ...any) {
	if e.Progress != nil {
		e.Progress(fmt.Sprintf(format, a...))
	}
}

// captureTime is when the host was looked at (host.CapturedAt).
func (e *Env) captureTime() time.Time { return e.Host.CapturedAt(e.Now()) }

// logNow is the time the log's wall-clock records are aged against: the capture time when every
// such record carries a zone (RFC 3339 syslog stamps, journal times) and the capture is not
// before the newest of them, so that a log copied days after its last line does not count that
// line as recent; otherwise the newest line's own time, the one clock a zoneless syslog stamp
// ("Nov  3 14:02:11", local time) can be compared with.
func logNow(recs []kmsg.Record, capture time.Time) time.Time {
	latest := kmsg.Latest(recs)
	if latest.IsZero() || capture.IsZero() || capture.Before(latest) {
		return latest
	}
	for _, r := range recs {
		if !r.Wall.IsZero() && r.WallNoZone {
			return latest
		}
	}
	return capture
}
