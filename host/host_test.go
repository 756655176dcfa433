package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	// Climbing above "/" stops at "/": the host's /etc, never the analysing machine's.
	if got, err := h.Realpath("/sys/climb"); err == nil && got != "/etc" {
		t.Errorf("climb resolved to %q", got)
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

func TestReadKmsgMissing(t *testing.T) {
	if _, err := ReadKmsg(filepath.Join(t.TempDir(), "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("got %v", err)
	}
}
