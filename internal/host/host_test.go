package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func newRoot(t *testing.T) (*Host, string) {
	t.Helper()
	r := t.TempDir()
	os.MkdirAll(filepath.Join(r, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0"), 0o755)
	os.WriteFile(filepath.Join(r, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/vendor"), []byte("0x15b3\n"), 0o644)
	os.MkdirAll(filepath.Join(r, "sys/bus/pci/devices"), 0o755)
	os.Symlink("../../../devices/pci0000:00/0000:00:02.0/0000:01:00.0", filepath.Join(r, "sys/bus/pci/devices/0000:01:00.0"))
	os.Symlink("/sys/devices", filepath.Join(r, "sys/abs"))
	os.Symlink("../../../../../../../../../../etc", filepath.Join(r, "sys/climb"))
	os.Symlink("loop", filepath.Join(r, "sys/loop"))
	h, err := New(Options{Root: r, Kind: KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	return h, r
}

func TestRealpathStaysInside(t *testing.T) {
	h, _ := newRoot(t)
	cases := map[string]string{
		"/sys/bus/pci/devices/0000:01:00.0":        "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0",
		"/sys/bus/pci/devices/0000:01:00.0/vendor": "/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/vendor",
		"/sys/abs/pci0000:00":                      "/sys/devices/pci0000:00",
	}
	for in, want := range cases {
		got, err := h.Realpath(in)
		if err != nil || got != want {
			t.Errorf("Realpath(%s) = %q, %v; want %q", in, got, err, want)
		}
	}
	// A link climbing above "/" is refused and named, never resolved on the analysing machine.
	if got, err := h.Realpath("/sys/climb"); !errors.Is(err, ErrEscapes) || !strings.Contains(err.Error(), "/sys/climb -> ") {
		t.Errorf("climb resolved to %q, %v", got, err)
	}
	if _, err := h.Realpath("/sys/loop"); err == nil {
		t.Error("symlink loop resolved")
	}
	if s, err := h.ReadString("/sys/bus/pci/devices/0000:01:00.0/vendor"); err != nil || s != "0x15b3" {
		t.Errorf("ReadString through a link: %q %v", s, err)
	}
	if _, err := h.ReadFile("/../../../../etc/passwd"); err == nil {
		t.Error("read outside the root")
	}
}

func TestReadErrorsNameTheHostPath(t *testing.T) {
	h, r := newRoot(t)
	_, err := h.ReadFile("/sys/class/infiniband/mlx5_0/fw_ver")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "/sys/class/infiniband/mlx5_0/fw_ver") || strings.Contains(err.Error(), r) {
		t.Errorf("error should name the host path, not the temp root: %v", err)
	}
	big := filepath.Join(r, "big")
	f, _ := os.Create(big)
	f.Truncate(MaxFileSize + 10)
	f.Close()
	if _, err := h.ReadFile("/big"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized file: %v", err)
	}
}

func TestNotRecordedSources(t *testing.T) {
	h, _ := newRoot(t)
	if _, err := h.KernelLog(); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("kernel log: %v", err)
	}
	if h.Netlink() != nil {
		t.Error("netlink on a plain root")
	}
}

func TestRequestKeyIsStable(t *testing.T) {
	r := Request{Type: 0x140a, Flags: 0x300, Payload: []byte{8, 0, 1, 0, 2, 0, 0, 0}}
	if r.Key() != "140a-0300-0800010002000000" {
		t.Errorf("key %s", r.Key())
	}
}

// A crafted tree must never put a file from outside it into a report: not through a direct link,
// an absolute one, or a chain whose ".." only climbs out after other links are expanded.
func TestReadsStayInsideTheTree(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("outside-the-tree\n"), 0o644)
	r := filepath.Join(t.TempDir(), "tree")
	dev := filepath.Join(r, "sys/class/infiniband/mlx5_0")
	os.MkdirAll(dev, 0o755)
	// Relative from the tree to the secret, however deep the temporary directories are.
	up, _ := filepath.Rel(dev, secret)
	os.Symlink(up, filepath.Join(dev, "fw_ver"))
	os.Symlink(secret, filepath.Join(dev, "board_id")) // absolute: the tree's own path, not ours
	os.Symlink(".", filepath.Join(dev, "q"))
	climb := "q/q/q/q" + strings.Repeat("/..", strings.Count(dev, "/")+2) + strings.TrimPrefix(secret, "/")
	os.Symlink(climb, filepath.Join(dev, "hca_type"))
	os.Symlink(filepath.Join(outside), filepath.Join(r, "sys/class/infiniband/mlx5_1"))
	h, err := New(Options{Root: r, Kind: KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		"/sys/class/infiniband/mlx5_0/fw_ver", "/sys/class/infiniband/mlx5_0/board_id",
		"/sys/class/infiniband/mlx5_0/hca_type", "/sys/class/infiniband/mlx5_1/secret",
	} {
		b, err := h.ReadFile(p)
		if err == nil || strings.Contains(string(b), "outside") {
			t.Errorf("%s: read %q, %v; want an error", p, b, err)
			continue
		}
		if !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), r) {
			t.Errorf("%s: error %q should name the host path only", p, err)
		}
	}
	if _, err := h.ReadFile("/sys/class/infiniband/mlx5_0/fw_ver"); !errors.Is(err, ErrEscapes) {
		t.Errorf("escaping link: %v, want ErrEscapes", err)
	}
	if names, err := h.ReadDir("/sys/class/infiniband/mlx5_1"); err == nil {
		t.Errorf("listed a directory outside the tree: %v", names)
	}
	if h.Exists("/sys/class/infiniband/mlx5_1/secret") {
		t.Error("Exists followed a link out of the tree")
	}
}

// A FIFO in a tree would block a read forever: it is refused at once and named.
func TestTreeRefusesFIFOs(t *testing.T) {
	r := t.TempDir()
	dir := filepath.Join(r, "sys/class/infiniband/mlx5_0/ports/1/counters")
	os.MkdirAll(dir, 0o755)
	if err := syscall.Mkfifo(filepath.Join(dir, "port_rcv_data"), 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	syscall.Mkfifo(filepath.Join(r, "sys/class/infiniband/mlx5_1"), 0o644)
	for _, kind := range []Kind{KindRoot, KindSnapshot} {
		h, err := New(Options{Root: r, Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			_, err := h.ReadFile("/sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data")
			if err == nil {
				_, err = h.ReadDir("/sys/class/infiniband/mlx5_1")
				if err == nil {
					err = errors.New("listed a FIFO")
				}
				done <- err
				return
			}
			if _, derr := h.ReadDir("/sys/class/infiniband/mlx5_1"); derr == nil {
				err = errors.New("listed a FIFO")
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "port_rcv_data") || !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("%s: %v; want ErrNotRegular naming the path", kind, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: a read of a FIFO blocked", kind)
		}
	}
}

func TestPendingNamesBlockedReads(t *testing.T) {
	r := t.TempDir()
	os.MkdirAll(filepath.Join(r, "sys"), 0o755)
	fifo := filepath.Join(r, "sys/fw_ver")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	// A live host reads what the kernel gives it; only a deadline ends a blocked read.
	h, err := New(Options{Root: r, Kind: KindLive})
	if err != nil {
		t.Fatal(err)
	}
	go h.ReadFile("/sys/fw_ver")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if p := h.Pending(); len(p) == 1 && p[0].What == "read /sys/fw_ver" {
			// Unblock the reader so the goroutine ends with the test.
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Close()
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("pending = %v", h.Pending())
}
