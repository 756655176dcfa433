package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

type readLog struct {
	mu    sync.Mutex
	reads map[string]string
}

func (l *readLog) FileRead(p string, data []byte, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.reads[p] = "error"
		return
	}
	l.reads[p] = string(data)
}
func (l *readLog) Listed(string)                                {}
func (l *readLog) Touched(string)                               {}
func (l *readLog) EthtoolRead(string, map[string]uint64, error) {}

// A Dir answers as the host's ReadFile does, live (openat) and in a tree (confined), and tells
// the observer of each read, so that record keeps what a Dir read.
func TestDirReadsAsReadFile(t *testing.T) {
	tree := t.TempDir()
	dir := filepath.Join(tree, "sys", "class", "infiniband", "rxe0", "ports", "1", "gids")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "0"), []byte("fe80:0000:0000:0000:5054:00ff:fe12:3456\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tree, "sys", "class", "infiniband", "rxe0", "secret"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	live, err := New(Options{Root: "/", Kind: KindLive})
	if err != nil {
		t.Fatal(err)
	}
	root, err := New(Options{Root: tree, Kind: KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		h   *Host
		dir string
	}{
		"live": {live, dir},
		"tree": {root, "/sys/class/infiniband/rxe0/ports/1/gids"},
	} {
		t.Run(name, func(t *testing.T) {
			log := &readLog{reads: map[string]string{}}
			h := tc.h.Observed(log, func(_ string, c NetlinkConn) NetlinkConn { return c })
			d := h.OpenDir(tc.dir)
			defer d.Close()
			got, err := d.ReadString("0")
			if err != nil || got != "fe80:0000:0000:0000:5054:00ff:fe12:3456" {
				t.Errorf("ReadString(0) = %q, %v", got, err)
			}
			if log.reads[tc.dir+"/0"] != "fe80:0000:0000:0000:5054:00ff:fe12:3456\n" {
				t.Errorf("observer saw %q", log.reads)
			}
			_, err = d.ReadFile("7")
			var pe *fs.PathError
			if !errors.As(err, &pe) || !errors.Is(err, fs.ErrNotExist) || pe.Path != tc.dir+"/7" {
				t.Errorf("missing entry: %v, want a not-exist error naming %s/7", err, tc.dir)
			}
			// A name that is not one element goes through the host's own read (and its
			// confinement in a tree).
			b, err := d.ReadFile("../../../secret")
			want, werr := h.ReadFile(tc.dir + "/../../../secret")
			if string(b) != string(want) || (err == nil) != (werr == nil) {
				t.Errorf("../../../secret: %q, %v; ReadFile gives %q, %v", b, err, want, werr)
			}
		})
	}
	// A directory that cannot be opened gives each read ReadFile's error.
	d := live.OpenDir(filepath.Join(tree, "nope"))
	defer d.Close()
	if _, err := d.ReadFile("0"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read in a missing directory: %v", err)
	}
}

// While a live Dir is open its reads are one read in progress, named by the directory, so a
// deadline names where a blocked read is.
func TestDirIsOnePendingRead(t *testing.T) {
	dir := t.TempDir()
	h, err := New(Options{Root: "/", Kind: KindLive})
	if err != nil {
		t.Fatal(err)
	}
	d := h.OpenDir(dir)
	ops := h.Pending()
	if len(ops) != 1 || ops[0].What != "read files of "+dir {
		t.Errorf("pending while open: %+v", ops)
	}
	d.Close()
	d.Close() // twice is harmless
	if ops := h.Pending(); len(ops) != 0 {
		t.Errorf("pending after Close: %+v", ops)
	}
}
