package fleet

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options change what the aggregate judges and how much it keeps.
type Options struct {
	// Now is the time staleness is measured from.
	Now time.Time
	// Stale is the age (from tool.started) at which a report is stale; 0 judges no age.
	Stale time.Duration
	// Names is how many names each list keeps (the first in order of host name); 0 keeps all,
	// and memory then grows with the number of hosts named.
	Names int
}

// Caps on what hostile or unusual input can make the aggregate hold.
const (
	maxRootKeys     = 4096 // distinct check/fault/subject-kind root causes
	maxDriftGroups  = 4096 // distinct attribute/card groups
	maxDriftValues  = 256  // distinct values of one attribute in one group
	maxCounterNames = 64   // distinct error counter names
)

// Aggregator reduces host records; it is not safe for concurrent use (Run feeds it from one
// goroutine).
type Aggregator struct {
	o        Options
	reports  int
	verdicts map[string]*names
	roots    map[rootKey]*rootAgg
	// actions are the hosts that have a root cause asking for each action, each host once.
	actions  map[string]*names
	drift    map[driftKey]*driftAgg
	counters map[string]*counterAgg
	stale    *names
	failed   *names
	noInv    *names
	// dups are the older reports of hosts that have a newer one, left out (Consume).
	dups *names
	// dupNote says why duplicates could not be left out; untimedNote which could not be told apart.
	dupNote, untimedNote string
	// dropped counts what a cap left out, so the output can say so.
	droppedRoots, droppedGroups, droppedValues, droppedCounters int
}

type rootAgg struct {
	worst string
	hosts *names // detail: the summary naming its subject once (withSubject)
}

type driftKey struct{ attr, group string }

type driftAgg struct {
	label  string
	values map[string]*names // detail: where
}

type counterAgg struct {
	hist hist
	top  topK
}

// NewAggregator returns an empty aggregate.
func NewAggregator(o Options) *Aggregator {
	return &Aggregator{o: o, verdicts: map[string]*names{}, roots: map[rootKey]*rootAgg{}, actions: map[string]*names{}, drift: map[driftKey]*driftAgg{},
		counters: map[string]*counterAgg{}, stale: newNames(o.Names), failed: newNames(o.Names), noInv: newNames(o.Names), dups: newNames(o.Names)}
}

// Verdicts a report may carry; unknown and interrupted mean the host could not be checked.
var verdictOrder = []string{"healthy", "warning", "critical", "unknown", "interrupted"}

func (a *Aggregator) add(r hostRecord) {
	a.reports++
	src := ""
	if r.source != r.host {
		src = r.source + ": "
	}
	if r.failed != "" {
		a.failed.add(r.host, src+r.failed)
		return
	}
	v := r.verdict
	known := false
	for _, k := range verdictOrder {
		known = known || k == v
	}
	if !known {
		a.failed.add(r.host, fmt.Sprintf("%sverdict %q is not one rdmadiag writes", src, v))
		return
	}
	if a.verdicts[v] == nil {
		a.verdicts[v] = newNames(a.o.Names)
	}
	a.verdicts[v].add(r.host, "")
	switch {
	case r.errorDoc != "":
		a.failed.add(r.host, src+r.errorDoc)
	case v == "unknown":
		a.failed.add(r.host, src+"verdict unknown: the host could not be checked")
	case v == "interrupted":
		a.failed.add(r.host, src+"verdict interrupted: the run was stopped before every check finished")
	}
	// An error document carries no start time (report.ErrorDocument): its age is not judged.
	if a.o.Stale > 0 && r.errorDoc == "" {
		switch {
		case r.started == nil:
			a.stale.add(r.host, src+"no tool.started, so its age is unknown")
		case a.o.Now.Sub(*r.started) > a.o.Stale:
			a.stale.add(r.host, fmt.Sprintf("%sstarted %s, %s before now", src, r.started.UTC().Format(time.RFC3339),
				a.o.Now.Sub(*r.started).Round(time.Second)))
		}
	}
	a.droppedRoots += r.rootsDropped
	for _, rc := range r.roots {
		g := a.roots[rc.key]
		if g == nil {
			if len(a.roots) >= maxRootKeys {
				a.droppedRoots++
				continue
			}
			g = &rootAgg{hosts: newNames(a.o.Names)}
			a.roots[rc.key] = g
		}
		if severityRank[rc.severity] > severityRank[g.worst] {
			g.worst = rc.severity
		}
		g.hosts.add(r.host, rc.detail)
	}
	// A host counts once under each action its root causes ask for, named with the first of them
	// (the report's order: the gravest first).
	for i, rc := range r.roots {
		act := rc.key.action
		if act == "" || slices.ContainsFunc(r.roots[:i], func(o rootRecord) bool { return o.key.action == act }) {
			continue
		}
		if a.actions[act] == nil {
			a.actions[act] = newNames(a.o.Names)
		}
		a.actions[act].add(r.host, rc.detail)
	}
	if !r.hasInventory && r.errorDoc == "" {
		a.noInv.add(r.host, r.source)
	}
	for _, f := range r.facts {
		k := driftKey{f.attr, f.group}
		g := a.drift[k]
		if g == nil {
			if len(a.drift) >= maxDriftGroups {
				a.droppedGroups++
				continue
			}
			g = &driftAgg{label: f.label, values: map[string]*names{}}
			a.drift[k] = g
		}
		n := g.values[f.value]
		if n == nil {
			if len(g.values) >= maxDriftValues {
				a.droppedValues++
				continue
			}
			n = newNames(a.o.Names)
			g.values[f.value] = n
		}
		n.add(r.host, f.where)
	}
	for _, c := range r.counters {
		g := a.counters[c.name]
		if g == nil {
			if len(a.counters) >= maxCounterNames {
				a.droppedCounters++
				continue
			}
			g = &counterAgg{top: topK{k: a.o.Names}}
			a.counters[c.name] = g
		}
		g.hist.add(c.value)
		g.top.add(counterEntry{Host: r.host, Where: c.where, Value: c.value})
	}
}

// names counts entries and keeps the first k in order of (host, detail): which names are kept
// does not depend on the order reports arrive in.
type names struct {
	k     int
	count int
	kept  []Named
}

// Named is a host, with what about it (a port, a value, a reason).
type Named struct {
	Host   string `json:"host"`
	Detail string `json:"detail,omitempty"`
}

func newNames(k int) *names { return &names{k: k} }

func (n *names) add(host, detail string) {
	n.count++
	e := Named{host, detail}
	if n.k == 0 {
		n.kept = append(n.kept, e) // every name: sorted once, in list
		return
	}
	i := sort.Search(len(n.kept), func(i int) bool { return !namedLess(n.kept[i], e) })
	if n.k > 0 && i >= n.k || i < len(n.kept) && n.kept[i] == e {
		return // beyond the names kept, or a second report of a host already named so
	}
	n.kept = append(n.kept, Named{})
	copy(n.kept[i+1:], n.kept[i:])
	n.kept[i] = e
	if n.k > 0 && len(n.kept) > n.k {
		n.kept = n.kept[:n.k]
	}
}

func namedLess(a, b Named) bool {
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	return a.Detail < b.Detail
}

// List is a count of hosts with the names kept of them.
type List struct {
	Count int     `json:"count"`
	Names []Named `json:"names"`
	// More is how many were counted but not named (Options.Names).
	More int `json:"more,omitempty"`
}

func (n *names) list() List {
	if n == nil {
		return List{Names: []Named{}}
	}
	if n.k == 0 {
		sort.Slice(n.kept, func(i, j int) bool { return namedLess(n.kept[i], n.kept[j]) })
		n.kept = slices.Compact(n.kept)
	}
	l := List{Count: n.count, Names: append([]Named{}, n.kept...)}
	if n.k > 0 && len(n.kept) == n.k {
		l.More = n.count - len(l.Names)
	}
	return l
}

// hist is a histogram of counter values: exact below 1024, and above in buckets of 1/512 of a
// power of two (relative error under 0.2 %), so a quantile needs no stored values. At most
// 1024 + 54*512 buckets exist, whatever the number of ports.
type hist struct {
	n       uint64
	buckets map[uint32]uint64
}

func bucketOf(v uint64) uint32 {
	if v < 1024 {
		return uint32(v)
	}
	shift := bits.Len64(v) - 10 // v>>shift is in [512, 1023]
	return uint32(1024 + (shift-1)*512 + int(v>>shift) - 512)
}

// lowerBound is the smallest value of a bucket.
func lowerBound(b uint32) uint64 {
	if b < 1024 {
		return uint64(b)
	}
	i := int(b) - 1024
	shift := i/512 + 1
	return uint64(i%512+512) << shift
}

func (h *hist) add(v uint64) {
	if h.buckets == nil {
		h.buckets = map[uint32]uint64{}
	}
	h.n++
	h.buckets[bucketOf(v)]++
}

// quantile returns the lower bound of the bucket holding the q-quantile (nearest rank).
func (h *hist) quantile(q float64) uint64 {
	if h.n == 0 {
		return 0
	}
	keys := make([]uint32, 0, len(h.buckets))
	for k := range h.buckets {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for _, k := range keys {
		cum += h.buckets[k]
		if cum >= rank {
			return lowerBound(k)
		}
	}
	return lowerBound(keys[len(keys)-1])
}

// above counts values in buckets that lie wholly above x.
func (h *hist) above(x uint64) uint64 {
	var n uint64
	for k, c := range h.buckets {
		if lowerBound(k) > x {
			n += c
		}
	}
	return n
}

// sorted returns the entries kept, largest first.
func (t *topK) sorted() []counterEntry {
	if t.k == 0 {
		sort.Slice(t.kept, func(i, j int) bool { return topLess(t.kept[i], t.kept[j]) })
	}
	return t.kept
}

type counterEntry struct {
	Host  string `json:"host"`
	Where string `json:"port"`
	Value uint64 `json:"value"`
}

// topK keeps the k largest entries (ties by host and port); k 0 keeps all.
type topK struct {
	k    int
	kept []counterEntry
}

func topLess(a, b counterEntry) bool { // a ranks before b
	if a.Value != b.Value {
		return a.Value > b.Value
	}
	if a.Host != b.Host {
		return a.Host < b.Host
	}
	return a.Where < b.Where
}

func (t *topK) add(e counterEntry) {
	if e.Value == 0 {
		return // zero is never above a fence
	}
	if t.k == 0 {
		t.kept = append(t.kept, e) // every port: sorted once, in sorted
		return
	}
	i := sort.Search(len(t.kept), func(i int) bool { return !topLess(t.kept[i], e) })
	if t.k > 0 && i >= t.k {
		return
	}
	t.kept = append(t.kept, counterEntry{})
	copy(t.kept[i+1:], t.kept[i:])
	t.kept[i] = e
	if t.k > 0 && len(t.kept) > t.k {
		t.kept = t.kept[:t.k]
	}
}

// Result is the fleet's answer; it is also the JSON document `rdmadiag fleet --format json`
// writes (kind "rdmadiag-fleet").
type Result struct {
	Kind    string    `json:"kind"`
	Version string    `json:"version"`
	Now     time.Time `json:"now"`
	// StaleAfter is the age at which a report is stale ("0s": not judged).
	StaleAfter string `json:"stale_after"`
	// Reports is how many reports (or unreadable inputs) were read, Duplicates included.
	Reports int `json:"reports"`
	// Duplicates are the older reports of hosts that have a newer one: each host counts once,
	// with its newest report (by tool.started), and these are left out of everything else.
	Duplicates List           `json:"duplicates"`
	Verdicts   []VerdictGroup `json:"verdicts"`
	RootCauses []RootCause    `json:"root_causes"`
	// Actions are the hosts by what their root causes ask for (report.Actions), most hosts
	// first: the work orders the fleet needs. A host is under each action one of its root
	// causes carries; root causes of reports without actions (before schema 1.4) count in none.
	Actions  []ActionGroup `json:"actions"`
	Drift    []Drift       `json:"drift"`
	Outliers Outliers      `json:"outliers"`
	Stale    List          `json:"stale"`
	Failed   List          `json:"failed"`
	Notes    []string      `json:"notes"`
	Healthy  bool          `json:"healthy"`
	ExitCode int           `json:"exit_code"`
}

// VerdictGroup is the hosts whose report carries one verdict.
type VerdictGroup struct {
	Verdict string `json:"verdict"`
	List
}

// ActionGroup is the hosts whose root causes ask for one action; each is named with the first
// such root cause (its subject and summary).
type ActionGroup struct {
	Action string `json:"action"`
	Hosts  List   `json:"hosts"`
}

// RootCause is one kind of root cause and the hosts it hits.
type RootCause struct {
	CheckID     string `json:"check_id"`
	Fault       string `json:"fault"`
	SubjectKind string `json:"subject_kind"`
	// Action is what the root cause asks for (report.Actions); empty in reports before schema 1.4.
	Action string `json:"action,omitempty"`
	// Severity is the worst among the hosts.
	Severity string `json:"severity"`
	// Hosts names each host with the summary of its finding, which names its subject once.
	Hosts List `json:"hosts"`
}

// Drift is one attribute that differs between hosts of the same card.
type Drift struct {
	Attribute string `json:"attribute"`
	// Group is the card (board, family, driver) the hosts share; Label says it for people.
	Group string `json:"group"`
	Label string `json:"label"`
	// Majority is the value most hosts have; Tie is set when another value has as many.
	Majority ValueHosts   `json:"majority"`
	Tie      bool         `json:"tie,omitempty"`
	Odd      []ValueHosts `json:"odd"`
}

// ValueHosts is one value and the hosts that have it (Detail: the device or port).
type ValueHosts struct {
	Value string `json:"value"`
	Hosts List   `json:"hosts"`
}

// Outliers are ports that stand out from their peers.
type Outliers struct {
	// SlowPorts are active ports whose rate is below the rate most hosts' ports of the same
	// card and link layer run at.
	SlowPorts []SlowPorts `json:"slow_ports"`
	// ErrorCounters are ports whose PMA error counter lies beyond the fleet's outer fence.
	ErrorCounters []CounterOutliers `json:"error_counters"`
}

// SlowPorts is one slower rate on one card.
type SlowPorts struct {
	Group    string  `json:"group"`
	Label    string  `json:"label"`
	PeerGbps float64 `json:"peer_rate_gbps"`
	Gbps     float64 `json:"rate_gbps"`
	Hosts    List    `json:"hosts"`
}

// CounterOutliers is one error counter across the fleet's ports. The fence is Tukey's outer
// fence, Q3 + 3 x (Q3 - Q1): a value beyond it is an extreme outlier (NIST/SEMATECH
// e-Handbook of Statistical Methods, section 7.1.6, "What are outliers in the data?").
type CounterOutliers struct {
	Counter string `json:"counter"`
	Ports   uint64 `json:"ports"`
	Median  uint64 `json:"median"`
	Q1      uint64 `json:"q1"`
	Q3      uint64 `json:"q3"`
	Fence   uint64 `json:"fence"`
	// Above is how many ports lie beyond the fence (bucketed: exact below 1024); Top names
	// the largest of them.
	Above uint64         `json:"above"`
	Top   []counterEntry `json:"top"`
}

// Result computes the answer from what was added.
func (a *Aggregator) Result() *Result {
	r := &Result{Kind: "rdmadiag-fleet", Version: "1.0", Now: a.o.Now.UTC(), StaleAfter: a.o.Stale.String(), Reports: a.reports,
		RootCauses: []RootCause{}, Actions: []ActionGroup{}, Drift: []Drift{}, Outliers: Outliers{SlowPorts: []SlowPorts{}, ErrorCounters: []CounterOutliers{}},
		Verdicts: []VerdictGroup{}}
	for _, v := range verdictOrder {
		if n := a.verdicts[v]; n != nil {
			r.Verdicts = append(r.Verdicts, VerdictGroup{Verdict: v, List: n.list()})
		}
	}
	for k, g := range a.roots {
		r.RootCauses = append(r.RootCauses, RootCause{CheckID: k.check, Fault: k.fault, SubjectKind: k.kind, Action: k.action, Severity: g.worst, Hosts: g.hosts.list()})
	}
	for act, n := range a.actions {
		r.Actions = append(r.Actions, ActionGroup{Action: act, Hosts: n.list()})
	}
	sort.Slice(r.Actions, func(i, j int) bool {
		x, y := r.Actions[i], r.Actions[j]
		if x.Hosts.Count != y.Hosts.Count {
			return x.Hosts.Count > y.Hosts.Count
		}
		return x.Action < y.Action
	})
	sort.Slice(r.RootCauses, func(i, j int) bool {
		x, y := r.RootCauses[i], r.RootCauses[j]
		if x.Hosts.Count != y.Hosts.Count {
			return x.Hosts.Count > y.Hosts.Count
		}
		if sx, sy := severityRank[x.Severity], severityRank[y.Severity]; sx != sy {
			return sx > sy
		}
		return x.CheckID+x.Fault+x.SubjectKind+x.Action < y.CheckID+y.Fault+y.SubjectKind+y.Action
	})
	r.drift(a)
	r.counterOutliers(a)
	r.Stale, r.Failed, r.Duplicates = a.stale.list(), a.failed.list(), a.dups.list()
	r.notes(a)
	r.Healthy = a.reports > 0 && len(r.Verdicts) == 1 && r.Verdicts[0].Verdict == "healthy" &&
		r.Stale.Count == 0 && r.Failed.Count == 0 && len(r.Drift) == 0
	if !r.Healthy {
		r.ExitCode = 1
	}
	return r
}

func (r *Result) drift(a *Aggregator) {
	keys := make([]driftKey, 0, len(a.drift))
	for k, g := range a.drift {
		if len(g.values) > 1 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := attrRank(keys[i].attr), attrRank(keys[j].attr); ri != rj {
			return ri < rj
		}
		return keys[i].group < keys[j].group
	})
	for _, k := range keys {
		g := a.drift[k]
		vals := make([]ValueHosts, 0, len(g.values))
		for v, n := range g.values {
			vals = append(vals, ValueHosts{Value: v, Hosts: n.list()})
		}
		// The majority first; ties broken by the value so that the output is stable.
		sort.Slice(vals, func(i, j int) bool {
			if vals[i].Hosts.Count != vals[j].Hosts.Count {
				return vals[i].Hosts.Count > vals[j].Hosts.Count
			}
			return vals[i].Value < vals[j].Value
		})
		maj, tie := vals[0], vals[1].Hosts.Count == vals[0].Hosts.Count
		if !tie {
			maj.Hosts.Names, maj.Hosts.More = []Named{}, 0 // the reference, not a list to act on
		}
		d := Drift{Attribute: k.attr, Group: k.group, Label: g.label, Majority: maj, Tie: tie, Odd: vals[1:]}
		r.Drift = append(r.Drift, d)
		if k.attr != AttrRate || tie {
			continue // an even split has no peers' rate to be slower than
		}
		peer, err := strconv.ParseFloat(maj.Value, 64)
		if err != nil {
			continue
		}
		for _, o := range d.Odd {
			if g, err := strconv.ParseFloat(o.Value, 64); err == nil && g < peer {
				r.Outliers.SlowPorts = append(r.Outliers.SlowPorts, SlowPorts{Group: k.group, Label: d.Label, PeerGbps: peer, Gbps: g, Hosts: o.Hosts})
			}
		}
	}
}

func attrRank(a string) int {
	for i, x := range []string{AttrFirmware, AttrBoard, AttrDriverVersion, AttrLinkLayer, AttrRate, AttrMTU} {
		if x == a {
			return i
		}
	}
	return 99
}

func (r *Result) counterOutliers(a *Aggregator) {
	for _, name := range sortedKeys(a.counters) {
		g := a.counters[name]
		q1, med, q3 := g.hist.quantile(0.25), g.hist.quantile(0.5), g.hist.quantile(0.75)
		fence := q3 + 3*(q3-q1)
		c := CounterOutliers{Counter: name, Ports: g.hist.n, Median: med, Q1: q1, Q3: q3, Fence: fence, Top: []counterEntry{}}
		for _, e := range g.top.sorted() {
			if e.Value > fence {
				c.Top = append(c.Top, e)
			}
		}
		c.Above = g.hist.above(fence)
		if c.Above < uint64(len(c.Top)) {
			c.Above = uint64(len(c.Top))
		}
		if c.Above > 0 {
			r.Outliers.ErrorCounters = append(r.Outliers.ErrorCounters, c)
		}
	}
}

func (r *Result) notes(a *Aggregator) {
	r.Notes = []string{"probe bandwidth is not compared: pcie.bandwidth_probe gives its result as evidence text, not a typed value, " +
		"and fleet does not parse text"}
	if n := a.dups.count; n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d older duplicate report(s) ignored: each host counts once, with its newest report by tool.started (%s)",
			n, joinNames(r.Duplicates, 5)))
	}
	for _, n := range []string{a.dupNote, a.untimedNote} {
		if n != "" {
			r.Notes = append(r.Notes, n)
		}
	}
	if n := a.noInv.count; n > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%d report(s) have no inventory (written before schema 1.2): drift and outliers leave them out (%s)",
			n, joinNames(a.noInv.list(), 5)))
	}
	if a.droppedRoots+a.droppedGroups+a.droppedValues+a.droppedCounters > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("caps reached, left out: %d root cause(s), %d drift group(s), %d drift value(s), %d counter name(s)",
			a.droppedRoots, a.droppedGroups, a.droppedValues, a.droppedCounters))
	}
	if len(r.Outliers.ErrorCounters) > 0 {
		r.Notes = append(r.Notes, "error counter outliers are relative to this fleet and do not change the exit code; "+
			"each host's report judges its counters against absolute thresholds")
	}
}

func joinNames(l List, n int) string {
	var s []string
	for i, e := range l.Names {
		if i == n {
			break
		}
		s = append(s, e.Host)
	}
	if more := l.Count - len(s); more > 0 {
		s = append(s, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(s, ", ")
}
