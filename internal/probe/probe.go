// Package probe runs verbs loopback probes against one RDMA device port:
// open and query the device (Device), create a QP at the device's reported
// limits (Limits), connect an RC QP to itself and move data (Loopback),
// fill and optionally overrun a CQ (CQ), and measure RDMA WRITE bandwidth and
// latency between two connected QPs (Bandwidth).
//
// Every probe opens its own device context, creates only its own resources
// and destroys them in reverse order on every path (failure, deadline,
// cancellation); each is bounded by a deadline.
package probe

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// ErrNoLibrary: libibverbs.so.1 could not be loaded (errors.Is on Result.Err).
var ErrNoLibrary = verbs.ErrNoLibrary

// ErrNoDevice: the kernel exposes no RDMA device, or not the one asked for.
var ErrNoDevice = verbs.ErrNoDevice

// ErrPortNotActive: the port is not ACTIVE, so no traffic probe runs on it.
var ErrPortNotActive = errors.New("port is not ACTIVE")

// ErrInjected is the error a probe reports at Options.FailAt.
var ErrInjected = errors.New("injected failure")

// Status is the outcome of a probe.
type Status string

// Outcomes.
const (
	Pass    Status = "pass"
	Fail    Status = "fail"
	Skipped Status = "skipped"
)

// Stage names a step of a probe. A Result's Stage is the last stage
// entered: the failing one on failure, StageDone on success.
type Stage string

// Stages, in the order the probes pass through them.
const (
	StageOpen        Stage = "open_device"
	StageQueryDevice Stage = "query_device"
	StageQueryPort   Stage = "query_port"
	StageQueryGID    Stage = "query_gid"
	StageAllocPD     Stage = "alloc_pd"
	StageRegMR       Stage = "reg_mr"
	StageCreateCQ    Stage = "create_cq"
	StageCreateQP    Stage = "create_qp"
	StageInit        Stage = "modify_qp_init"
	StageRTR         Stage = "modify_qp_rtr"
	StageRTS         Stage = "modify_qp_rts"
	StagePostRecv    Stage = "post_recv"
	StagePostSend    Stage = "post_send"
	StagePoll        Stage = "poll_cq"
	StageVerify      Stage = "verify"
	StageOverrun     Stage = "cq_overrun"
	StageBandwidth   Stage = "bandwidth"
	StageLatency     Stage = "latency"
	StageDone        Stage = "done"
)

// Options tune the probes; the zero value is usable.
type Options struct {
	// Timeout bounds each probe (default 5s); an earlier ctx deadline wins.
	Timeout time.Duration
	// SysfsRoot is where sysfs is mounted (default "/sys"); fw_ver and GID
	// types are read from it for comparison with the verbs view.
	SysfsRoot string
	// FailAt makes the probe fail with ErrInjected when it enters this stage.
	FailAt Stage
	// Hook, when set, is called on entering every stage; a non-nil error
	// fails the probe there. Tests use it to cancel or stall at a stage.
	Hook func(ctx context.Context, s Stage) error
	// CQDepth is N for the CQ probe (default 64).
	CQDepth int
	// MsgSize, TxDepth and Iters shape the bandwidth run (defaults 65536
	// bytes, 128 outstanding, 1000 writes); the run stops early when half the
	// remaining deadline is spent.
	MsgSize int
	TxDepth int
	Iters   int
	// CQMod signals one write in CQMod during the bandwidth run (default 1:
	// every write, as ib_write_bw does for messages above 8 KiB, where
	// perftest turns its CQ moderation off; at most TxDepth/2).
	CQMod int
	// LatSize and LatIters shape the latency run (defaults 64 bytes, 1000).
	LatSize  int
	LatIters int
	// Memory bounds the queue memory the limits probes sharing it hold at once (nil: no
	// bound); a QP larger than the whole pool is not tried. A QP at a software device's limits
	// (rxe: 1,048,576 work requests of 32 SGEs) needs gigabytes, which a health check must not
	// take from the node's jobs.
	Memory *MemoryPool
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Second
}

func (o Options) sysfs() string {
	if o.SysfsRoot != "" {
		return o.SysfsRoot
	}
	return "/sys"
}

func orDefault(v, d int) int {
	if v > 0 {
		return v
	}
	return d
}

// Result is what every probe reports.
type Result struct {
	Probe   string        `json:"probe"` // driver, firmware, qp, cq, pcie
	Device  string        `json:"device"`
	Port    int           `json:"port"`
	Status  Status        `json:"status"`
	Stage   Stage         `json:"stage"`
	Verb    string        `json:"verb,omitempty"`  // failing verb, e.g. "ibv_modify_qp(RTR)"
	Errno   string        `json:"errno,omitempty"` // its errno name, e.g. "EINVAL"
	Error   string        `json:"error,omitempty"`
	Remedy  string        `json:"remedy,omitempty"` // for skipped probes and known failures
	Elapsed time.Duration `json:"elapsed_ns"`
	// Attrs is the device and port as verbs sees them, when queried.
	Attrs *Attributes `json:"attributes,omitempty"`
	// Cleanup lists errors from destroying the probe's resources.
	Cleanup []string `json:"cleanup_errors,omitempty"`
	// Err is the underlying error: errors.Is(Err, ErrNoDevice), syscall.EINVAL, ...
	Err error `json:"-"`
}

// remedied is an error that carries an operator action.
type remedied interface{ Remedy() string }

// errStop is returned by session steps after the failure is recorded.
var errStop = errors.New("probe stopped")

// session is one probe run: an open context, the resources created on it,
// and the result being filled.
type session struct {
	ctx     context.Context
	o       Options
	res     *Result
	lib     *verbs.Lib
	vc      *verbs.Context
	tr      tracker
	port    uint8
	dattr   verbs.DeviceAttr
	pattr   verbs.PortAttr
	gid     *GIDChoice
	started time.Time
}

// begin validates the arguments, opens the device and queries device and
// port. On false the result is already final and nothing is left open.
func begin(ctx context.Context, lib *verbs.Lib, name string, dev string, port int, o Options, res *Result) (*session, context.CancelFunc, bool) {
	*res = Result{Probe: name, Device: dev, Port: port}
	s := &session{o: o, res: res, lib: lib, started: time.Now()}
	s.ctx, s.tr.cancel = context.WithTimeout(ctx, o.timeout())
	if lib == nil {
		s.skip(StageOpen, fmt.Errorf("%w: no library handle (verbs.Load failed)", ErrNoLibrary))
		s.finish()
		return nil, nil, false
	}
	if port < 1 || port > 255 {
		s.failErr(StageOpen, fmt.Errorf("port %d out of range 1..255", port))
		s.finish()
		return nil, nil, false
	}
	s.port = uint8(port)
	if s.step(StageOpen, func() error {
		vc, err := lib.OpenDevice(dev)
		if err != nil {
			return err
		}
		s.vc = vc
		s.tr.push("ibv_close_device", vc.Close)
		return nil
	}) != nil {
		s.finish()
		return nil, nil, false
	}
	if s.queryAttrs() != nil {
		s.finish()
		return nil, nil, false
	}
	return s, s.finish, true
}

// step enters a stage: it checks the deadline, runs the test hooks, then fn.
// A failure is recorded in the result and errStop returned.
func (s *session) step(st Stage, fn func() error) error {
	s.res.Stage = st
	if err := s.ctx.Err(); err != nil {
		return s.failErr(st, fmt.Errorf("%s: %w", st, context.Cause(s.ctx)))
	}
	if s.o.Hook != nil {
		if err := s.o.Hook(s.ctx, st); err != nil {
			return s.failErr(st, err)
		}
	}
	if s.o.FailAt == st {
		return s.failErr(st, fmt.Errorf("%s: %w", st, ErrInjected))
	}
	if err := fn(); err != nil {
		if err == errStop { // a nested step already recorded the failure
			return err
		}
		if errors.Is(err, ErrNoDevice) || errors.Is(err, ErrNoLibrary) || errors.Is(err, ErrPortNotActive) {
			return s.skip(st, err)
		}
		return s.failErr(st, err)
	}
	return nil
}

// failErr records a failure at st.
func (s *session) failErr(st Stage, err error) error {
	s.res.Status = Fail
	s.res.Stage = st
	s.res.Err = err
	s.res.Error = err.Error()
	var ve *verbs.Error
	if errors.As(err, &ve) {
		s.res.Verb = ve.Verb
		if ve.Errno != 0 {
			s.res.Errno = verbs.ErrnoName(ve.Errno)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.res.Errno = ""
	}
	var r remedied
	if errors.As(err, &r) {
		s.res.Remedy = r.Remedy()
	}
	if s.res.Remedy == "" && errors.Is(err, syscall.ENOMEM) && s.res.Verb == "ibv_reg_mr" {
		s.res.Remedy = "raise RLIMIT_MEMLOCK (ulimit -l unlimited) or grant CAP_IPC_LOCK"
	}
	return errStop
}

// skip records that the probe could not run here.
func (s *session) skip(st Stage, err error) error {
	s.failErr(st, err)
	s.res.Status = Skipped
	if s.res.Remedy == "" {
		switch {
		case errors.Is(err, ErrNoLibrary):
			s.res.Remedy = "install rdma-core's libibverbs (Debian/Ubuntu: apt install libibverbs1 ibverbs-providers)"
		case errors.Is(err, ErrPortNotActive):
			s.res.Remedy = "bring the port up (cable, subnet manager on InfiniBand, netdev link on RoCE) and re-run"
		}
	}
	return errStop
}

// finish destroys everything the probe created and completes the result.
// It is safe to call more than once.
func (s *session) finish() {
	for _, err := range s.tr.release() {
		s.res.Cleanup = append(s.res.Cleanup, err.Error())
	}
	if s.res.Status == "" {
		s.res.Status = Pass
		s.res.Stage = StageDone
	}
	if len(s.res.Cleanup) > 0 && s.res.Status == Pass {
		s.res.Status = Fail
		s.res.Error = "cleanup failed: " + s.res.Cleanup[0]
	}
	s.res.Elapsed = time.Since(s.started)
}

// requireActive skips traffic probes on ports that are not ACTIVE.
func (s *session) requireActive() error {
	if s.pattr.State == verbs.PortActive {
		return nil
	}
	return s.skip(StageQueryPort, fmt.Errorf("%s port %d is %s: %w", s.res.Device, s.port, verbs.PortStateName(s.pattr.State), ErrPortNotActive))
}

// interrupted reports why a busy-polling loop must stop. Loops call it by
// elapsed time (checkEvery), not by iteration count: on rxe a post_send
// runs the transfer inside the kernel, so a loop can take seconds for a few
// hundred iterations (a count-based check let a cancelled bandwidth run go on
// for 43 s in the lab). It yields so that timers and other goroutines run,
// and compares the deadline with the clock as well as the context.
func (s *session) interrupted() error {
	runtime.Gosched()
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if d, ok := s.ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// expired is interrupted without the yield, for loops that must keep their
// thread (Bandwidth): cancellation still arrives, from another P or through
// sysmon handing this P off while the loop is inside a verb.
func (s *session) expired() error {
	if err := s.ctx.Err(); err != nil {
		return context.Cause(s.ctx)
	}
	if d, ok := s.ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// tracker destroys resources in reverse creation order.
type tracker struct {
	items  []trackItem
	cancel context.CancelFunc
}

type trackItem struct {
	what    string
	destroy func() error
}

func (t *tracker) push(what string, destroy func() error) {
	t.items = append(t.items, trackItem{what, destroy})
}

func (t *tracker) release() []error {
	var errs []error
	for i := len(t.items) - 1; i >= 0; i-- {
		if err := t.items[i].destroy(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.items[i].what, err))
		}
	}
	t.items = nil
	if t.cancel != nil {
		t.cancel()
		t.cancel = nil
	}
	return errs
}
