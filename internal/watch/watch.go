// Package watch is `rdmadiag watch`: the ports' state polled from files held open, the error
// counters sampled and judged as rates with port.counters' rules, the kernel log followed and
// classified as it arrives, and the full check run periodically, all feeding one set of
// conditions per device and port (keyed by identity, with hysteresis) that is written as JSON
// lines, exposed to Prometheus and kept across restarts within one boot.
package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	portchk "github.com/rdmadiag/rdmadiag/checks/port"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/report"
)

// CheckResult is one finding of a full check as watch needs it.
type CheckResult struct {
	CheckID  string          `json:"check_id"`
	Device   string          `json:"device,omitempty"` // "" for a host-wide finding
	PCI      string          `json:"pci,omitempty"`
	Severity report.Severity `json:"severity"`
	Summary  string          `json:"summary"`
}

// Config is a watch's settings; cli fills it from flags.
type Config struct {
	// Root is the tree watched: "/" live, a directory laid out like a root otherwise.
	Root string
	// Kmsg is the kernel log followed ("" for none): /dev/kmsg live.
	Kmsg string
	// StateDir keeps the conditions across restarts ("" keeps nothing).
	StateDir string
	// Listen is the address of the HTTP endpoint (/metrics, /healthz, /status); "" for none.
	Listen string

	Poll, Rescan, Counters, Full, ReadTimeout, ProbeEvery time.Duration
	Rules                                                 Rules

	// FullCheck runs the checks of `rdmadiag check` (with the probes when probes is set); nil
	// runs none.
	FullCheck func(ctx context.Context, probes bool) ([]CheckResult, error)

	// Out receives the events, one JSON object a line.
	Out io.Writer
	// Notify sends a systemd notification (READY=1, WATCHDOG=1); nil sends none.
	Notify func(state string)
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Ready, when set, is closed once the endpoint listens and the first rescan is applied.
	Ready chan<- struct{}
	// Excluded, when set, says whether a device known by these names (device, PCI address,
	// netdevs) is left out, as `check --exclude` and the policy's devices.exclude leave it out:
	// it is not polled, and the kernel log's lines about it set nothing.
	Excluded func(names ...string) (by string, excluded bool)
	// ExpectUp, when set, says whether a port known by these names (device/port, device, PCI
	// address, netdev) must be up, as the policy's ports.expect_up says; nil expects none.
	ExpectUp func(names ...string) bool
}

// Watcher runs one watch.
type Watcher struct {
	cfg  Config
	now  func() time.Time
	root *os.Root // cfg.Root: every read of the tree is confined to it

	mu      sync.Mutex // guards what the HTTP handlers read, and the tracker
	tr      *Tracker
	devs    []device
	ports   []*polledPort
	files   []*heldFile
	owner   []int // index in ports of each file
	kdevs   []kevent.Device
	bootID  string
	started time.Time
	// Agent health.
	lastPoll    time.Time
	lastPollDur time.Duration
	stuckReads  int
	lastFull    time.Time
	fullErr     string
	kmsgErr     string
	rates       map[string]map[string]float64 // by port identity key, per counter, per second

	addr atomic.Value // string: the endpoint's address once it listens

	table   *kevent.Table
	enc     *json.Encoder
	metrics *metrics
	timer   *time.Timer
	cycle   uint64 // polls started
	dirty   bool
	saveErr string // the last state write's error, said once

	rescanCh  chan rescanResult
	rescanOn  bool
	rescanAt  time.Time
	lastScan  time.Time
	counterCh chan counterResult
	counterOn bool
	counterAt time.Time
	prevCount map[string]counterSample
	missing   map[string]int // walks in a row that did not find a device, by identity key
	excluded  map[string]bool
	fullCh    chan fullResult
	fullOn    bool
	lastProbe time.Time
	kmsgCh    chan kmsgBatch
	scanned   bool
}

// polledPort is one port with its held-open files.
type polledPort struct {
	p                          port
	state, phys, oper, carrier *heldFile
	known, up                  bool
}

// New checks cfg and returns a watcher.
func New(cfg Config) (*Watcher, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Out == nil {
		cfg.Out = io.Discard
	}
	if cfg.Rules == (Rules{}) {
		cfg.Rules = DefaultRules
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"poll", cfg.Poll}, {"rescan", cfg.Rescan}, {"counters", cfg.Counters}, {"full", cfg.Full}, {"read-timeout", cfg.ReadTimeout}} {
		if d.v <= 0 {
			return nil, fmt.Errorf("--%s %s: must be positive", d.name, d.v)
		}
	}
	t, err := kevent.Default()
	if err != nil {
		return nil, err
	}
	// Loading the table and building its matcher leave garbage several times the table's
	// live size; the pages go back now rather than stay resident for the months watch runs.
	t.Prepare()
	debug.FreeOSMemory()
	// The table files were read whole to load it: their pages of the binary go too.
	kevent.DropEmbeddedPages()
	root, err := os.OpenRoot(cfg.Root)
	if err != nil {
		return nil, err
	}
	w := &Watcher{cfg: cfg, now: cfg.Now, root: root, tr: NewTracker(cfg.Rules), table: t, enc: json.NewEncoder(cfg.Out),
		rates: map[string]map[string]float64{}, prevCount: map[string]counterSample{}, missing: map[string]int{}, excluded: map[string]bool{},
		rescanCh: make(chan rescanResult, 1), counterCh: make(chan counterResult, 1), fullCh: make(chan fullResult, 1),
		kmsgCh: make(chan kmsgBatch, 256)}
	w.metrics = newMetrics()
	return w, nil
}

// Addr is the address the endpoint listens on ("" before Run listens, or without --listen).
func (w *Watcher) Addr() string {
	s, _ := w.addr.Load().(string)
	return s
}

// Run watches until ctx ends, then stops within a second: reads still blocked are abandoned,
// the state is saved, the endpoint closed.
func (w *Watcher) Run(ctx context.Context) error {
	w.started = w.now()
	w.bootID = readSmall(w.root, bootIDFile)
	w.loadState()
	var srv *http.Server
	if w.cfg.Listen != "" {
		ln, err := net.Listen("tcp", w.cfg.Listen)
		if err != nil {
			return fmt.Errorf("--listen %s: %w", w.cfg.Listen, err)
		}
		w.addr.Store(ln.Addr().String())
		srv = &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
	}
	w.emit(ev(w.now(), "started", AgentIdentity, "", report.Info, fmt.Sprintf("watching %s: poll %s, counters %s, rescan %s, full check %s",
		w.cfg.Root, w.cfg.Poll, w.cfg.Counters, w.cfg.Rescan, w.cfg.Full)))
	if w.cfg.Kmsg != "" {
		go followKmsg(ctx, w.cfg.Kmsg, w.kmsgCh)
	}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	poll := time.NewTicker(w.cfg.Poll)
	rescan := time.NewTicker(w.cfg.Rescan)
	counters := time.NewTicker(w.cfg.Counters)
	full := time.NewTicker(w.cfg.Full)
	defer func() {
		poll.Stop()
		rescan.Stop()
		counters.Stop()
		full.Stop()
	}()
	w.startRescan()
	for {
		select {
		case <-ctx.Done():
			w.stop(srv)
			return nil
		case <-poll.C:
			w.pollOnce(ctx)
			if w.cfg.Notify != nil {
				w.cfg.Notify("WATCHDOG=1")
			}
		case <-rescan.C:
			w.startRescan()
		case r := <-w.rescanCh:
			w.applyRescan(ctx, r)
		case <-counters.C:
			w.startCounters()
		case r := <-w.counterCh:
			w.applyCounters(r)
		case <-full.C:
			w.startFull(ctx)
		case r := <-w.fullCh:
			w.applyFull(r)
		case b := <-w.kmsgCh:
			w.applyKmsg(b)
		}
		w.afterStep()
	}
}

func (w *Watcher) stop(srv *http.Server) {
	if w.cfg.Notify != nil {
		w.cfg.Notify("STOPPING=1")
	}
	w.mu.Lock()
	for _, f := range w.files {
		f.close()
	}
	w.files, w.owner = nil, nil
	w.mu.Unlock()
	w.emit(ev(w.now(), "stopped", AgentIdentity, "", report.Info, "stopping"))
	w.afterStep()
	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if srv.Shutdown(sctx) != nil {
			srv.Close()
		}
	}
}

// afterStep saves the state and refreshes the condition gauges when something changed.
func (w *Watcher) afterStep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.dirty {
		return
	}
	w.dirty = false
	w.metrics.conditions(w.tr.Active())
	if w.cfg.StateDir == "" {
		return
	}
	err := saveState(w.cfg.StateDir, w.tr.export(w.bootID, w.now()))
	switch {
	case err != nil && err.Error() != w.saveErr:
		// Said once per cause: an unwritable --state-dir (a user's watch without root) would
		// otherwise repeat it at every change.
		w.saveErr = err.Error()
		w.emitLocked(ev(w.now(), "state_not_saved", AgentIdentity, "", report.Warning, err.Error()+": conditions will not survive a restart"))
	case err == nil && w.saveErr != "":
		w.saveErr = ""
		w.emitLocked(ev(w.now(), "state_saved", AgentIdentity, "", report.Info, "the state is saved again"))
	}
	w.dirty = false
}

func (w *Watcher) loadState() {
	if w.cfg.StateDir == "" {
		return
	}
	s, err := loadState(w.cfg.StateDir)
	switch {
	case err != nil:
		w.emit(ev(w.now(), "state_ignored", AgentIdentity, "", report.Warning, err.Error()+": starting with no condition"))
	case s == nil:
	case s.BootID != w.bootID:
		w.emit(ev(w.now(), "state_discarded", AgentIdentity, "", report.Info,
			fmt.Sprintf("state of boot %s saved %s: a new boot starts with no condition", s.BootID, s.Saved.Format(time.RFC3339))))
	default:
		n := w.tr.restore(*s)
		w.emit(ev(w.now(), "state_restored", AgentIdentity, "", report.Info, fmt.Sprintf("%d active condition(s) restored from %s", n, s.Saved.Format(time.RFC3339))))
		w.dirty = true
	}
}

// emit writes events and counts them; the caller must not hold mu.
func (w *Watcher) emit(evs ...Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emitLocked(evs...)
}

func (w *Watcher) emitLocked(evs ...Event) {
	for _, e := range evs {
		w.enc.Encode(e)
		w.metrics.event(e)
		if e.Condition != "" && (e.Kind == EvSet || e.Kind == EvEscalated || e.Kind == EvCleared) {
			w.dirty = true
		}
	}
}

// pollOnce reads every held file once, each with the read deadline, and judges the ports.
func (w *Watcher) pollOnce(ctx context.Context) {
	start := w.now()
	w.mu.Lock()
	files := w.files
	w.mu.Unlock()
	for _, f := range files {
		if f.busy {
			select {
			case r := <-f.res:
				w.took(f, r, start)
			default:
				continue
			}
		}
		if f.every > 1 && (w.cycle+1)%f.every != 0 && (f.last != nil || f.lastErr != nil) && !f.due {
			continue
		}
		f.due = false
		f.req <- struct{}{}
		f.busy, f.busySince, f.cycle = true, start, w.cycle+1
	}
	w.cycle++
	w.timer.Reset(w.cfg.ReadTimeout)
	expired := false
	for _, f := range files {
		if !f.busy {
			continue
		}
		// Only this cycle's reads are waited for: one still stuck from an earlier cycle was
		// looked at above, and waiting for it again would spend every poll's deadline on it.
		if !expired && f.cycle == w.cycle {
			select {
			case r := <-f.res:
				w.took(f, r, start)
				continue
			case <-w.timer.C:
				expired = true
			case <-ctx.Done():
				expired = true
			}
		}
		select {
		case r := <-f.res:
			w.took(f, r, start)
		default:
		}
	}
	// Go 1.23 timers: Stop leaves no stale value for the next Reset to deliver.
	w.timer.Stop()
	end := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	var evs []Event
	stuck := 0
	rescan := false
	for i, f := range files {
		p := w.ports[w.owner[i]]
		if f.busy && end.Sub(f.busySince) >= w.cfg.ReadTimeout {
			stuck++
			if !f.stuck {
				f.stuck = true
				evs = append(evs, w.tr.Stuck(end, stuckID(f, p), fmt.Sprintf("read of %s has not returned in %s; abandoned, the other reads go on", f.rel, w.cfg.ReadTimeout))...)
			}
		}
		// Only the port's own files bring a walk at once: a netdev's may be missing for good (a
		// netdev in another namespace), and walking every poll for it would cost more than the
		// poll; a renamed netdev is found by the next --rescan.
		if f.lastErr != nil && vanished(f.lastErr) && (f == p.state || f == p.phys) {
			rescan = true
		}
	}
	for _, p := range w.ports {
		evs = append(evs, w.judgePort(end, p)...)
	}
	evs = append(evs, w.tr.Tick(end)...)
	w.emitLocked(evs...)
	w.stuckReads = stuck
	w.lastPoll, w.lastPollDur = end, end.Sub(start)
	w.metrics.polled(end, end.Sub(start), stuck)
	if rescan && !w.rescanOn && end.Sub(w.lastScan) >= w.cfg.Poll {
		w.mu.Unlock()
		w.startRescan()
		w.mu.Lock()
	}
}

func stuckID(f *heldFile, p *polledPort) Identity {
	return Identity{Key: AgentIdentity.Key + "/" + f.rel, Device: p.p.Device, Port: p.p.Num}
}

// took takes a file's read result: its content kept (copied, the buffer is the goroutine's
// again at the next request), whether it changed, its error. It holds mu: /status reads the
// contents.
func (w *Watcher) took(f *heldFile, r readResult, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f.busy = false
	if f.stuck {
		f.stuck = false
		for i, g := range w.files {
			if g == f {
				w.emitLocked(w.tr.Unstuck(at, stuckID(f, w.ports[w.owner[i]]), "the read of "+f.rel+" returned")...)
			}
		}
	}
	if r.err != nil {
		f.missed++
		f.lastErr = r.err
		return
	}
	f.missed, f.lastErr = 0, nil
	c := f.content(r)
	if !bytes.Equal(c, f.last) {
		f.last = append(f.last[:0], c...)
	}
}

// judgePort decides whether a port is up from its files' last readings; nothing is judged
// while one of them is unread (stuck, failing), and nothing allocated while nothing changed.
func (w *Watcher) judgePort(at time.Time, p *polledPort) []Event {
	var missed int
	var why error
	for _, f := range []*heldFile{p.state, p.phys} {
		if f.busy || f.last == nil && f.lastErr == nil {
			return nil
		}
		if f.lastErr != nil {
			if vanished(f.lastErr) {
				return nil // the rescan settles it
			}
			missed, why = max(missed, f.missed), f.lastErr
		}
	}
	if why != nil {
		return w.tr.PollFailed(at, p.p.ID, missed, why.Error())
	}
	evs := w.tr.Readable(at, p.p.ID)
	portUp := stateNum(p.state.last) == 4 && stateNum(p.phys.last) == 5
	netUp := true
	if p.oper != nil && !p.oper.busy && p.oper.lastErr == nil && p.oper.last != nil {
		netUp = string(p.oper.last) == "up"
	}
	if p.carrier != nil && !p.carrier.busy {
		// carrier_show says EINVAL while the netdev is not running (net/core/net-sysfs.c).
		if errors.Is(p.carrier.lastErr, syscall.EINVAL) {
			netUp = false
		} else if p.carrier.lastErr == nil && p.carrier.last != nil {
			netUp = netUp && string(p.carrier.last) == "1"
		}
	}
	up := portUp && netUp
	if netUp && !portUp && p.state.every > 1 {
		// A port read rarely whose netdev is back: read it at the next poll, not in softEvery.
		p.state.due, p.phys.due = true, true
	}
	if p.known && up == p.up {
		return evs
	}
	p.known, p.up = true, up
	w.metrics.portUp(p.p, up)
	return append(evs, w.tr.PortState(at, p.p.ID, up, w.expected(p.p), p.detail())...)
}

func (p *polledPort) detail() string {
	s := fmt.Sprintf("%s/%d state %s, phys_state %s", p.p.Device, p.p.Num, p.state.last, p.phys.last)
	if p.oper != nil {
		s += fmt.Sprintf(", %s operstate %s", p.p.Netdev, p.oper.last)
	}
	if p.carrier != nil {
		c := string(p.carrier.last)
		if p.carrier.lastErr != nil {
			c = "unreadable (" + p.carrier.lastErr.Error() + ")"
		}
		s += ", carrier " + c
	}
	return s
}

type rescanResult struct {
	devs []device
	err  error
}

func (w *Watcher) startRescan() {
	if w.rescanOn {
		if w.now().Sub(w.rescanAt) >= w.cfg.ReadTimeout {
			w.emit(w.tr.Stuck(w.now(), Identity{Key: AgentIdentity.Key + "/rescan"}, fmt.Sprintf("the walk of /%s has not returned in %s", classDir, w.cfg.ReadTimeout))...)
		}
		return
	}
	w.rescanOn, w.rescanAt = true, w.now()
	go func() {
		d, err := discover(w.root)
		w.rescanCh <- rescanResult{devs: d, err: err}
	}()
}

// applyRescan compares the devices found with the ones held: a device or port gone or back, a
// rename (same identity, new name) are events; the files of new or moved ports are opened.
func (w *Watcher) applyRescan(ctx context.Context, r rescanResult) {
	at := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rescanOn, w.lastScan = false, at
	w.emitLocked(w.tr.Unstuck(at, Identity{Key: AgentIdentity.Key + "/rescan"}, "the walk returned")...)
	if r.err != nil {
		w.emitLocked(ev(at, "rescan_failed", AgentIdentity, "", report.Warning, r.err.Error()))
		return
	}
	r.devs = w.selected(r.devs)
	// A device the walk no longer finds is gone only after Rules.MissedPolls walks in a row
	// (NVSentinel's deviceMissThreshold): until then it is kept, and its files, which fail
	// while it is away, bring the next walk at the poll's pace.
	found := map[string]bool{}
	for _, d := range r.devs {
		found[d.ID.Key] = true
		delete(w.missing, d.ID.Key)
	}
	for _, d := range w.devs {
		if found[d.ID.Key] {
			continue
		}
		w.missing[d.ID.Key]++
		if w.missing[d.ID.Key] < w.cfg.Rules.MissedPolls {
			r.devs = append(r.devs, d)
		} else {
			delete(w.missing, d.ID.Key)
		}
	}
	old := map[string]device{}
	for _, d := range w.devs {
		old[d.ID.Key] = d
	}
	oldPorts := map[string]*polledPort{}
	for _, p := range w.ports {
		oldPorts[p.p.ID.Key] = p
	}
	firstScan := !w.scanned
	w.scanned = true
	var evs []Event
	seen := map[string]bool{}
	var ports []*polledPort
	for _, d := range r.devs {
		seen[d.ID.Key] = true
		o, had := old[d.ID.Key]
		switch {
		case !had && !firstScan:
			evs = append(evs, ev(at, "device_added", d.ID, "", report.Info, fmt.Sprintf("%s (%s) registered", d.Name, d.ID.Key)))
		case had && o.Name != d.Name:
			evs = append(evs, ev(at, "renamed", d.ID, "", report.Info, fmt.Sprintf("%s is now %s", o.Name, d.Name)))
			w.tr.Rename(d.ID.Key, d.Name)
		}
		evs = append(evs, w.tr.Back(at, d.ID)...)
		for _, np := range d.Ports {
			seen[np.ID.Key] = true
			evs = append(evs, w.tr.Back(at, np.ID)...)
			if op, ok := oldPorts[np.ID.Key]; ok && op.p.Dir == np.Dir && op.p.Netdev == np.Netdev {
				op.p = np
				ports = append(ports, op)
				delete(oldPorts, np.ID.Key)
				continue
			}
			ports = append(ports, w.openPort(np, d.PCI == ""))
		}
	}
	for _, d := range w.devs {
		if !seen[d.ID.Key] {
			evs = append(evs, ev(at, "device_removed", d.ID, "", report.Critical, d.Name+" is no longer registered"))
			evs = append(evs, w.tr.Gone(at, d.ID, d.Name+" is no longer registered in /"+classDir)...)
		}
		for _, p := range d.Ports {
			if !seen[p.ID.Key] && seen[d.ID.Key] {
				evs = append(evs, w.tr.Gone(at, p.ID, fmt.Sprintf("port %d of %s is no longer registered", p.Num, d.Name))...)
			}
		}
	}
	for _, p := range oldPorts {
		for _, f := range p.files() {
			if f.stuck {
				// Its goroutine is abandoned with the file: the condition goes with it.
				evs = append(evs, w.tr.Unstuck(at, stuckID(f, p), f.rel+" is no longer watched")...)
			}
			f.close()
		}
	}
	w.devs, w.ports = r.devs, ports
	w.files, w.owner = w.files[:0:0], w.owner[:0:0]
	for i, p := range ports {
		for _, f := range p.files() {
			w.files = append(w.files, f)
			w.owner = append(w.owner, i)
		}
	}
	w.kdevs = w.kdevs[:0:0]
	for _, d := range r.devs {
		kd := kevent.Device{Name: d.Name, PCI: d.PCI, Netdevs: map[string]int{}}
		for _, p := range d.Ports {
			if p.Netdev != "" {
				kd.Netdevs[p.Netdev] = p.Num
			}
		}
		w.kdevs = append(w.kdevs, kd)
	}
	held := map[string]bool{}
	for _, p := range ports {
		held[p.p.ID.Key] = true
	}
	for k := range w.prevCount {
		if !held[k] {
			delete(w.prevCount, k)
			delete(w.rates, k)
		}
	}
	w.metrics.devices(w.ports)
	w.emitLocked(evs...)
	if firstScan {
		if w.cfg.Ready != nil {
			close(w.cfg.Ready)
		}
		if w.cfg.Notify != nil {
			w.cfg.Notify("READY=1")
		}
		w.mu.Unlock()
		w.startFull(ctx)
		w.mu.Lock()
	}
}

// selected leaves out the devices the selection excludes, saying so once per device.
func (w *Watcher) selected(devs []device) []device {
	if w.cfg.Excluded == nil {
		return devs
	}
	kept := devs[:0:0]
	for _, d := range devs {
		names := []string{d.Name, d.PCI}
		for _, p := range d.Ports {
			names = append(names, p.Netdev)
		}
		by, ex := w.cfg.Excluded(names...)
		if !ex {
			kept = append(kept, d)
			continue
		}
		if !w.excluded[d.ID.Key] {
			w.excluded[d.ID.Key] = true
			w.emitLocked(ev(w.now(), "excluded", d.ID, "", report.Info, d.Name+" is not watched: excluded by "+by))
		}
	}
	return kept
}

// expected says whether the policy holds the port to being up.
func (w *Watcher) expected(p port) bool {
	if w.cfg.ExpectUp == nil {
		return false
	}
	names := []string{fmt.Sprintf("%s/%d", p.Device, p.Num), p.Device}
	for _, d := range w.devs {
		if d.Name == p.Device && d.PCI != "" {
			names = append(names, d.PCI)
		}
	}
	if p.Netdev != "" {
		names = append(names, p.Netdev)
	}
	return w.cfg.ExpectUp(names...)
}

func (p *polledPort) files() []*heldFile {
	var out []*heldFile
	for _, f := range []*heldFile{p.state, p.phys, p.oper, p.carrier} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// softEvery is how many polls apart a software device's port files are read. Reading
// ports/N/state or phys_state runs the driver's query_port; rdma_rxe's asks its netdev's
// speed each time (ib_get_eth_speed in drivers/infiniband/core/verbs.c), which on a netdev
// without link settings (virtio_net) logs "speed is unknown, defaulting to 1000" per read: at
// a 1 s poll the watch would fill the kernel log and spend itself on reading it back. Such a
// port's state follows its netdev (rxe_port_up/rxe_port_down on the netdev's events), whose
// operstate and carrier are read every poll, so a link going down is still seen at once.
const softEvery = 30

func (w *Watcher) openPort(p port, software bool) *polledPort {
	pp := &polledPort{p: p, state: newHeldFile(w.root, path.Join(p.Dir, "state")),
		phys: newHeldFile(w.root, path.Join(p.Dir, "phys_state"))}
	if p.Netdev != "" {
		nd := path.Join("sys/class/net", p.Netdev)
		pp.oper = newHeldFile(w.root, path.Join(nd, "operstate"))
		pp.carrier = newHeldFile(w.root, path.Join(nd, "carrier"))
		if software {
			pp.state.every, pp.phys.every = softEvery, softEvery
		}
	}
	return pp
}

// identityOf finds the identity of what a kernel log event or a finding is about.
func (w *Watcher) identityOf(name, pci, netdev string, portNum int) Identity {
	for _, d := range w.devs {
		if (name != "" && d.Name == name) || (pci != "" && d.PCI == pci) || (netdev != "" && hasNetdev(d, netdev)) {
			if portNum > 0 {
				for _, p := range d.Ports {
					if p.Num == portNum {
						return p.ID
					}
				}
			}
			return d.ID
		}
	}
	if pci != "" {
		return Identity{Key: deviceKey(pci, "", "")}
	}
	return HostIdentity
}

func hasNetdev(d device, nd string) bool {
	for _, p := range d.Ports {
		if p.Netdev == nd {
			return true
		}
	}
	return false
}

func (w *Watcher) applyKmsg(b kmsgBatch) {
	at := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case b.err != nil:
		w.kmsgErr = b.err.Error()
		w.emitLocked(ev(at, "kernel_log_unavailable", AgentIdentity, "", report.Warning, b.err.Error()+": the kernel log is not followed"))
		return
	case b.missed:
		w.emitLocked(ev(at, "kernel_log_overrun", AgentIdentity, "", report.Warning, "the kernel overwrote records before they were read"))
		return
	}
	w.metrics.kmsgRecords.Add(float64(len(b.recs)))
	for _, e := range w.table.Classify(b.recs, w.kdevs) {
		sev := report.Warning
		what := "unrecognised error of a known driver"
		kind := ""
		if e.Sig != nil {
			sev, what, kind = e.Sig.Sev, e.Sig.What, e.Sig.Kind
			if e.Sig.Benign {
				sev = report.Info
			}
		}
		if w.cfg.Excluded != nil {
			if _, ex := w.cfg.Excluded(e.Device, e.PCI, e.Netdev); ex {
				continue
			}
		}
		id := w.identityOf(e.Device, e.PCI, e.Netdev, 0)
		msg := what + ": " + clip(e.Record.Text, 300)
		w.emitLocked(ev(at, "kernel_log", id, "", sev, msg))
		// A link line is what the poll sees itself; an unrecognised line is shown, not judged.
		if e.Sig != nil && kind != kevent.KindLink {
			w.emitLocked(w.tr.KernelLog(at, id, sev, msg)...)
		}
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

type fullResult struct {
	res    []CheckResult
	err    error
	took   time.Duration
	probes bool
}

func (w *Watcher) startFull(ctx context.Context) {
	if w.cfg.FullCheck == nil || w.fullOn {
		return
	}
	probes := w.cfg.ProbeEvery > 0 && (w.lastProbe.IsZero() || w.now().Sub(w.lastProbe) >= w.cfg.ProbeEvery)
	w.fullOn = true
	go func() {
		start := time.Now()
		res, err := w.cfg.FullCheck(ctx, probes)
		// A full check leaves garbage (its findings decoded; the whole check's, when it ran in
		// this process); the heap watch keeps between checks is a few MB. Giving the pages
		// back now keeps the resident size of a process that runs for months at what it uses
		// (docs/watch.md, "Cost").
		debug.FreeOSMemory()
		select {
		case w.fullCh <- fullResult{res: res, err: err, took: time.Since(start), probes: probes}:
		case <-ctx.Done():
		}
	}()
}

// applyFull turns a full check into verdicts per device (the gravest finding on it) and one
// for the host; a device with no problem finding was judged healthy.
func (w *Watcher) applyFull(r fullResult) {
	at := w.now()
	w.fullOn = false
	if r.probes {
		w.lastProbe = at
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastFull = at
	w.metrics.fullCheck(at, r.took)
	if r.err != nil {
		w.fullErr = r.err.Error()
		w.emitLocked(ev(at, "full_check_failed", AgentIdentity, "", report.Warning, r.err.Error()))
		return
	}
	w.fullErr = ""
	verdict := map[string]*Judged{}
	var order []string
	judge := func(id Identity, sev report.Severity, msg string) {
		j, ok := verdict[id.Key]
		if !ok {
			j = &Judged{ID: id, Severity: report.OK, Message: "healthy"}
			verdict[id.Key] = j
			order = append(order, id.Key)
		}
		if sev > j.Severity { // the report's order of gravity: unknown below warning
			j.Severity, j.Message = sev, msg
		}
	}
	judge(HostIdentity, report.OK, "healthy")
	for _, d := range w.devs {
		judge(d.ID, report.OK, "healthy")
	}
	for _, f := range r.res {
		id := HostIdentity
		if f.Device != "" || f.PCI != "" {
			id = w.identityOf(f.Device, f.PCI, "", 0)
		}
		judge(id, f.Severity, f.CheckID+": "+f.Summary)
	}
	sort.Strings(order)
	var judged []Judged
	for _, k := range order {
		judged = append(judged, *verdict[k])
	}
	evs := []Event{ev(at, "full_check", HostIdentity, "", report.Info, fmt.Sprintf("%d finding(s) in %s", len(r.res), r.took.Round(time.Millisecond)))}
	w.emitLocked(append(evs, w.tr.FullCheck(at, judged)...)...)
}

// counterSample is one reading of a port's counters.
type counterSample struct {
	at   time.Time
	vals []uint64
	has  []bool
}

type counterResult struct {
	at      time.Time
	samples map[string]counterSample
	ports   map[string]port
}

func (w *Watcher) startCounters() {
	if w.counterOn {
		if w.now().Sub(w.counterAt) >= w.cfg.ReadTimeout {
			w.emit(w.tr.Stuck(w.now(), Identity{Key: AgentIdentity.Key + "/counters"}, fmt.Sprintf("the counter sample started %s ago has not returned", w.now().Sub(w.counterAt).Round(time.Second)))...)
		}
		return
	}
	w.mu.Lock()
	ports := make([]port, len(w.ports))
	for i, p := range w.ports {
		ports[i] = p.p
	}
	w.mu.Unlock()
	w.counterOn, w.counterAt = true, w.now()
	files := portchk.CounterFiles()
	go func() {
		res := counterResult{samples: map[string]counterSample{}, ports: map[string]port{}}
		for _, p := range ports {
			s := counterSample{vals: make([]uint64, len(files)), has: make([]bool, len(files))}
			// Each counter directory is opened once and listed: an os.Root walks every component
			// of a path it opens (an openat per directory), and the table names every vendor's
			// counters, most of which a port does not have.
			dirs := map[string]*os.Root{}
			present := map[string]map[string]bool{}
			for i, c := range files {
				r, ok := dirs[c.Dir]
				if !ok {
					r, _ = w.root.OpenRoot(path.Join(p.Dir, c.Dir))
					dirs[c.Dir], present[c.Dir] = r, listNames(r)
				}
				if r == nil || !present[c.Dir][c.Name] {
					continue
				}
				b, err := r.ReadFile(c.Name)
				if err != nil {
					continue
				}
				if v, err := portchk.ParseCounter(strings.TrimSpace(string(b))); err == nil {
					s.vals[i], s.has[i] = v, true
				}
			}
			for _, r := range dirs {
				if r != nil {
					r.Close()
				}
			}
			s.at = w.now()
			res.samples[p.ID.Key], res.ports[p.ID.Key] = s, p
		}
		res.at = w.now()
		w.counterCh <- res
	}()
}

// listNames is the entries of a root's top directory, nil when it cannot be listed.
func listNames(r *os.Root) map[string]bool {
	if r == nil {
		return nil
	}
	f, err := r.Open(".")
	if err != nil {
		return nil
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil
	}
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// applyCounters judges each port's growth since its previous sample with port.counters' rules.
func (w *Watcher) applyCounters(r counterResult) {
	w.counterOn = false
	files := portchk.CounterFiles()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.emitLocked(w.tr.Unstuck(r.at, Identity{Key: AgentIdentity.Key + "/counters"}, "the counter sample returned")...)
	var evs []Event
	for key, s := range r.samples {
		prev, ok := w.prevCount[key]
		w.prevCount[key] = s
		if !ok {
			continue
		}
		iv := s.at.Sub(prev.at)
		if iv <= 0 {
			continue
		}
		p := r.ports[key]
		worst := report.OK
		var alarms []string
		rates := map[string]float64{}
		for i, c := range files {
			if !s.has[i] || !prev.has[i] {
				continue
			}
			inc, sev, why, ok := portchk.CounterGrowth(i, prev.vals[i], s.vals[i], iv)
			if !ok {
				continue
			}
			rates[c.Dir+"/"+c.Name] = float64(inc) / iv.Seconds()
			if sev >= report.Warning && sev != report.Unknown {
				alarms = append(alarms, fmt.Sprintf("%s +%d in %s (%s)", c.Name, inc, iv.Round(time.Millisecond), why))
				if sev > worst {
					worst = sev
				}
			}
		}
		w.rates[key] = rates
		w.metrics.counterRates(p, rates)
		msg := ""
		if len(alarms) > 0 {
			msg = fmt.Sprintf("%s/%d: %s", p.Device, p.Num, strings.Join(alarms, "; "))
			evs = append(evs, ev(r.at, "counters", p.ID, "", worst, msg))
		}
		evs = append(evs, w.tr.Counters(r.at, p.ID, worst, msg)...)
	}
	w.emitLocked(evs...)
}
