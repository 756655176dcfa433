package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/checks/cq/rawctx"
	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/inventory"
)

// RecordOptions control a recording.
type RecordOptions struct {
	ToolVersion string
	Now         time.Time
	Redact      bool
	Description string
	// RawContexts also records the raw QP/CQ context dumps (check --raw-contexts).
	RawContexts bool
}

// Record captures h into dir (which must not exist or be empty): the allow-listed files, the
// kernel log, the facts and the RDMA netlink replies the checks ask for. What cannot be read is
// listed in meta.json with the reason; recording never stops at the first unreadable file.
func Record(h *host.Host, dir string, o RecordOptions) error {
	if err := os.MkdirAll(filepath.Join(dir, RootDir), 0o755); err != nil {
		return err
	}
	rec := &recorder{h: h, dst: filepath.Join(dir, RootDir), done: map[string]bool{}, readErrs: map[string]string{}}
	rec.walk()
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
	} else if err := os.WriteFile(filepath.Join(dir, KmsgFile), klog, 0o644); err != nil {
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
		if err := writeJSON(filepath.Join(dir, FactsFile), facts); err != nil {
			return err
		}
	}
	if err := recordEthtool(h, rec, filepath.Join(dir, EthtoolDir)); err != nil {
		return err
	}
	if nl := h.Netlink(); nl != nil {
		nldir := filepath.Join(dir, NetlinkDir)
		if err := os.MkdirAll(nldir, 0o755); err != nil {
			return err
		}
		pids, err := recordNetlink(nldev.NewRecorder(nl, nldir), o.RawContexts, rawDevices(h))
		if err != nil {
			rec.fail("netlink", err)
		}
		// The qp and cq layers name each resource's owner by its command, as rdma res show does.
		for _, pid := range pids {
			rec.fileIfExists(fmt.Sprintf("/proc/%d/comm", pid))
		}
	} else {
		rec.fail("netlink", errors.New("no RDMA netlink socket (kernel without RDMA support, or not recorded)"))
	}
	if dl := h.Devlink(); dl != nil {
		dldir := filepath.Join(dir, DevlinkDir)
		if err := os.MkdirAll(dldir, 0o755); err != nil {
			return err
		}
		if err := recordDevlink(nldev.NewRecorder(dl, dldir)); err != nil {
			rec.fail("devlink", err)
		}
	}
	meta.Unreadable = append(meta.Unreadable, rec.unreadable...)
	sort.Slice(meta.Unreadable, func(i, j int) bool { return meta.Unreadable[i].Path < meta.Unreadable[j].Path })
	if o.Redact {
		if err := Redact(dir); err != nil {
			return fmt.Errorf("redact: %w", err)
		}
	}
	return writeJSON(filepath.Join(dir, MetaFile), meta)
}

// recordNetlink asks, through the recording connection, every question the QP and CQ checks ask,
// in the same byte-for-byte form, so that replay finds each answer under its request key. It
// returns the pids owning QPs or CQs, sorted.
func recordNetlink(conn host.NetlinkConn, raw bool, askRaw map[string]bool) ([]uint32, error) {
	c := nldev.NewClient(conn)
	devs, err := c.Devices()
	if err != nil {
		return nil, fmt.Errorf("device dump: %w", err)
	}
	owners := map[uint32]bool{}
	var errs []error
	if _, err := c.ResourceSummary(); err != nil {
		errs = append(errs, fmt.Errorf("resource summary: %w", err))
	}
	for _, d := range devs {
		if _, err := c.Ports(d.Index); err != nil {
			errs = append(errs, fmt.Errorf("%s ports: %w", d.Name, err))
		}
		qps, err := c.QPs(d.Index)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s QPs: %w", d.Name, err))
		}
		for _, q := range qps {
			owners[q.PID] = true
		}
		cqs, err := c.CQs(d.Index)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s CQs: %w", d.Name, err))
		}
		for _, q := range cqs {
			owners[q.PID] = true
		}
		if _, err := c.MRs(d.Index); err != nil {
			errs = append(errs, fmt.Errorf("%s MRs: %w", d.Name, err))
		}
		if raw && askRaw[d.Name] {
			// A kernel's refusal (EPERM, EINVAL) is recorded as the answer it is and reported
			// by the check; anything else (a timeout, an oversize reply) is not recorded and
			// must not pass for "recorded without --raw-contexts".
			var errno syscall.Errno
			if _, err := c.QPsRaw(d.Index); err != nil && !errors.As(err, &errno) {
				errs = append(errs, fmt.Errorf("%s raw QPs: %w", d.Name, err))
			}
			if _, err := c.CQsRaw(d.Index); err != nil && !errors.As(err, &errno) {
				errs = append(errs, fmt.Errorf("%s raw CQs: %w", d.Name, err))
			}
		}
	}
	delete(owners, 0) // kernel-owned
	pids := make([]uint32, 0, len(owners))
	for p := range owners {
		pids = append(pids, p)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	return pids, errors.Join(errs...)
}

// rawDevices names the devices whose raw contexts the CQ check would ask for (rawctx.WorthAsking).
func rawDevices(h *host.Host) map[string]bool {
	m := map[string]bool{}
	for _, d := range inventory.Discover(h).Devices {
		driver := d.Driver
		if d.PCI != nil {
			driver = d.PCI.Driver
		}
		m[d.Name] = rawctx.WorthAsking(driver, d.Software())
	}
	return m
}

// recordDevlink asks, through the recording connection, every devlink question the firmware and
// CQ checks ask (the family, the instances, each instance's info, the health reporters, and the
// diagnosis of every device-level reporter, vnic's among them), so that replay finds each answer. A
// kernel's refusal (no devlink family, EOPNOTSUPP, EPERM without CAP_NET_ADMIN) is recorded as
// the answer it is and is not a recording failure.
func recordDevlink(conn host.NetlinkConn) error {
	c := devlink.NewClient(conn)
	devs, err := c.Devices()
	if errors.Is(err, devlink.ErrNoDevlink) {
		return nil
	}
	if err != nil {
		return err
	}
	var errno syscall.Errno
	var errs []error
	for _, h := range devs {
		if _, err := c.Info(h); err != nil && !errors.As(err, &errno) {
			errs = append(errs, err)
		}
	}
	rs, err := c.Reporters()
	if err != nil && !errors.As(err, &errno) {
		errs = append(errs, err)
	}
	// Every device reporter's diagnosis is kept, not only vnic's: the checks read vnic's, and the
	// others (mlx5 fw, netdevsim's dummy in the lab) are real kernel fmsg bytes that the decoder
	// is tested against. Per-port reporters need a port handle the client does not send.
	for _, r := range rs {
		if !r.HasPort {
			if _, err := c.Diagnose(r.Handle, r.Name); err != nil && !errors.As(err, &errno) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// recordEthtool stores the driver statistics (ethtool -S) of every netdev bound to an RDMA device,
// which the DMA-path check reads through host.EthtoolStats. A netdev whose driver has none (the
// ioctl fails with EOPNOTSUPP) is listed as unreadable, not guessed.
func recordEthtool(h *host.Host, rec *recorder, dir string) error {
	seen := map[string]bool{}
	for _, d := range inventory.Discover(h).Devices {
		nds := []string{}
		if d.Parent != "" {
			nds = append(nds, d.Parent)
		}
		for _, p := range d.Ports {
			nds = append(nds, p.Netdevs...)
		}
		if d.PCI != nil {
			// IPoIB and other netdevs of the function have no GID entry but share its DMA path.
			fn, _ := h.ReadDir(path.Join(d.PCI.SysPath, "net"))
			nds = append(nds, fn...)
		}
		for _, nd := range nds {
			if seen[nd] {
				continue
			}
			seen[nd] = true
			st, err := h.EthtoolStats(nd)
			if err != nil {
				rec.fail(path.Join(EthtoolDir, nd), err)
				continue
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			if err := writeJSON(filepath.Join(dir, nd+".json"), st); err != nil {
				return err
			}
		}
	}
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
	readErrs   map[string]string
	h          *host.Host
	dst        string
	done       map[string]bool
	unreadable []host.Unreadable
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
	"/proc/config.gz",
	"/proc/sys/kernel/osrelease",
	"/proc/sys/kernel/hostname",
	"/proc/sys/kernel/tainted",
	"/etc/libibverbs.d/*",
	"/sys/class/infiniband_verbs/abi_version",
	"/sys/class/infiniband_mad/abi_version",
}

// rdmaModules are the /sys/module entries recorded (version, srcversion, refcnt, holders...).
var rdmaModulePrefixes = []string{"ib_", "rdma_", "mlx", "iw_", "irdma", "bnxt", "efa", "qedr", "hfi1", "siw", "mana", "erdma", "hns", "ocrdma", "vmw_pvrdma", "configs", "i40e", "ice", "qed"}

// Per-directory allow-lists: the files of a PCI function, a netdev, a module.
var (
	pciFiles = []string{"vendor", "device", "subsystem_vendor", "subsystem_device", "class", "revision",
		"current_link_speed", "current_link_width", "max_link_speed", "max_link_width", "numa_node", "local_cpulist",
		"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal",
		"aer_rootport_total_err_cor", "aer_rootport_total_err_nonfatal", "aer_rootport_total_err_fatal",
		"config", "enable", "irq", "modalias", "sriov_numvfs", "sriov_totalvfs", "reset_method", "power_state"}
	pciLinks   = []string{"driver", "physfn", "virtfn*", "iommu_group"}
	pciSubdirs = []string{"net", "infiniband", "infiniband_verbs", "infiniband_mad", "msi_irqs"}
	netFiles   = []string{"operstate", "carrier", "carrier_changes", "mtu", "speed", "duplex", "address", "ifindex", "type", "dev_port", "flags"}
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
		if !rdmaCapable(r.h, link) {
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
	if r.done[p] {
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

func hasAnyPrefix(s string, ps []string) bool {
	for _, p := range ps {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
