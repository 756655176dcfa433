package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/tempdir"
)

// Names inside an unpacked snapshot.
const (
	MetaFile   = "meta.json"
	FactsFile  = "facts.json"
	KmsgFile   = "kmsg"
	NetlinkDir = "netlink"
	DevlinkDir = "devlink"
	ErrorsFile = "read-errors.json"
	EthtoolDir = "ethtool"
	// EthtoolNetlinkDir holds ethtool generic netlink replies (FEC, link modes, module EEPROM),
	// keyed like devlink/.
	EthtoolNetlinkDir = "ethtool-netlink"
	// DCBNetlinkDir holds DCB netlink (rtnetlink RTM_GETDCB) replies: PFC, ETS, the APP table.
	DCBNetlinkDir = "dcb-netlink"
	RootDir       = "root"
	FormatV1      = "rdmadiag-snapshot/1"
	ArchiveExts   = ".tar.gz, .tgz"
)

// Meta is meta.json.
type Meta struct {
	Format string `json:"format"`
	host.RecordInfo
	// Synthetic is set on hand-built fixtures; Sources says where each value comes from.
	Synthetic bool     `json:"synthetic,omitempty"`
	Sources   []string `json:"sources,omitempty"`
	// Description says what the snapshot shows and how it was produced.
	Description string `json:"description,omitempty"`
}

// Open opens a snapshot file (.tar.gz, or .txtar for synthetic fixtures) or an unpacked snapshot
// directory. For a file it unpacks
// into a fresh temporary directory; cleanup removes it and must be called when done.
func Open(p string) (h *host.Host, cleanup func(), err error) {
	return OpenContext(context.Background(), p)
}

// unpackGrace is how long OpenContext waits, once ctx is done, for the unpack to stop before it
// returns without it: the unpack stops within a chunk of data, so only a read that nothing wakes
// (a hung file system) outlasts it.
const unpackGrace = 300 * time.Millisecond

// OpenContext is Open ended by ctx (the run's deadline, a signal), even while a read of the file
// blocks (a pipe whose writer has not written yet): it then returns an error wrapping
// ErrUnpackStopped and the context's cause. The temporary directory is removed on every path
// that returns, and is held in internal/tempdir's registry until then, for the paths that exit.
func OpenContext(ctx context.Context, p string) (h *host.Host, cleanup func(), err error) {
	cleanup = func() {}
	st, err := os.Stat(p)
	if err != nil {
		return nil, cleanup, fmt.Errorf("%w: %v", ErrNotSnapshot, err)
	}
	if st.IsDir() {
		h, err := openDir(p, p)
		return h, cleanup, err
	}
	tmp, remove, err := tempdir.Make("rdmadiag-snapshot-")
	if err != nil {
		return nil, cleanup, err
	}
	done := make(chan error, 1)
	go func() { done <- UnpackFileContext(ctx, p, tmp) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done:
		case <-time.After(unpackGrace):
			// Left behind in a read: it removes the directory itself when that read returns,
			// for removing it now would only let the unpack make it again.
			go func() {
				<-done
				remove()
			}()
			return nil, cleanup, fmt.Errorf("%s: %w: %w", p, ErrUnpackStopped, context.Cause(ctx))
		}
	}
	if ctx.Err() != nil && !errors.Is(err, ErrUnpackStopped) {
		// The input may have ended because the same signal ended its writer: the snapshot was
		// not read, whatever the unpack made of it.
		err = fmt.Errorf("%w: %w", ErrUnpackStopped, context.Cause(ctx))
	}
	if err != nil {
		remove()
		return nil, cleanup, fmt.Errorf("%s: %w", p, err)
	}
	h, err = openDir(tmp, p)
	if err != nil {
		remove()
		return nil, cleanup, err
	}
	return h, remove, nil
}

// OpenUnpacked opens a snapshot that Unpack or UnpackFile wrote into dir, naming it source (the
// file it came from), as Open names the file it unpacked: for callers that unpack a snapshot once
// and judge it many times (the tests, over every fixture). Nothing is written into dir.
func OpenUnpacked(dir, source string) (*host.Host, error) { return openDir(dir, source) }

func openDir(dir, source string) (*host.Host, error) {
	// Every file of the snapshot is read inside it: a crafted directory may hold links that lead
	// out, or FIFOs that would block a read forever.
	sr, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", source, ErrNotSnapshot, err)
	}
	read := func(name string) ([]byte, error) { return host.ReadRegularIn(sr, name, name) }
	isDir := func(name string) bool {
		st, err := sr.Lstat(name)
		return err == nil && st.IsDir()
	}
	mb, err := read(MetaFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", source, ErrNotSnapshot, err)
	}
	var m Meta
	if err := json.Unmarshal(mb, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: %s: %v", source, ErrNotSnapshot, MetaFile, err)
	}
	if m.Format != FormatV1 {
		return nil, fmt.Errorf("%s: %w: format %q, this rdmadiag reads %q", source, ErrNotSnapshot, m.Format, FormatV1)
	}
	root := filepath.Join(dir, RootDir)
	if !isDir(RootDir) {
		return nil, fmt.Errorf("%s: %w: no %s/ directory", source, ErrNotSnapshot, RootDir)
	}
	ri := m.RecordInfo
	var nl host.NetlinkConn
	if isDir(NetlinkDir) {
		nl = netlinkraw.NewReplay(filepath.Join(dir, NetlinkDir))
	}
	// devlink/ holds generic netlink replies keyed the same way, the family resolution included
	// (see internal/devlink), so the recorded family id is the one replayed.
	var dl host.NetlinkConn
	if isDir(DevlinkDir) {
		dl = netlinkraw.NewReplay(filepath.Join(dir, DevlinkDir))
	}
	var enl host.NetlinkConn
	if isDir(EthtoolNetlinkDir) {
		enl = netlinkraw.NewReplay(filepath.Join(dir, EthtoolNetlinkDir))
	}
	var dcb host.NetlinkConn
	if isDir(DCBNetlinkDir) {
		dcb = netlinkraw.NewReplay(filepath.Join(dir, DCBNetlinkDir))
	}
	readErrs, err := loadReadErrors(read)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", source, ErrNotSnapshot, err)
	}
	return host.New(host.Options{
		Root:           root,
		Kind:           host.KindSnapshot,
		ReadErrors:     readErrs,
		Netlink:        nl,
		Devlink:        dl,
		EthtoolNetlink: enl,
		DCB:            dcb,
		KernelLog: func() ([]byte, error) {
			b, err := read(KmsgFile)
			if os.IsNotExist(err) {
				return nil, fmt.Errorf("kernel log: %w", host.ErrNotRecorded)
			}
			return b, err
		},
		Facts: func() (*host.Facts, error) {
			b, err := read(FactsFile)
			if os.IsNotExist(err) {
				return nil, fmt.Errorf("facts: %w", host.ErrNotRecorded)
			}
			if err != nil {
				return nil, err
			}
			var f host.Facts
			if err := json.Unmarshal(b, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", FactsFile, err)
			}
			return &f, nil
		},
		Ethtool: func(netdev string) (map[string]uint64, error) { return readEthtool(read, netdev) },
		Meta:    host.Meta{Source: source, Recorded: &ri},
	})
}

// readEthtool replays ethtool/<netdev>.json: the statistics `rdmadiag record` read for each
// netdev bound to an RDMA device.
func readEthtool(read func(string) ([]byte, error), netdev string) (map[string]uint64, error) {
	b, err := read(EthtoolDir + "/" + netdev + ".json")
	if os.IsNotExist(err) {
		return nil, fmt.Errorf("ethtool -S %s: %w", netdev, host.ErrNotRecorded)
	}
	if err != nil {
		return nil, err
	}
	var st map[string]uint64
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s/%s.json: %w", EthtoolDir, netdev, err)
	}
	return st, nil
}

// OpenRoot opens a plain directory laid out like a machine's root (sys/, proc/, dev/...), as
// --root does. What no file can say (netlink answers) is absent; the kernel log is read from the
// tree's log files when it has one (host.TreeKernelLogs); facts are read from the tree itself,
// through the same confined reads as every other file of it.
func OpenRoot(dir string) (*host.Host, error) {
	var h *host.Host
	h, err := host.New(host.Options{
		Root:  dir,
		Kind:  host.KindRoot,
		Facts: func() (*host.Facts, error) { return RootFacts(h), nil },
		Meta:  host.Meta{Source: dir},
	})
	if err != nil {
		return nil, err
	}
	// An empty directory (an unmounted mount point, a wrong path) would otherwise read as a
	// machine without RDMA support and earn a chain of criticals.
	if !h.Exists("/sys") && !h.Exists("/proc") {
		return nil, fmt.Errorf("%s: %w: it has neither sys/ nor proc/ (an unmounted mount point or a wrong path?)", dir, ErrNotRoot)
	}
	return h, nil
}

// ErrNotRoot means a --root directory is not laid out like a Linux root.
var ErrNotRoot = errors.New("not a Linux root")

// RootFacts derives Facts from a directory tree: kernel release and hostname from /proc/sys, the
// verbs libraries from the tree's library directories, /dev/infiniband entries by name (a plain
// tree cannot say whether they open, and a device node found in a tree is never opened, so they
// are taken to open when present).
func RootFacts(h *host.Host) *host.Facts {
	read := func(p string) string {
		s, err := h.ReadString(p)
		if err != nil {
			return ""
		}
		return s
	}
	f := &host.Facts{
		Hostname:      read("/proc/sys/kernel/hostname"),
		KernelRelease: read("/proc/sys/kernel/osrelease"),
		EUID:          0,
		MemlockSoft:   ^uint64(0),
		MemlockHard:   ^uint64(0),
		Libraries:     host.FindLibraries(h),
	}
	ents, _ := h.ReadDir("/dev/infiniband")
	for _, e := range ents {
		f.CharDevs = append(f.CharDevs, host.CharDev{Path: "/dev/infiniband/" + e, Mode: "crw-rw-rw-"})
	}
	sort.Slice(f.CharDevs, func(i, j int) bool { return f.CharDevs[i].Path < f.CharDevs[j].Path })
	return f
}

// loadReadErrors reads read-errors.json: real path -> errno name (EINVAL, EACCES, ...).
func loadReadErrors(read func(string) ([]byte, error)) (map[string]syscall.Errno, error) {
	b, err := read(ErrorsFile)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names map[string]string
	if err := json.Unmarshal(b, &names); err != nil {
		return nil, fmt.Errorf("%s: %w", ErrorsFile, err)
	}
	out := make(map[string]syscall.Errno, len(names))
	for path, name := range names {
		en := errnoValue(name)
		if en == 0 {
			return nil, fmt.Errorf("%s: %s: unknown errno %q", ErrorsFile, path, name)
		}
		out[path] = en
	}
	return out, nil
}

// errnoValue maps an errno name back to its number; x/sys has only the forward table.
func errnoValue(name string) syscall.Errno {
	for e := syscall.Errno(1); e < 4096; e++ {
		if unix.ErrnoName(e) == name {
			return e
		}
	}
	return 0
}
