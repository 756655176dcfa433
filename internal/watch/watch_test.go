package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

const (
	fixture = "../../fixtures/sysfs/port-flaps/snapshot.txtar"
	// mlx5_0 port 1 is up in the fixture, mlx5_1 port 1 down (its netdev set down).
	mlx5_0State = "sys/devices/pci0000:00/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/state"
	mlx5_1State = "sys/devices/pci0000:00/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_1/ports/1/state"
	mlx5_0Port  = "pci-0000:3b:00.0/1"
	mlx5_1Port  = "pci-0000:5e:00.0/1"
)

// tree unpacks the fixture into a temporary root with a boot id.
func tree(t testing.TB, bootID string) string {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(fixture, dir); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	setBoot(t, root, bootID)
	return root
}

func setBoot(t testing.TB, root, id string) {
	t.Helper()
	p := filepath.Join(root, bootIDFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(id+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// events collects the JSON lines a watcher writes and lets a test wait for one.
type events struct {
	mu   sync.Mutex
	all  []Event
	cond *sync.Cond
}

func newEvents() (*events, io.Writer) {
	e := &events{}
	e.cond = sync.NewCond(&e.mu)
	r, w := io.Pipe()
	go func() {
		s := bufio.NewScanner(r)
		for s.Scan() {
			var ev Event
			if err := json.Unmarshal(s.Bytes(), &ev); err != nil {
				panic("not a JSON event: " + s.Text())
			}
			e.mu.Lock()
			e.all = append(e.all, ev)
			e.cond.Broadcast()
			e.mu.Unlock()
		}
	}()
	return e, w
}

// snapshot is a copy of the events so far: the collector must never be held while the watcher
// is asked anything (its emit would wait for the collector, holding the watcher's lock).
func (e *events) snapshot() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.all...)
}

// wait returns the first event matching ok within d.
func (e *events) wait(t *testing.T, d time.Duration, what string, ok func(Event) bool) Event {
	t.Helper()
	deadline := time.Now().Add(d)
	timer := time.AfterFunc(d, func() { e.mu.Lock(); e.cond.Broadcast(); e.mu.Unlock() })
	defer timer.Stop()
	e.mu.Lock()
	defer e.mu.Unlock()
	for {
		for _, ev := range e.all {
			if ok(ev) {
				return ev
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, ev := range e.all {
				seen = append(seen, ev.Kind+" "+string(ev.Condition)+" "+ev.Identity+": "+ev.Message)
			}
			t.Fatalf("no %s within %s; events:\n%s", what, d, strings.Join(seen, "\n"))
		}
		e.cond.Wait()
	}
}

func is(kind string, c Kind, id string) func(Event) bool {
	return func(e Event) bool { return e.Kind == kind && e.Condition == c && (id == "" || e.Identity == id) }
}

type running struct {
	w      *Watcher
	ev     *events
	cancel context.CancelFunc
	done   chan struct{}
}

func start(t *testing.T, cfg Config) *running {
	t.Helper()
	ev, out := newEvents()
	if cfg.Poll == 0 {
		cfg.Poll = 50 * time.Millisecond
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = 200 * time.Millisecond
	}
	if cfg.Counters == 0 {
		cfg.Counters = time.Hour
	}
	if cfg.Full == 0 {
		cfg.Full = time.Hour
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 200 * time.Millisecond
	}
	cfg.Out = out
	ready := make(chan struct{})
	cfg.Ready = ready
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{w: w, ev: ev, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		if err := w.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(r.stop)
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("watch not ready in 5 s")
	}
	return r
}

func (r *running) stop() {
	r.cancel()
	<-r.done
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// expectAll is a policy whose ports.expect_up is ["*"].
func expectAll(...string) bool { return true }

// A port down from the first reading that nothing expects up (a second port cabled nowhere) is
// an observation, not a condition; the policy's ports.expect_up names ports that must be up, as
// check's port.state takes it; a port seen up that goes down is a condition either way.
func TestWatchUnusedPort(t *testing.T) {
	root := tree(t, "b1")
	var asked []string
	expect := func(names ...string) bool {
		asked = append(asked, names...)
		return false
	}
	r := start(t, Config{Root: root, ExpectUp: expect})
	e := r.ev.wait(t, 2*time.Second, "mlx5_1 observed down", func(e Event) bool { return e.Kind == "port_state" && e.Identity == mlx5_1Port })
	if !strings.Contains(e.Message, "not expected up") || e.Severity != report.Info {
		t.Errorf("observation %+v", e)
	}
	time.Sleep(200 * time.Millisecond)
	if _, ok := r.w.tr.Has(mlx5_1Port, CondPortDown); ok {
		t.Error("an unused port is a condition")
	}
	r.w.mu.Lock()
	got := strings.Join(asked, " ")
	r.w.mu.Unlock()
	if !strings.Contains(got, "mlx5_1/1") || !strings.Contains(got, "0000:5e:00.0") {
		t.Errorf("expect_up asked about %q, want the port, its device, PCI address and netdev", got)
	}
	write(t, filepath.Join(root, mlx5_0State), "1: DOWN\n")
	r.ev.wait(t, 2*time.Second, "mlx5_0 down after up", is(EvSet, CondPortDown, mlx5_0Port))
	r.stop()
}

// Flipping a port's state file is an event and a condition within 2 s; flipping it back
// starts the clear-after wait, and the condition clears once it is over.
func TestWatchTreePortFlip(t *testing.T) {
	root := tree(t, "b1")
	rules := DefaultRules
	rules.ClearAfter = 300 * time.Millisecond
	r := start(t, Config{Root: root, Rules: rules, ExpectUp: expectAll})
	// The fixture's down port, held by the policy to being up, is a condition from the first poll.
	r.ev.wait(t, 2*time.Second, "mlx5_1 down at the start", is(EvSet, CondPortDown, mlx5_1Port))
	write(t, filepath.Join(root, mlx5_0State), "1: DOWN\n")
	e := r.ev.wait(t, 2*time.Second, "mlx5_0 port_down", is(EvSet, CondPortDown, mlx5_0Port))
	if e.Severity != report.Critical || e.Device != "mlx5_0" || e.Port != 1 {
		t.Errorf("event %+v: want critical on mlx5_0 port 1", e)
	}
	r.ev.wait(t, time.Second, "port_state down", func(e Event) bool {
		return e.Kind == "port_state" && e.Identity == mlx5_0Port && strings.Contains(e.Message, "1: DOWN")
	})
	write(t, filepath.Join(root, mlx5_0State), "4: ACTIVE\n")
	r.ev.wait(t, 2*time.Second, "port_down cleared", is(EvCleared, CondPortDown, mlx5_0Port))

	// The status document and the metrics say the same.
	srv := httptest.NewServer(r.w.Handler())
	defer srv.Close()
	var st Status
	getJSON(t, srv.URL+"/status", &st)
	if !st.Healthy || len(st.Devices) != 2 {
		t.Fatalf("status %+v", st)
	}
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			want := p.Identity == mlx5_0Port
			if p.Up == nil || *p.Up != want {
				t.Errorf("%s up %v, want %v", p.Identity, p.Up, want)
			}
		}
	}
	fams := scrape(t, srv.URL+"/metrics")
	found := false
	for _, m := range fams["rdmadiag_watch_condition"].GetMetric() {
		l := labels(m.GetLabel())
		if l["identity"] == mlx5_1Port && l["condition"] == "port_down" && l["severity"] == "warning" && m.GetGauge().GetValue() == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("no rdmadiag_watch_condition for %s port_down", mlx5_1Port)
	}
	for _, name := range []string{"rdmadiag_watch_port_up", "rdmadiag_watch_events_total", "rdmadiag_watch_last_poll_timestamp_seconds",
		"rdmadiag_watch_poll_duration_seconds", "rdmadiag_watch_stuck_reads"} {
		if fams[name] == nil {
			t.Errorf("metric %s not exposed", name)
		}
	}
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
}

// A read that blocks (a FIFO where a state file was, as a wedged driver read) is an agent
// health condition, and the other ports are still polled.
func TestWatchWedgedReadOthersContinue(t *testing.T) {
	root := tree(t, "b1")
	p := filepath.Join(root, mlx5_1State)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	r := start(t, Config{Root: root})
	e := r.ev.wait(t, 2*time.Second, "stuck_read", is(EvSet, CondStuckRead, ""))
	if !strings.Contains(e.Identity, "mlx5_1/ports/1/state") || e.Device != "mlx5_1" {
		t.Errorf("stuck read %+v: want mlx5_1's state file", e)
	}
	write(t, filepath.Join(root, mlx5_0State), "1: DOWN\n")
	r.ev.wait(t, 2*time.Second, "mlx5_0 port_down while mlx5_1 is stuck", is(EvSet, CondPortDown, mlx5_0Port))
	if ok, why := r.w.Healthy(); !ok {
		t.Errorf("unhealthy with one stuck read: %s", why)
	}
	if st := r.w.StatusDoc(); st.StuckReads != 1 {
		t.Errorf("status stuck_reads %d, want 1", st.StuckReads)
	}
}

// A restart in the same boot keeps the active conditions; a new boot starts clean; a corrupt
// state file is reported and ignored.
func TestWatchRestartAndBoot(t *testing.T) {
	root := tree(t, "boot-1")
	state := t.TempDir()
	r := start(t, Config{Root: root, StateDir: state, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "port_down", is(EvSet, CondPortDown, mlx5_1Port))
	r.stop()

	r = start(t, Config{Root: root, StateDir: state, ExpectUp: expectAll})
	e := r.ev.wait(t, 2*time.Second, "state_restored", func(e Event) bool { return e.Kind == "state_restored" })
	if !strings.HasPrefix(e.Message, "1 active") {
		t.Errorf("restored: %s", e.Message)
	}
	time.Sleep(200 * time.Millisecond)
	if _, ok := r.w.tr.Has(mlx5_1Port, CondPortDown); !ok {
		t.Error("port_down not kept across the restart")
	}
	for _, e := range r.ev.snapshot() {
		if e.Kind == EvSet && e.Condition == CondPortDown {
			t.Errorf("the restored condition was set again: %+v", e)
		}
	}
	r.stop()

	setBoot(t, root, "boot-2")
	r = start(t, Config{Root: root, StateDir: state, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "state_discarded", func(e Event) bool { return e.Kind == "state_discarded" })
	r.ev.wait(t, 2*time.Second, "port_down set anew", is(EvSet, CondPortDown, mlx5_1Port))
	r.stop()

	write(t, filepath.Join(state, StateFile), `{"format": "rdmadiag-watch-state/1", "conditions": [`)
	r = start(t, Config{Root: root, StateDir: state, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "state_ignored", func(e Event) bool { return e.Kind == "state_ignored" && e.Severity == report.Warning })
	r.ev.wait(t, 2*time.Second, "port_down set anew", is(EvSet, CondPortDown, mlx5_1Port))
}

// A renamed device keeps its conditions (same PCI function), and a device that is no longer
// registered is gone until it is back.
func TestWatchRenameAndRemoval(t *testing.T) {
	root := tree(t, "b1")
	r := start(t, Config{Root: root, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "port_down", is(EvSet, CondPortDown, mlx5_1Port))
	class := filepath.Join(root, classDir)
	if err := os.Rename(filepath.Join(class, "mlx5_1"), filepath.Join(class, "mlx5_bond_1")); err != nil {
		t.Fatal(err)
	}
	e := r.ev.wait(t, 2*time.Second, "renamed", func(e Event) bool { return e.Kind == "renamed" })
	if e.Identity != "pci-0000:5e:00.0" || e.Device != "mlx5_bond_1" {
		t.Errorf("renamed %+v", e)
	}
	time.Sleep(200 * time.Millisecond)
	for _, c := range r.w.StatusDoc().Devices {
		if c.Device == "mlx5_bond_1" && (len(c.Ports) != 1 || len(c.Ports[0].Conditions) != 1 || c.Ports[0].Conditions[0].Kind != CondPortDown) {
			t.Errorf("renamed device lost its port condition: %+v", c)
		}
	}
	if err := os.Remove(filepath.Join(class, "mlx5_0")); err != nil {
		t.Fatal(err)
	}
	r.ev.wait(t, 2*time.Second, "gone", is(EvSet, CondGone, "pci-0000:3b:00.0"))
	target := "../../devices/pci0000:00/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0"
	if err := os.Symlink(target, filepath.Join(class, "mlx5_0")); err != nil {
		t.Fatal(err)
	}
	r.ev.wait(t, 2*time.Second, "back", is(EvCleared, CondGone, "pci-0000:3b:00.0"))
}

// A kernel log line is classified as it arrives; a fault sets kernel_log on its device, which
// a healthy full check clears.
func TestWatchKernelLogFollowed(t *testing.T) {
	root := tree(t, "b1")
	klog := filepath.Join(t.TempDir(), "kmsg")
	write(t, klog, "")
	healthy := make(chan bool, 1)
	full := func(ctx context.Context, _ bool) ([]CheckResult, error) {
		select {
		case <-healthy:
			return nil, nil
		default:
			return []CheckResult{{CheckID: "port.state", Device: "mlx5_1", Severity: report.Critical, Summary: "down"}}, nil
		}
	}
	r := start(t, Config{Root: root, Kmsg: klog, FullCheck: full, Full: 300 * time.Millisecond})
	f, err := os.OpenFile(klog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("3,1012,6000000000,-;mlx5_core 0000:3b:00.0: poll_health:800:(pid 0): Fatal error 1 detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n")
	e := r.ev.wait(t, 2*time.Second, "kernel_log condition", is(EvSet, CondKernelLog, "pci-0000:3b:00.0"))
	if e.Severity != report.Critical || e.Device != "mlx5_0" {
		t.Errorf("kernel log condition %+v", e)
	}
	r.ev.wait(t, 2*time.Second, "full_check on mlx5_1", is(EvSet, CondFullCheck, "pci-0000:5e:00.0"))
	healthy <- true
	r.ev.wait(t, 2*time.Second, "kernel_log cleared by a healthy full check", is(EvCleared, CondKernelLog, "pci-0000:3b:00.0"))
}

// Counters are judged as rates with port.counters' rules: link_downed growing is critical.
func TestWatchCounterRates(t *testing.T) {
	root := tree(t, "b1")
	r := start(t, Config{Root: root, Counters: 150 * time.Millisecond})
	dir := filepath.Join(root, filepath.Dir(mlx5_0State), "counters")
	if _, err := os.Stat(dir); err != nil {
		t.Skip("fixture has no PMA counters:", err)
	}
	time.Sleep(400 * time.Millisecond)
	write(t, filepath.Join(dir, "link_downed"), "7\n")
	e := r.ev.wait(t, 2*time.Second, "counters condition", is(EvSet, CondCounters, mlx5_0Port))
	if e.Severity != report.Critical || !strings.Contains(e.Message, "link_downed") {
		t.Errorf("counters %+v", e)
	}
	st := r.w.StatusDoc()
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.Identity == mlx5_0Port && p.Rates["counters/link_downed"] < 0 {
				t.Errorf("rates %v", p.Rates)
			}
		}
	}
}

// The watcher stops within a second of its context's end, a stuck read included.
func TestWatchStopsPromptly(t *testing.T) {
	root := tree(t, "b1")
	p := filepath.Join(root, mlx5_1State)
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	t.Cleanup(func() {
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
	})
	r := start(t, Config{Root: root, Listen: "127.0.0.1:0"})
	r.ev.wait(t, 2*time.Second, "stuck_read", is(EvSet, CondStuckRead, ""))
	began := time.Now()
	r.stop()
	if d := time.Since(began); d > time.Second {
		t.Fatalf("stopped in %s", d)
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the exposition: %v", err)
	}
	return fams
}

func labels(ls []*dto.LabelPair) map[string]string {
	m := map[string]string{}
	for _, l := range ls {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

// /status and /metrics read what the poll writes: scraping them while ports flip is race-free
// (go test -race).
func TestWatchStatusWhilePolling(t *testing.T) {
	root := tree(t, "b1")
	r := start(t, Config{Root: root, Poll: 5 * time.Millisecond})
	srv := httptest.NewServer(r.w.Handler())
	defer srv.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 40; i++ {
			state := "1: DOWN\n"
			if i%2 == 1 {
				state = "4: ACTIVE\n"
			}
			os.WriteFile(filepath.Join(root, mlx5_0State), []byte(state), 0o644)
			time.Sleep(7 * time.Millisecond)
		}
	}()
	for {
		select {
		case <-done:
			r.ev.wait(t, 2*time.Second, "a flap from the flips", is(EvSet, CondPortFlap, mlx5_0Port))
			return
		default:
		}
		var st Status
		getJSON(t, srv.URL+"/status", &st)
		scrape(t, srv.URL+"/metrics")
	}
}

// A device the selection excludes is not watched, and the kernel log's lines about it set
// nothing; the event says why once.
func TestWatchExcludedDevice(t *testing.T) {
	root := tree(t, "b1")
	klog := filepath.Join(t.TempDir(), "kmsg")
	write(t, klog, "")
	excluded := func(names ...string) (string, bool) {
		for _, n := range names {
			if n == "0000:5e:00.0" {
				return `--exclude "0000:5e:00.0"`, true
			}
		}
		return "", false
	}
	r := start(t, Config{Root: root, Kmsg: klog, Excluded: excluded})
	e := r.ev.wait(t, 2*time.Second, "excluded", func(e Event) bool { return e.Kind == "excluded" })
	if e.Identity != "pci-0000:5e:00.0" {
		t.Errorf("excluded %+v", e)
	}
	f, err := os.OpenFile(klog, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("3,1,6000000000,-;mlx5_core 0000:5e:00.0: poll_health:800:(pid 0): Fatal error 1 detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:5e:00.0\n")
	f.WriteString("3,2,6000000001,-;mlx5_core 0000:3b:00.0: poll_health:800:(pid 0): Fatal error 1 detected\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n")
	r.ev.wait(t, 2*time.Second, "the watched device's fault", is(EvSet, CondKernelLog, "pci-0000:3b:00.0"))
	for _, e := range r.ev.snapshot() {
		if strings.HasPrefix(e.Identity, "pci-0000:5e:00.0") && e.Kind != "excluded" {
			t.Errorf("event about the excluded device: %+v", e)
		}
	}
	if len(r.w.StatusDoc().Devices) != 1 {
		t.Errorf("status lists the excluded device")
	}
}
