package watch

import (
	"context"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/watch/watchtest"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatchPoll is one poll cycle over 8 RoCE devices of 2 ports (64 held files: state,
// phys_state, operstate, carrier): the preads in their goroutines, the wait, the judgement.
// cpu-ns/op is the process's user+system CPU per cycle (getrusage), which counts the reading
// goroutines too.
func BenchmarkWatchPoll(b *testing.B) {
	tree, err := watchtest.NewTree(b.TempDir(), 8)
	if err != nil {
		b.Fatal(err)
	}
	root := tree.Root
	w, err := New(Config{Root: root, Poll: time.Second, Rescan: time.Minute, Counters: time.Minute, Full: time.Hour,
		ReadTimeout: time.Second, Out: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	devs, err := discover(w.root)
	if err != nil || len(devs) != 8 {
		b.Fatalf("discover: %d devices, %v", len(devs), err)
	}
	ctx := context.Background()
	w.applyRescan(ctx, rescanResult{devs: devs})
	if len(w.files) != 64 {
		b.Fatalf("%d held files, want 64", len(w.files))
	}
	w.pollOnce(ctx) // opens the files
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		w.pollOnce(ctx)
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	for _, f := range w.files {
		f.close()
	}
	for _, p := range w.ports {
		if !p.known || !p.up {
			b.Fatalf("%s not judged up", p.p.ID.Key)
		}
	}
}
