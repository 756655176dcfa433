package watch

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchTree lays out n RoCE devices of two ports each, as mlx5 shows them in sysfs: the class
// link to the PCI function's device directory, the ports' state, phys_state, link_layer and
// the netdev of GID 0, and each netdev's operstate and carrier.
func benchTree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	put := func(p, v string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	link := func(target, p string) {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			b.Fatal(err)
		}
	}
	for d := 0; d < n; d++ {
		pci := fmt.Sprintf("0000:%02x:00.0", 0x10+d)
		name := fmt.Sprintf("mlx5_%d", d)
		dev := fmt.Sprintf("sys/devices/pci0000:00/%s/infiniband/%s", pci, name)
		link("../../../"+pci, dev+"/device")
		link("../../"+dev[len("sys/"):], "sys/class/infiniband/"+name)
		put(dev+"/node_guid", fmt.Sprintf("b8ce:f603:00%02x:0000\n", d))
		for p := 1; p <= 2; p++ {
			nd := fmt.Sprintf("ens%df%dnp%d", d, p-1, p-1)
			pd := fmt.Sprintf("%s/ports/%d", dev, p)
			put(pd+"/state", "4: ACTIVE\n")
			put(pd+"/phys_state", "5: LinkUp\n")
			put(pd+"/link_layer", "Ethernet\n")
			put(pd+"/gid_attrs/ndevs/0", nd+"\n")
			put("sys/class/net/"+nd+"/operstate", "up\n")
			put("sys/class/net/"+nd+"/carrier", "1\n")
		}
	}
	return root
}

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
	root := benchTree(b, 8)
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
