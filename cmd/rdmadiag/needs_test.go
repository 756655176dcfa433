package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// accessLog is a live host on the healthy fixture's tree that records every read and query the
// run starts, and whether the verbs devices (libibverbs on a real host) were asked for.
type accessLog struct {
	mu    sync.Mutex
	ops   []string
	verbs int
}

func (l *accessLog) open(t *testing.T) func(source) (*host.Host, func(), error) {
	snap := unpackHealthy(t)
	b, err := os.ReadFile(filepath.Join(snap, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts host.Facts
	if err := json.Unmarshal(b, &facts); err != nil {
		t.Fatal(err)
	}
	return func(source) (*host.Host, func(), error) {
		h, err := host.New(host.Options{Root: filepath.Join(snap, "root"), Kind: host.KindLive,
			Facts: func() (*host.Facts, error) { f := facts; return &f, nil },
			VerbsDevices: func() ([]host.VerbsDevice, string, error) {
				l.mu.Lock()
				l.verbs++
				l.mu.Unlock()
				return facts.VerbsDevices, facts.VerbsError, nil
			},
			Observe: func(what string) {
				l.mu.Lock()
				l.ops = append(l.ops, what)
				l.mu.Unlock()
			},
		})
		return h, func() {}, err
	}
}

// touched lists the recorded operations that contain any of the fragments.
func (l *accessLog) touched(fragments ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, op := range l.ops {
		for _, f := range fragments {
			if strings.Contains(op, f) {
				out = append(out, op)
				break
			}
		}
	}
	return out
}

// kernelConfig names the reads of the kernel build configuration.
var kernelConfig = []string{"/proc/config.gz", "/boot/config-"}

// A run reads only what its selected checks need: the port layer needs neither the kernel config
// (decompressed from /proc/config.gz on most hosts) nor the verbs devices (libibverbs loaded and
// every device opened). The other selections show that the same host does read them when asked.
func TestSelectionReadsOnlyWhatItNeeds(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		wantConfig bool
		wantVerbs  bool
	}{
		{[]string{"--only", "port"}, false, false},
		{[]string{"--only", "port.state,port.rate"}, false, false},
		{[]string{"--only", "driver.kernel_config"}, true, false},
		{[]string{"--only", "cq.vectors"}, false, true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var l accessLog
			var out, errb bytes.Buffer
			app := testApp(&out, &errb)
			app.OpenHost = l.open(t)
			code := app.Execute(context.Background(), append([]string{"check", "--no-probe", "-o", "json"}, tc.args...))
			if code > 3 {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if got := l.touched(kernelConfig...); (len(got) > 0) != tc.wantConfig {
				t.Errorf("kernel config reads %q, want some: %v", got, tc.wantConfig)
			}
			if (l.verbs > 0) != tc.wantVerbs {
				t.Errorf("verbs devices asked %d times, want some: %v", l.verbs, tc.wantVerbs)
			}
		})
	}
}

// Expensive facts are read once per run and shared: a RoCE port's GID table (hundreds of sysfs
// files, 1024 on rxe) is walked by the inventory alone, whatever number of checks use it.
func TestGIDTableReadOncePerRun(t *testing.T) {
	var l accessLog
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.OpenHost = l.open(t)
	if code := app.Execute(context.Background(), []string{"check", "--no-probe", "-o", "json"}); code > 3 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	reads := map[string]int{}
	for _, op := range l.touched("/gids/", "/gid_attrs/") {
		reads[op]++
	}
	if len(reads) == 0 {
		t.Fatal("the GID table was not read at all; the fixture should have a RoCE port")
	}
	for op, n := range reads {
		if n > 1 {
			t.Errorf("%s: %d times", op, n)
		}
	}
}
