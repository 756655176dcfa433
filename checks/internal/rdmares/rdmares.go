// Package rdmares reads the RDMA resource tables (devices, QPs, CQs, resource summary) once per
// run through the nldev client and shares them between the qp and cq checks, with each
// resource's owner named as rdma res show names it. driver.modules asks it for the device list
// too: an answer shows ib_core is there.
package rdmares

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Table is one resource dump per device, in the order the kernel listed the devices.
type Table[T any] struct {
	// Err is set when the device list itself could not be read; nothing else is then filled.
	Err     error
	Devices []DeviceTable[T]
}

// DeviceTable is one device's objects, or the error its dump returned.
type DeviceTable[T any] struct {
	Dev  nldev.Device
	Objs []T
	Err  error
}

// Source names a device's dump in evidence, as a reader would find it again.
func Source(what, dev string) string { return "netlink:RES_" + what + "_GET " + dev }

// RawSource names a device's raw context dump in evidence.
func RawSource(what, dev string) string { return "netlink:RES_" + what + "_GET_RAW " + dev }

// Devices returns the nldev device list of this run.
func Devices(env *checks.Env) ([]nldev.Device, error) {
	r := devicesFact.Get(env)
	return r.d, r.err
}

type devicesResult struct {
	d   []nldev.Device
	err error
}

var devicesFact = checks.NewFact("RDMA netlink device list", func(env *checks.Env) devicesResult {
	d, err := nldev.NewClient(env.Host.Netlink()).Devices()
	return devicesResult{d, err}
})

// QPs returns every device's QP dump of this run.
func QPs(env *checks.Env) *Table[nldev.QP] { return qpsFact.Get(env) }

var qpsFact = checks.NewFact("QP dump", ReadQPs)

// ReadQPs dumps the QPs again (a second reading for --interval checks).
func ReadQPs(env *checks.Env) *Table[nldev.QP] {
	return read(env, (*nldev.Client).QPs, func(q *nldev.QP) uint32 { return q.PID })
}

// CQs returns every device's CQ dump of this run.
func CQs(env *checks.Env) *Table[nldev.CQ] { return cqsFact.Get(env) }

var cqsFact = checks.NewFact("CQ dump", func(env *checks.Env) *Table[nldev.CQ] {
	return read(env, (*nldev.Client).CQs, func(c *nldev.CQ) uint32 { return c.PID })
})

// Summary returns the per-device resource counts by device index.
func Summary(env *checks.Env) (map[uint32]map[string]uint64, error) {
	r := summaryFact.Get(env)
	return r.m, r.err
}

type summaryResult struct {
	m   map[uint32]map[string]uint64
	err error
}

var summaryFact = checks.NewFact("resource summary", func(env *checks.Env) summaryResult {
	sums, err := nldev.NewClient(env.Host.Netlink()).ResourceSummary()
	m := make(map[uint32]map[string]uint64, len(sums))
	for _, s := range sums {
		m[s.DevIndex] = s.Counts
	}
	return summaryResult{m, err}
})

func read[T any](env *checks.Env, dump func(*nldev.Client, uint32) ([]T, error), pidOf func(*T) uint32) *Table[T] {
	devs, err := Devices(env)
	if err != nil {
		return &Table[T]{Err: err}
	}
	c := nldev.NewClient(env.Host.Netlink())
	t := &Table[T]{Devices: make([]DeviceTable[T], len(devs))}
	self := selfFilter(env.Host)
	owners := SharedOwners(env)
	for i, d := range devs {
		objs, err := dump(c, d.Index)
		if self != nil {
			objs = slices.DeleteFunc(objs, func(o T) bool { return self(pidOf(&o)) })
		}
		// Every owner is named right after the dump, whichever checks later name which: the
		// process may exit soon, and a recording must keep the command of every owner.
		for j := range objs {
			if pid := pidOf(&objs[j]); pid != 0 {
				owners.Comm(pid)
			}
		}
		t.Devices[i] = DeviceTable[T]{Dev: d, Objs: objs, Err: err}
	}
	return t
}

// selfFilter returns, on a live host, a test for resources of this very process: the verbs
// probes run next to these checks and their QPs and CQs (a one-entry CQ, a QP overrun into ERR
// on purpose) are not the host's. The kernel records the creating thread's id, so a pid is ours
// when /proc/<pid>/status names our process as its thread group. Snapshots hold no resources
// of the analysing process, so there is nothing to filter (and a pid there may equal ours by chance).
func selfFilter(h *host.Host) func(pid uint32) bool {
	if !h.SeesOwnResources() {
		return nil
	}
	me := os.Getpid()
	seen := map[uint32]bool{}
	return func(pid uint32) bool {
		if pid == 0 {
			return false
		}
		if v, ok := seen[pid]; ok {
			return v
		}
		v := tgid(h, pid) == me
		seen[pid] = v
		return v
	}
}

// tgid reads the thread group (process) id of a task from /proc/<pid>/status; -1 if unknown.
func tgid(h *host.Host, pid uint32) int {
	b, err := h.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Tgid:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return -1
			}
			return n
		}
	}
	return -1
}

// NotRecorded reports whether err means this host view holds no netlink answers at all (a plain
// root tree, a snapshot recorded where netlink was unavailable) rather than a failing kernel.
func NotRecorded(err error) bool { return errors.Is(err, host.ErrNotRecorded) }

// Owners names resource owners: "[ib_core]" for a kernel module, "pid 812 (ib_write_bw)" for a
// process, with the command read from /proc/<pid>/comm as iproute2 does (recorded in snapshots).
type Owners struct {
	h     *host.Host
	mu    sync.Mutex
	names map[uint32]string
}

// SharedOwners returns the run's owner cache.
func SharedOwners(env *checks.Env) *Owners { return ownersFact.Get(env) }

var ownersFact = checks.NewFact("resource owner names", func(env *checks.Env) *Owners {
	return &Owners{h: env.Host, names: map[uint32]string{}}
})

// Name is the owner's display name.
func (o *Owners) Name(pid uint32, kern string) string {
	if kern != "" || pid == 0 {
		if kern == "" {
			kern = "kernel"
		}
		return "[" + kern + "]"
	}
	return "pid " + strconv.FormatUint(uint64(pid), 10) + " (" + o.Comm(pid) + ")"
}

// Key is the owner's identity for a finding's ref: "[ib_core]" for a kernel module, the command
// for a process. Unlike Name it holds no PID, which changes when the process restarts.
func (o *Owners) Key(pid uint32, kern string) string {
	if kern != "" || pid == 0 {
		return o.Name(pid, kern)
	}
	return o.Comm(pid)
}

// Comm is the command of a process, or a note saying why it is not known.
func (o *Owners) Comm(pid uint32) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n, ok := o.names[pid]; ok {
		return n
	}
	n, err := o.h.ReadString(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || n == "" {
		// The process may have exited between the dump and this read, or the snapshot predates
		// comm recording.
		n = "command unknown"
	}
	o.names[pid] = n
	return n
}

// DevSubject is a device subject with its PCI function when the inventory knows it, so that
// PCIe and firmware causes on that function explain the finding.
func DevSubject(env *checks.Env, dev string) report.Subject {
	s := report.Subject{Kind: "device", Name: dev, Device: dev}
	if d := env.Inventory().Device(dev); d != nil && d.PCI != nil {
		s.PCI = d.PCI.BDF
	}
	return s
}

// Unavailable is the one finding a netlink-based check returns when the device list cannot be
// read: skipped when there is no device or this host view holds no netlink answers, unknown
// otherwise.
func Unavailable(env *checks.Env, err error) []engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Unknown,
		Summary:  "RDMA netlink could not be read: " + err.Error(),
		Evidence: []report.Evidence{report.Ev("nldev device dump", err.Error(), "netlink:GET")}}}
	inv := env.Inventory()
	switch {
	case inv.Absent != nil || len(inv.Devices) == 0:
		f.Severity = report.Skipped
		f.Summary = "no RDMA device to check (see the driver layer)"
	case NotRecorded(err):
		f.Severity = report.Skipped
		f.Summary = "RDMA netlink answers are not part of this host view (plain root tree, or snapshot recorded without them)"
	default:
		f.Remediation = "Check that ib_core is loaded (lsmod | grep ib_core); any user can open a NETLINK_RDMA socket " +
			"on an RDMA-enabled kernel."
	}
	return []engine.Finding{f}
}

// NoDevices is the finding for an empty netlink device list.
func NoDevices() []engine.Finding {
	return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
		Summary: "no RDMA device in the netlink device list (see the driver layer)"}}}
}

// maxListed bounds the object numbers written into one evidence line; the count says how many more.
const maxListed = 32

// NumList formats QP or CQ numbers as rdma res show does (decimal), sorted, at most maxListed.
func NumList(nums []uint32) string {
	s := append([]uint32(nil), nums...)
	slices.Sort(s)
	var b strings.Builder
	for i, n := range s {
		if i == maxListed {
			fmt.Fprintf(&b, " ... and %d more", len(s)-maxListed)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(uint64(n), 10))
	}
	return b.String()
}
