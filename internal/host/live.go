package host

import (
	"io/fs"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// readLive reads a file of the running machine with plain system calls: open, read until end of
// file, close. A run reads thousands of sysfs files (a RoCE port's GID table alone is hundreds),
// and os.Open adds to each an epoll registration attempt, two fcntl calls and a finalizer, which
// cost more than the read itself, notably under emulation. Errors are the *fs.PathError os.Open
// and Read give, naming display; at most MaxFileSize bytes are read.
func readLive(name, display string) ([]byte, error) {
	return readLiveAt(unix.AT_FDCWD, name, display, false)
}

// readLiveAt is readLive relative to an open directory (openat): a file of a directory already
// open costs one path component to look up instead of the whole walk from /. With attr, the file
// is a sysfs text attribute: its show() output is produced whole on the first read
// (fs/kernfs/file.c, kernfs_seq_show), so a read shorter than asked is the end of the file and
// the read that would return 0 is saved.
func readLiveAt(dirfd int, name, display string, attr bool) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: display, Err: err}
	}
	defer unix.Close(fd)
	// sysfs attributes are at most a page; anything larger grows the buffer.
	b := make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			if len(b) > MaxFileSize {
				return nil, &fs.PathError{Op: "read", Path: display, Err: ErrTooLarge}
			}
			b = append(b, 0)[:len(b)]
		}
		var n int
		err := retryEINTR(func() (err error) { n, err = unix.Read(fd, b[len(b):cap(b)]); return err })
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: display, Err: err}
		}
		if n == 0 {
			break
		}
		asked := cap(b) - len(b)
		b = b[:len(b)+n]
		if attr && n < asked {
			break
		}
	}
	if len(b) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: display, Err: ErrTooLarge}
	}
	return b, nil
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// Tree is the part of a Host that library and container detection read; a snapshot or --root
// tree answers through its confined reads, the live process through the OS.
type Tree interface {
	Exists(p string) bool
	ReadDir(p string) ([]string, error)
	ReadFile(p string) ([]byte, error)
}

// libDirs are where Debian, Ubuntu, RHEL and SUSE put libibverbs; the loader's cache is not
// parsed because these cover every distribution rdma-core ships for.
var libDirs = []string{
	"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib64", "/lib64", "/usr/lib", "/lib", "/usr/local/lib",
}

// FindLibraries looks for libibverbs and its providers where the distributions install them.
func FindLibraries(root Tree) []Library {
	var out []Library
	lib := Library{Name: "libibverbs.so.1"}
	for _, d := range libDirs {
		if root.Exists(d + "/" + lib.Name) {
			lib.Path = d + "/" + lib.Name
			break
		}
	}
	out = append(out, lib)
	// Providers live in <libdir>/libibverbs/lib<name>-rdmav<abi>.so.
	seen := map[string]bool{}
	for _, d := range libDirs {
		ents, err := root.ReadDir(d + "/libibverbs")
		if err != nil {
			continue
		}
		for _, n := range ents {
			if !strings.HasPrefix(n, "lib") || !strings.Contains(n, "-rdmav") || seen[n] {
				continue
			}
			seen[n] = true
			out = append(out, Library{Name: n, Path: d + "/libibverbs/" + n})
		}
	}
	sort.SliceStable(out[1:], func(i, j int) bool { return out[1+i].Name < out[1+j].Name })
	return out
}

// InContainer guesses whether the tree is a container's view (/.dockerenv, /run/.containerenv,
// container cgroup names of PID 1).
func InContainer(root Tree) bool {
	for _, p := range []string{"/.dockerenv", "/run/.containerenv"} {
		if root.Exists(p) {
			return true
		}
	}
	b, err := root.ReadFile("/proc/1/cgroup")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "docker") || strings.Contains(s, "kubepods") || strings.Contains(s, "containerd") || strings.Contains(s, "libpod")
}
