package inventory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// Rate is a parsed rate file: "100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", and the pre-HDR
// SDR form without a speed name, "10 Gb/sec (4X)".
type Rate struct {
	Gbps  float64
	Width int    // lanes: 1, 2, 4, 8, 12; 0 when the file gives none
	Speed string // SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR; "" on old SDR
}

func (r Rate) String() string {
	g := strconv.FormatFloat(r.Gbps, 'f', -1, 64)
	if r.Width == 0 {
		return g + " Gb/sec"
	}
	if r.Speed == "" {
		return fmt.Sprintf("%s Gb/sec (%dX)", g, r.Width)
	}
	return fmt.Sprintf("%s Gb/sec (%dX %s)", g, r.Width, r.Speed)
}

// ParseRate parses the rate file: the number before the first space, the unit "Gb/sec", then an
// optional "(NX[ SPEED])" group (drivers/infiniband/core/sysfs.c rate_show, "%d%s Gb/sec
// (%dX%s)"). The unit is required: a number in another unit is not a rate in Gb/s.
func ParseRate(s string) (Rate, error) {
	s = strings.TrimSpace(s)
	num, rest, _ := strings.Cut(s, " ")
	g, err := strconv.ParseFloat(num, 64)
	if err != nil || g < 0 || math.IsInf(g, 0) || math.IsNaN(g) || g > 100000 {
		return Rate{}, fmt.Errorf("rate %q does not start with a number of Gb/s", s)
	}
	if !strings.HasPrefix(rest, "Gb/sec") {
		return Rate{}, fmt.Errorf("rate %q: want \"<n> Gb/sec (<w>X <speed>)\"", s)
	}
	r := Rate{Gbps: g}
	open := strings.IndexByte(rest, '(')
	if open < 0 {
		return r, nil
	}
	inner, _, ok := strings.Cut(rest[open+1:], ")")
	if !ok {
		return Rate{}, fmt.Errorf("rate %q: unterminated width group", s)
	}
	w, speed, _ := strings.Cut(strings.TrimSpace(inner), " ")
	wn, err := strconv.Atoi(strings.TrimSuffix(w, "X"))
	if err != nil || !strings.HasSuffix(w, "X") || wn <= 0 || wn > 32 {
		return Rate{}, fmt.Errorf("rate %q: width %q is not NX", s, w)
	}
	r.Width, r.Speed = wn, strings.TrimSpace(speed)
	return r, nil
}

// PortState is a parsed "%d: %s" file: state ("4: ACTIVE", enum ib_port_state) or phys_state
// ("5: LinkUp", the IBTA PortPhysicalState).
type PortState struct {
	Num  int
	Name string
}

func (s PortState) String() string { return fmt.Sprintf("%d: %s", s.Num, s.Name) }

// ParseState reads state ("4: ACTIVE") and phys_state ("5: LinkUp"). Kernels before the
// phys_state table rework printed the same "N: Name" shape, so one parser covers both
// (drivers/infiniband/core/sysfs.c state_show/phys_state_show). Both numbers are u8 in the
// kernel, and a state without a name is not one.
func ParseState(s string) (PortState, error) {
	s = strings.TrimSpace(s)
	num, name, ok := strings.Cut(s, ":")
	if !ok {
		return PortState{}, fmt.Errorf("%q is not \"N: NAME\"", s)
	}
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 0 || n > 255 {
		return PortState{}, fmt.Errorf("%q: state number %q is not 0-255", s, num)
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return PortState{}, fmt.Errorf("%q has no state name", s)
	}
	return PortState{Num: n, Name: name}, nil
}

// Dir is the port's directory in sysfs, under its device's.
func (p *Port) Dir(device string) string {
	return path.Join(ClassDir, device, "ports", strconv.Itoa(p.Num))
}

// ReadState reads and parses the port's state, once per run (see attrReads); an error names the
// file. Checks call it at check time (Discover does not read it, see ReadAttrs).
func (p *Port) ReadState(h *host.Host, device string) (PortState, error) {
	return p.readState(h, path.Join(p.Dir(device), "state"))
}

// ReadPhysState reads and parses the port's phys_state, once per run; an error names the file.
func (p *Port) ReadPhysState(h *host.Host, device string) (PortState, error) {
	return p.readState(h, path.Join(p.Dir(device), "phys_state"))
}

// attrReads keeps the state, phys_state and rate files of a port as first read in a run (an
// Inventory is read once per run, and its ports are shared by every check): every check and the
// report's inventory judge the same reading, and each file is read once per run. Each file has
// its own once: a read that blocks (a wedged device) holds only the checks that need that file.
type attrReads struct {
	mu sync.Mutex
	m  map[string]func() (string, error)
	// ctx is the run's (DiscoverContext's): once it ends, a file not read yet is not read, so
	// that the per-port loops of checks cut short stop reading the host.
	ctx context.Context
}

// readAttr reads one of the port's files once per run (see attrReads); a port built without
// Discover reads it every time.
func (p *Port) readAttr(h *host.Host, file string) (string, error) {
	return p.readOnce(file, func() (string, error) { return h.ReadString(file) })
}

// readOnce returns the run's reading of file, reading it with read the first time.
func (p *Port) readOnce(file string, read func() (string, error)) (string, error) {
	if p.reads == nil {
		return read()
	}
	p.reads.mu.Lock()
	once, ok := p.reads.m[file]
	if !ok && p.reads.ctx != nil && p.reads.ctx.Err() != nil {
		p.reads.mu.Unlock()
		return "", fmt.Errorf("%s: not read: %w", file, context.Cause(p.reads.ctx))
	}
	if !ok {
		once = sync.OnceValues(read)
		p.reads.m[file] = once
	}
	p.reads.mu.Unlock()
	return once()
}

// ReadFiles reads names in one of the port's subdirectories (counters, hw_counters), relative
// to it (host.Dir: a port has some twenty counters under /sys/class's symlink), each once per run
// as ReadAttr does: the first reading of a counter is shared by the checks and the report's
// inventory. The errors name the files; ReadFilesNow is the second reading of an interval.
func (p *Port) ReadFiles(h *host.Host, device, sub string, names []string) ([]string, []error) {
	dir := path.Join(p.Dir(device), sub)
	var d *host.Dir
	defer func() {
		if d != nil {
			d.Close()
		}
	}()
	vals, errs := make([]string, len(names)), make([]error, len(names))
	for i, n := range names {
		vals[i], errs[i] = p.readOnce(path.Join(dir, n), func() (string, error) {
			if d == nil {
				d = h.OpenDir(dir)
			}
			return d.ReadString(n)
		})
	}
	return vals, errs
}

// ReadFilesNow reads names in one of the port's subdirectories now, without sharing the reading.
func (p *Port) ReadFilesNow(h *host.Host, device, sub string, names []string) ([]string, []error) {
	d := h.OpenDir(path.Join(p.Dir(device), sub))
	defer d.Close()
	vals, errs := make([]string, len(names)), make([]error, len(names))
	for i, n := range names {
		vals[i], errs[i] = d.ReadString(n)
	}
	return vals, errs
}

func (p *Port) readState(h *host.Host, file string) (PortState, error) {
	s, err := p.readAttr(h, file)
	if err != nil {
		return PortState{}, err
	}
	st, err := ParseState(s)
	if err != nil {
		return PortState{}, fmt.Errorf("%s: %w", file, err)
	}
	return st, nil
}

// ReadAttr reads one file of the port's directory (lid, sm_lid) once per run, as ReadState does:
// the checks and the report's inventory show the same reading. The error names the file.
func (p *Port) ReadAttr(h *host.Host, device, file string) (string, error) {
	return p.readAttr(h, path.Join(p.Dir(device), file))
}

// ReadRate reads and parses the port's rate file now, and returns it as the kernel printed it
// too, for evidence (empty when nothing could be read); an error names the file.
func (p *Port) ReadRate(h *host.Host, device string) (Rate, string, error) {
	file := path.Join(p.Dir(device), "rate")
	s, err := p.readAttr(h, file)
	if err != nil {
		return Rate{}, "", err
	}
	r, err := ParseRate(s)
	if err != nil {
		return Rate{}, s, fmt.Errorf("%s: %w", file, err)
	}
	return r, s, nil
}

// ReadAttrs fills the port attributes a description of the host needs (state, rate, LID, the
// routable GID) on p, a port of device; the state, rate and LID files as the run first read them
// (ReadState, ReadAttr), the GIDs from Discover's table. The netdev's MTU is not read here: the
// report takes it from the run's reading of the netdev. Discover leaves them out: the checks read these files
// themselves, and a read that blocks (a wedged device) must hold only the checks that need it,
// not every check through the shared inventory. They are descriptive: a file that cannot be
// read leaves its field empty, and the port checks report the failure on the port.
func (p *Port) ReadAttrs(h *host.Host, device string) {
	readPortAttrs(h, p, p.Dir(device))
}

func readPortAttrs(h *host.Host, p *Port, pdir string) {
	read := func(file string) (string, bool) {
		f := path.Join(pdir, file)
		var s string
		var err error
		if file == "lid" || file == "sm_lid" || file == "state" || file == "phys_state" || file == "rate" {
			s, err = p.readAttr(h, f) // the reading the checks judged
		} else {
			s, err = h.ReadString(f)
		}
		return s, err == nil
	}
	if s, ok := read("state"); ok {
		p.State = stateName(s)
	}
	if s, ok := read("phys_state"); ok {
		p.PhysState = stateName(s)
	}
	if s, ok := read("rate"); ok {
		p.Rate = s
	}
	// lid and sm_lid mean something on InfiniBand only; RoCE ports print 0x0.
	if p.LinkLayer == "InfiniBand" {
		for file, dst := range map[string]**uint32{"lid": &p.LID, "sm_lid": &p.SMLID} {
			if s, ok := read(file); ok {
				if v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32); err == nil && strings.HasPrefix(s, "0x") {
					v32 := uint32(v)
					*dst = &v32
				}
			}
		}
	}
	if p.LinkLayer == "Ethernet" {
		if p.GIDs != nil {
			p.GID = pickRoutable(p.GIDs) // read once by Discover
		} else {
			p.GID = routableGID(h, pdir)
		}
	}
}

// stateName is the name of a state or phys_state file, "" when it does not parse.
func stateName(s string) string {
	st, err := ParseState(s)
	if err != nil {
		return ""
	}
	return st.Name
}

// moduleVersion reads /sys/module/<m>/version, which the kernel creates only for a module that
// declares MODULE_VERSION (kernel/module/main.c, modinfo_version): out-of-tree drivers such as
// MLNX_OFED's mlx5_core do, the in-box ones mostly do not. "" when absent or unreadable.
func moduleVersion(h *host.Host, module string, cache map[string]string) string {
	if module == "" {
		return ""
	}
	if v, ok := cache[module]; ok {
		return v
	}
	v, err := h.ReadString("/sys/module/" + module + "/version")
	if err != nil {
		v = ""
	}
	cache[module] = v
	return v
}

// ErrorCounterNames are the PMA port error counters ErrorCounters reads (ports/<n>/counters/,
// drivers/infiniband/core/sysfs.c pma_table; the IBTA PortCounters attribute): the ones whose
// growth means a physical or link-level problem.
var ErrorCounterNames = []string{
	"symbol_error",
	"link_error_recovery",
	"link_downed",
	"port_rcv_errors",
	"port_xmit_discards",
	"local_link_integrity_errors",
	"excessive_buffer_overrun_errors",
}

// ErrorCounters reads a port's PMA error counters since boot. It is separate from Discover
// because each read is a management datagram to the port on hardware devices; only the host's
// description asks for it, and takes the run's reading of each counter (ReadFiles: port.counters
// read them already in a run that judged them). A counter that is absent (software devices), not provided ("N/A (no
// PMA)" on virtual functions) or unreadable is left out; nil when none could be read.
func ErrorCounters(h *host.Host, d *Device, p *Port) map[string]uint64 {
	var out map[string]uint64
	dir := fmt.Sprintf("%s/%s/ports/%d/counters", ClassDir, d.Name, p.Num)
	if _, err := h.ReadDir(dir); errors.Is(err, fs.ErrNotExist) {
		return nil // no PMA counters at all (software devices): one look instead of a read each
	}
	vals, errs := p.ReadFiles(h, d.Name, "counters", ErrorCounterNames)
	for i, n := range ErrorCounterNames {
		s, err := vals[i], errs[i]
		if err != nil {
			continue // one failed read says nothing about the other counters
		}
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[string]uint64{}
		}
		out[n] = v
	}
	return out
}

// routableGID returns the GID a RoCE peer addresses the port by: the lowest-index entry that
// carries an IP address (IPv4-mapped ::ffff:a.b.c.d or a non-link-local IPv6 address), a RoCE v2
// one when there is one, since only RoCE v2 is routed (rdma_cm and NCCL pick it; an mlx5 port
// lists each address as RoCE v1 first, then v2). Link-local fe80:: entries are derived from the
// MAC address and exist without any IP configuration; zero entries are unused
// (drivers/infiniband/core/sysfs.c show_port_gid). nil when there is none.
func routableGID(h *host.Host, pdir string) *GID {
	names, err := h.ReadDir(path.Join(pdir, "gids"))
	if err != nil {
		return nil
	}
	var idx []int
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			idx = append(idx, i)
		}
	}
	sort.Ints(idx)
	var gids []GID
	for _, i := range idx {
		n := strconv.Itoa(i)
		a, err := h.ReadString(path.Join(pdir, "gids", n))
		if err != nil || !routable(a) {
			continue
		}
		t, _ := h.ReadString(path.Join(pdir, "gid_attrs", "types", n))
		gids = append(gids, GID{Index: i, Addr: a, Type: t})
	}
	return pickRoutable(gids)
}

// routable: an IPv4-mapped or global IPv6 GID, not zero or link-local.
func routable(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && !ip.IsUnspecified() && !ip.IsLinkLocalUnicast() && len(a) == 39
}

// pickRoutable applies routableGID's rule: the lowest index wins, RoCE v2 over v1.
func pickRoutable(gids []GID) *GID {
	gids = slices.Clone(gids)
	sort.Slice(gids, func(i, j int) bool { return gids[i].Index < gids[j].Index })
	var first *GID
	for i := range gids {
		g := gids[i]
		if !routable(g.Addr) {
			continue
		}
		if g.Type == "RoCE v2" {
			return &g
		}
		if first == nil {
			first = &g
		}
	}
	return first
}
