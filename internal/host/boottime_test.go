package host

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestBootTime(t *testing.T) {
	for name, tc := range map[string]struct {
		stat string
		want time.Time
		ok   bool
	}{
		"btime line":  {"cpu  1 2 3\nintr 5\nctxt 9\nbtime 1767218400\nprocesses 4\n", time.Date(2025, 12, 31, 22, 0, 0, 0, time.UTC), true},
		"no btime":    {"cpu  1 2 3\n", time.Time{}, false},
		"garbled":     {"btime soon\n", time.Time{}, false},
		"before 2000": {"btime 12\n", time.Time{}, false},
	} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "proc"), 0o755)
		if err := os.WriteFile(filepath.Join(root, "proc/stat"), []byte(tc.stat), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := New(Options{Root: root, Kind: KindRoot})
		if err != nil {
			t.Fatal(err)
		}
		got, err := h.BootTime()
		if (err == nil) != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: %v, %v; want %v (ok %v)", name, got, err, tc.want, tc.ok)
		}
	}
	h, _ := New(Options{Root: t.TempDir(), Kind: KindRoot})
	if _, err := h.BootTime(); err == nil {
		t.Error("a tree without /proc/stat has no boot time")
	}
}
