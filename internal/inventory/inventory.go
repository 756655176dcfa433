// Package inventory discovers the RDMA devices of a host: each device, its ports and bound
// netdevs, the PCI function behind it (PF or VF, NUMA node, driver, the chain of upstream bridges
// to the root port) or, for software devices, the netdev it sits on, and its character devices.
//
// It reads sysfs through host.Host by hand rather than through ghw, rdmamap or procfs: rdmamap
// hard-codes /sys (no snapshot root), ghw's PCI enumeration returns nothing at all when a single
// function lacks a modalias and hides per-file errors, and procfs's PCI reader fails the whole
// listing on one odd device and rejects the pre-5.6 "8 GT/s" speed format. A diagnostic tool
// must keep going past one bad file and say which file it was.
package inventory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// ClassDir is where ib_core registers devices.
const ClassDir = "/sys/class/infiniband"

// Inventory is what was found. Errors that concern one device are kept on that device; Absent
// explains an empty inventory.
type Inventory struct {
	Devices []*Device
	// Absent is set when /sys/class/infiniband itself is missing or unreadable: the reason.
	Absent error
	// Excluded are the devices the run's selection left out, with the rule that did.
	Excluded []Excluded
	// Cut is set when the run ended (its deadline, a signal) before every device was read: how
	// many were, and why not the others. Devices holds those read whole.
	Cut error
}

// Excluded is a device left out of a run: its name, PCI address and the rule ("--exclude
// \"mlx5_2\"").
type Excluded struct {
	Name, PCI, By string
}

// Device is one RDMA device (mlx5_0, rxe0, irdma1...).
type Device struct {
	Name string
	// NodeType is the text of node_type ("1: CA" -> "CA").
	NodeType string
	FWVer    string
	BoardID  string
	HCAType  string
	NodeGUID string
	// Driver is the kernel driver of the PCI function (mlx5_core) or, for software devices, the
	// RDMA driver inferred from the name (rdma_rxe, siw).
	Driver string
	// DriverVersion is /sys/module/<Driver>/version: set by out-of-tree drivers (MLNX_OFED,
	// DOCA-OFED), empty for most in-box ones.
	DriverVersion string
	// PCI is nil for software devices.
	PCI *PCIFunction
	// Parent is the netdev a software device sits on (rxe0 -> eth0).
	Parent string
	Ports  []*Port
	// UverbsDev and UmadDevs are the character device names (uverbs0, umad0).
	UverbsDev string
	UmadDevs  []string
	// Errors are problems reading this device's files; checks report them as unknown.
	Errors []error
}

// Software reports whether the device has no PCI function of its own (rxe, siw).
func (d *Device) Software() bool { return d.PCI == nil }

// Port is one port of a device.
type Port struct {
	Num       int
	LinkLayer string // InfiniBand, Ethernet
	Netdevs   []string
	// State and PhysState are the names in state and phys_state ("ACTIVE", "LinkUp"); Rate is
	// the rate file as the kernel prints it ("200 Gb/sec (4X HDR)"). Empty when unreadable.
	State, PhysState, Rate string
	// LID and SMLID are set on InfiniBand ports only.
	LID, SMLID *uint32
	// GIDs are the non-zero entries of the port's GID table, read once per run (a RoCE table
	// has hundreds of entries, one sysfs file each, and rxe's 1024) for everything that needs
	// them: Netdevs and the port checks. InfiniBand ports' tables are not read: their entries
	// carry no netdev (only RoCE GIDs have one, drivers/infiniband/core/cache.c) and no check
	// judges them. GIDErr is why the table could not be listed.
	GIDs   []GID
	GIDErr error
	// reads keeps state, phys_state and rate as first read in the run (see ReadState).
	reads *attrReads
	// GID is the address a RoCE peer reaches the port at (see ReadAttrs); nil on InfiniBand
	// ports and when the GID table holds no routable entry.
	GID *GID
}

// GID is one non-zero GID table entry: gids/N with gid_attrs/types/N and gid_attrs/ndevs/N.
type GID struct {
	Index  int
	Addr   string // as the kernel prints it ("%pI6"): eight groups of four hex digits
	Type   string // "RoCE v2", "IB/RoCE v1"; empty when unreadable
	Netdev string // empty when unreadable or none
}

// PCIFunction is the PCI function behind a device.
type PCIFunction struct {
	BDF      string
	Vendor   uint16
	DeviceID uint16
	Driver   string
	NUMANode int // -1 when the platform does not say
	// PF is the physical function's BDF for a VF, empty for a PF.
	PF string
	// Path lists the upstream bridges from the device's parent to the root port.
	Path []string
	// SysPath is the resolved /sys/devices/... directory.
	SysPath string
}

// IsVF reports whether this function is an SR-IOV virtual function.
func (p *PCIFunction) IsVF() bool { return p.PF != "" }

// BDFPattern matches a PCI address such as 0000:3b:00.0.
var BDFPattern = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// Names returns the device names in order.
func (inv *Inventory) Names() []string {
	out := make([]string, len(inv.Devices))
	for i, d := range inv.Devices {
		out[i] = d.Name
	}
	return out
}

// Device returns a device by name.
func (inv *Inventory) Device(name string) *Device {
	for _, d := range inv.Devices {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Options choose between sources that give the same facts at different costs.
type Options struct {
	// VerbsGIDs takes RoCE ports' GID tables from Host.VerbsDevices (one ibv_query_gid_table per
	// device) instead of one sysfs file per entry (1024 per port on rxe, three system calls
	// each). A run sets it when a selected check opens the verbs devices anyway; a device whose
	// table the verbs query did not give, or a query slower than VerbsWait, is read from sysfs.
	VerbsGIDs bool
}

// VerbsWait bounds how long Discover waits for the verbs query before it reads the GID tables
// from sysfs: a device whose firmware hangs can block ibv_open_device, and the inventory must not
// wait for it (the checks that judge the verbs limits say so themselves).
var VerbsWait = 2 * time.Second

// Discover walks /sys/class/infiniband. It never fails as a whole: problems are attached to the
// device they concern, or to Absent.
func Discover(h *host.Host) *Inventory { return DiscoverWith(h, Options{}) }

// DiscoverWith is Discover with the sources o chooses.
func DiscoverWith(h *host.Host, o Options) *Inventory {
	return DiscoverContext(context.Background(), h, o)
}

// DiscoverContext is DiscoverWith ending with ctx: once ctx ends no device is read further (a
// tree of thousands of devices takes longer than a run's deadline), the devices read whole are
// kept and Cut says how many were; the ports' files are not read after it either (ReadState...).
func DiscoverContext(ctx context.Context, h *host.Host, o Options) *Inventory {
	inv := &Inventory{}
	names, err := h.ReadDir(ClassDir)
	if err != nil {
		inv.Absent = err
		return inv
	}
	tables := func(string) *host.VerbsDevice { return nil }
	if o.VerbsGIDs && len(names) > 0 {
		tables = verbsTables(h)
	}
	uverbs := charDevIndex(h, "/sys/class/infiniband_verbs")
	umad := charDevIndex(h, "/sys/class/infiniband_mad")
	versions := map[string]string{}
	// Devices are read concurrently: each is a few hundred to a few thousand sysfs reads (its GID
	// tables), and a host carries up to 16 of them.
	devs := make([]*Device, len(names))
	parallel(len(names), func(i int) {
		if ctx.Err() != nil {
			return
		}
		d := readDevice(ctx, h, names[i], tables)
		if ctx.Err() == nil {
			devs[i] = d // a device whose reading the end interrupted is left out, not half read
		}
	})
	read := 0
	for i, n := range names {
		d := devs[i]
		if d == nil {
			continue
		}
		read++
		d.DriverVersion = moduleVersion(h, d.Driver, versions)
		d.UverbsDev = first(uverbs[n])
		d.UmadDevs = umad[n]
		inv.Devices = append(inv.Devices, d)
	}
	sort.SliceStable(inv.Devices, func(i, j int) bool { return natLess(inv.Devices[i].Name, inv.Devices[j].Name) })
	if read < len(names) {
		inv.Cut = fmt.Errorf("the inventory was cut short: %d of %d RDMA devices read: %w", read, len(names), context.Cause(ctx))
	}
	return inv
}

// parallel calls fn(0..n-1) on at most GOMAXPROCS goroutines and returns when all are done.
func parallel(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		}()
	}
	wg.Wait()
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// verbsTables starts the verbs query and returns a lookup that waits for it, at most VerbsWait
// in all, and then gives the device's entry when its GID table was read.
func verbsTables(h *host.Host) func(name string) *host.VerbsDevice {
	type answer struct {
		devs []host.VerbsDevice
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		devs, _, err := h.VerbsDevices()
		ch <- answer{devs, err}
	}()
	timer := time.NewTimer(VerbsWait)
	byName := sync.OnceValue(func() map[string]*host.VerbsDevice {
		defer timer.Stop()
		m := map[string]*host.VerbsDevice{}
		select {
		case a := <-ch:
			for i := range a.devs {
				if d := &a.devs[i]; d.GIDsRead && d.Error == "" {
					m[d.Name] = d
				}
			}
		case <-timer.C:
		}
		return m
	})
	return func(name string) *host.VerbsDevice { return byName()[name] }
}

func readDevice(ctx context.Context, h *host.Host, name string, tables func(string) *host.VerbsDevice) *Device {
	d := &Device{Name: name}
	dir := path.Join(ClassDir, name)
	// The device's attributes are read relative to its directory held open, not each through
	// the class directory's symlink again.
	attrs := h.OpenDir(dir)
	defer attrs.Close()
	// Optional files may be absent (board_id on rxe); any other error (a link out of a tree, a
	// FIFO, EIO) is kept so the device's findings say what could not be read.
	opt := func(file string) string {
		s, err := attrs.ReadString(file)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.Errors = append(d.Errors, err)
		}
		return s
	}
	if nt, err := attrs.ReadString("node_type"); err != nil {
		d.Errors = append(d.Errors, err)
	} else {
		_, d.NodeType, _ = strings.Cut(nt, ": ")
		if d.NodeType == "" {
			d.NodeType = nt
		}
	}
	d.FWVer = opt("fw_ver")
	d.BoardID = opt("board_id")
	d.HCAType = opt("hca_type")
	d.NodeGUID = opt("node_guid")
	d.Parent = opt("parent")

	if real, err := h.Realpath(path.Join(dir, "device")); err == nil && BDFPattern.MatchString(path.Base(real)) {
		p, errs := readPCI(h, real)
		d.PCI = p
		d.Errors = append(d.Errors, errs...)
		d.Driver = p.Driver
	} else {
		d.Driver = softDriver(name)
	}

	ports, err := h.ReadDir(path.Join(dir, "ports"))
	if err != nil {
		d.Errors = append(d.Errors, err)
	}
	for _, pn := range ports {
		if ctx.Err() != nil {
			return d // left out by the caller
		}
		num, err := strconv.Atoi(pn)
		if err != nil {
			continue
		}
		p := &Port{Num: num, reads: &attrReads{m: map[string]func() (string, error){}, ctx: ctx}}
		pdir := path.Join(dir, "ports", pn)
		if ll, err := h.ReadString(path.Join(pdir, "link_layer")); err == nil {
			p.LinkLayer = ll
		} else {
			d.Errors = append(d.Errors, err)
		}
		if p.LinkLayer != "InfiniBand" {
			if vd := tables(name); vd != nil {
				p.GIDs = verbsGIDs(h, pdir, num, vd.GIDs)
			} else {
				p.GIDs, p.GIDErr = readGIDs(ctx, h, pdir)
			}
			p.Netdevs = gidNetdevs(p.GIDs)
			if p.GIDErr != nil {
				// A tree may hold the netdev files without the GIDs (an excerpt of sysfs).
				p.Netdevs = ndevNetdevs(h, pdir)
			}
			if len(p.Netdevs) == 0 && d.PCI != nil {
				p.Netdevs = pciNetdevs(h, d.PCI.SysPath, num, len(ports))
			}
		}
		d.Ports = append(d.Ports, p)
	}
	sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
	if d.Parent == "" && d.Software() {
		for _, p := range d.Ports {
			if len(p.Netdevs) > 0 {
				d.Parent = p.Netdevs[0]
				break
			}
		}
	}
	return d
}

// readGIDs reads the non-zero entries of a port's GID table, with their type and netdev; an
// entry that cannot be read or is not a GID is left out, as the kernel prints zeros for unused
// ones.
func readGIDs(ctx context.Context, h *host.Host, pdir string) ([]GID, error) {
	names, err := h.ReadDir(path.Join(pdir, "gids"))
	if err != nil {
		return nil, err
	}
	// One entry per sysfs file, 1024 of them on rxe: read on all CPUs, each relative to its
	// directory held open.
	gids, types, ndevs := h.OpenDir(path.Join(pdir, "gids")), h.OpenDir(path.Join(pdir, "gid_attrs", "types")), h.OpenDir(path.Join(pdir, "gid_attrs", "ndevs"))
	defer gids.Close()
	defer types.Close()
	defer ndevs.Close()
	entries := make([]*GID, len(names))
	parallel(len(names), func(k int) {
		if ctx.Err() != nil {
			return // the device is left out (DiscoverContext)
		}
		n := names[k]
		i, err := strconv.Atoi(n)
		if err != nil {
			return
		}
		a, err := gids.ReadString(n)
		if err != nil || !usableGID(a) {
			return
		}
		g := GID{Index: i, Addr: a}
		g.Type, _ = types.ReadString(n)
		g.Netdev, _ = ndevs.ReadString(n)
		entries[k] = &g
	})
	var out []GID
	for _, g := range entries {
		if g != nil {
			out = append(out, *g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// verbsGIDs turns a port's entries of the verbs GID table into what readGIDs reads from sysfs.
// The netdev is read from gid_attrs/ndevs once per distinct ifindex: the index names a netdev
// only in its own network namespace, the sysfs file gives the name the kernel holds.
func verbsGIDs(h *host.Host, pdir string, port int, all []host.VerbsGID) []GID {
	var ndevs *host.Dir
	names := map[uint32]string{}
	var out []GID
	for _, e := range all {
		if e.Port != port || !usableGID(e.GID) {
			continue
		}
		g := GID{Index: e.Index, Addr: e.GID, Type: GIDTypeName(e.Type)}
		if e.Ifindex != 0 {
			nd, ok := names[e.Ifindex]
			if !ok {
				if ndevs == nil {
					ndevs = h.OpenDir(path.Join(pdir, "gid_attrs", "ndevs"))
					defer ndevs.Close()
				}
				nd, _ = ndevs.ReadString(strconv.Itoa(e.Index))
				names[e.Ifindex] = nd
			}
			g.Netdev = nd
		}
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// GIDTypeName is the text sysfs prints for a kernel GID type (gid_attrs/types/N,
// ib_cache_gid_type_str in drivers/infiniband/core/cache.c: "IB/RoCE v1" for both IB and RoCE v1
// "for user space compatibility reasons").
func GIDTypeName(t uint32) string {
	switch t {
	case 0, 1:
		return "IB/RoCE v1"
	case 2:
		return "RoCE v2"
	}
	return "Invalid GID type"
}

// gidNetdevs lists the netdevs bound to a port through its GID table: that works for hardware
// and software RoCE devices alike.
func gidNetdevs(gs []GID) []string {
	seen := map[string]bool{}
	var out []string
	for _, g := range gs {
		if g.Netdev == "" || seen[g.Netdev] {
			continue
		}
		seen[g.Netdev] = true
		out = append(out, g.Netdev)
	}
	sort.Strings(out)
	return out
}

// pciNetdevs finds a RoCE port's netdev on its PCI function when the GID table names none: the
// kernel fills the table from the netdev (drivers/infiniband/core/roce_gid_mgmt.c), and real
// captures show ports whose table is empty (ibstat "Port GUID: 0x0000000000000000" on a down
// ConnectX-6 Dx port, github.com/kvcache-ai/Mooncake issue 2039), yet the Ethernet driver
// registered the netdev under the same function (/sys/bus/pci/devices/<bdf>/net/<if>). A device
// with one port takes the function's only netdev; with several, the netdev whose dev_port
// (net/core/net-sysfs.c, the port index from 0) is the port's number less one.
func pciNetdevs(h *host.Host, sysPath string, port, nports int) []string {
	if sysPath == "" {
		return nil
	}
	names, err := h.ReadDir(path.Join(sysPath, "net"))
	if err != nil {
		return nil
	}
	if nports == 1 {
		if len(names) == 1 {
			return names
		}
		return nil
	}
	for _, n := range names {
		s, err := h.ReadString(path.Join(sysPath, "net", n, "dev_port"))
		if v, perr := strconv.Atoi(s); err == nil && perr == nil && v == port-1 {
			return []string{n}
		}
	}
	return nil
}

// ndevNetdevs lists the netdevs of gid_attrs/ndevs/N alone.
func ndevNetdevs(h *host.Host, pdir string) []string {
	idx, err := h.ReadDir(path.Join(pdir, "gid_attrs", "ndevs"))
	if err != nil {
		return nil
	}
	var gs []GID
	for _, i := range idx {
		nd, err := h.ReadString(path.Join(pdir, "gid_attrs", "ndevs", i))
		if err == nil {
			gs = append(gs, GID{Netdev: nd})
		}
	}
	return gidNetdevs(gs)
}

// usableGID reports whether a table entry holds a GID: well formed and not the zeros the kernel
// prints for an unused entry. Both the sysfs walk and the verbs table go through it.
func usableGID(s string) bool { return ValidGID(s) && strings.Trim(s, "0:") != "" }

// ValidGID reports whether s is a GID as sysfs prints it: eight groups of four hex digits.
func ValidGID(s string) bool {
	if len(s) != 39 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i%5 == 4 {
			if c != ':' {
				return false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func readPCI(h *host.Host, sysPath string) (*PCIFunction, []error) {
	p := &PCIFunction{BDF: path.Base(sysPath), SysPath: sysPath, NUMANode: -1}
	var errs []error
	hex16 := func(file string) uint16 {
		s, err := h.ReadString(path.Join(sysPath, file))
		if err != nil {
			errs = append(errs, err)
			return 0
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not a 16-bit hex id", path.Join(sysPath, file), s))
		}
		return uint16(v)
	}
	p.Vendor = hex16("vendor")
	p.DeviceID = hex16("device")
	if t, err := h.Readlink(path.Join(sysPath, "driver")); err == nil {
		p.Driver = path.Base(t)
	}
	if s, err := h.ReadString(path.Join(sysPath, "numa_node")); err == nil {
		if n, err := strconv.Atoi(s); err == nil {
			p.NUMANode = n
		}
	}
	if t, err := h.Readlink(path.Join(sysPath, "physfn")); err == nil {
		p.PF = path.Base(t)
	}
	p.Path = UpstreamPath(sysPath)
	return p, errs
}

// UpstreamPath returns the bridges above a PCI function, nearest first, from its resolved sysfs
// path (/sys/devices/pci0000:00/0000:00:02.0/0000:01:00.0 -> [0000:00:02.0]). The last element
// is the root port.
func UpstreamPath(sysPath string) []string {
	var out []string
	for dir := path.Dir(sysPath); dir != "/" && dir != "."; dir = path.Dir(dir) {
		b := path.Base(dir)
		if !BDFPattern.MatchString(b) {
			break
		}
		out = append(out, b)
	}
	return out
}

// charDevIndex maps ibdev -> char device names from /sys/class/infiniband_verbs/uverbsN/ibdev
// (and the umad equivalent).
func charDevIndex(h *host.Host, dir string) map[string][]string {
	out := map[string][]string{}
	names, err := h.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, n := range names {
		ib, err := h.ReadString(path.Join(dir, n, "ibdev"))
		if err != nil {
			continue
		}
		out[ib] = append(out[ib], n)
	}
	for k := range out {
		sort.Slice(out[k], func(i, j int) bool { return natLess(out[k][i], out[k][j]) })
	}
	return out
}

// softDriver names the kernel module behind a software RDMA device, which has no PCI driver.
func softDriver(name string) string {
	switch {
	case strings.HasPrefix(name, "rxe"):
		return "rdma_rxe"
	case strings.HasPrefix(name, "siw"):
		return "siw"
	}
	return ""
}

func natLess(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return a < b
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(s[i:])
	return s[:i], n
}
