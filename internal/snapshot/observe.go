package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// The recorder is the host.Observer of a recording: it keeps what the checks looked at, as they
// saw it. Each callback records the links met on the way first, so that the snapshot resolves the
// path as the host did, and writes at the real path.

// FileRead keeps the bytes a check read, or the errno the host answered (kept as an empty file
// plus the errno, replayed as such). A path that does not exist leaves only the links above it.
func (r *recorder) FileRead(p string, data []byte, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve(p)
	real, rerr := r.h.Realpath(p)
	if rerr != nil || r.done[real] {
		return
	}
	var en syscall.Errno
	switch {
	case err == nil:
	case errors.As(err, &en):
		if en == syscall.EACCES || en == syscall.EPERM {
			r.fail(p, err)
		}
		r.readErrs[real] = unix.ErrnoName(en)
		data = nil
	default:
		return // not a file the host could answer for (missing, refused by confinement)
	}
	r.done[real] = true
	r.done[p] = true
	if !r.room(real, int64(len(data))) {
		return
	}
	d := r.dst_(real)
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		r.fail(p, err)
		return
	}
	if err := os.WriteFile(d, data, 0o644); err != nil {
		r.fail(p, err)
	}
}

// Listed keeps a listed directory with every entry: links as links, directories as (empty)
// directories, regular files with their contents, so that the listing replays whole.
func (r *recorder) Listed(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve(p)
	real, err := r.h.Realpath(p)
	if err != nil || r.done[real+"/*"] {
		return
	}
	r.done[real+"/*"] = true
	r.mkdir(real)
	names, err := r.h.ReadDir(real)
	if err != nil {
		r.fail(p, err)
		return
	}
	for _, n := range names {
		if q := path.Join(real, n); !r.unusedGID(q) {
			r.lstatRecord(q)
		}
	}
}

// Touched keeps what a resolution, stat or readlink of p found: the links on the way and the
// final entry (a regular file with its contents, so that it also exists in the snapshot).
func (r *recorder) Touched(p string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resolve(p)
	st, err := r.h.Lstat(p)
	if err != nil {
		return
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		r.link(p)
		if real, err := r.h.Realpath(p); err == nil {
			if st, err := r.h.Lstat(real); err == nil && st.IsDir() {
				r.mkdir(real)
			}
		}
	case st.IsDir():
		r.mkdir(mustReal(r.h, p))
	case st.Mode().IsRegular():
		r.file(mustReal(r.h, p))
	}
}

// EthtoolRead keeps a netdev's driver statistics; a netdev whose driver has none is listed as
// unreadable, not guessed.
func (r *recorder) EthtoolRead(netdev string, stats map[string]uint64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := path.Join(EthtoolDir, netdev)
	if r.done[key] {
		return
	}
	r.done[key] = true
	if err != nil {
		r.fail(key, err)
		return
	}
	if err := os.MkdirAll(r.ethtoolDir, 0o755); err != nil {
		r.fail(key, err)
		return
	}
	if err := writeJSON(filepath.Join(r.ethtoolDir, netdev+".json"), stats); err != nil {
		r.fail(key, err)
	}
}
