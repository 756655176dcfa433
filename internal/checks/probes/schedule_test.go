package probes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
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

func finding(t target) report.Finding {
	return report.Finding{Subject: t.subject(), Severity: report.OK}
}

// guard bounds a test that would otherwise hang on a scheduling bug; it is never what a test
// asserts on.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func names(fs []report.Finding) []string {
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
	fs, err := schedule(context.Background(), &locks, targets("a", "b"), func(ctx context.Context, tg target) report.Finding {
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
		_, err := schedule(context.Background(), &locks, targets("a", "a"), func(ctx context.Context, tg target) report.Finding {
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
		_, err := schedule(context.Background(), &locks, targets("a", "b"), func(ctx context.Context, tg target) report.Finding {
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
		fs  []report.Finding
		err error
	}
	first := make(chan res, 1)
	go func() {
		// Port 1 of a runs until the run ends (as a probe does at its deadline); port 2 must then
		// not start.
		fs, err := schedule(ctx, &locks, targets("a", "a"), func(pctx context.Context, tg target) report.Finding {
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
		fs, err := schedule(ctx, &locks, targets("a"), func(context.Context, target) report.Finding {
			t.Error("a probe started after the run ended")
			return report.Finding{}
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
	fs, err := schedule(ctx, &locks, targets("b", "c"), func(context.Context, target) report.Finding {
		t.Error("probe started after the end")
		return report.Finding{}
	})
	if len(fs) != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("after the end: %d findings, error %v", len(fs), err)
	}
}
