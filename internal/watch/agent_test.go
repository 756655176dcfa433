package watch

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// A held file whose device is gone answers ENODEV (kernfs deactivated it): the poll walks
// /sys/class/infiniband again at once instead of waiting for --rescan, and the device is gone.
func TestWatchVanishedFileRescans(t *testing.T) {
	root := tree(t, "b1")
	var gone atomic.Value
	gone.Store("")
	orig := readAt
	t.Cleanup(func() { readAt = orig }) // after the watcher's own cleanup stops it
	readAt = func(f *os.File, b []byte) (int, error) {
		if g := gone.Load().(string); g != "" && strings.Contains(f.Name(), g) {
			return 0, syscall.ENODEV
		}
		return orig(f, b)
	}
	r := start(t, Config{Root: root, ExpectUp: expectAll, Rescan: time.Hour})
	r.ev.wait(t, 2*time.Second, "port_down", is(EvSet, CondPortDown, mlx5_1Port))
	if err := os.Remove(filepath.Join(root, classDir, "mlx5_0")); err != nil {
		t.Fatal(err)
	}
	gone.Store("/mlx5_0/")
	r.ev.wait(t, 2*time.Second, "gone after ENODEV", is(EvSet, CondGone, "pci-0000:3b:00.0"))
}

// /healthz answers 503 once the poll loop has not completed a poll within three intervals.
func TestWatchHealthzStuckLoop(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := New(Config{Root: t.TempDir(), Poll: time.Second, Rescan: time.Minute, Counters: time.Minute, Full: time.Hour,
		ReadTimeout: 500 * time.Millisecond, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	w.started, w.lastPoll = now.Add(-time.Minute), now.Add(-2*time.Second)
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	code := func() int {
		resp, err := http.Get(srv.URL + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := code(); c != 200 {
		t.Fatalf("last poll 2 s ago: %d, want 200", c)
	}
	w.lastPoll = now.Add(-4 * time.Second)
	if c := code(); c != 503 {
		t.Fatalf("last poll 4 s ago (limit 3.5 s): %d, want 503", c)
	}
}

// READY=1 once the first walk is applied, WATCHDOG=1 after polls, over $NOTIFY_SOCKET.
func TestWatchSDNotify(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Skip("unixgram:", err)
	}
	defer conn.Close()
	t.Setenv("NOTIFY_SOCKET", sock)
	root := tree(t, "b1")
	var received atomic.Bool // after it, the socket closes before the watcher's STOPPING=1
	start(t, Config{Root: root, ExpectUp: expectAll, Notify: func(s string) {
		if err := SDNotify(s); err != nil && !received.Load() {
			t.Error(err)
		}
	}})
	want := []string{"READY=1", "WATCHDOG=1"}
	buf := make([]byte, 256)
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	for len(want) > 0 {
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("still waiting for %v: %v", want, err)
		}
		if string(buf[:n]) == want[0] {
			want = want[1:]
		}
	}
	received.Store(true)
}

// A read stuck since an earlier poll does not cost every later poll its deadline: the polls
// after the first stay short.
func TestWatchStuckReadDoesNotSlowPolls(t *testing.T) {
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
	r := start(t, Config{Root: root, ExpectUp: expectAll, ReadTimeout: 300 * time.Millisecond})
	r.ev.wait(t, 2*time.Second, "stuck_read", is(EvSet, CondStuckRead, ""))
	time.Sleep(300 * time.Millisecond)
	if st := r.w.StatusDoc(); st.PollMillis > 100 {
		t.Errorf("a poll with one read stuck since earlier took %.1f ms, want far below the 300 ms deadline", st.PollMillis)
	}
}

// A link out of a --root tree is never followed: the outside file's content never reaches an
// event, and the port is unreadable.
func TestWatchLinkOutOfTreeRefused(t *testing.T) {
	root := tree(t, "b1")
	secret := filepath.Join(t.TempDir(), "secret")
	write(t, secret, "4: OUTSIDE\n")
	p := filepath.Join(root, mlx5_0State)
	os.Remove(p)
	if err := os.Symlink(secret, p); err != nil {
		t.Fatal(err)
	}
	r := start(t, Config{Root: root, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "unreadable", is(EvSet, CondUnreadable, mlx5_0Port))
	for _, e := range r.ev.snapshot() {
		if strings.Contains(e.Message, "OUTSIDE") {
			t.Fatalf("the outside file leaked: %+v", e)
		}
	}
}

// A port whose reads fail (EIO) three polls in a row is unreadable; the first good poll clears
// it, whether the port is up or down.
func TestWatchUnreadableClears(t *testing.T) {
	root := tree(t, "b1")
	var failing atomic.Bool
	failing.Store(true)
	orig := readAt
	t.Cleanup(func() { readAt = orig })
	readAt = func(f *os.File, b []byte) (int, error) {
		if failing.Load() && strings.Contains(f.Name(), "mlx5_1/ports/1/state") {
			return 0, syscall.EIO
		}
		return orig(f, b)
	}
	r := start(t, Config{Root: root, ExpectUp: expectAll})
	r.ev.wait(t, 2*time.Second, "unreadable", is(EvSet, CondUnreadable, mlx5_1Port))
	failing.Store(false)
	r.ev.wait(t, 2*time.Second, "unreadable cleared on a down port", is(EvCleared, CondUnreadable, mlx5_1Port))
	r.ev.wait(t, time.Second, "then judged down", is(EvSet, CondPortDown, mlx5_1Port))
}

// A stuck read of a device that is then renamed (its files are opened anew under the new
// name) does not leave its stuck_read condition behind.
func TestWatchStuckReadOfRenamedDeviceClears(t *testing.T) {
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
	r := start(t, Config{Root: root, ExpectUp: expectAll})
	e := r.ev.wait(t, 2*time.Second, "stuck_read", is(EvSet, CondStuckRead, ""))
	class := filepath.Join(root, classDir)
	if err := os.Rename(filepath.Join(class, "mlx5_1"), filepath.Join(class, "mlx5_bond_1")); err != nil {
		t.Fatal(err)
	}
	r.ev.wait(t, 2*time.Second, "the old path's stuck_read cleared", is(EvCleared, CondStuckRead, e.Identity))
}

// A RoCE port whose netdev is not visible (another network namespace) is judged on its own
// files and does not make every poll walk the class again.
func TestWatchMissingNetdevBringsNoWalks(t *testing.T) {
	root := tree(t, "b1")
	if err := os.Remove(filepath.Join(root, "sys/class/net/ens1f0np0")); err != nil {
		t.Fatal(err)
	}
	r := start(t, Config{Root: root, ExpectUp: expectAll, Rescan: time.Hour})
	time.Sleep(500 * time.Millisecond) // 10 polls
	r.w.mu.Lock()
	last := r.w.lastScan
	started := r.w.started
	r.w.mu.Unlock()
	if last.Sub(started) > 200*time.Millisecond {
		t.Errorf("the class was walked again %s after the start: a missing netdev brought a walk", last.Sub(started))
	}
	st := r.w.StatusDoc()
	for _, d := range st.Devices {
		for _, p := range d.Ports {
			if p.Identity == mlx5_0Port && (p.Up == nil || !*p.Up) {
				t.Errorf("mlx5_0/1 without its netdev's files: up %v, want judged up on state and phys_state", p.Up)
			}
		}
	}
}

// An unwritable --state-dir is said once, not at every change.
func TestWatchUnwritableStateDirSaidOnce(t *testing.T) {
	root := tree(t, "b1")
	file := filepath.Join(t.TempDir(), "not-a-dir")
	write(t, file, "")
	r := start(t, Config{Root: root, ExpectUp: expectAll, StateDir: file})
	r.ev.wait(t, 2*time.Second, "port_down", is(EvSet, CondPortDown, mlx5_1Port))
	write(t, filepath.Join(root, mlx5_0State), "1: DOWN\n")
	r.ev.wait(t, 2*time.Second, "a second change", is(EvSet, CondPortDown, mlx5_0Port))
	time.Sleep(100 * time.Millisecond)
	n := 0
	for _, e := range r.ev.snapshot() {
		if e.Kind == "state_not_saved" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("state_not_saved said %d times, want once", n)
	}
}
