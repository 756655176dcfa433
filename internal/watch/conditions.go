package watch

import (
	"fmt"
	"sort"
	"time"

	portchk "github.com/rdmadiag/rdmadiag/checks/port"
	"github.com/rdmadiag/rdmadiag/report"
)

// Kind is a kind of condition.
type Kind string

// The conditions watch keeps; docs/watch.md has the table of what sets and clears each.
const (
	// CondPortDown: the port is not ACTIVE/LinkUp (or its RoCE netdev is not up with carrier).
	CondPortDown Kind = "port_down"
	// CondPortFlap: Rules.FlapDowns downs within Rules.FlapWindow.
	CondPortFlap Kind = "port_flap"
	// CondGone: a device or port the rescan found before is no longer registered.
	CondGone Kind = "gone"
	// CondUnreadable: the port's files failed Rules.MissedPolls polls in a row.
	CondUnreadable Kind = "unreadable"
	// CondCounters: an error counter grew between two samples (port.counters' rules).
	CondCounters Kind = "counters"
	// CondKernelLog: a kernel log line a signature ranks warning or critical.
	CondKernelLog Kind = "kernel_log"
	// CondFullCheck: the periodic full check found a warning or critical problem.
	CondFullCheck Kind = "full_check"
	// CondStuckRead: a read of the host did not return within its deadline (agent health).
	CondStuckRead Kind = "stuck_read"
)

var knownKinds = map[Kind]bool{CondPortDown: true, CondPortFlap: true, CondGone: true, CondUnreadable: true,
	CondCounters: true, CondKernelLog: true, CondFullCheck: true, CondStuckRead: true}

// Rules are the hysteresis of the conditions.
type Rules struct {
	// ClearAfter: a port down or a counter condition clears once what set it has been gone this
	// long (--clear-after).
	ClearAfter time.Duration
	// FlapWarnDowns downs within FlapWarnWindow set port_flap as a warning, FlapDowns within
	// FlapWindow as critical; it clears after FlapQuiet without a down.
	FlapWarnDowns  int
	FlapWarnWindow time.Duration
	FlapDowns      int
	FlapWindow     time.Duration
	FlapQuiet      time.Duration
	// MissedPolls failed polls in a row make a port unreadable, and as many walks of the class
	// that miss a device make it gone.
	MissedPolls int
}

// DefaultRules: the flap lines are port.flaps' (3 downs in 24 h warn, 3 in 10 minutes are
// critical: GPUd's and NVSentinel's counts, cited in checks/port/flaps.go), so watch
// and check judge a flapping port alike. NVIDIA NVSentinel's NIC health monitor declares a
// device gone after 3 consecutive missed enumerations (deviceMissThreshold in
// health-monitors/nic-health-monitor/pkg/checks/state/base.go). The 60 s clear and the 30 min
// quiet period are this tool's own lines: long enough that a port retraining twice in a row
// stays one condition, short next to GPUd's 10-minute drop sticky window
// (defaultDropStickyWindow, components/accelerator/nvidia/infiniband/component.go), which keeps a
// recovered port unhealthy for operators to notice, a job the event stream does here.
var DefaultRules = func() Rules {
	wc, ww, bc, bw := portchk.FlapThresholds()
	return Rules{ClearAfter: 60 * time.Second, FlapWarnDowns: wc, FlapWarnWindow: ww, FlapDowns: bc, FlapWindow: bw,
		FlapQuiet: 30 * time.Minute, MissedPolls: 3}
}()

// Condition is one active condition of a device, port, the host or the agent.
type Condition struct {
	Identity Identity        `json:"identity"`
	Kind     Kind            `json:"kind"`
	Severity report.Severity `json:"severity"`
	Since    time.Time       `json:"since"`
	Message  string          `json:"message"`
	// Good is since when what set the condition has been gone (the port up, the counters
	// quiet, for a flap the last down); zero while it holds.
	Good time.Time `json:"good,omitzero"`
}

// Event is one line of watch's output.
type Event struct {
	Time      time.Time       `json:"time"`
	Kind      string          `json:"kind"`
	Identity  string          `json:"identity"`
	Device    string          `json:"device,omitempty"`
	Port      int             `json:"port,omitempty"`
	Condition Kind            `json:"condition,omitempty"`
	Severity  report.Severity `json:"severity"`
	Message   string          `json:"message"`
}

// Event kinds for conditions; the others name what was observed (port_state, kernel_log, ...).
const (
	EvSet       = "set"
	EvEscalated = "escalated"
	EvCleared   = "cleared"
)

type condKey struct {
	id   string
	kind Kind
}

// Tracker is the conditions' state machine. It is driven by observations stamped with their
// time, so tests run it on a fake clock; it is not safe for concurrent use.
type Tracker struct {
	rules Rules
	conds map[condKey]*Condition
	// downs are the times each port (by identity key) went down, within FlapWindow.
	downs map[string][]time.Time
	// up is the last state seen of each port, to tell a down from one still down.
	up map[string]bool
}

// NewTracker returns a tracker with no condition.
func NewTracker(r Rules) *Tracker {
	return &Tracker{rules: r, conds: map[condKey]*Condition{}, downs: map[string][]time.Time{}, up: map[string]bool{}}
}

func ev(at time.Time, kind string, id Identity, c Kind, sev report.Severity, msg string) Event {
	return Event{Time: at, Kind: kind, Identity: id.Key, Device: id.Device, Port: id.Port, Condition: c, Severity: sev, Message: msg}
}

// set raises a condition, or escalates it when sev is graver, and marks it holding again.
func (t *Tracker) set(at time.Time, id Identity, k Kind, sev report.Severity, msg string) []Event {
	key := condKey{id.Key, k}
	c, ok := t.conds[key]
	if !ok {
		t.conds[key] = &Condition{Identity: id, Kind: k, Severity: sev, Since: at, Message: msg}
		return []Event{ev(at, EvSet, id, k, sev, msg)}
	}
	c.Good = time.Time{}
	c.Identity.Device = id.Device
	if sev > c.Severity {
		c.Severity, c.Message = sev, msg
		return []Event{ev(at, EvEscalated, id, k, sev, msg)}
	}
	return nil
}

func (t *Tracker) clear(at time.Time, key condKey, why string) []Event {
	c, ok := t.conds[key]
	if !ok {
		return nil
	}
	delete(t.conds, key)
	return []Event{ev(at, EvCleared, c.Identity, c.Kind, report.OK, why)}
}

// good marks a condition's cause gone from at on (kept if already marked).
func (t *Tracker) good(at time.Time, id string, k Kind) {
	if c, ok := t.conds[condKey{id, k}]; ok && c.Good.IsZero() {
		c.Good = at
	}
}

// PortState records one poll of a port: up or not, with what was read. A port seen up before
// that is now down counts a down towards port_flap.
//
// expected says the port is meant to be up (the policy's ports.expect_up names it): a port that
// is down from the first reading on is a condition only then. Otherwise it may be cabled nowhere
// by design (a dual-port card with one port used), which the full check tells from a fault with
// check's evidence (port.state: a link up this boot, a configured netdev, an identical rail up);
// NVIDIA's NVSentinel reported such ports fatal on first sight and changed to "failed only if
// proven unexpected" (github.com/NVIDIA/NVSentinel pull 1462).
func (t *Tracker) PortState(at time.Time, id Identity, up, expected bool, detail string) []Event {
	was, seen := t.up[id.Key]
	t.up[id.Key] = up
	var out []Event
	if seen && was != up {
		sev := report.Info
		what := "up"
		if !up {
			sev, what = report.Warning, "down"
		}
		out = append(out, ev(at, "port_state", id, "", sev, fmt.Sprintf("port %s: %s", what, detail)))
	}
	if up {
		t.good(at, id.Key, CondPortDown)
		return out
	}
	// Down at the start (never seen up) is a warning when the port is expected up, and no
	// condition otherwise; a port that went down while watched is critical.
	if !seen && !expected {
		if _, held := t.conds[condKey{id.Key, CondPortDown}]; !held {
			return append(out, ev(at, "port_state", id, "", report.Info, "port down since first seen, not expected up: not a condition (the full check judges whether it should be up): "+detail))
		}
	}
	sev := report.Warning
	if seen && was {
		sev = report.Critical
		d := append(t.downs[id.Key], at)
		for len(d) > 0 && at.Sub(d[0]) > max(t.rules.FlapWindow, t.rules.FlapWarnWindow) {
			d = d[1:]
		}
		t.downs[id.Key] = d
		burst := 0
		for _, x := range d {
			if at.Sub(x) <= t.rules.FlapWindow {
				burst++
			}
		}
		switch {
		case burst >= t.rules.FlapDowns:
			out = append(out, t.set(at, id, CondPortFlap, report.Critical,
				fmt.Sprintf("%d link downs within %s", burst, t.rules.FlapWindow))...)
		case t.rules.FlapWarnDowns > 0 && len(d) >= t.rules.FlapWarnDowns:
			out = append(out, t.set(at, id, CondPortFlap, report.Warning,
				fmt.Sprintf("%d link downs within %s", len(d), t.rules.FlapWarnWindow))...)
		}
		if c, ok := t.conds[condKey{id.Key, CondPortFlap}]; ok {
			c.Good = at // quiet is counted from the last down
		}
	}
	return append(out, t.set(at, id, CondPortDown, sev, "port down: "+detail)...)
}

// PollFailed records a poll of a port that could not be read (not a vanished file, which a
// rescan settles): MissedPolls of them in a row make it unreadable.
func (t *Tracker) PollFailed(at time.Time, id Identity, missed int, why string) []Event {
	if missed < t.rules.MissedPolls {
		return nil
	}
	return t.set(at, id, CondUnreadable, report.Warning, fmt.Sprintf("%d polls in a row failed: %s", missed, why))
}

// Readable records a poll whose reads of the port all succeeded, up or down: it clears
// unreadable. It allocates nothing when the port was readable already.
func (t *Tracker) Readable(at time.Time, id Identity) []Event {
	return t.clear(at, condKey{id.Key, CondUnreadable}, "the port's files read again")
}

// Tick clears the conditions whose cause has been gone long enough. It runs every poll, so it
// allocates nothing while nothing clears.
func (t *Tracker) Tick(at time.Time) []Event {
	var due []condKey
	for k, c := range t.conds {
		if c.Good.IsZero() {
			continue
		}
		wait := t.rules.ClearAfter
		switch c.Kind {
		case CondPortDown, CondCounters:
		case CondPortFlap:
			wait = t.rules.FlapQuiet
		default:
			continue
		}
		if at.Sub(c.Good) >= wait {
			due = append(due, k)
		}
	}
	if len(due) == 0 {
		return nil
	}
	sort.Slice(due, func(i, j int) bool {
		if due[i].id != due[j].id {
			return due[i].id < due[j].id
		}
		return due[i].kind < due[j].kind
	})
	var out []Event
	for _, k := range due {
		c := t.conds[k]
		quiet := at.Sub(c.Good).Round(time.Second)
		switch c.Kind {
		case CondPortDown:
			out = append(out, t.clear(at, k, fmt.Sprintf("port up for %s", quiet))...)
		case CondCounters:
			out = append(out, t.clear(at, k, fmt.Sprintf("no error counter grew for %s", quiet))...)
		case CondPortFlap:
			delete(t.downs, c.Identity.Key)
			out = append(out, t.clear(at, k, fmt.Sprintf("no link down for %s", quiet))...)
		}
	}
	return out
}

// Counters records one judged counter sample of a port: sev below Warning is a clean sample.
func (t *Tracker) Counters(at time.Time, id Identity, sev report.Severity, msg string) []Event {
	if sev < report.Warning || sev == report.Unknown {
		t.good(at, id.Key, CondCounters)
		return nil
	}
	return t.set(at, id, CondCounters, sev, msg)
}

// KernelLog records a kernel log event about id graver than information; it clears only when a
// full check judges the device healthy.
func (t *Tracker) KernelLog(at time.Time, id Identity, sev report.Severity, msg string) []Event {
	if sev < report.Warning || sev == report.Unknown {
		return nil
	}
	return t.set(at, id, CondKernelLog, sev, msg)
}

// Judged is one device's (or the host's) verdict in a full check.
type Judged struct {
	ID       Identity
	Severity report.Severity
	Message  string
}

// FullCheck records a full check's verdict on the devices it judged: a problem sets or
// escalates full_check; a healthy verdict clears full_check and the kernel log conditions of
// the device and its ports. An unknown verdict leaves both as they are.
func (t *Tracker) FullCheck(at time.Time, judged []Judged) []Event {
	var out []Event
	for _, j := range judged {
		switch {
		case j.Severity == report.Unknown:
		case j.Severity >= report.Warning:
			out = append(out, t.set(at, j.ID, CondFullCheck, j.Severity, j.Message)...)
			if c := t.conds[condKey{j.ID.Key, CondFullCheck}]; c != nil && j.Severity < c.Severity {
				// A condition as grave as it was set stays; a milder verdict is its message now.
				c.Message = j.Message
			}
		default:
			out = append(out, t.clear(at, condKey{j.ID.Key, CondFullCheck}, "full check healthy")...)
			for _, k := range t.keys() {
				if k.kind == CondKernelLog && (k.id == j.ID.Key || isPortOf(k.id, j.ID.Key)) {
					out = append(out, t.clear(at, k, "full check healthy")...)
				}
			}
		}
	}
	return out
}

func isPortOf(portKey, devKey string) bool {
	return len(portKey) > len(devKey) && portKey[:len(devKey)] == devKey && portKey[len(devKey)] == '/'
}

// Gone records that the rescan no longer finds id; Back that it finds it again.
func (t *Tracker) Gone(at time.Time, id Identity, msg string) []Event {
	delete(t.up, id.Key)
	return t.set(at, id, CondGone, report.Critical, msg)
}

// Back clears id's gone condition.
func (t *Tracker) Back(at time.Time, id Identity) []Event {
	return t.clear(at, condKey{id.Key, CondGone}, "registered again")
}

// Stuck records a read that has not returned by its deadline; Unstuck that it returned.
func (t *Tracker) Stuck(at time.Time, id Identity, msg string) []Event {
	return t.set(at, id, CondStuckRead, report.Warning, msg)
}

// Unstuck clears id's stuck read.
func (t *Tracker) Unstuck(at time.Time, id Identity, msg string) []Event {
	return t.clear(at, condKey{id.Key, CondStuckRead}, msg)
}

// Rename gives the conditions of a device and its ports the device's new name: they are keyed
// by identity, so their history stays.
func (t *Tracker) Rename(devKey, name string) {
	for k, c := range t.conds {
		if k.id == devKey || isPortOf(k.id, devKey) {
			c.Identity.Device = name
		}
	}
}

// Active returns the active conditions, ordered by identity and kind.
func (t *Tracker) Active() []Condition {
	out := make([]Condition, 0, len(t.conds))
	for _, k := range t.keys() {
		out = append(out, *t.conds[k])
	}
	return out
}

// Has reports whether id has an active condition of kind k, and its severity.
func (t *Tracker) Has(id string, k Kind) (report.Severity, bool) {
	c, ok := t.conds[condKey{id, k}]
	if !ok {
		return report.OK, false
	}
	return c.Severity, true
}

func (t *Tracker) keys() []condKey {
	ks := make([]condKey, 0, len(t.conds))
	for k := range t.conds {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].id != ks[j].id {
			return ks[i].id < ks[j].id
		}
		return ks[i].kind < ks[j].kind
	})
	return ks
}
