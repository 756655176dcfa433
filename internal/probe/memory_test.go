package probe

import (
	"context"
	"errors"
	"testing"
	"time"
)

// guard bounds a test that would otherwise hang on a bug; it is never what a test asserts on.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestMemoryPoolTwoThatFitAtOnce(t *testing.T) {
	p := NewMemoryPool(100<<20, "test")
	r1, err := p.Reserve(guard(t), 60<<20)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.Reserve(guard(t), 40<<20)
	if err != nil {
		t.Fatalf("a second reservation that fits beside the first: %v", err)
	}
	if got := p.Held(); got != 100<<20 {
		t.Errorf("held %d MiB, want 100", got>>20)
	}
	r1()
	r1() // a second release gives back nothing more
	r2()
	if got := p.Held(); got != 0 {
		t.Errorf("held %d bytes after both released, want 0", got)
	}
}

func TestMemoryPoolWaitsForRoom(t *testing.T) {
	wait := guard(t)
	p := NewMemoryPool(100<<20, "test")
	r1, err := p.Reserve(wait, 60<<20)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var r2 func()
	go func() {
		var err error
		r2, err = p.Reserve(wait, 50<<20)
		got <- err
	}()
	// It cannot have the memory while the first holds 60 of 100 MiB: a short look, which a
	// reservation that did not wait would fail (it would have returned by then).
	select {
	case err := <-got:
		t.Fatalf("a reservation that does not fit returned before any release (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	r1()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("after the release: %v", err)
		}
	case <-wait.Done():
		t.Fatal("the waiting reservation never got the memory the first gave back")
	}
	if h := p.Held(); h != 50<<20 {
		t.Errorf("held %d MiB, want 50", h>>20)
	}
	r2()
}

func TestMemoryPoolGivesUpWhenCtxEnds(t *testing.T) {
	wait := guard(t)
	p := NewMemoryPool(100<<20, "test")
	r1, err := p.Reserve(wait, 80<<20)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(wait)
	got := make(chan error, 1)
	go func() {
		_, err := p.Reserve(ctx, 30<<20)
		got <- err
	}()
	cancel()
	select {
	case err := <-got:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want the context's", err)
		}
	case <-wait.Done():
		t.Fatal("a waiting reservation did not give up when its context ended")
	}
	// Nothing leaked: the first's release leaves the pool empty, and the whole pool can be had.
	r1()
	if h := p.Held(); h != 0 {
		t.Errorf("held %d bytes after giving up and releasing, want 0", h)
	}
	all, err := p.Reserve(wait, 100<<20)
	if err != nil {
		t.Fatalf("the whole pool after the give-up: %v", err)
	}
	all()
	// An ended context gets nothing even when the memory is free.
	if _, err := p.Reserve(ctx, 1); err == nil {
		t.Error("a reservation with an ended context succeeded")
	}
}

func TestMemoryPoolBounds(t *testing.T) {
	p := NewMemoryPool(100<<20, "test")
	if _, err := p.Reserve(guard(t), 101<<20); !errors.Is(err, ErrOverBudget) {
		t.Errorf("more than the whole pool: %v, want ErrOverBudget at once", err)
	}
	var none *MemoryPool
	if r, err := none.Reserve(guard(t), 1<<62); err != nil || none.Total() != 0 {
		t.Errorf("a nil pool bounds nothing: %v", err)
	} else {
		r()
	}
	if r, err := NewMemoryPool(0, "").Reserve(guard(t), 1<<62); err != nil {
		t.Errorf("a pool of 0 bytes bounds nothing: %v", err)
	} else {
		r()
	}
}
