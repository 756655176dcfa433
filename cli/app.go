package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all" // registers every layer's checks
	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/live"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"github.com/rdmadiag/rdmadiag/report/render"
)

// App is the CLI with its dependencies injected, so tests run it in-process with a fixed clock.
type App struct {
	Version    string
	Now        func() time.Time
	Stdout     io.Writer
	Stderr     io.Writer
	IsTerminal bool // stdout is a terminal: colours, and the terminal's width for the table

	// TermWidth is the number of columns of the terminal stdout is (0 when unknown).
	TermWidth func() int
	// StderrIsTerminal says that stderr is a terminal: only then is progress shown there.
	StderrIsTerminal bool
	// StderrWidth is the number of columns of the terminal stderr is (0 when unknown).
	StderrWidth func() int
	// Getenv reads the environment (COLUMNS, NO_COLOR, the locale); nil means os.Getenv.
	Getenv func(string) string
	// Registry defaults to checks.Default.
	Registry *checks.Registry
	// Golden drops run-dependent values (start time, temporary paths) for golden files.
	Golden bool
	// OpenHost replaces opening --snapshot, --root or the live host (ctx is the run's); tests use
	// it to run the live code paths on a prepared tree, and to judge a fixture unpacked once.
	OpenHost func(ctx context.Context, src source) (*host.Host, func(), error)
	// PluginDir is where a live run finds site plugins without --plugins; "" means
	// plugins.DefaultDir. Environ is the environment whose RDMADIAG_* variables reach them; nil
	// means os.Environ.
	PluginDir string
	Environ   func() []string
	// Commit and BuildDate identify the build (`rdmadiag version`, the report's tool); "" when
	// unknown.
	Commit, BuildDate string
	// Self is this process's command line (os.Args): watch runs each full check as a child
	// of the same binary with these arguments (watchchild.go). Nil runs it in-process.
	Self []string

	// judged, when set, is given every report `check` builds, before it is rendered, and its
	// findings as the engine linked them (with the events they were drawn from), for tests.
	judged func(*report.Report, []engine.Finding)

	// jsonErrors is set once the command's format is known to be json: a fatal error then prints
	// a JSON error document on stdout too.
	jsonErrors bool

	// interruptExit is the exit code of an interrupted run, set once the format is known (the
	// one-line formats' protocols have no code for "interrupted"); 0 means ExitInterrupted.
	interruptExit atomic.Int32

	// termExitsZero makes SIGTERM a clean stop (exit 0) rather than an interruption: watch is
	// stopped that way by its service manager.
	termExitsZero atomic.Bool
}

// interruptedCode is the exit code when a signal ended the run.
func (a *App) interruptedCode() int {
	if c := a.interruptExit.Load(); c != 0 {
		return int(c)
	}
	return report.ExitInterrupted
}

// openHost opens the run's host. ctx is the run's (its deadline and the first signal): a
// snapshot's unpack ends with it, even in a read that blocks (a pipe), and an interrupted one is
// the run's interruption, never a snapshot judged half read.
func (a *App) openHost(ctx context.Context, src source) (*host.Host, func(), error) {
	open := src.open
	if a.OpenHost != nil {
		open = func(ctx context.Context) (*host.Host, func(), error) { return a.OpenHost(ctx, src) }
	}
	h, cleanup, err := open(ctx)
	if err != nil && errors.Is(err, snapshot.ErrUnpackStopped) {
		what := "interrupted"
		code := a.interruptedCode()
		if cause := context.Cause(ctx); !errors.As(cause, new(*interrupted)) {
			what, code = cause.Error(), report.ExitUnknown
		}
		return nil, nil, &exitError{code: code, err: fmt.Errorf("%s while reading the snapshot %s: nothing was judged", what, src.snapshot)}
	}
	return h, cleanup, err
}

const exitCodesHelp = `Exit codes:
  0   healthy: every check passed
  1   warnings: something needs attention, nothing is broken
  2   critical: at least one finding makes the host unfit for RDMA traffic
  3   could not check: a check could not run (unreadable snapshot, missing permission,
      garbled file) and nothing critical was found; the host is not known to be healthy
  64  usage error (unknown flag, format, layer or check, invalid option file)
  130 interrupted (Ctrl-C, SIGTERM, SIGHUP); probes have cleaned up what they created

A check that a limit kept from judging (no root, a tree without a kernel log, --no-probe) is
"skipped" with the way to lift it and does not make the verdict unknown; --strict counts such
skips as unknown. A run in which nothing was judged exits 3.`

// Execute runs the command line and returns the exit code.
func (a *App) Execute(ctx context.Context, args []string) int {
	if a.Registry == nil {
		a.Registry = checks.Default
	}
	root := a.rootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var code *exitCode
	if errors.As(err, &code) {
		return code.code
	}
	fmt.Fprintf(a.Stderr, "rdmadiag: %v\n", err)
	c := codeOf(err)
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		c = report.ExitUsage
	}
	if a.jsonErrors {
		render.RenderError(a.Stdout, report.Tool{Name: "rdmadiag", Version: a.Version, Commit: a.Commit}, err, c)
	}
	return c
}

// rootCmd builds the command tree; the manual page and the shell completions are generated
// from it.
func (a *App) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "rdmadiag",
		Short:         "Diagnose the RDMA NICs of a Linux host, layer by layer",
		Long:          "rdmadiag walks the RDMA stack bottom-up (PCIe, firmware, driver and modules, ports, QPs, CQs),\nlinks causes to consequences and says which layer is at fault, with the evidence and the fix.\n\n" + exitCodesHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       a.Version,
	}
	root.SetOut(a.Stdout)
	root.SetErr(a.Stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A flag after --format json that does not parse is still an error for a program that
		// asked for JSON.
		if f := c.Flags().Lookup("format"); f != nil && f.Value.String() == "json" {
			a.jsonErrors = true
		}
		return usageErr("%v", err)
	})
	root.AddCommand(a.checkCmd(), a.watchCmd(), a.recordCmd(), a.listCmd(), a.demoCmd())
	root.AddCommand(a.fleetCmd(), a.inventoryCmd())
	root.AddCommand(a.versionCmd(), a.manCmd(), a.probeCmd())
	return root
}

// exitCode ends a successful command with a non-zero code (the report was printed).
type exitCode struct{ code int }

func (e *exitCode) Error() string { return fmt.Sprintf("exit %d", e.code) }

// source names where the host comes from: live, --snapshot or --root.
type source struct {
	snapshot string
	root     string
}

func (s *source) flags(c *cobra.Command) {
	c.Flags().StringVar(&s.snapshot, "snapshot", "", "analyse a snapshot: a .tar.gz file (rdmadiag record), a .txtar text archive (the fixtures' form) or an unpacked directory, instead of this host")
	c.Flags().StringVar(&s.root, "root", "", "analyse a plain directory laid out like a root (sys/, proc/, dev/, ...)")
}

// open returns the host and a cleanup function; a snapshot's unpack ends with ctx.
func (s *source) open(ctx context.Context) (*host.Host, func(), error) {
	switch {
	case s.snapshot != "" && s.root != "":
		return nil, nil, usageErr("--snapshot and --root exclude each other")
	case s.snapshot != "":
		h, cleanup, err := snapshot.OpenContext(ctx, s.snapshot)
		if err != nil {
			return nil, nil, &exitError{code: report.ExitUnknown, err: err}
		}
		return h, cleanup, nil
	case s.root != "":
		h, err := snapshot.OpenRoot(s.root)
		if err != nil {
			return nil, nil, &exitError{code: report.ExitUnknown, err: err}
		}
		return h, func() {}, nil
	}
	var nl host.NetlinkConn
	var conn *nldev.SocketConn
	err := errIBCoreAbsent
	if live.IBCorePresent("/") {
		conn, err = nldev.Dial()
	}
	if err != nil {
		// The kernel refuses the socket when it has no RDMA support (EPROTONOSUPPORT); the QP and
		// CQ checks report the reason instead of the tool failing.
		nl = failedConn{err: err} // already says which socket and why
	} else {
		nl = conn
	}
	var dl host.NetlinkConn
	dconn, err := devlink.Dial()
	if err != nil {
		dl = failedConn{err: err}
	} else {
		dl = dconn
	}
	// The ethtool socket opens on the first ethtool question (ethtoolnl.LazyConn).
	econn := ethtoolnl.NewLazyConn()
	// The DCB socket (NETLINK_ROUTE) likewise, on the first DCB question.
	dcbconn := dcbnl.NewLazyConn()
	closeAll := func() {
		econn.Close()
		dcbconn.Close()
		if conn != nil {
			conn.Close()
		}
		if dconn != nil {
			dconn.Close()
		}
	}
	h, err := live.Live(nl, dl, econn, dcbconn)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return h, closeAll, nil
}

// errIBCoreAbsent keeps the RDMA netlink socket closed on a host without ib_core: creating it
// would make the kernel load ib_core (MODULE_ALIAS_NET_PF_PROTO(PF_NETLINK, NETLINK_RDMA) in
// drivers/infiniband/core/netlink.c), and rdmadiag never changes the host it judges.
var errIBCoreAbsent = fmt.Errorf("nldev: NETLINK_RDMA socket not opened: ib_core is not loaded, and opening the socket would load it: %w", syscall.EPROTONOSUPPORT)

// failedConn answers every request with the error that prevented opening the socket.
type failedConn struct{ err error }

func (f failedConn) Exchange(host.Request) ([]byte, error) { return nil, f.err }

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
