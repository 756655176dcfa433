package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// RecordOptions control a recording.
type RecordOptions struct {
	ToolVersion string
	Now         time.Time
	Redact      bool
	Description string
	// Ask runs the checks on the observed view of the host (see Record); whatever they read,
	// list, stat or ask by netlink, devlink or ethtool is what the snapshot holds besides the
	// allow-list. A nil Ask records the allow-list only.
	Ask func(view *host.Host)
	// Minimal leaves out the allow-list walk: the snapshot holds only what Ask read (smaller,
	// and nothing a check did not look at).
	Minimal bool
}

// Record captures h into dir (which must not exist or be empty). The checks themselves are the
// question list: Ask runs them through a view of h that records every file they read (with the
// errno a refused read gave), every directory they list, every link they resolve, and every RDMA
// netlink, devlink and ethtool answer, so a new check needs no change here. The allow-list walk
// then adds the context an analyst expects (PCI path, netdevs, RDMA modules), and the kernel log
// and facts are stored whole. What cannot be read is listed in meta.json with the reason;
// recording never stops at the first unreadable file.
//
// A recording holds to what check unpacks (MaxEntries, MaxTotalBytes): root/ gets all but a
// reserve left to the answers, the kernel log and the JSON files, and what no longer fits is left
// out and listed as unreadable with that reason; a link that leaves the tree is left out the
// same way, since check refuses it.
func Record(h *host.Host, dir string, o RecordOptions) error {
	return record(h, dir, o, defaultLimits)
}

// rootBudget is the part of lim the files, links and directories of root/ may take.
func rootBudget(lim limits) limits {
	return limits{entries: lim.entries - lim.entries/10, file: lim.file, total: lim.total - lim.total/4}
}

func record(h *host.Host, dir string, o RecordOptions, lim limits) error {
	if err := os.MkdirAll(filepath.Join(dir, RootDir), 0o755); err != nil {
		return err
	}
	rec := &recorder{h: h, dst: filepath.Join(dir, RootDir), done: map[string]bool{}, readErrs: map[string]string{}, lim: rootBudget(lim)}
	if o.Ask != nil {
		if err := rec.ask(dir, o.Ask); err != nil {
			return err
		}
	}
	if !o.Minimal {
		rec.walk()
	}
	if rec.skipped > 0 {
		rec.fail(RootDir+"/", fmt.Errorf("%d files, links and directories not recorded, from %s on: the snapshot reached %d entries or %d bytes, "+
			"the most that check reads back with the rest of the snapshot", rec.skipped, rec.firstSkipped, rec.lim.entries, rec.lim.total))
	}
	if len(rec.readErrs) > 0 {
		if err := writeJSON(filepath.Join(dir, ErrorsFile), rec.readErrs); err != nil {
			return err
		}
	}

	meta := Meta{Format: FormatV1, RecordInfo: host.RecordInfo{ToolVersion: o.ToolVersion, Time: o.Now.UTC(), Redacted: o.Redact}, Description: o.Description}
	if prev := h.Meta().Recorded; prev != nil && h.Kind() == host.KindSnapshot {
		meta.Unreadable = append(meta.Unreadable, prev.Unreadable...)
	}

	klog, origin, err := h.ReadKernelLog()
	if err != nil {
		rec.fail("kmsg", err)
		// A limit (no privilege, a tree without a log) is kept with its lift, so that the
		// snapshot says why as the host did.
		var lu *host.LogUnavailable
		if errors.As(err, &lu) {
			meta.KernelLog = &host.KernelLogInfo{Limit: lu.Limit, Source: lu.Source, Reason: lu.Reason, Lift: lu.Lift}
		}
	} else if err := writeKmsg(filepath.Join(dir, KmsgFile), klog, rec); err != nil {
		return err
	} else if origin.Path != "" {
		meta.KernelLog = &host.KernelLogInfo{Path: origin.Path}
	}
	if facts, err := h.Facts(); err != nil {
		rec.fail("facts", err)
	} else {
		// The devices' verbs limits are recorded with the facts, so that a snapshot judges
		// exhaustion exactly as the live run did.
		if facts.VerbsDevices, facts.VerbsError, err = h.VerbsDevices(); err != nil {
			facts.VerbsError = err.Error()
		}
		// The GID tables stay in the snapshot as the sysfs files the recording's inventory read,
		// which --redact rewrites and every selection of checks replays; the verbs query's copy
		// (addresses included) is left out, from a copy: the host keeps its answer for the run.
		facts.VerbsDevices = slices.Clone(facts.VerbsDevices)
		for i := range facts.VerbsDevices {
			d := &facts.VerbsDevices[i]
			d.GIDsRead, d.GIDs, d.GIDError = false, nil, ""
		}
		if err := writeJSON(filepath.Join(dir, FactsFile), facts); err != nil {
			return err
		}
	}
	if h.Netlink() == nil {
		rec.fail("netlink", errors.New("no RDMA netlink socket (kernel without RDMA support, or not recorded)"))
	}
	meta.Unreadable = append(meta.Unreadable, rec.unreadable...)
	sort.Slice(meta.Unreadable, func(i, j int) bool { return meta.Unreadable[i].Path < meta.Unreadable[j].Path })
	if err := writeJSON(filepath.Join(dir, MetaFile), meta); err != nil {
		return err
	}
	if o.Redact {
		// After meta.json is written: its description and reasons are redacted too.
		if err := Redact(dir); err != nil {
			return fmt.Errorf("redact: %w", err)
		}
	}
	return nil
}

// ask runs the checks on an observed view of the host whose RDMA netlink, devlink, ethtool
// netlink and DCB netlink answers are written under dir as they arrive.
func (r *recorder) ask(dir string, run func(view *host.Host)) error {
	// A connection the host has not (a tree without recorded answers) stays absent in the
	// snapshot too: an empty directory would replay as "not recorded" instead of "none".
	conns := map[string]string{"netlink": NetlinkDir, "devlink": DevlinkDir, "ethtool": EthtoolNetlinkDir, "dcb": DCBNetlinkDir}
	for which, c := range map[string]host.NetlinkConn{"netlink": r.h.Netlink(), "devlink": r.h.Devlink(), "ethtool": r.h.Ethtool(), "dcb": r.h.DCB()} {
		if c == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Join(dir, conns[which]), 0o755); err != nil {
			return err
		}
	}
	r.ethtoolDir = filepath.Join(dir, EthtoolDir)
	view := r.h.Observed(r, func(which string, c host.NetlinkConn) host.NetlinkConn {
		return netlinkraw.NewRecorder(c, filepath.Join(dir, conns[which]))
	})
	run(view)
	return nil
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(p, append(b, '\n'), 0o644)
}

type recorder struct {
	// mu serialises the observer's callbacks, which come from checks running concurrently,
	// with each other (the walk runs after them).
	mu         sync.Mutex
	readErrs   map[string]string
	h          *host.Host
	dst        string
	done       map[string]bool
	unreadable []host.Unreadable
	ethtoolDir string
	// lim is what root/ may hold; entries and bytes what it holds, skipped what was left out.
	lim          limits
	entries      int
	bytes        int64
	skipped      int
	firstSkipped string
}

// room takes one more entry of size bytes for root/, or counts it as left out when the snapshot
// would hold more than check reads back.
func (r *recorder) room(p string, size int64) bool {
	if r.entries+1 > r.lim.entries || r.bytes+size > r.lim.total || size > r.lim.file {
		if r.skipped == 0 {
			r.firstSkipped = p
		}
		r.skipped++
		return false
	}
	r.entries++
	r.bytes += size
	return true
}

func (r *recorder) fail(p string, err error) {
	r.unreadable = append(r.unreadable, host.Unreadable{Path: p, Reason: err.Error()})
}

// Files recorded as they are when present. Globs use path.Match syntax per element.
var plainFiles = []string{
	"/proc/modules",
	"/proc/interrupts",
	"/proc/cmdline",
	"/proc/uptime", // port.counters turns since-boot counts into rates
	"/proc/stat",   // btime: kernel log times as wall-clock time
	// port.topology: the netdevs carrying the default route are the management NICs.
	"/proc/net/route",
	"/proc/net/ipv6_route",
	// pcie.gpudirect: the NVIDIA driver's version and flavour (open or proprietary kernel module).
	"/proc/driver/nvidia/version",
	"/proc/config.gz",
	"/proc/sys/kernel/osrelease",
	"/proc/sys/kernel/hostname",
	"/proc/sys/kernel/tainted",
	"/etc/libibverbs.d/*",
	"/sys/class/infiniband_verbs/abi_version",
	"/sys/class/infiniband_mad/abi_version",
}

// rdmaModules are the /sys/module entries recorded (version, srcversion, refcnt, holders...).
var rdmaModulePrefixes = []string{"ib_", "rdma_", "mlx", "nvidia", "nv_peer_mem", "iw_", "irdma", "bnxt", "efa", "qedr", "hfi1", "siw", "mana", "erdma", "hns", "ocrdma", "vmw_pvrdma", "configs", "i40e", "ice", "qed"}

// Per-directory allow-lists: the files of a PCI function, a netdev, a module.
var (
	pciFiles = []string{"vendor", "device", "subsystem_vendor", "subsystem_device", "class", "revision",
		"current_link_speed", "current_link_width", "max_link_speed", "max_link_width", "numa_node", "local_cpulist",
		"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal",
		"aer_rootport_total_err_cor", "aer_rootport_total_err_nonfatal", "aer_rootport_total_err_fatal",
		"config", "enable", "irq", "modalias", "sriov_numvfs", "sriov_totalvfs", "reset_method", "power_state"}
	pciLinks   = []string{"driver", "physfn", "virtfn*", "iommu_group"}
	pciSubdirs = []string{"net", "infiniband", "infiniband_verbs", "infiniband_mad", "msi_irqs"}
	netFiles   = []string{"operstate", "carrier", "carrier_changes", "carrier_up_count", "carrier_down_count", "mtu", "speed", "duplex", "address", "ifindex", "type", "dev_port", "flags"}
	modFiles   = []string{"version", "srcversion", "refcnt", "initstate", "taint", "coresize"}
)

// walk records the allow-list. It starts from the RDMA devices' class links and follows them to
// their real directories, then the PCI functions behind them and every RDMA-capable function's
// path to the root port, their netdevs, the RDMA modules and the plain files above.
func (r *recorder) walk() {
	for _, g := range plainFiles {
		for _, p := range r.glob(g) {
			r.file(p)
		}
	}
	for _, cls := range []string{"/sys/class/infiniband", "/sys/class/infiniband_verbs", "/sys/class/infiniband_mad", "/sys/class/infiniband_cm"} {
		names, err := r.h.ReadDir(cls)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				r.fail(cls, err)
			}
			continue
		}
		// An empty class directory (ib_core loaded, no device registered) differs from an absent
		// one (no ib_core) and must survive the recording.
		r.mkdir(cls)
		for _, n := range names {
			p := path.Join(cls, n)
			if st, err := r.h.Lstat(p); err == nil && st.Mode().IsRegular() {
				r.file(p) // abi_version
				continue
			}
			r.tree(p, 4)
		}
	}
	// The IOMMU units (dmar0, ivhd0): pcie.gpudirect tells an active IOMMU from none by them.
	if units, err := r.h.ReadDir("/sys/class/iommu"); err == nil {
		r.mkdir("/sys/class/iommu")
		for _, u := range units {
			p := path.Join("/sys/class/iommu", u)
			r.link(p)
			if real, err := r.h.Realpath(p); err == nil {
				r.mkdir(real)
			}
		}
	}
	// Every PCI function is listed (links are cheap and tell the registration check what exists);
	// the RDMA-capable ones and those behind RDMA devices are recorded in full with their path.
	pcis, err := r.h.ReadDir("/sys/bus/pci/devices")
	if err == nil {
		// Listed, so it exists, even empty (a host whose only RDMA device is software).
		r.mkdir("/sys/bus/pci/devices")
	}
	for _, bdf := range pcis {
		link := path.Join("/sys/bus/pci/devices", bdf)
		r.link(link)
		// NVIDIA GPUs are recorded with their path too: the GPUDirect checks judge the switch
		// ports and NUMA nodes between them and the NICs.
		if !rdmaCapable(r.h, link) && !nvidiaGPU(r.h, link) {
			continue
		}
		r.pci(link)
	}
	inv := inventory.Discover(r.h)
	for _, d := range inv.Devices {
		if d.PCI != nil {
			r.pci(d.PCI.SysPath)
		}
		for _, p := range d.Ports {
			for _, nd := range p.Netdevs {
				r.netdev(nd)
			}
		}
		if d.Parent != "" {
			r.netdev(d.Parent)
		}
	}
	mods, _ := r.h.ReadDir("/sys/module")
	for _, m := range mods {
		if !hasAnyPrefix(m, rdmaModulePrefixes) {
			continue
		}
		dir := path.Join("/sys/module", m)
		for _, f := range modFiles {
			r.fileIfExists(path.Join(dir, f))
		}
		holders, _ := r.h.ReadDir(path.Join(dir, "holders"))
		for _, hn := range holders {
			r.link(path.Join(dir, "holders", hn))
		}
		params, _ := r.h.ReadDir(path.Join(dir, "parameters"))
		for _, pn := range params {
			r.fileIfExists(path.Join(dir, "parameters", pn))
		}
	}
	if rel, err := r.h.ReadString("/proc/sys/kernel/osrelease"); err == nil {
		r.fileIfExists("/boot/config-" + rel)
	}
}

// pci records one function (given by any path that resolves to it) and every bridge above it.
func (r *recorder) pci(p string) {
	real, err := r.h.Realpath(p)
	if err != nil {
		r.fail(p, err)
		return
	}
	r.resolve(p)
	for _, dir := range append([]string{real}, ancestors(real)...) {
		if r.done[dir+"/"] {
			continue
		}
		r.done[dir+"/"] = true
		r.mkdir(dir)
		for _, f := range pciFiles {
			r.fileIfExists(path.Join(dir, f))
		}
		for _, g := range pciLinks {
			for _, l := range r.glob(path.Join(dir, g)) {
				r.link(l)
			}
		}
		// The IOMMU group's default domain type (identity = passthrough) for pcie.gpudirect.
		if grp, err := r.h.Realpath(path.Join(dir, "iommu_group")); err == nil {
			r.fileIfExists(path.Join(grp, "type"))
		}
		for _, sd := range pciSubdirs {
			names, _ := r.h.ReadDir(path.Join(dir, sd))
			for _, n := range names {
				r.lstatRecord(path.Join(dir, sd, n))
			}
		}
		// The function's netdevs (an IPoIB ib0 is in no GID table, so the inventory does not
		// name it) carry the DMA path's error statistics.
		nets, _ := r.h.ReadDir(path.Join(dir, "net"))
		for _, n := range nets {
			r.netdev(n)
		}
	}
}

// ancestors returns the PCI bridge directories above a function, nearest first.
func ancestors(real string) []string {
	var out []string
	for d := path.Dir(real); d != "/" && inventory.BDFPattern.MatchString(path.Base(d)); d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

func (r *recorder) netdev(name string) {
	link := path.Join("/sys/class/net", name)
	real, err := r.h.Realpath(link)
	if err != nil {
		r.fail(link, err)
		return
	}
	r.resolve(link)
	for _, f := range netFiles {
		r.fileIfExists(path.Join(real, f))
	}
	stats, _ := r.h.ReadDir(path.Join(real, "statistics"))
	for _, s := range stats {
		r.fileIfExists(path.Join(real, "statistics", s))
	}
	r.link(path.Join(real, "device"))
}

// tree records p (following a final symlink to its real directory) down to depth levels,
// recording inner symlinks as links without following them.
func (r *recorder) tree(p string, depth int) {
	real, err := r.h.Realpath(p)
	if err != nil {
		r.fail(p, err)
		return
	}
	r.resolve(p)
	r.subtree(real, depth)
}

func (r *recorder) subtree(dir string, depth int) {
	if r.done[dir+"/"] {
		return
	}
	r.done[dir+"/"] = true
	r.mkdir(dir)
	names, err := r.h.ReadDir(dir)
	if err != nil {
		r.fail(dir, err)
		return
	}
	for _, n := range names {
		if n == "power" || n == "subsystem" || n == "uevent" {
			continue
		}
		p := path.Join(dir, n)
		if r.unusedGID(p) {
			continue
		}
		st, err := r.h.Lstat(p)
		if err != nil {
			r.fail(p, err)
			continue
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			r.link(p)
		case st.IsDir():
			if depth > 0 {
				r.subtree(p, depth-1)
			}
		case st.Mode().IsRegular():
			if st.Mode().Perm()&0o444 == 0 {
				continue // write-only attribute
			}
			r.file(p)
		}
	}
}

// unusedGID reports whether p is an empty GID table entry (ports/N/gids/I holding the zero GID)
// or an attribute of one (gid_attrs/{types,ndevs}/I, which the kernel refuses with EINVAL). A
// Soft-RoCE port has 1024 entries, nearly all empty; recording them would bury the few that
// matter, and no check judges an empty entry.
func (r *recorder) unusedGID(p string) bool {
	dir, idx := path.Split(p)
	dir = path.Clean(dir)
	var gid string
	switch {
	case path.Base(dir) == "gids":
		gid = p
	case path.Base(dir) == "types" || path.Base(dir) == "ndevs":
		if path.Base(path.Dir(dir)) != "gid_attrs" {
			return false
		}
		gid = path.Join(path.Dir(path.Dir(dir)), "gids", idx)
	default:
		return false
	}
	s, err := r.h.ReadString(gid)
	return err == nil && strings.Trim(s, "0:") == ""
}

// resolve records every symlink met while resolving p, so that the snapshot resolves it the same way.
func (r *recorder) resolve(p string) {
	cur := "/"
	for _, part := range strings.Split(strings.TrimPrefix(path.Clean(p), "/"), "/") {
		next := path.Join(cur, part)
		st, err := r.h.Lstat(next)
		if err != nil {
			return
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			r.link(next)
			real, err := r.h.Realpath(next)
			if err != nil {
				return
			}
			cur = real
			continue
		}
		cur = next
	}
}

func (r *recorder) lstatRecord(p string) {
	st, err := r.h.Lstat(p)
	if err != nil {
		return
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		r.link(p)
	case st.IsDir():
		r.mkdir(p)
	case st.Mode().IsRegular():
		r.file(p)
	}
}

func (r *recorder) glob(pattern string) []string {
	parts := strings.Split(strings.TrimPrefix(pattern, "/"), "/")
	cur := []string{"/"}
	for _, part := range parts {
		var next []string
		for _, c := range cur {
			if !strings.ContainsAny(part, "*?[") {
				next = append(next, path.Join(c, part))
				continue
			}
			names, _ := r.h.ReadDir(c)
			for _, n := range names {
				if ok, _ := path.Match(part, n); ok {
					next = append(next, path.Join(c, n))
				}
			}
		}
		cur = next
	}
	var out []string
	for _, c := range cur {
		if _, err := r.h.Lstat(c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

func (r *recorder) dst_(p string) string {
	return filepath.Join(r.dst, filepath.FromSlash(path.Clean("/"+p)))
}

func (r *recorder) mkdir(p string) {
	if _, err := os.Lstat(r.dst_(p)); err == nil || !r.room(p, 0) {
		return
	}
	if err := os.MkdirAll(r.dst_(p), 0o755); err != nil {
		r.fail(p, err)
	}
}

func (r *recorder) fileIfExists(p string) {
	if _, err := r.h.Lstat(p); err != nil {
		return
	}
	r.file(p)
}

func (r *recorder) file(p string) {
	if r.done[p] || r.done[mustReal(r.h, p)] {
		return
	}
	r.done[p] = true
	st, err := r.h.Lstat(p)
	if err != nil {
		r.fail(p, err)
		return
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		r.done[p] = false
		r.link(p)
		r.file(mustReal(r.h, p))
		return
	}
	d := r.dst_(p)
	b, err := r.h.ReadFile(p)
	if err != nil {
		// sysfs attributes can refuse reads: EACCES for non-root, EINVAL for a netdev's speed
		// while its link is down, EIO or EOPNOTSUPP for a counter the port does not have. The
		// file is kept (empty) and its errno recorded, so that a check reading the snapshot gets
		// the error it got live. Permission errors also go into the unreadable list, because
		// they mean the snapshot is incomplete, not that the host said no.
		var en syscall.Errno
		if !errors.As(err, &en) {
			r.fail(p, err)
			return
		}
		if en == syscall.EACCES || en == syscall.EPERM {
			r.fail(p, err)
		}
		real := mustReal(r.h, p)
		r.readErrs[real] = unix.ErrnoName(en)
		b = nil
	}
	if !r.room(p, int64(len(b))) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		r.fail(p, err)
		return
	}
	if err := os.WriteFile(d, b, 0o644); err != nil {
		r.fail(p, err)
	}
}

func mustReal(h *host.Host, p string) string {
	real, err := h.Realpath(p)
	if err != nil {
		return p
	}
	return real
}

func (r *recorder) link(p string) {
	if r.done[p] {
		return
	}
	r.done[p] = true
	t, err := r.h.Readlink(p)
	if err != nil {
		r.fail(p, err)
		return
	}
	if path.IsAbs(t) {
		// Archives may not hold absolute links; rewrite it relative to the link's directory.
		rel, err := filepath.Rel(path.Dir(p), t)
		if err != nil {
			r.fail(p, err)
			return
		}
		t = filepath.ToSlash(rel)
	}
	// check refuses a snapshot with a link out of it, and the host refuses to follow one out of
	// the tree (a chain through another link included): such a link is left out, and said so.
	if err := checkLink(path.Join(RootDir, path.Clean("/" + p)[1:]), t); err != nil {
		r.fail(p, fmt.Errorf("not recorded: %w: -> %s", host.ErrEscapes, t))
		return
	}
	if _, err := r.h.Realpath(p); errors.Is(err, host.ErrEscapes) {
		r.fail(p, fmt.Errorf("not recorded: %w", err))
		return
	}
	if !r.room(p, 0) {
		return
	}
	d := r.dst_(p)
	if err := os.MkdirAll(filepath.Dir(d), 0o755); err != nil {
		r.fail(p, err)
		return
	}
	if err := os.Symlink(t, d); err != nil && !errors.Is(err, fs.ErrExist) {
		r.fail(p, err)
	}
}

// rdmaCapable says whether a PCI function belongs to a vendor that makes RDMA NICs and is a
// network or InfiniBand controller (class 0x02xxxx or 0x0c06xx).
func rdmaCapable(h *host.Host, bdfLink string) bool {
	v, err := h.ReadString(path.Join(bdfLink, "vendor"))
	if err != nil {
		return false
	}
	c, err := h.ReadString(path.Join(bdfLink, "class"))
	if err != nil {
		return false
	}
	if !strings.HasPrefix(c, "0x02") && !strings.HasPrefix(c, "0x0c06") {
		return false
	}
	switch strings.ToLower(v) {
	case "0x15b3", // Mellanox/NVIDIA
		"0x8086", // Intel (irdma on E810/X722, hfi1)
		"0x14e4", // Broadcom (bnxt_re)
		"0x1d0f", // Amazon (efa)
		"0x1077", // QLogic/Marvell (qedr)
		"0x19e5", // Huawei (hns)
		"0x1924", // Solarflare
		"0x1af4", // virtio (Soft-RoCE labs sit on virtio-net)
		"0x1414": // Microsoft (mana)
		return true
	}
	return false
}

func nvidiaGPU(h *host.Host, bdfLink string) bool {
	v, err1 := h.ReadString(path.Join(bdfLink, "vendor"))
	c, err2 := h.ReadString(path.Join(bdfLink, "class"))
	c = strings.ToLower(c)
	// NVIDIA (0x10de in pci.ids) VGA (0x0300) or 3D (0x0302) controller, as checks/pcie's
	// IsNVIDIAGPU; snapshot cannot import the checks (their tests import snapshot).
	return err1 == nil && err2 == nil && strings.EqualFold(v, "0x10de") && (strings.HasPrefix(c, "0x0300") || strings.HasPrefix(c, "0x0302"))
}

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// writeKmsg writes the kernel log's records, the newest that fit in host.MaxFileSize when the
// log is larger (a ring buffer of log_buf_len=32M): check reads no larger file, so a recording
// keeps the part of the log that matters most and says it left the rest out.
func writeKmsg(path string, klog []byte, rec *recorder) error {
	b, dropped := newestRecords(klog, host.MaxFileSize)
	if dropped > 0 {
		rec.fail("kmsg", fmt.Errorf("the kernel log is larger than %d MiB: its oldest %d bytes are not recorded", host.MaxFileSize>>20, dropped))
	}
	return os.WriteFile(path, b, 0o644)
}

// newestRecords keeps the newest whole /dev/kmsg records of b that fit in limit bytes: a record is
// a line that does not start with a space, with the " KEY=value" lines after it.
func newestRecords(b []byte, limit int) ([]byte, int) {
	if len(b) <= limit {
		return b, 0
	}
	cut := len(b) - limit
	for cut < len(b) {
		if b[cut-1] == '\n' && b[cut] != ' ' {
			break
		}
		cut++
	}
	return b[cut:], cut
}
