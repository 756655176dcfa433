// Package live acquires what a running machine answers that no file says: the kernel log
// through /dev/kmsg, the process facts, the verbs devices' limits through libibverbs, the
// driver statistics through the ethtool ioctl. It builds the live host.Host from them, so the
// host package itself only reads trees and stays the same for a live machine, a snapshot and a
// --root directory.
package live

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// Live returns the running machine. nl (RDMA netlink), dl (generic netlink, for devlink), enl
// (generic netlink, for ethtool) and dcb (rtnetlink, for DCB) may be nil when no socket could be
// opened; their absence is then reported by the checks that need them.
func Live(nl, dl, enl, dcb host.NetlinkConn) (*host.Host, error) {
	// host.Facts are read once per run: several checks ask, and each read opens the uverbs nodes and
	// scans the library directories. The verbs query (dlopen of libibverbs and its providers, a
	// ucontext per device) is separate, so that only the checks that judge the devices' limits
	// pay for it.
	facts := sync.OnceValue(func() *host.Facts { return LiveFacts("/") })
	verbs := sync.OnceValues(func() ([]host.VerbsDevice, string) {
		if !IBCorePresent("/") {
			// libibverbs lists devices over RDMA netlink (rdma-core libibverbs/ibdev_nl.c),
			// and creating that socket loads ib_core: not done, the host stays as it is.
			return nil, "not queried: ib_core is not loaded, and listing verbs devices would load it"
		}
		return queryVerbsDevices()
	})
	return host.New(host.Options{
		Root:           "/",
		Kind:           host.KindLive,
		Netlink:        nl,
		Devlink:        dl,
		EthtoolNetlink: enl,
		DCB:            dcb,
		KernelLog:      func() ([]byte, error) { return ReadKmsg("/dev/kmsg") },
		Ethtool:        EthtoolStats,
		Facts:          func() (*host.Facts, error) { return facts(), nil },
		VerbsDevices: func() ([]host.VerbsDevice, string, error) {
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
	for len(out) < host.MaxFileSize {
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

// LiveFacts computes host.Facts for the running process. root is "/" except in tests.
func LiveFacts(root string) *host.Facts {
	t := osTree(root)
	f := &host.Facts{EUID: os.Geteuid()}
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
	f.Libraries = host.FindLibraries(t)
	f.InContainer = host.InContainer(t)
	if initialUserNS(filepath.Join(root, "proc/self/uid_map")) {
		f.CapEff = capEff(filepath.Join(root, "proc/self/status"))
	}
	return f
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

func liveCharDevs(dir string, open func(string) error) []host.CharDev {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []host.CharDev
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue
		}
		cd := host.CharDev{Path: "/dev/infiniband/" + e.Name(), Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev)),
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

// initialUserNS says whether the process runs in the initial user namespace, whose uid_map is
// the identity "0 0 4294967295" (user_namespaces(7)). Elsewhere (unshare -r, rootless podman)
// its capabilities do not count for the kernel log, whose check is capable(CAP_SYSLOG) against
// the initial namespace (kernel/printk/printk.c, check_syslog_permissions): CapEff is then left
// unknown rather than read as having CAP_SYSLOG.
func initialUserNS(uidMap string) bool {
	b, err := os.ReadFile(uidMap)
	if err != nil {
		return false
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return len(lines) == 1 && slices.Equal(strings.Fields(lines[0]), []string{"0", "0", "4294967295"})
}

// capEff reads the effective capability set from a proc(5) status file ("CapEff:\t<hex>");
// empty when it cannot be read.
func capEff(status string) string {
	b, err := os.ReadFile(status)
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
