package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/watch/watchtest"
)

// TestSoak runs the built binary's watch over 8 RoCE devices for an hour of its default
// schedule in compressed time: polls every 10 ms (3600 of them in 36 s, an hour of 1 s polls),
// counters every 100 ms, a walk every 300 ms, a full check every 3 s (an hour of 5-minute
// checks is 12), while ports flap, counters grow, kernel log lines arrive and /metrics is
// scraped. Its resident size must stay under 30 MiB and not grow: the median of the last
// quarter's samples no more than 1 MiB above the second quarter's. SIGTERM ends it within 1 s.
// RDMADIAG_SOAK=1 runs it (make soak); RDMADIAG_SOAK_TIME changes its length.
func TestSoak(t *testing.T) {
	if os.Getenv("RDMADIAG_SOAK") == "" {
		t.Skip("RDMADIAG_SOAK=1 runs the soak (make soak)")
	}
	length := 36 * time.Second
	if v := os.Getenv("RDMADIAG_SOAK_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		length = d
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "rdmadiag")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tree, err := watchtest.NewTree(filepath.Join(dir, "root"), 8)
	if err != nil {
		t.Fatal(err)
	}
	kmsgPath := filepath.Join(dir, "kmsg")
	if err := os.WriteFile(kmsgPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	cmd := exec.Command(bin, "watch", "--root", tree.Root, "--kmsg", kmsgPath, "--state-dir", filepath.Join(dir, "state"),
		"--listen", addr, "--poll", "10ms", "--counters", "100ms", "--rescan", "300ms", "--full", "3s", "--clear-after", "200ms")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var mu sync.Mutex
	events := map[string]int{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var e struct{ Kind, Condition string }
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				mu.Lock()
				events[e.Kind+" "+e.Condition]++
				mu.Unlock()
			}
		}
	}()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the host changing under the watch
		defer wg.Done()
		k, err := os.OpenFile(kmsgPath, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer k.Close()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			d, p := i%8, 1+i/8%2
			switch i % 10 { // a port down for 0.3 s every second
			case 0:
				tree.SetPort(d, p, false)
			case 3:
				tree.SetPort((i-3)%8, 1+(i-3)/8%2, true)
			}
			tree.SetCounter(d, p, "symbol_error", uint64(i))
			// An mlx5 health line (health.c mlx5_health_check: "Fatal error %d detected") and
			// an unrecognised error line, in /dev/kmsg's format.
			dev := tree.Devices[d]
			fmt.Fprintf(k, "3,%d,%d,-;mlx5_core %s: Fatal error %d detected\n SUBSYSTEM=pci\n DEVICE=+pci:%s\n", 2*i+1, i*1000, dev.PCI, i, dev.PCI)
			fmt.Fprintf(k, "3,%d,%d,-;mlx5_core %s: something no table knows %d\n", 2*i+2, i*1000+1, dev.PCI, i)
		}
	}()
	wg.Add(1)
	go func() { // a Prometheus server's scrapes
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(150 * time.Millisecond):
			}
			if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
				resp.Body.Close()
			}
		}
	}()

	var rss []int
	// The full check runs in a child (cli/watchchild.go): its peak is a cgroup's concern too,
	// sampled here beside the watch's own.
	childPeak, children := 0, 0
	seen := map[string]bool{}
	end := time.Now().Add(length)
	for time.Now().Before(end) {
		time.Sleep(250 * time.Millisecond)
		kb, err := vmRSS(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		rss = append(rss, kb)
		// A child belongs to the thread that forked it: every thread's list is read.
		lists, _ := filepath.Glob("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/task/*/children")
		var kids []string
		for _, l := range lists {
			b, _ := os.ReadFile(l)
			kids = append(kids, strings.Fields(string(b))...)
		}
		for _, c := range kids {
			n, _ := strconv.Atoi(c)
			if ckb, err := vmRSS(n); err == nil {
				childPeak = max(childPeak, ckb)
				if !seen[c] {
					seen[c] = true
					children++
				}
			}
		}
	}
	// Where the resident memory is: the binary's own pages (RssFile) and the heap (RssAnon).
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Rss") {
				t.Log(l)
			}
		}
	}
	close(stop)
	wg.Wait()
	t0 := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	<-done
	err = cmd.Wait()
	took := time.Since(t0)

	q := len(rss) / 4
	second, last := median(rss[q:2*q]), median(rss[3*q:])
	t.Logf("RSS kB over %s, %d samples: max %d; median of the second quarter %d, of the last %d", length, len(rss), slices.Max(rss), second, last)
	t.Logf("full check children sampled: %d, their peak RSS %d kB", children, childPeak)
	mu.Lock()
	t.Logf("events: %v", events)
	for _, want := range []string{"set port_down", "cleared port_down", "set kernel_log", "set counters", "full_check "} {
		if events[want] == 0 {
			t.Errorf("no %q event", want)
		}
	}
	mu.Unlock()
	if last > 30<<10 {
		t.Errorf("resident %d kB in the last quarter, above 30 MiB", last)
	}
	if last > second+1<<10 {
		t.Errorf("resident size grows: %d kB in the second quarter, %d kB in the last", second, last)
	}
	if err != nil || took > time.Second {
		t.Errorf("SIGTERM: exit %v after %s, want 0 within 1 s", err, took)
	}
}

func vmRSS(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

func median(v []int) int {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
