package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// accessLog is a live host on the healthy fixture's tree that records every read and query the
// run starts, and whether the verbs devices (libibverbs on a real host) were asked for.
type accessLog struct {
	mu    sync.Mutex
	ops   []string
	verbs int
	// klog counts reads of the kernel log (the fixture's recorded /dev/kmsg).
	klog int
	// onVerbs and onKernelLog, when set, run when the verbs devices or the kernel log are asked
	// for, before the answer.
	onVerbs, onKernelLog func()
	// devices, when set, changes the recorded verbs devices the host answers.
	devices func(root string, recorded []host.VerbsDevice) []host.VerbsDevice
}

func (l *accessLog) open(t *testing.T) func(context.Context, source) (*host.Host, func(), error) {
	snap := sharedFixture(t, "healthy") // the host only reads it
	b, err := os.ReadFile(filepath.Join(snap, "facts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var facts host.Facts
	if err := json.Unmarshal(b, &facts); err != nil {
		t.Fatal(err)
	}
	devs := facts.VerbsDevices
	if l.devices != nil {
		devs = l.devices(filepath.Join(snap, "root"), devs)
	}
	kmsg, err := os.ReadFile(filepath.Join(snap, "kmsg"))
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context, source) (*host.Host, func(), error) {
		h, err := host.New(host.Options{Root: filepath.Join(snap, "root"), Kind: host.KindLive,
			KernelLog: func() ([]byte, error) {
				l.mu.Lock()
				l.klog++
				l.mu.Unlock()
				if l.onKernelLog != nil {
					l.onKernelLog()
				}
				return kmsg, nil
			},
			Facts: func() (*host.Facts, error) { f := facts; return &f, nil },
			VerbsDevices: func() ([]host.VerbsDevice, string, error) {
				l.mu.Lock()
				l.verbs++
				l.mu.Unlock()
				if l.onVerbs != nil {
					l.onVerbs()
				}
				return devs, facts.VerbsError, nil
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

// run runs `check --no-probe -o json` with args on the logged host and returns the report.
func (l *accessLog) run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.OpenHost = l.open(t)
	if code := app.Execute(context.Background(), append([]string{"check", "--no-probe", "-o", "json"}, args...)); code > 3 {
		t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// readOnce fails when an operation was made more than once, or none was (what says what the
// fixture should have).
func readOnce(t *testing.T, ops []string, what string) {
	t.Helper()
	reads := map[string]int{}
	for _, op := range ops {
		reads[op]++
	}
	if len(reads) == 0 {
		t.Fatalf("nothing read; the fixture should have %s", what)
	}
	for op, n := range reads {
		if n > 1 {
			t.Errorf("%s: %d times", op, n)
		}
	}
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
			l.run(t, tc.args...)
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
	l.run(t)
	readOnce(t, l.touched("/gids/", "/gid_attrs/"), "a RoCE port's GID table")
}

// Only the checks marked VerbsDevices ask for the verbs devices: the mark is what lets a run
// without them leave libibverbs unloaded, and lets one with them take the GID tables from the
// same query.
func TestVerbsDevicesMarked(t *testing.T) {
	for _, c := range checks.Default.All() {
		if c.Probe {
			continue
		}
		var l accessLog
		l.run(t, "--only", c.ID)
		if l.verbs > 0 && !c.VerbsDevices {
			t.Errorf("%s asks for the verbs devices but is not marked VerbsDevices", c.ID)
		}
	}
}

// withGIDTables gives each recorded verbs device the GID table its tree holds, as
// ibv_query_gid_table would (types and netdevs as the kernel numbers them).
func withGIDTables(t *testing.T) func(string, []host.VerbsDevice) []host.VerbsDevice {
	return func(root string, recorded []host.VerbsDevice) []host.VerbsDevice {
		h, err := host.New(host.Options{Root: root, Kind: host.KindRoot})
		if err != nil {
			t.Fatal(err)
		}
		out := append([]host.VerbsDevice(nil), recorded...)
		for i := range out {
			d := &out[i]
			d.GIDsRead = true
			ifindex := map[string]uint32{}
			pdir := "/sys/class/infiniband/" + d.Name + "/ports/1"
			names, err := h.ReadDir(pdir + "/gids")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				g, _ := h.ReadString(pdir + "/gids/" + n)
				if strings.Trim(g, "0:") == "" {
					continue
				}
				typ, _ := h.ReadString(pdir + "/gid_attrs/types/" + n)
				nd, _ := h.ReadString(pdir + "/gid_attrs/ndevs/" + n)
				if _, ok := ifindex[nd]; !ok && nd != "" {
					ifindex[nd] = uint32(len(ifindex) + 2)
				}
				k, _ := strconv.Atoi(n)
				e := host.VerbsGID{Port: 1, Index: k, GID: g, Type: 1, Ifindex: ifindex[nd]}
				if typ == "RoCE v2" {
					e.Type = 2
				}
				d.GIDs = append(d.GIDs, e)
			}
			if len(d.GIDs) == 0 {
				t.Fatalf("%s: no GID in the fixture's table", d.Name)
			}
		}
		return out
	}
}

// A run that opens the verbs devices anyway takes the GID tables from that query: the report is
// the one the sysfs walk gives, and no gids/N file is read.
func TestGIDTableFromVerbsSameReport(t *testing.T) {
	var sysfs accessLog
	want := sysfs.run(t)
	verbs := accessLog{devices: withGIDTables(t)}
	got := verbs.run(t)
	if got != want {
		t.Errorf("the report differs from the sysfs walk's:\n%s", unifiedDiff("sysfs", "verbs", want, got, 40))
	}
	if n := len(sysfs.touched("/gids/")); n == 0 {
		t.Fatal("the sysfs walk read no gids/N file; the fixture should have a RoCE port")
	}
	if r := verbs.touched("/gids/", "/gid_attrs/types/"); len(r) > 0 {
		t.Errorf("GID table files read although the verbs query gave the table: %d, e.g. %s", len(r), r[0])
	}
}

// A netdev's attributes are read once per run, whichever number of port checks show them.
func TestNetdevReadOncePerRun(t *testing.T) {
	var l accessLog
	l.run(t)
	var ops []string
	for _, op := range l.touched("/operstate", "/flags") {
		if strings.Contains(op, "/sys/class/net/") {
			ops = append(ops, op)
		}
	}
	readOnce(t, ops, "a RoCE port with a netdev")
}

// Only the checks marked KernelLog read the kernel log, and each of them does: a run starts
// reading the log when it starts only for them (checks.Run), so a check that reads it unmarked
// waits for its read in the middle of the run, and one marked without reading it makes a run
// read a log that no selected check needs. Each check runs alone, on an Env of its own, so that
// the prefetch cannot answer for it.
func TestKernelLogMarked(t *testing.T) {
	var l accessLog
	open := l.open(t)
	for _, c := range checks.Default.All() {
		if c.Probe {
			continue
		}
		h, _, err := open(context.Background(), source{})
		if err != nil {
			t.Fatal(err)
		}
		l.mu.Lock()
		l.klog = 0
		l.mu.Unlock()
		env := checks.NewEnv(h, checks.Options{})
		if _, err := c.Run(context.Background(), env); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		l.mu.Lock()
		read := l.klog > 0
		l.mu.Unlock()
		if read != c.KernelLog {
			t.Errorf("%s: reads the kernel log %v, marked KernelLog %v", c.ID, read, c.KernelLog)
		}
	}
}

// A run that selects a check marked KernelLog reads the log once, whatever number of checks
// use it; one that selects none does not read it.
func TestKernelLogReadOncePerRun(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 1},
		{[]string{"--only", "port.state,port.rate"}, 0},
	} {
		var l accessLog
		l.run(t, tc.args...)
		if l.klog != tc.want {
			t.Errorf("%v: the kernel log read %d times, want %d", tc.args, l.klog, tc.want)
		}
	}
}

// The kernel log is read beside the verbs query, not after it: every check that reads the log
// also waits for the inventory, and the inventory waits for the verbs query (its GID tables).
// Here the first query holds until the log has been read, for at most a second (less than
// inventory.VerbsWait), with one slot (--parallel 1) and two checks that read the log after the
// inventory: without the read at the start of the run, the log is read only after the query.
func TestKernelLogReadBesideTheInventory(t *testing.T) {
	read := make(chan struct{})
	var readOnce, firstQuery sync.Once
	var inTime atomic.Bool
	l := accessLog{
		onKernelLog: func() { readOnce.Do(func() { close(read) }) },
		// Only the first query counts: later ones come after the inventory anyway.
		onVerbs: func() {
			firstQuery.Do(func() {
				select {
				case <-read:
					inTime.Store(true)
				case <-time.After(time.Second):
				}
			})
		},
	}
	l.run(t, "--parallel", "1", "--only", "cq.vectors,pcie.aer,port.flaps")
	if !inTime.Load() {
		t.Error("the kernel log was not read while the verbs query was under way")
	}
}
