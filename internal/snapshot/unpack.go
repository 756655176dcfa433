package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
	"time"
)

// Limits on what an unpack accepts, whatever the archive's form, and so on what a recording may
// write (Pack refuses a tree beyond them): a snapshot of a 16-HCA host with its netlink dumps is a
// few MiB.
const (
	MaxEntries    = 200000
	MaxTotalBytes = 1 << 30
	MaxFileBytes  = 256 << 20
)

// limits are the bounds one unpack, recording or pack holds to: the constants above, smaller in
// tests.
type limits struct {
	entries     int
	file, total int64
}

var defaultLimits = limits{entries: MaxEntries, file: MaxFileBytes, total: MaxTotalBytes}

// unpacker writes the entries of an archive, of either form, into one directory under one set of
// rules: every write goes through an os.Root of the directory, so nothing lands outside it even
// through a link another entry made; a link is never written through (an entry whose directory
// is a link is refused, a file is created O_EXCL|O_NOFOLLOW); each name is written once; the
// entry count and the sizes are bounded; and the run's context ends it between two entries or
// two chunks of one.
type unpacker struct {
	lim     limits
	ctx     context.Context
	root    *os.Root
	names   map[string]bool // the entries written, each once
	dirs    map[string]bool // directories known to be real directories made here
	entries int
	total   int64
	// sub is the directory the last entries went into, held open: an archive lists a
	// directory's entries together, and creating each relative to it saves a walk from the root
	// per entry. It is opened at the second entry in a row in one directory (lastDir).
	sub             *os.Root
	subDir, lastDir string
}

// at returns where to create name: the held directory and name's base when name is in it, else
// the root and name itself.
func (u *unpacker) at(name string) (*os.Root, string, error) {
	dir := path.Dir(name)
	if u.sub != nil && u.subDir == dir {
		return u.sub, path.Base(name), nil
	}
	if dir == "." || dir != u.lastDir {
		u.lastDir = dir
		return u.root, name, nil
	}
	if u.sub != nil {
		u.sub.Close()
		u.sub = nil
	}
	r, err := u.root.OpenRoot(dir)
	if err != nil {
		return nil, "", err
	}
	u.sub, u.subDir = r, dir
	return r, path.Base(name), nil
}

func newUnpacker(ctx context.Context, dir string, lim limits) (*unpacker, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &unpacker{lim: lim, ctx: ctx, root: r, names: map[string]bool{}, dirs: map[string]bool{".": true}}, nil
}

func (u *unpacker) Close() error {
	if u.sub != nil {
		u.sub.Close()
	}
	return u.root.Close()
}

// interrupted wraps the context's cause: the caller tells an interrupted unpack from a bad archive.
func (u *unpacker) interrupted() error {
	if u.ctx.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUnpackStopped, context.Cause(u.ctx))
}

// ErrUnpackStopped is wrapped by the error of an unpack that the context ended (a deadline, a
// signal) with the context's cause: the archive may be fine.
var ErrUnpackStopped = errors.New("unpack stopped")

// admit counts one more entry of the archive, whatever it turns out to be (a name that cleans to
// nothing included): the context is still live and the count is within MaxEntries.
func (u *unpacker) admit() error {
	if err := u.interrupted(); err != nil {
		return err
	}
	u.entries++
	if u.entries > u.lim.entries {
		return fmt.Errorf("%w: more than %d entries", ErrNotSnapshot, u.lim.entries)
	}
	return nil
}

// claim takes name (already cleaned by safeName) for one entry: a name is written once, and the
// directories above it are made.
func (u *unpacker) claim(name string) error {
	if u.names[name] {
		return fmt.Errorf("%w: %s appears twice", ErrNotSnapshot, name)
	}
	u.names[name] = true
	return u.parents(name)
}

// parents makes every directory above name, refusing one that is a link (a file written through
// it would land where its name does not say) or not a directory.
func (u *unpacker) parents(name string) error {
	dir := path.Dir(name)
	if u.dirs[dir] {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(dir, "/") {
		cur = path.Join(cur, part)
		if u.dirs[cur] {
			continue
		}
		if err := u.realDir(cur, name); err != nil {
			return err
		}
	}
	return nil
}

// realDir makes dir, or accepts it when it is already a directory (not a link to one).
func (u *unpacker) realDir(dir, entry string) error {
	err := u.root.Mkdir(dir, 0o755)
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, entry, err)
	}
	if err != nil {
		st, err := u.root.Lstat(dir)
		switch {
		case err != nil:
			return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, entry, err)
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s is written through the symlink %s", ErrNotSnapshot, entry, dir)
		case !st.IsDir():
			return fmt.Errorf("%w: %s is inside %s, which is not a directory", ErrNotSnapshot, entry, dir)
		}
	}
	u.dirs[dir] = true
	return nil
}

// mkdir writes a directory entry.
func (u *unpacker) mkdir(name string) error {
	if err := u.claim(name); err != nil {
		return err
	}
	return u.realDir(name, name)
}

// symlink writes a link entry; its target may not climb above the archive's root.
func (u *unpacker) symlink(name, target string) error {
	if err := u.claim(name); err != nil {
		return err
	}
	if err := checkLink(name, target); err != nil {
		return err
	}
	d, base, err := u.at(name)
	if err == nil {
		err = d.Symlink(target, base)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
	}
	return nil
}

// file writes a regular file entry from r, which holds at most MaxFileBytes; declared is its
// size when the archive states it beforehand (tar), -1 otherwise, so that an oversize entry is
// refused before anything is read or written.
func (u *unpacker) file(name string, r io.Reader, declared int64) (err error) {
	if declared > u.lim.file {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrNotSnapshot, name, declared, u.lim.file)
	}
	if declared >= 0 && u.total+declared > u.lim.total {
		return fmt.Errorf("%w: more than %d bytes in all", ErrNotSnapshot, u.lim.total)
	}
	if err := u.claim(name); err != nil {
		return err
	}
	// O_EXCL: an entry never overwrites, nor writes through, anything already there (the kernel
	// does not follow a final link with O_CREAT|O_EXCL; O_NOFOLLOW says so once more).
	d, base, err := u.at(name)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
	}
	f, err := d.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, cerr)
		}
	}()
	buf := make([]byte, 64<<10)
	var n int64
	for {
		if err := u.interrupted(); err != nil {
			return err
		}
		k, rerr := r.Read(buf)
		if k > 0 {
			n += int64(k)
			u.total += int64(k)
			switch {
			case n > u.lim.file:
				return fmt.Errorf("%w: %s is more than %d bytes", ErrNotSnapshot, name, u.lim.file)
			case u.total > u.lim.total:
				return fmt.Errorf("%w: more than %d bytes in all", ErrNotSnapshot, u.lim.total)
			}
			if _, err := f.Write(buf[:k]); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if stop := u.interrupted(); stop != nil {
				return stop
			}
			return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, rerr)
		}
	}
	if declared >= 0 && n != declared {
		return fmt.Errorf("%w: %s: %d bytes of %d", ErrNotSnapshot, name, n, declared)
	}
	return nil
}

// skip charges the data of an entry that is not written (a tar header of another kind) to the
// total, so that skipping over it is bounded too.
func (u *unpacker) skip(size int64) error {
	if size > u.lim.file {
		return fmt.Errorf("%w: an entry of %d bytes, more than %d", ErrNotSnapshot, size, u.lim.file)
	}
	u.total += size
	if u.total > u.lim.total {
		return fmt.Errorf("%w: more than %d bytes in all", ErrNotSnapshot, u.lim.total)
	}
	return nil
}

// finish refuses an archive without meta.json.
func (u *unpacker) finish(form string) error {
	if st, err := u.root.Lstat(MetaFile); err != nil || !st.Mode().IsRegular() {
		return fmt.Errorf("%w: no %s in the %s", ErrNotSnapshot, MetaFile, form)
	}
	return nil
}

// ctxReader ends a read of r once ctx is done. A pipe or terminal read blocks in read(2) until
// data comes: the file's read deadline (the runtime poller) wakes it when the context ends; a
// reader without deadlines still stops before its next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, fmt.Errorf("%w: %w", ErrUnpackStopped, context.Cause(c.ctx))
	}
	n, err := c.r.Read(p)
	if err != nil && c.ctx.Err() != nil {
		return n, fmt.Errorf("%w: %w", ErrUnpackStopped, context.Cause(c.ctx))
	}
	return n, err
}

// openInput opens a snapshot file for reading, non-blocking (a FIFO without a writer yet must
// not hold the open), with its reads ended by ctx: a pipe (/dev/stdin) is read through the
// runtime poller, whose deadline wakes a blocked read.
func openInput(ctx context.Context, p string) (io.ReadCloser, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	return &input{ctxReader: ctxReader{ctx, f}, f: f, stop: stop}, nil
}

type input struct {
	ctxReader
	f    *os.File
	stop func() bool
}

func (i *input) Close() error {
	i.stop()
	return i.f.Close()
}
