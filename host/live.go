package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Live returns the running machine. nl (RDMA netlink), dl (generic netlink, for devlink) and enl
// (generic netlink, for ethtool) may be nil when no socket could be opened; their absence is
// then reported by the checks that need them.
func Live(nl, dl, enl NetlinkConn) (*Host, error) {
	// Facts are read once per run: several checks ask, and each read opens the uverbs nodes and
	// scans the library directories. The verbs query (dlopen of libibverbs and its providers, a
	// ucontext per device) is separate, so that only the checks that judge the devices' limits
	// pay for it.
	facts := sync.OnceValue(func() *Facts { return LiveFacts("/") })
	verbs := sync.OnceValues(func() ([]VerbsDevice, string) {
		if !IBCorePresent("/") {
			// libibverbs lists devices over RDMA netlink (rdma-core libibverbs/ibdev_nl.c),
			// and creating that socket loads ib_core: not done, the host stays as it is.
			return nil, "not queried: ib_core is not loaded, and listing verbs devices would load it"
		}
		return queryVerbsDevices()
	})
	return New(Options{
		Root:           "/",
		Kind:           KindLive,
		Netlink:        nl,
		Devlink:        dl,
		EthtoolNetlink: enl,
		KernelLog:      func() ([]byte, error) { return ReadKmsg("/dev/kmsg") },
		Ethtool:        LiveEthtoolStats,
		Facts:          func() (*Facts, error) { return facts(), nil },
		VerbsDevices: func() ([]VerbsDevice, string, error) {
			d, why := verbs()
			return d, why, nil
		},
	})
}

// IBCorePresent reports whether ib_core is loaded or built in under root: /sys/module/ib_core
// (a loaded module, or a built-in one with parameters, as ib_core has in mad.c) or the
// infiniband class it registers. Without it, creating a NETLINK_RDMA socket (rdmadiag's own, or
// libibverbs' device listing) makes the kernel load ib_core
// (MODULE_ALIAS_NET_PF_PROTO(PF_NETLINK, NETLINK_RDMA) in drivers/infiniband/core/netlink.c), and
// a diagnosis must not change the host it judges.
func IBCorePresent(root string) bool {
	for _, p := range []string{"sys/module/ib_core", "sys/class/infiniband"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return true
		}
	}
	return false
}

// ReadKmsg reads every record currently in the kernel ring buffer through /dev/kmsg without
// blocking and without consuming anything (each opener has its own read position). It returns the
// records as the kernel formats them.
func ReadKmsg(dev string) ([]byte, error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dev, Err: err}
	}
	defer unix.Close(fd)
	var out []byte
	buf := make([]byte, 8192) // one record is at most about 1 KiB plus dictionary
	for len(out) < MaxFileSize {
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EAGAIN:
			return out, nil
		case err == unix.EPIPE:
			// The record we were about to read was overwritten; the next read continues.
			continue
		case err == unix.EINTR:
			continue
		case err != nil:
			return out, &os.PathError{Op: "read", Path: dev, Err: err}
		case n == 0:
			return out, nil
		}
		out = append(out, buf[:n]...)
	}
	return out, nil
}

// readLive reads a file of the running machine with plain system calls: open, read until end of
// file, close. A run reads thousands of sysfs files (a RoCE port's GID table alone is hundreds),
// and os.Open adds to each an epoll registration attempt, two fcntl calls and a finalizer, which
// cost more than the read itself, notably under emulation. Errors are the *fs.PathError os.Open
// and Read give, naming display; at most MaxFileSize bytes are read.
func readLive(name, display string) ([]byte, error) {
	var fd int
	err := retryEINTR(func() (err error) { fd, err = unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0); return err })
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
		b = b[:len(b)+n]
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

// LiveFacts computes Facts for the running process. root is "/" except in tests.
func LiveFacts(root string) *Facts {
	t := osTree(root)
	f := &Facts{EUID: os.Geteuid()}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err == nil {
		f.Hostname = unix.ByteSliceToString(uts.Nodename[:])
		f.KernelRelease = unix.ByteSliceToString(uts.Release[:])
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err == nil {
		f.MemlockSoft, f.MemlockHard = rl.Cur, rl.Max
	}
	f.CharDevs = liveCharDevs(filepath.Join(root, "dev/infiniband"), openRW)
	f.Libraries = FindLibraries(t)
	f.InContainer = InContainer(t)
	return f
}

// Tree is the part of a Host that library and container detection read; a snapshot or --root
// tree answers through its confined reads, the live process through the OS.
type Tree interface {
	Exists(p string) bool
	ReadDir(p string) ([]string, error)
	ReadFile(p string) ([]byte, error)
}

// osTree reads the running machine directly (root is "/" except in tests).
type osTree string

func (t osTree) Exists(p string) bool {
	_, err := os.Stat(filepath.Join(string(t), p))
	return err == nil
}

func (t osTree) ReadDir(p string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(string(t), p))
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, err
}

func (t osTree) ReadFile(p string) ([]byte, error) { return os.ReadFile(filepath.Join(string(t), p)) }

// openRW opens a device node read-write and closes it at once.
func openRW(p string) error {
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	// Opening uverbs allocates nothing until a context is created; closing at once leaves the
	// device as it was.
	return unix.Close(fd)
}

func liveCharDevs(dir string, open func(string) error) []CharDev {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []CharDev
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue
		}
		cd := CharDev{Path: "/dev/infiniband/" + e.Name(), Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev)),
			Mode: os.FileMode(st.Mode & 0o777).String()}
		// Only the verbs nodes are opened. Opening issmN makes the port advertise IsSM to the
		// subnet (ib_umad_sm_open(), drivers/infiniband/core/user_mad.c), a change to the fabric;
		// umad and rdma_cm nodes are judged by their presence alone.
		opens := strings.HasPrefix(e.Name(), "uverbs")
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFCHR:
			cd.OpenError = "not a character device"
		case opens:
			if err := open(p); err != nil {
				cd.OpenError = errnoName(err)
			}
		}
		out = append(out, cd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func errnoName(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if n := unix.ErrnoName(en); n != "" {
			return fmt.Sprintf("%s (%s)", n, en.Error())
		}
	}
	return err.Error()
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
