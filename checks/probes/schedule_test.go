package probes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func targets(spec ...string) []target {
	devs := map[string]*inventory.Device{}
	var ts []target
	for i := range spec {
		d := devs[spec[i]]
		if d == nil {
			d = &inventory.Device{Name: spec[i]}
			devs[spec[i]] = d
		}
		d.Ports = append(d.Ports, &inventory.Port{Num: len(d.Ports) + 1})
		ts = append(ts, target{d, len(d.Ports)})
	}
	return ts
}

func finding(t target) engine.Finding {
	return engine.Finding{Finding: report.Finding{Subject: t.subject(), Severity: report.OK}}
}

// guard bounds a test that would otherwise hang on a scheduling bug; it is never what a test
// asserts on.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func names(fs []engine.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Subject.Name)
	}
	return out
}

func TestScheduleDevicesRunConcurrently(t *testing.T) {
	wait := guard(t)
	bStarted := make(chan struct{})
	var locks deviceLocks
	// a's probe returns only once b's has started: it can finish only if the two overlap.
	fs, err := schedule(context.Background(), &locks, nil, targets("a", "b"), func(ctx context.Context, tg target) engine.Finding {
		switch tg.dev.Name {
		case "a":
			select {
			case <-bStarted:
			case <-wait.Done():
				t.Error("a's probe never saw b's start: devices are probed one after the other")
			}
		case "b":
			close(bStarted)
		}
		return finding(tg)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(fs); len(got) != 2 || got[0] != "a/1" || got[1] != "b/1" {
		t.Errorf("findings %v, want [a/1 b/1] in target order", got)
	}
}

func TestScheduleSerialisesOneDevice(t *testing.T) {
	wait := guard(t)
	var locks deviceLocks
	release := make(chan struct{})
	firstOnA := make(chan struct{})
	bDone := make(chan struct{})
	var mu sync.Mutex
	inflight, maxInflight := map[string]int{}, map[string]int{}
	secondOnAStarted := false
	enter := func(dev string) {
		mu.Lock()
		inflight[dev]++
		maxInflight[dev] = max(maxInflight[dev], inflight[dev])
		mu.Unlock()
	}
	leave := func(dev string) {
		mu.Lock()
		inflight[dev]--
		mu.Unlock()
	}
	// Two probe checks of one run: the first holds device a until released; the second probes
	// a and b. b must proceed while a waits.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		_, err := schedule(context.Background(), &locks, nil, targets("a", "a"), func(ctx context.Context, tg target) engine.Finding {
			enter("a")
			defer leave("a")
			if tg.port == 1 {
				close(firstOnA)
				select {
				case <-release:
				case <-wait.Done():
					t.Error("never released")
				}
			}
			return finding(tg)
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-firstOnA
	go func() {
		defer wg.Done()
		_, err := schedule(context.Background(), &locks, nil, targets("a", "b"), func(ctx context.Context, tg target) engine.Finding {
			enter(tg.dev.Name)
			defer leave(tg.dev.Name)
			if tg.dev.Name == "a" {
				mu.Lock()
				secondOnAStarted = true
				mu.Unlock()
			} else {
				close(bDone)
			}
			return finding(tg)
		})
		if err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-bDone:
	case <-wait.Done():
		t.Fatal("b was not probed while a was busy")
	}
	mu.Lock()
	if secondOnAStarted {
		t.Error("a second probe started on device a while the first still ran")
	}
	mu.Unlock()
	close(release)
	wg.Wait()
	if maxInflight["a"] != 1 || maxInflight["b"] != 1 {
		t.Errorf("most probes at once per device: %v, want 1 each", maxInflight)
	}
	if !secondOnAStarted {
		t.Error("the second check never probed a")
	}
}

func TestScheduleStopsAtTheRunsEnd(t *testing.T) {
	wait := guard(t)
	var locks deviceLocks
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	type res struct {
		fs  []engine.Finding
		err error
	}
	first := make(chan res, 1)
	go func() {
		// Port 1 of a runs until the run ends (as a probe does at its deadline); port 2 must then
		// not start.
		fs, err := schedule(ctx, &locks, nil, targets("a", "a"), func(pctx context.Context, tg target) engine.Finding {
			mu.Lock()
			calls++
			mu.Unlock()
			close(started)
			select {
			case <-pctx.Done():
			case <-wait.Done():
				t.Error("the probe never saw the run end")
			}
			return finding(tg)
		})
		first <- res{fs, err}
	}()
	<-started
	second := make(chan res, 1)
	go func() {
		// Another check waits for device a's lock; the run's end must release it unprobed.
		fs, err := schedule(ctx, &locks, nil, targets("a"), func(context.Context, target) engine.Finding {
			t.Error("a probe started after the run ended")
			return engine.Finding{}
		})
		second <- res{fs, err}
	}()
	cancel()
	for i, ch := range []chan res{first, second} {
		select {
		case r := <-ch:
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("check %d: error %v, want the run's end", i+1, r.err)
			}
			if want := 1 - i; len(r.fs) != want {
				t.Errorf("check %d: %d findings, want %d (only the probe that had started)", i+1, len(r.fs), want)
			}
		case <-wait.Done():
			t.Fatalf("check %d did not return at the run's end", i+1)
		}
	}
	if calls != 1 {
		t.Errorf("%d probes ran, want 1", calls)
	}
	// A run that has already ended starts nothing.
	fs, err := schedule(ctx, &locks, nil, targets("b", "c"), func(context.Context, target) engine.Finding {
		t.Error("probe started after the end")
		return engine.Finding{}
	})
	if len(fs) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("after the end: %d findings, error %v", len(fs), err)
	}
}

// hwDev is a hardware device at bdf below the bridges path (nearest first, root port last).
func hwDev(name, bdf string, path ...string) *inventory.Device {
	return &inventory.Device{Name: name, PCI: &inventory.PCIFunction{BDF: bdf, Path: path},
		Ports: []*inventory.Port{{Num: 1}}}
}

func swDev(name string) *inventory.Device {
	return &inventory.Device{Name: name, Parent: "eth0", Ports: []*inventory.Port{{Num: 1}}}
}

func TestDMAPathDisturbs(t *testing.T) {
	const root1, root2 = "0000:00:01.0", "0000:80:01.0"
	// A switch below root1 (upstream port 0000:01:00.0) with two downstream ports.
	const up, down1, down2 = "0000:01:00.0", "0000:02:00.0", "0000:02:04.0"
	vf := hwDev("mlx5_2", "0000:03:00.2", down1, up, root1)
	vf.PCI.PF = "0000:03:00.0"
	for _, c := range []struct {
		name string
		a, b *inventory.Device
		want bool
	}{
		{"two functions of one dual-port card: one link", hwDev("mlx5_0", "0000:03:00.0", down1, up, root1), hwDev("mlx5_1", "0000:03:00.1", down1, up, root1), true},
		{"a VF and its PF", hwDev("mlx5_0", "0000:03:00.0", down1, up, root1), vf, true},
		{"two cards below one switch: its uplink", hwDev("mlx5_0", "0000:03:00.0", down1, up, root1), hwDev("mlx5_4", "0000:04:00.0", down2, up, root1), true},
		{"two cards on different root ports", hwDev("mlx5_0", "0000:03:00.0", down1, up, root1), hwDev("mlx5_8", "0000:81:00.0", root2), false},
		{"two endpoints on a root bus, no bridge", hwDev("mlx5_0", "0000:00:03.0"), hwDev("mlx5_1", "0000:00:04.0"), false},
		{"two functions on a root bus", hwDev("mlx5_0", "0000:00:03.0"), hwDev("mlx5_1", "0000:00:03.1"), true},
		{"two software devices: the CPU, shared by design", swDev("rxe0"), swDev("rxe1"), false},
		{"software beside hardware", swDev("rxe0"), hwDev("mlx5_8", "0000:81:00.0", root2), true},
	} {
		a, b := pathOf(c.a), pathOf(c.b)
		if got := a.disturbs(b); got != c.want {
			t.Errorf("%s: disturbs = %v, want %v (paths %v, %v)", c.name, got, c.want, a, b)
		}
		if got := b.disturbs(a); got != c.want {
			t.Errorf("%s, the other way round: disturbs = %v, want %v", c.name, got, c.want)
		}
	}
}

// tracker records which probes run at once.
type tracker struct {
	mu      sync.Mutex
	running map[string]int // probes in flight per device
	seen    map[string]bool
	// overlaps are the pairs of devices that were in flight at the same time ("a+b", sorted).
	overlaps map[string]bool
	perDev   int // most probes in flight on one device
	changed  chan struct{}
}

func newTracker() *tracker {
	return &tracker{running: map[string]int{}, seen: map[string]bool{}, overlaps: map[string]bool{}, changed: make(chan struct{})}
}

func (k *tracker) enter(dev string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for o, n := range k.running {
		if n > 0 && o != dev {
			k.overlaps[pair(o, dev)] = true
		}
	}
	k.running[dev]++
	k.perDev = max(k.perDev, k.running[dev])
	k.seen[dev] = true
	close(k.changed)
	k.changed = make(chan struct{})
}

func (k *tracker) leave(dev string) {
	k.mu.Lock()
	k.running[dev]--
	k.mu.Unlock()
}

// waitSeen returns once every device in devs has started a probe, or false at ctx's end.
func (k *tracker) waitSeen(ctx context.Context, devs ...string) bool {
	for {
		k.mu.Lock()
		all := true
		for _, d := range devs {
			all = all && k.seen[d]
		}
		ch := k.changed
		k.mu.Unlock()
		if all {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

func pair(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + "+" + b
}

func devTargets(devs ...*inventory.Device) []target {
	var ts []target
	for _, d := range devs {
		ts = append(ts, target{d, 1})
	}
	return ts
}

// The bandwidth probes of one run, as runBandwidth schedules them, with fake probes: two cards
// below one switch (a, b) share its uplink and never overlap; a card on another root port (c)
// overlaps with them; software devices (s1, s2) overlap with each other and with no hardware
// device's probe. A light probe check (as the limits probe) runs at the same time on every
// device, and no device ever has two probes in flight.
func TestBandwidthScheduleByPath(t *testing.T) {
	wait := guard(t)
	const root1, root2, up = "0000:00:01.0", "0000:80:01.0", "0000:01:00.0"
	a := hwDev("a", "0000:03:00.0", "0000:02:00.0", up, root1)
	b := hwDev("b", "0000:04:00.0", "0000:02:04.0", up, root1)
	c := hwDev("c", "0000:81:00.0", root2)
	s1, s2 := swDev("s1"), swDev("s2")
	ts := devTargets(a, b, c, s1, s2)
	var locks deviceLocks
	var gate bwGate
	k := newTracker()
	bw := newTracker() // bandwidth probes only
	// Each probe holds on until it has seen the probes it must overlap with, so that the
	// overlaps asserted below are not left to timing.
	mustSee := map[string][]string{"a": {"c"}, "b": {"c"}, "c": {"a", "b"}, "s1": {"s2"}, "s2": {"s1"}}
	besides := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		fs, err := schedule(wait, &locks, nil, ts, func(ctx context.Context, tg target) engine.Finding {
			beside, ok := gate.run(ctx, tg.dev, func(context.Context) {
				k.enter(tg.dev.Name)
				bw.enter(tg.dev.Name)
				if !bw.waitSeen(wait, mustSee[tg.dev.Name]...) {
					t.Errorf("%s's bandwidth probe never ran beside %v", tg.dev.Name, mustSee[tg.dev.Name])
				}
				bw.leave(tg.dev.Name)
				k.leave(tg.dev.Name)
			})
			if !ok {
				t.Errorf("%s: not admitted", tg.dev.Name)
			}
			mu.Lock()
			besides[tg.dev.Name] = beside
			mu.Unlock()
			return finding(tg)
		})
		if err != nil || len(fs) != len(ts) {
			t.Errorf("bandwidth: %d findings, error %v", len(fs), err)
		}
	}()
	go func() {
		defer wg.Done()
		fs, err := schedule(wait, &locks, nil, ts, func(ctx context.Context, tg target) engine.Finding {
			k.enter(tg.dev.Name)
			time.Sleep(time.Millisecond)
			k.leave(tg.dev.Name)
			return finding(tg)
		})
		if err != nil || len(fs) != len(ts) {
			t.Errorf("light probes: %d findings, error %v", len(fs), err)
		}
	}()
	wg.Wait()
	for p, want := range map[string]bool{
		"a+b": false, "a+c": true, "b+c": true, "s1+s2": true,
		"a+s1": false, "a+s2": false, "b+s1": false, "b+s2": false, "c+s1": false, "c+s2": false,
	} {
		if got := bw.overlaps[p]; got != want {
			t.Errorf("bandwidth probes %s overlapped: %v, want %v", p, got, want)
		}
	}
	if k.perDev != 1 {
		t.Errorf("most probes in flight on one device: %d, want 1", k.perDev)
	}
	// The count each finding reports: c ran beside a and b (one after the other), s1 beside s2.
	for dev, want := range map[string]int{"c": 2, "s1": 1, "s2": 1} {
		if besides[dev] != want {
			t.Errorf("%s ran beside %d others, want %d", dev, besides[dev], want)
		}
	}
}

// A bandwidth probe waiting for a path that another holds is not started when the run ends,
// and leaves nothing held.
func TestBandwidthGateStopsAtTheRunsEnd(t *testing.T) {
	wait := guard(t)
	var gate bwGate
	ctx, cancel := context.WithCancel(wait)
	hw := hwDev("mlx5_0", "0000:81:00.0", "0000:80:01.0")
	started := make(chan struct{})
	first := make(chan bool, 1)
	go func() {
		_, ok := gate.run(ctx, hw, func(pctx context.Context) {
			close(started)
			<-pctx.Done() // runs until the run's end, as a probe does at its deadline
		})
		first <- ok
	}()
	<-started
	second := make(chan bool, 1)
	go func() {
		// A software device must not run beside the hardware probe: it waits, then the run ends.
		_, ok := gate.run(ctx, swDev("rxe0"), func(context.Context) {
			t.Error("a probe started after the run ended")
		})
		second <- ok
	}()
	cancel()
	for i, ch := range []chan bool{first, second} {
		select {
		case ok := <-ch:
			if want := i == 0; ok != want {
				t.Errorf("probe %d admitted: %v, want %v", i+1, ok, want)
			}
		case <-wait.Done():
			t.Fatalf("probe %d did not return at the run's end", i+1)
		}
	}
	// Nothing is held: a new run's probe on the same path is admitted at once.
	if _, ok := gate.run(wait, hw, func(context.Context) {}); !ok {
		t.Error("the path is still held after the run's end")
	}
	if _, ok := gate.run(ctx, swDev("rxe1"), func(context.Context) { t.Error("started with an ended run") }); ok {
		t.Error("a probe was admitted after the run ended")
	}
}

// Each device's bandwidth probe starts once the light probe checks of the run are done with
// that device, even when the bandwidth check reaches it first; a light check that returned
// without probing holds nothing; and the run's end releases a bandwidth probe still waiting,
// unstarted.
func TestBandwidthAfterLightProbes(t *testing.T) {
	wait := guard(t)
	order := newLightFirst()
	var locks deviceLocks
	light := order.light()
	early := order.light()
	early.close() // as a check that found no device to probe
	var mu sync.Mutex
	lightDone := map[string]bool{}
	bwStarted := make(chan string, 2)
	bw := make(chan error, 1)
	go func() {
		_, err := schedule(wait, &locks, heavy{order}, targets("a", "b"), func(_ context.Context, tg target) engine.Finding {
			mu.Lock()
			if !lightDone[tg.dev.Name] {
				t.Errorf("bandwidth probe on %s started before the light probe there finished", tg.dev.Name)
			}
			mu.Unlock()
			bwStarted <- tg.dev.Name
			return finding(tg)
		})
		bw <- err
	}()
	// The light check starts after the bandwidth check has had time to reach both devices (a
	// pause that only gives a wrong order the chance to show); a's light probe runs until
	// released.
	release := make(chan struct{})
	lt := make(chan error, 1)
	go func() {
		defer light.close()
		time.Sleep(20 * time.Millisecond)
		_, err := schedule(wait, &locks, light, targets("a", "b"), func(_ context.Context, tg target) engine.Finding {
			if tg.dev.Name == "a" {
				<-release
			}
			mu.Lock()
			lightDone[tg.dev.Name] = true
			mu.Unlock()
			return finding(tg)
		})
		lt <- err
	}()
	// No bandwidth probe starts while a light probe of the run is still at work, on any device:
	// b's waits for a's light probe too.
	for !func() bool { mu.Lock(); defer mu.Unlock(); return lightDone["b"] }() {
		time.Sleep(time.Millisecond)
	}
	select {
	case dev := <-bwStarted:
		t.Fatalf("bandwidth probe on %s started while a's light probe was running", dev)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if dev := <-bwStarted; dev != "a" && dev != "b" {
		t.Fatalf("bandwidth probe on %s", dev)
	}
	for _, ch := range []chan error{lt, bw} {
		select {
		case err := <-ch:
			if err != nil {
				t.Error(err)
			}
		case <-wait.Done():
			t.Fatal("a check did not finish")
		}
	}
	if dev := <-bwStarted; dev != "a" && dev != "b" {
		t.Errorf("second bandwidth probe on %s", dev)
	}

	// A light check that never gets to device c: its bandwidth probe waits, and the run's end
	// releases it without starting it.
	stuck := order.light()
	defer stuck.close()
	ctx, cancel := context.WithCancel(wait)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		fs, err := schedule(ctx, &locks, heavy{order}, targets("c"), func(context.Context, target) engine.Finding {
			t.Error("a bandwidth probe started after the run ended")
			return engine.Finding{}
		})
		if len(fs) != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("after the end: %d findings, error %v", len(fs), err)
		}
	}()
	time.Sleep(20 * time.Millisecond) // as above: time for a wrong order to start the probe
	cancel()
	select {
	case <-ended:
	case <-wait.Done():
		t.Fatal("the waiting bandwidth probe did not return at the run's end")
	}
}
