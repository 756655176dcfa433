package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// A minimal recording holds exactly what Ask read, listed and resolved, through the links the
// host resolved, and replays each answer as the host gave it (an errno included).
func TestMinimalRecordingKeepsWhatWasAsked(t *testing.T) {
	root := mkroot(t)
	h, err := host.New(host.Options{Root: root, Kind: host.KindSnapshot,
		ReadErrors: map[string]syscall.Errno{"/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/net/eth0/speed": syscall.EINVAL}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0/net/eth0/speed"), []byte("100000\n"), 0o644)
	ask := func(v *host.Host) {
		if s, err := v.ReadString("/sys/class/infiniband/mlx5_0/fw_ver"); err != nil || s == "" {
			t.Errorf("fw_ver through the view: %q %v", s, err)
		}
		v.ReadString("/sys/class/net/eth0/speed")
		v.ReadDir("/sys/class/infiniband")
		v.Exists("/proc/modules")
		v.ReadFile("/sys/class/infiniband/mlx5_0/no-such-file")
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{Now: time.Unix(0, 0), Ask: ask, Minimal: true}); err != nil {
		t.Fatal(err)
	}
	got, err := openDir(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := got.ReadString("/sys/class/infiniband/mlx5_0/fw_ver"); err != nil || s == "" {
		t.Errorf("fw_ver replayed: %q %v", s, err)
	}
	if _, err := got.ReadString("/sys/class/net/eth0/speed"); !errors.Is(err, syscall.EINVAL) {
		t.Errorf("speed: %v, want the recorded EINVAL", err)
	}
	if names, err := got.ReadDir("/sys/class/infiniband"); err != nil || len(names) != 1 {
		t.Errorf("listing replayed: %v %v", names, err)
	}
	if !got.Exists("/proc/modules") {
		t.Error("a path only checked for existence is missing")
	}
	for _, p := range []string{"/proc/sys/kernel/hostname", "/sys/class/infiniband/mlx5_0/ports/1/state", "/sys/bus/pci/devices"} {
		if _, err := got.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s was not asked for but is in a minimal recording (%v)", p, err)
		}
	}
}

// Without Ask and without Minimal, the walk alone records the allow-list (TestRecordPackOpen);
// with Minimal and no Ask nothing of the tree is kept.
func TestMinimalWithoutAskKeepsNoFiles(t *testing.T) {
	h, err := OpenRoot(mkroot(t))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := Record(h, dir, RecordOptions{Now: time.Unix(0, 0), Minimal: true}); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(filepath.Join(dir, RootDir))
	if len(ents) != 0 {
		t.Errorf("root holds %d entries", len(ents))
	}
}
