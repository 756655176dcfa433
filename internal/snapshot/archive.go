// Package snapshot records a host into a snapshot and opens snapshots as hosts.
//
// An unpacked snapshot is a directory:
//
//	meta.json      format version, tool version, time, redaction, what could not be read
//	facts.json     host.Facts of the recorded machine
//	kmsg           the kernel log in /dev/kmsg record format
//	netlink/       RDMA netlink replies, one file per request key (see internal/nldev)
//	devlink/       devlink generic netlink replies, keyed the same way (see internal/devlink)
//	root/          the allow-listed files, laid out as on the machine, symlinks kept
//
// On disk a snapshot is a gzip-compressed tar archive, because sysfs paths contain ':' (PCI
// addresses), which Go module zips reject; the repository's fixtures are the same trees as text
// archives (txtar.go), so that a change to one is reviewed as a diff.
package snapshot

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ErrNotSnapshot is wrapped by every error about a file or directory that is not a usable
// snapshot; the CLI maps it to exit code 3.
var ErrNotSnapshot = errors.New("not a usable rdmadiag snapshot")

// Unpack extracts a tar.gz snapshot into dir, which must be empty or absent. It refuses absolute
// paths, "..", links whose targets leave dir, a name given twice, hard links, devices and content
// beyond MaxEntries, MaxFileBytes and MaxTotalBytes, and it never writes outside dir nor through a
// link.
func Unpack(r io.Reader, dir string) error { return UnpackContext(context.Background(), r, dir) }

// UnpackContext is Unpack ended by ctx: once it is done the unpack stops within one chunk of
// data, with an error wrapping ErrUnpackStopped and the context's cause.
func UnpackContext(ctx context.Context, r io.Reader, dir string) error {
	return unpackTar(ctx, r, dir, defaultLimits)
}

func unpackTar(ctx context.Context, r io.Reader, dir string, lim limits) error {
	zr, err := gzip.NewReader(ctxReader{ctx, r})
	if err != nil {
		if errors.Is(err, ErrUnpackStopped) {
			return err
		}
		return fmt.Errorf("%w: not gzip-compressed: %v", ErrNotSnapshot, err)
	}
	defer zr.Close()
	u, err := newUnpacker(ctx, dir, lim)
	if err != nil {
		return err
	}
	defer u.Close()
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if stop := u.interrupted(); stop != nil {
				return stop
			}
			return fmt.Errorf("%w: truncated or corrupt archive: %v", ErrNotSnapshot, err)
		}
		if err := u.admit(); err != nil {
			return err
		}
		name, err := safeName(hdr.Name)
		if err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg || name == "" {
			// Data the reader skips over (a directory or link may declare a size) is bounded
			// like the data written.
			if err := u.skip(hdr.Size); err != nil {
				return err
			}
		}
		if name == "" {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = u.mkdir(name)
		case tar.TypeReg:
			err = u.file(name, tr, hdr.Size)
		case tar.TypeSymlink:
			err = u.symlink(name, hdr.Linkname)
		default:
			err = fmt.Errorf("%w: %s has unsupported type %q (only files, directories and symlinks)", ErrNotSnapshot, name, string(hdr.Typeflag))
		}
		if err != nil {
			return err
		}
	}
	return u.finish("archive")
}

// safeName cleans an archive path and refuses anything that could land outside the root.
func safeName(n string) (string, error) {
	if n == "" || strings.HasPrefix(n, "/") || strings.Contains(n, "\\") || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("%w: unsafe path %q", ErrNotSnapshot, n)
	}
	for _, part := range strings.Split(strings.TrimSuffix(n, "/"), "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: path %q escapes the snapshot", ErrNotSnapshot, n)
		}
	}
	c := path.Clean(n)
	if c == "." {
		return "", nil
	}
	return c, nil
}

// checkLink refuses absolute links and relative links that climb above the archive root.
func checkLink(name, target string) error {
	if target == "" || path.IsAbs(target) || strings.ContainsRune(target, 0) {
		return fmt.Errorf("%w: link %s -> %q points outside the snapshot", ErrNotSnapshot, name, target)
	}
	resolved := path.Join(path.Dir(name), target)
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("%w: link %s -> %q points outside the snapshot", ErrNotSnapshot, name, target)
	}
	return nil
}

// sortedEntries is every path below dir (not dir itself), sorted: the order both archive forms
// store a tree in, so that the same tree always gives the same bytes.
func sortedEntries(dir string) ([]string, error) {
	var entries []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			entries = append(entries, p)
		}
		return nil
	})
	sort.Strings(entries)
	return entries, err
}

// fits says whether a tree of these entries would unpack within lim.
func fits(dir string, entries []string, lim limits) error {
	if len(entries) > lim.entries {
		return fmt.Errorf("%s: %d entries, more than the %d a snapshot may hold", dir, len(entries), lim.entries)
	}
	var total int64
	for _, p := range entries {
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if st.Size() > lim.file {
			return fmt.Errorf("%s: %d bytes, more than the %d a snapshot's file may hold", p, st.Size(), lim.file)
		}
		if total += st.Size(); total > lim.total {
			return fmt.Errorf("%s: more than the %d bytes a snapshot may hold", dir, lim.total)
		}
	}
	return nil
}

// Pack writes dir as a gzip-compressed tar archive with sorted entries and fixed times and owners,
// so that recording the same data twice gives the same bytes.
// A tree beyond what Unpack accepts is refused before anything is written: what record writes,
// check reads.
func Pack(w io.Writer, dir string) error { return pack(w, dir, defaultLimits) }

func pack(w io.Writer, dir string, lim limits) error {
	entries, err := sortedEntries(dir)
	if err != nil {
		return err
	}
	if err := fits(dir, entries, lim); err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(w, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(zw)
	for _, p := range entries {
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: rel, Mode: 0o644, Format: tar.FormatPAX}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, t, 0o777
		case st.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, rel+"/", 0o755
		case st.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, st.Size()
		default:
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
