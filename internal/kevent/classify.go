// Package kevent classifies kernel log records once per run: each record is matched against one
// table of the drivers' own format strings (signatures/*.json), tied to the RDMA device, PCI
// function, netdev or port it is about, and becomes a typed Event that the checks judge. A
// record at KERN_ERR or worse from an RDMA or PCIe-path driver that no entry knows becomes an
// unrecognised event with its text, so that nothing such a driver complains of is dropped.
package kevent

import (
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/internal/relit"
)

// Device is an RDMA device of the host as the classifier ties lines to it.
type Device struct {
	Name string
	PCI  string // the PCI function, "" for a software device
	// Netdevs maps each of its ports' netdevs to the port number.
	Netdevs map[string]int
}

// Event is one kernel log record, classified.
type Event struct {
	// Index is the record's position in the log the events were drawn from.
	Index  int
	Record kmsg.Record
	// Sig is the table entry the record matched; nil for an unrecognised driver error.
	Sig *Signature
	// Driver printed the record, as its prefix (or the signature) says; nil when unknown.
	Driver *Driver
	// Device, PCI, Netdev and Port are what the record is about, as far as it says: an RDMA
	// device of the host, a PCI function (of the host's devices or not), a netdev, a port.
	Device, PCI, Netdev string
	Port                int
	// Args are the texts of the matched format's conversions, in order.
	Args []string
	// State is the link state a link event reports, lower case ("up", "down", "active").
	State string
	// Module is the kernel module a loader line names.
	Module string
}

// Recognised reports whether a table entry matched the record.
func (e *Event) Recognised() bool { return e.Sig != nil }

// Layer is the layer the event belongs to: its signature's, else its driver's.
func (e *Event) Layer() string {
	if e.Sig != nil {
		return e.Sig.Layer
	}
	if e.Driver != nil {
		return e.Driver.Layer
	}
	return "driver"
}

// Detail joins the conversions the signature names as splitting its findings ("0x1", "ACCESS_REG").
func (e *Event) Detail() string {
	if e.Sig == nil {
		return ""
	}
	if t := e.Sig.DetailText; t != "" {
		t = strings.TrimSpace(detailRef.ReplaceAllStringFunc(t, func(ref string) string {
			m := detailRef.FindStringSubmatch(ref)
			i, _ := strconv.Atoi(m[1])
			if i < 1 || i > len(e.Args) {
				return ""
			}
			v := strings.TrimSpace(e.Args[i-1])
			if m[2] != "" {
				return e.Sig.Meanings[m[1]][strings.ToLower(v)]
			}
			return v
		}))
		// A value without a meaning leaves its parentheses empty.
		return strings.TrimSpace(strings.ReplaceAll(t, " ()", ""))
	}
	var parts []string
	for _, i := range e.Sig.Args.Detail {
		if i >= 1 && i <= len(e.Args) {
			if v := strings.TrimSpace(e.Args[i-1]); v != "" {
				parts = append(parts, v)
			}
		}
	}
	return strings.Join(parts, " ")
}

// Key is the event's identity for the report's linking: the record's sequence number.
func (e *Event) Key() string { return RecordKey(e.Record) }

// RecordKey is a kernel log record's identity as a finding's event ("kmsg:<seq>"): two
// findings quoting one record are drawn from one event.
func RecordKey(r kmsg.Record) string { return "kmsg:" + strconv.FormatUint(r.Seq, 10) }

// RecordKeys are the identities of records, in order.
func RecordKeys(recs []kmsg.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = RecordKey(r)
	}
	return out
}

// failureWords marks, on a record whose source gave no priority (a syslog file), a line that
// reads as an error, which a priority would have told: such a line from an RDMA or PCIe-path
// driver that no entry knows is reported as unrecognised.
var failureWords = relit.MustCompile(`(?i)\b(fail(ed|ure|s)?|error|err|unknown symbol|disagrees|time(d)? ?out|timeout|unable|cannot|can't|invalid|fatal)\b`)

// errLevel is KERN_ERR: a record at this level or graver is an error by the driver's own word.
const errLevel = 3

// Prepare builds what Classify matches with (the words of every format, in one set), which the
// first Classify would: a process that runs for months builds it at start, then gives back the
// memory building it took.
func (t *Table) Prepare() {
	t.setOnce.Do(func() { t.set = relit.NewLiteralSet(t.words) })
}

// Classify matches every record once and returns the events, in log order. A record that
// matches several entries takes the one with the most literal text (the most specific); a
// signature marked rdma_only that cannot be tied to one of devs is no event.
func (t *Table) Classify(recs []kmsg.Record, devs []Device) []Event {
	t.Prepare()
	present := t.set.Present(kmsg.Texts(recs))
	var cand []int
	for i, ok := range present {
		if ok {
			cand = append(cand, i)
		}
	}
	var out []Event
	for i, r := range recs {
		drv := t.DriverOf(r.Text)
		best, bestLit, bestOwn := -1, -1, false
		var bestIdx []int
		for _, ri := range cand {
			e := &t.entries[t.owner[ri]]
			lit := int(t.flit[ri])
			if lit < MinLiteral && (drv == nil || drv != e.drv) {
				continue
			}
			// Of entries with as much literal text, the one of the driver whose prefix starts
			// the line wins (hns_roce's "HW2SW_MPT failed (%d)" beside mlx4's, with its stop).
			own := drv != nil && e.drv == drv
			if lit < bestLit || lit == bestLit && (bestOwn || !own) {
				continue
			}
			// Every literal word before the entry is decoded: a line that shares only the
			// longest word with a format (common words: "error", "device") is not a match.
			if !t.containsAll(r.Text, ri) {
				continue
			}
			if m := t.sig(t.owner[ri]).res[t.fidx[ri]].FindStringSubmatchIndex(r.Text); m != nil {
				best, bestLit, bestOwn, bestIdx = ri, lit, own, m
			}
		}
		if best < 0 {
			if ev, ok := t.unrecognised(i, r, drv, devs); ok {
				out = append(out, ev)
			}
			continue
		}
		s := t.sig(t.owner[best])
		ev := Event{Index: i, Record: r, Sig: s, Driver: drv}
		if ev.Driver == nil {
			ev.Driver = t.drivers[s.Driver]
		}
		for g := 1; 2*g+1 < len(bestIdx); g++ {
			a, b := bestIdx[2*g], bestIdx[2*g+1]
			if a < 0 {
				ev.Args = append(ev.Args, "")
				continue
			}
			ev.Args = append(ev.Args, r.Text[a:b])
			if s.roles[g] == RolePCI {
				ev.PCI = pciAt(r.Text[a:])
			}
		}
		arg := func(i int) string {
			if i >= 1 && i <= len(ev.Args) {
				return ev.Args[i-1]
			}
			return ""
		}
		ev.Netdev, ev.Module = arg(s.Args.Netdev), arg(s.Args.Module)
		if p, err := strconv.Atoi(arg(s.Args.Port)); err == nil {
			ev.Port = p
		}
		ev.State = strings.ToLower(s.State)
		if s.Args.State != 0 {
			ev.State = strings.ToLower(arg(s.Args.State))
		}
		attribute(&ev, arg(s.Args.IBDev), devs)
		if s.RDMAOnly && ev.Device == "" {
			continue
		}
		out = append(out, ev)
	}
	return out
}

// unrecognised makes an event of a record no entry knows, when it is an error from a driver of
// the table (by its prefix) or about one of the host's RDMA devices.
func (t *Table) unrecognised(i int, r kmsg.Record, drv *Driver, devs []Device) (Event, bool) {
	isErr := !r.NoLevel && r.Level <= errLevel || r.NoLevel && failureWords.MatchString(r.Text) && !t.quietPrint(r.Text)
	if !isErr {
		return Event{}, false
	}
	ev := Event{Index: i, Record: r, Driver: drv}
	attribute(&ev, "", devs)
	if drv == nil && ev.Device == "" {
		return Event{}, false
	}
	return ev, true
}

// quietPrint says the text holds the opening of a format its driver prints below KERN_WARNING
// ("error containment capabilities: Int Msg #" of dpc_probe's pci_info): a line that reads as
// an error by its words, quoted without its level, and short of or beside the full format.
func (t *Table) quietPrint(text string) bool {
	folded := strings.Join(strings.Fields(text), " ")
	for _, q := range t.quiet {
		if strings.Contains(folded, q) {
			return true
		}
	}
	return false
}

// attribute ties an event to a device: by the record's dictionary (DEVICE=+pci:BDF,
// +infiniband:mlx5_0), dev_printk's "driver BDF: " prefix, ibdev_printk's "infiniband mlx5_0: ",
// then what the matched format names (an ib device, a PCI address, a netdev).
func attribute(ev *Event, ibdev string, devs []Device) {
	r := ev.Record
	if ev.PCI == "" {
		ev.PCI = r.BDF()
	}
	if rest, ok := strings.CutPrefix(r.Text, "DMA-API: "); ok && ev.PCI == "" {
		// kernel/dma/debug.c err_printk(): pr_fmt, then the device's driver and name as
		// dev_printk would start ("DMA-API: mlx5_core 0000:3b:00.0: device driver ...").
		ev.PCI = kmsg.Record{Text: rest}.BDF()
	}
	if ev.Netdev == "" {
		ev.Netdev = prefixNetdev(r.Text)
	}
	dev := ibdev
	if d, ok := strings.CutPrefix(r.Device, "+infiniband:"); ok {
		dev = d
	} else if rest, ok := strings.CutPrefix(r.Text, "infiniband "); ok && dev == "" {
		if name, _, ok := strings.Cut(rest, ":"); ok && !strings.Contains(name, " ") {
			dev = name
		}
	}
	for _, d := range devs {
		switch {
		case ev.PCI != "" && d.PCI == ev.PCI, dev != "" && d.Name == dev:
		case ev.Netdev != "" && d.Netdevs[ev.Netdev] != 0:
			if ev.Port == 0 {
				ev.Port = d.Netdevs[ev.Netdev]
			}
		default:
			continue
		}
		ev.Device = d.Name
		if ev.PCI == "" {
			ev.PCI = d.PCI
		}
		return
	}
	if ev.Device == "" && dev != "" {
		ev.Device = dev
	}
}

// pciAt reads the PCI address at the start of s, as pci_name() prints it or as a format prints
// its parts ("%04x:%02x:%02x.%x", or "%02x:%02x.%x" without the domain, taken as domain 0).
func pciAt(s string) string {
	hex := func(s string, n int) bool {
		if len(s) < n {
			return false
		}
		for i := 0; i < n; i++ {
			c := s[i]
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
		return true
	}
	bus := func(s string) bool { // "3b:00.0"
		return len(s) >= 7 && hex(s, 2) && s[2] == ':' && hex(s[3:], 2) && s[5] == '.' && s[6] >= '0' && s[6] <= '7'
	}
	switch {
	case len(s) >= 12 && hex(s, 4) && s[4] == ':' && bus(s[5:]):
		return strings.ToLower(s[:12])
	case bus(s):
		return "0000:" + strings.ToLower(s[:7])
	}
	return ""
}

// prefixNetdev is the netdev netdev_printk names in its prefix (net/core/dev.c
// __netdev_printk: "<driver> <bus id> <netdev>: "), "" when the line has no such prefix.
func prefixNetdev(text string) string {
	f := strings.SplitN(text, " ", 4)
	if len(f) < 4 || pciAt(f[1]) != strings.ToLower(f[1]) || !strings.HasSuffix(f[2], ":") {
		return ""
	}
	nd := strings.TrimSuffix(f[2], ":")
	if nd == "" || strings.ContainsAny(nd, ":()") {
		return ""
	}
	return nd
}

// containsAll reports whether s holds every literal word of the table's format number format.
func (t *Table) containsAll(s string, format int) bool {
	for _, id := range t.req[t.reqOff[format]:t.reqOff[format+1]] {
		if !strings.Contains(s, t.dict[id]) {
			return false
		}
	}
	return true
}
