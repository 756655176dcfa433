// Package host is the one read-only view of a machine that every check consumes.
//
// A Host is a directory tree laid out like a Linux root (sys/, proc/, dev/, etc/, boot/, usr/)
// plus the answers that are not files: RDMA netlink replies, the kernel log and a few process
// facts (effective uid, RLIMIT_MEMLOCK, which character devices open, which verbs libraries
// load). On a live machine the tree is "/" and the extras are asked of the kernel; in a snapshot
// the tree is an unpacked archive and the extras were recorded next to it. Checks cannot tell the
// two apart, which is what makes a snapshot analysis equal to a live one.
package host

import (
	"errors"
	"fmt"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"time"

	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// MaxFileSize bounds every file read through a Host. sysfs and procfs files the checks use are
// far smaller; a larger file is garbage (or an attack through a crafted snapshot) and is refused
// instead of being read into memory.
const MaxFileSize = 8 << 20

// ErrTooLarge is returned for files above MaxFileSize.
var ErrTooLarge = errors.New("file too large")

// Kind says where a Host's data comes from. It is reported, never branched on by checks.
type Kind string

// Host kinds.
const (
	KindLive     Kind = "live"
	KindSnapshot Kind = "snapshot"
	KindRoot     Kind = "root"
)

// Request is one netlink request (netlinkraw.Request).
type Request = netlinkraw.Request

// NetlinkConn exchanges netlink requests for raw replies (netlinkraw.Exchanger): a socket, a
// recorder or a replay of a snapshot.
type NetlinkConn = netlinkraw.Exchanger

// Host is a read-only machine view. Paths given to its methods are absolute paths as they would
// be on the machine ("/sys/class/infiniband"); the Host maps them under its root.
type Host struct {
	root  string
	kind  Kind
	nl    NetlinkConn
	dl    NetlinkConn
	enl   NetlinkConn
	dcb   NetlinkConn
	klog  func() ([]byte, error)
	facts func() (*Facts, error)
	// verbs answers VerbsDevices; by default the recorded facts' list.
	verbs func() ([]VerbsDevice, string, error)
	// observe, when set, is told of every read and query as it starts (tests).
	observe func(what string)
	// ethtool answers EthtoolStats (see ethtool.go).
	ethtool func(netdev string) (map[string]uint64, error)
	meta    Meta
	// readErrs replays read errors recorded in a snapshot.
	readErrs map[string]syscall.Errno
	// fsroot confines every read of a tree that is not the live "/" (a snapshot, --root): links
	// are resolved inside it and os.Root refuses whatever would still leave it.
	fsroot *os.Root
	// pending tracks reads and queries in progress, so that a run that hits its deadline can
	// say where it is blocked.
	pending *pendingOps
	// obs, when set, is told of every answer (see Observed): how `record` learns what to keep.
	obs Observer
}

// Meta describes where the data came from; it is copied into every report.
type Meta struct {
	Kind Kind `json:"kind"`
	// Source is the snapshot file or root directory, empty for a live host.
	Source string `json:"source,omitempty"`
	// Recorded is set for snapshots: who recorded them, when, and what could not be read.
	Recorded *RecordInfo `json:"recorded,omitempty"`
}

// Options build a Host from parts; New is used by the live and snapshot constructors and by tests.
type Options struct {
	Root    string
	Kind    Kind
	Netlink NetlinkConn
	// Devlink is a generic netlink (NETLINK_GENERIC) connection for devlink queries; nil means
	// none (a plain root, or a snapshot recorded without devlink answers).
	Devlink NetlinkConn
	// EthtoolNetlink is a generic netlink connection for ethtool netlink queries (FEC
	// statistics, module EEPROM); nil means none (a plain root, or a snapshot recorded without
	// them).
	EthtoolNetlink NetlinkConn
	// DCB is a NETLINK_ROUTE connection for DCB netlink queries (RTM_GETDCB: PFC, ETS, the APP
	// table); nil means none (a plain root, or a snapshot recorded without them).
	DCB NetlinkConn
	// KernelLog returns /dev/kmsg records (live, or as recorded); nil means none, except for a
	// KindRoot host, which then reads its tree's log files (TreeKernelLogs).
	KernelLog func() ([]byte, error)
	Facts     func() (*Facts, error)
	// VerbsDevices answers Host.VerbsDevices: each device's ibv_query_device limits and why the
	// list may be empty. Nil means the VerbsDevices and VerbsError recorded in Facts.
	VerbsDevices func() ([]VerbsDevice, string, error)
	// Observe, when set, is called with the description of every read and query the Host starts
	// (the text Pending reports), so that a test can prove what a run does not read.
	Observe func(what string)
	// Ethtool returns a netdev's driver statistics (ethtool -S); nil means not available.
	Ethtool func(netdev string) (map[string]uint64, error)
	// ReadErrors are errors a recorded host returned when its files were read (path -> errno),
	// replayed by ReadFile so that a check sees EINVAL or EACCES from a snapshot exactly as it
	// did live. Keys are real paths (symlinks resolved).
	ReadErrors map[string]syscall.Errno
	Meta       Meta
}

// New assembles a Host. Root must be an existing directory.
func New(o Options) (*Host, error) {
	abs, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("host root %q: %w", o.Root, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("host root: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("host root %q is not a directory", abs)
	}
	h := &Host{root: abs, kind: o.Kind, nl: o.Netlink, dl: o.Devlink, enl: o.EthtoolNetlink, dcb: o.DCB, klog: o.KernelLog, facts: o.Facts, verbs: o.VerbsDevices,
		observe: o.Observe, ethtool: o.Ethtool, meta: o.Meta, readErrs: o.ReadErrors, pending: &pendingOps{ops: map[int]PendingOp{}}}
	h.meta.Kind = o.Kind
	if abs != "/" {
		if h.fsroot, err = os.OpenRoot(abs); err != nil {
			return nil, fmt.Errorf("host root: %w", err)
		}
	}
	if h.nl != nil {
		h.nl = trackedConn{h.nl, h, "RDMA netlink request"}
	}
	if h.dl != nil {
		h.dl = trackedConn{h.dl, h, "devlink request"}
	}
	if h.enl != nil {
		h.enl = trackedConn{h.enl, h, "ethtool netlink request"}
	}
	if h.dcb != nil {
		h.dcb = trackedConn{h.dcb, h, "DCB netlink request"}
	}
	// A plain root without a KernelLog function reads the tree's log files (kernlog.go).
	if h.klog == nil && o.Kind != KindRoot {
		h.klog = func() ([]byte, error) { return nil, ErrNotRecorded }
	}
	if h.facts == nil {
		h.facts = func() (*Facts, error) { return nil, ErrNotRecorded }
	}
	if h.verbs == nil {
		h.verbs = func() ([]VerbsDevice, string, error) {
			f, err := h.facts()
			if err != nil {
				return nil, "", err
			}
			return f.VerbsDevices, f.VerbsError, nil
		}
	}
	if h.ethtool == nil {
		h.ethtool = func(n string) (map[string]uint64, error) {
			return nil, fmt.Errorf("ethtool -S %s: %w", n, ErrNotRecorded)
		}
	}
	return h, nil
}

// ErrNotRecorded means a snapshot or plain root holds no answer for a non-file source.
var ErrNotRecorded = netlinkraw.ErrNotRecorded

// Root is the directory that stands for "/". Libraries that take a mount root or chroot
// (procfs, ghw) are given Root()+"/sys" and so on, never "/" directly.
func (h *Host) Root() string { return h.root }

// Kind says whether this is a live host, a snapshot or a plain root directory.
func (h *Host) Kind() Kind { return h.kind }

// Checks ask a host what it can do, never what it is (Kind is reported, not branched on):

// Repeatable says whether reading the same file or table again can show a change (a live host);
// a snapshot or tree holds one reading. Checks that judge growth over --interval ask this
// through checks.Env.SecondReading.
func (h *Host) Repeatable() bool { return h.kind == KindLive }

// CapturedAt is when the host's state was taken: now for a live host, the recording's time for a
// snapshot; zero for a --root tree, whose copy time nobody recorded.
func (h *Host) CapturedAt(now time.Time) time.Time {
	switch {
	case h.kind == KindLive:
		return now
	case h.meta.Recorded != nil:
		return h.meta.Recorded.Time
	}
	return time.Time{}
}

// AskingMayLoadModules says whether a question can change the host: on a live kernel that loads
// modules, opening an RDMA netlink socket makes it load ib_core (MODULE_ALIAS_NET_PF_PROTO in
// drivers/infiniband/core/netlink.c). A recording's answers change nothing.
func (h *Host) AskingMayLoadModules() bool { return h.kind == KindLive }

// SeesOwnResources says whether this process's own verbs resources (the probes' QPs and CQs)
// can appear in the host's resource tables: only live.
func (h *Host) SeesOwnResources() bool { return h.kind == KindLive }

// RefusalsAreThisRun says whether a permission refusal comes from this run's own privileges
// (live: run as root to lift it) rather than from a recording, which replays what it was told.
func (h *Host) RefusalsAreThisRun() bool { return h.kind == KindLive }

// Meta is copied into reports.
func (h *Host) Meta() Meta { return h.meta }

// Path maps an absolute host path under the root lexically. Reads never use it on a tree: they
// resolve links inside the root first (see open).
func (h *Host) Path(p string) string {
	clean := path.Clean("/" + p)
	if h.root == "/" {
		return clean
	}
	return filepath.Join(h.root, filepath.FromSlash(clean))
}

// ReadFile reads a whole file, at most MaxFileSize bytes. Errors name the host path. In a tree or
// snapshot only regular files inside the tree are read; a live host's files are read as they are
// (a firmware-backed sysfs read may block: the run's deadline covers it, see Pending).
func (h *Host) ReadFile(p string) ([]byte, error) {
	b, err := h.readFile(p)
	if h.obs != nil {
		h.obs.FileRead(p, b, err)
	}
	return b, err
}

func (h *Host) readFile(p string) ([]byte, error) {
	if len(h.readErrs) > 0 {
		if real, err := h.realpath(p); err == nil {
			if en, ok := h.readErrs[real]; ok {
				return nil, &fs.PathError{Op: "read", Path: p, Err: en}
			}
		}
	}
	defer h.begin("read " + p)()
	if h.fsroot == nil {
		return readLive(h.Path(p), p)
	}
	f, err := h.open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, p)
}

func (h *Host) open(p string) (*os.File, error) {
	if h.fsroot == nil {
		f, err := os.Open(h.Path(p))
		if err != nil {
			return nil, h.wrap(p, err)
		}
		return f, nil
	}
	real, err := h.resolve(p, "open")
	if err != nil {
		return nil, err
	}
	if h.kind == KindLive {
		// Only tests build a live host on a directory; they need its reads to behave as live ones.
		f, err := h.fsroot.Open(rel(real))
		if err != nil {
			return nil, h.wrap(p, err)
		}
		return f, nil
	}
	return openRegularIn(h.fsroot, rel(real), p)
}

// ReadString reads a sysfs-style file and trims surrounding white space.
func (h *Host) ReadString(p string) (string, error) {
	b, err := h.ReadFile(p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadDir lists the names in a directory, sorted.
func (h *Host) ReadDir(p string) ([]string, error) {
	names, err := h.readDir(p)
	if h.obs != nil && err == nil {
		h.obs.Listed(p)
	}
	return names, err
}

func (h *Host) readDir(p string) ([]string, error) {
	defer h.begin("list " + p)()
	var ents []fs.DirEntry
	if h.fsroot == nil {
		var err error
		if ents, err = os.ReadDir(h.Path(p)); err != nil {
			return nil, h.wrap(p, err)
		}
	} else {
		real, err := h.resolve(p, "open")
		if err != nil {
			return nil, err
		}
		// Non-blocking, so that a FIFO where a directory should be is refused, not waited on.
		d, err := h.fsroot.OpenFile(rel(real), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
		if err != nil {
			return nil, h.wrap(p, err)
		}
		defer d.Close()
		if ents, err = d.ReadDir(-1); err != nil {
			return nil, h.wrap(p, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// Readlink returns a symlink's target as stored (sysfs links are relative).
func (h *Host) Readlink(p string) (string, error) {
	if h.obs != nil {
		h.obs.Touched(p)
	}
	if h.fsroot == nil {
		t, err := os.Readlink(h.Path(p))
		if err != nil {
			return "", h.wrap(p, err)
		}
		return t, nil
	}
	name, err := h.resolveParent(p)
	if err != nil {
		return "", err
	}
	t, err := h.fsroot.Readlink(name)
	if err != nil {
		return "", h.wrap(p, err)
	}
	return t, nil
}

// Lstat describes a path without following a final symlink.
func (h *Host) Lstat(p string) (fs.FileInfo, error) {
	if h.obs != nil {
		h.obs.Touched(p)
	}
	if h.fsroot == nil {
		st, err := os.Lstat(h.Path(p))
		if err != nil {
			return nil, h.wrap(p, err)
		}
		return st, nil
	}
	name, err := h.resolveParent(p)
	if err != nil {
		return nil, err
	}
	st, err := h.fsroot.Lstat(name)
	if err != nil {
		return nil, h.wrap(p, err)
	}
	return st, nil
}

// resolveParent resolves every link but the last component of p inside the tree.
func (h *Host) resolveParent(p string) (string, error) {
	clean := path.Clean("/" + p)
	if clean == "/" {
		return ".", nil
	}
	dir, err := h.realpath(path.Dir(clean))
	if err != nil {
		return "", renamePathErr(err, "lstat", p)
	}
	return rel(path.Join(dir, path.Base(clean))), nil
}

// resolve is Realpath for a read of p: its errors name p, the path the check asked for.
func (h *Host) resolve(p, op string) (string, error) {
	real, err := h.realpath(p)
	if err != nil {
		return "", renamePathErr(err, op, p)
	}
	return real, nil
}

// Exists reports whether a path exists (following symlinks, inside the tree).
func (h *Host) Exists(p string) bool {
	if h.obs != nil {
		h.obs.Touched(p)
	}
	if h.fsroot == nil {
		_, err := os.Stat(h.Path(p))
		return err == nil
	}
	_, err := h.realpath(p)
	return err == nil
}

// Realpath resolves every symlink in p inside the host's tree and returns the host path
// ("/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0"). An absolute link means the tree's own
// "/"; a link that climbs above it is refused (ErrEscapes, naming the link); a loop or more than
// 40 hops is an error, as in the kernel.
func (h *Host) Realpath(p string) (string, error) {
	if h.obs != nil {
		h.obs.Touched(p)
	}
	return h.realpath(p)
}

func (h *Host) realpath(p string) (string, error) {
	parts := strings.Split(strings.TrimPrefix(path.Clean("/"+p), "/"), "/")
	cur := "/"
	hops := 0
	link := "" // the last link followed, named when its target escapes
	for len(parts) > 0 {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			if cur == "/" {
				if link != "" {
					return "", &fs.PathError{Op: "realpath", Path: p, Err: fmt.Errorf("%w: %s", ErrEscapes, link)}
				}
				continue
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		st, err := h.lstatReal(next)
		if err != nil {
			return "", h.wrap(next, err)
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		hops++
		if hops > 40 {
			return "", &fs.PathError{Op: "realpath", Path: p, Err: errors.New("too many levels of symbolic links")}
		}
		t, err := h.readlinkReal(next)
		if err != nil {
			return "", h.wrap(next, err)
		}
		link = next + " -> " + t
		if path.IsAbs(t) {
			// An absolute link means the host's own "/", which for a plain root directory is the
			// root, never the analysing machine's; so resolution can never leave the tree.
			cur = "/"
			t = strings.TrimPrefix(t, "/")
		}
		parts = append(strings.Split(t, "/"), parts...)
	}
	return cur, nil
}

// lstatReal and readlinkReal act on a path whose directories are already resolved; in a tree they
// go through os.Root, so that a link swapped in meanwhile still cannot lead outside.
func (h *Host) lstatReal(p string) (fs.FileInfo, error) {
	if h.fsroot == nil {
		return os.Lstat(p)
	}
	return h.fsroot.Lstat(rel(p))
}

func (h *Host) readlinkReal(p string) (string, error) {
	if h.fsroot == nil {
		return os.Readlink(p)
	}
	return h.fsroot.Readlink(rel(p))
}

// Netlink returns the RDMA netlink connection, or nil when this host has none (a plain root
// directory without recorded answers).
func (h *Host) Netlink() NetlinkConn { return h.nl }

// Devlink returns the generic netlink connection devlink is asked through (internal/devlink
// resolves the family on it), or nil when this host has none.
func (h *Host) Devlink() NetlinkConn { return h.dl }

// Ethtool returns the generic netlink connection ethtool netlink is asked through
// (internal/ethtoolnl resolves the family on it), or nil when this host has none.
func (h *Host) Ethtool() NetlinkConn { return h.enl }

// DCB is the DCB netlink (rtnetlink RTM_GETDCB) connection, nil when the source has none.
func (h *Host) DCB() NetlinkConn { return h.dcb }

// Facts returns what the host is that no file says: effective uid, memlock limit, openable
// character devices, loadable verbs libraries. The verbs devices' limits are not part of it
// (VerbsDevices and VerbsError are always empty here): asking them loads libibverbs and opens
// every device, which only the checks that judge them pay for, through VerbsDevices.
func (h *Host) Facts() (*Facts, error) {
	defer h.begin("query process facts")()
	f, err := h.facts()
	if f == nil || err != nil {
		return f, err
	}
	c := *f
	c.VerbsDevices, c.VerbsError = nil, ""
	if h.kind == KindRoot {
		c.SourceLacks = h.treeLacks()
	}
	return &c, nil
}

// VerbsDevices returns the limits ibv_query_device reported for each device libibverbs could
// open, and, when the list is empty or was not queried, why (libibverbs missing, ib_core not
// loaded). A live host loads libibverbs and opens every device on the first call only; a
// snapshot answers what was recorded. The error is set when the host has no facts at all.
func (h *Host) VerbsDevices() ([]VerbsDevice, string, error) {
	defer h.begin("query verbs devices (libibverbs)")()
	return h.verbs()
}

func (h *Host) wrap(p string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Report the host path, not the snapshot's temporary directory.
		return &fs.PathError{Op: pe.Op, Path: p, Err: pe.Err}
	}
	return fmt.Errorf("%s: %w", p, err)
}
