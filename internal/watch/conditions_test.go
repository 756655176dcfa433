package watch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// step is one observation fed to the tracker at an offset from the start, and what must hold
// after it.
type step struct {
	at   time.Duration
	do   func(t *Tracker, at time.Time) []Event
	want []string // events "kind condition severity", in order
	// active: the conditions that must be active after the step, "identity condition severity".
	active []string
}

var (
	t0  = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	dev = Identity{Key: "pci-0000:3b:00.0", Device: "mlx5_0"}
	prt = Identity{Key: "pci-0000:3b:00.0/1", Device: "mlx5_0", Port: 1}
)

func up(id Identity) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event { return t.PortState(at, id, true, true, "4: ACTIVE") }
}

func down(id Identity) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event { return t.PortState(at, id, false, true, "1: DOWN") }
}

func tick(t *Tracker, at time.Time) []Event { return t.Tick(at) }

func readable(t *Tracker, at time.Time) []Event { return t.Readable(at, prt) }

func evStrings(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, strings.TrimSpace(e.Kind+" "+string(e.Condition)+" "+e.Severity.String()))
	}
	return out
}

func activeStrings(t *Tracker) []string {
	var out []string
	for _, c := range t.Active() {
		out = append(out, c.Identity.Key+" "+string(c.Kind)+" "+c.Severity.String())
	}
	return out
}

func runSteps(t *testing.T, tr *Tracker, steps []step) {
	t.Helper()
	for i, s := range steps {
		got := evStrings(s.do(tr, t0.Add(s.at)))
		if strings.Join(got, "|") != strings.Join(s.want, "|") {
			t.Fatalf("step %d (+%s): events %q, want %q", i, s.at, got, s.want)
		}
		if s.active != nil {
			a := activeStrings(tr)
			if len(s.active) == 1 && s.active[0] == "" {
				s.active = nil
			}
			if strings.Join(a, "|") != strings.Join(s.active, "|") {
				t.Fatalf("step %d (+%s): active %q, want %q", i, s.at, a, s.active)
			}
		}
	}
}

var none = []string{""}

func TestWatchConditions(t *testing.T) {
	P := prt.Key
	tests := []struct {
		name  string
		steps []step
	}{
		{"port down sets at once and clears after it has been up for clear-after", []step{
			{at: 0, do: up(prt), active: none},
			{at: time.Second, do: down(prt), want: []string{"port_state  warning", "set port_down critical"}, active: []string{P + " port_down critical"}},
			{at: 2 * time.Second, do: up(prt), want: []string{"port_state  info"}, active: []string{P + " port_down critical"}},
			{at: 61 * time.Second, do: tick, active: []string{P + " port_down critical"}},
			{at: 62 * time.Second, do: tick, want: []string{"cleared port_down ok"}, active: none},
		}},
		{"a port down again before clear-after keeps the one condition and restarts the wait", []step{
			{at: 0, do: up(prt)},
			{at: time.Second, do: down(prt), want: []string{"port_state  warning", "set port_down critical"}},
			{at: 2 * time.Second, do: up(prt), want: []string{"port_state  info"}},
			{at: 50 * time.Second, do: down(prt), want: []string{"port_state  warning"}},
			{at: 51 * time.Second, do: up(prt), want: []string{"port_state  info"}},
			{at: 100 * time.Second, do: tick, active: []string{P + " port_down critical"}},
			{at: 111 * time.Second, do: tick, want: []string{"cleared port_down ok"}, active: none},
		}},
		{"a port down from the start is a warning and escalates when it goes down again", []step{
			{at: 0, do: down(prt), want: []string{"set port_down warning"}},
			{at: time.Second, do: down(prt), active: []string{P + " port_down warning"}},
			{at: 2 * time.Second, do: up(prt), want: []string{"port_state  info"}},
			{at: 3 * time.Second, do: down(prt), want: []string{"port_state  warning", "escalated port_down critical"}},
		}},
		{"three downs within ten minutes set port_flap; it clears after 30 quiet minutes", []step{
			{at: 0, do: up(prt)},
			{at: 1 * time.Minute, do: down(prt), want: []string{"port_state  warning", "set port_down critical"}},
			{at: 2 * time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 3 * time.Minute, do: down(prt), want: []string{"port_state  warning"}},
			{at: 4 * time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 5 * time.Minute, do: tick, want: []string{"cleared port_down ok"}},
			{at: 6 * time.Minute, do: down(prt), want: []string{"port_state  warning", "set port_flap critical", "set port_down critical"}},
			{at: 7 * time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 8 * time.Minute, do: tick, want: []string{"cleared port_down ok"}, active: []string{P + " port_flap critical"}},
			{at: 35 * time.Minute, do: tick, active: []string{P + " port_flap critical"}},
			{at: 36 * time.Minute, do: tick, want: []string{"cleared port_flap ok"}, active: none},
		}},
		{"three downs within a day are a warning flap; three within ten minutes escalate it (port.flaps' lines)", []step{
			{at: 0, do: up(prt)},
			{at: 1 * time.Minute, do: down(prt), want: []string{"port_state  warning", "set port_down critical"}},
			{at: 2 * time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 7 * time.Hour, do: down(prt), want: []string{"port_state  warning"}},
			{at: 7*time.Hour + time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 12 * time.Hour, do: down(prt), want: []string{"port_state  warning", "set port_flap warning"}},
			{at: 12*time.Hour + time.Minute, do: up(prt), want: []string{"port_state  info"}, active: []string{P + " port_down critical", P + " port_flap warning"}},
			{at: 12*time.Hour + 2*time.Minute, do: down(prt), want: []string{"port_state  warning"}},
			{at: 12*time.Hour + 3*time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 12*time.Hour + 4*time.Minute, do: down(prt), want: []string{"port_state  warning", "escalated port_flap critical"}},
		}},
		{"downs more than a day apart are no flap", []step{
			{at: 0, do: up(prt)},
			{at: 1 * time.Minute, do: down(prt), want: []string{"port_state  warning", "set port_down critical"}},
			{at: 2 * time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 13 * time.Hour, do: down(prt), want: []string{"port_state  warning"}},
			{at: 13*time.Hour + time.Minute, do: up(prt), want: []string{"port_state  info"}},
			{at: 26 * time.Hour, do: down(prt), want: []string{"port_state  warning"}},
			{at: 26*time.Hour + time.Minute, do: up(prt), want: []string{"port_state  info"}, active: []string{P + " port_down critical"}},
		}},
		{"counters set, escalate, and clear after clear-after of clean samples", []step{
			{at: 0, do: counters(report.Warning), want: []string{"set counters warning"}},
			{at: 10 * time.Second, do: counters(report.Critical), want: []string{"escalated counters critical"}},
			{at: 20 * time.Second, do: counters(report.OK)},
			{at: 30 * time.Second, do: counters(report.Info)},
			{at: 79 * time.Second, do: tick, active: []string{P + " counters critical"}},
			{at: 80 * time.Second, do: tick, want: []string{"cleared counters ok"}, active: none},
		}},
		{"a fatal kernel log event clears only with a healthy full check of the device", []step{
			{at: 0, do: klog(dev, report.Critical), want: []string{"set kernel_log critical"}},
			{at: time.Hour, do: tick, active: []string{dev.Key + " kernel_log critical"}},
			{at: time.Hour, do: full(dev, report.Unknown), active: []string{dev.Key + " kernel_log critical"}},
			{at: time.Hour, do: full(dev, report.Warning), want: []string{"set full_check warning"}},
			{at: 2 * time.Hour, do: full(dev, report.OK), want: []string{"cleared full_check ok", "cleared kernel_log ok"}, active: none},
		}},
		{"an informational kernel log event sets nothing", []step{
			{at: 0, do: klog(dev, report.Info), active: none},
		}},
		{"a device gone and back", []step{
			{at: 0, do: func(t *Tracker, at time.Time) []Event { return t.Gone(at, dev, "gone") }, want: []string{"set gone critical"}},
			{at: time.Second, do: func(t *Tracker, at time.Time) []Event { return t.Back(at, dev) }, want: []string{"cleared gone ok"}, active: none},
		}},
		{"three failed polls in a row make a port unreadable; a good poll clears it", []step{
			{at: 0, do: failed(1)}, {at: time.Second, do: failed(2)},
			{at: 2 * time.Second, do: failed(3), want: []string{"set unreadable warning"}},
			{at: 3 * time.Second, do: readable, want: []string{"cleared unreadable ok"}, active: none},
			{at: 4 * time.Second, do: readable, active: none},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, NewTracker(DefaultRules), tc.steps) })
	}
}

func counters(sev report.Severity) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event { return t.Counters(at, prt, sev, "symbol_error +9") }
}

func klog(id Identity, sev report.Severity) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event { return t.KernelLog(at, id, sev, "mlx5_core: health: fatal") }
}

func full(id Identity, sev report.Severity) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event {
		return t.FullCheck(at, []Judged{{ID: id, Severity: sev, Message: "prt.state"}})
	}
}

func failed(n int) func(*Tracker, time.Time) []Event {
	return func(t *Tracker, at time.Time) []Event { return t.PollFailed(at, prt, n, "EIO") }
}

// A rename keeps the conditions: they are keyed by identity, and take the new name.
func TestWatchRenameKeepsIdentity(t *testing.T) {
	tr := NewTracker(DefaultRules)
	tr.PortState(t0, prt, true, true, "")
	tr.PortState(t0.Add(time.Second), prt, false, true, "")
	tr.KernelLog(t0, dev, report.Critical, "fatal")
	tr.Rename(dev.Key, "mlx5_bond_0")
	renamed := Identity{Key: prt.Key, Device: "mlx5_bond_0", Port: 1}
	// The port comes back up under its new name: the same condition clears, no new one is set.
	if evs := evStrings(tr.PortState(t0.Add(2*time.Second), renamed, true, true, "")); strings.Join(evs, "|") != "port_state  info" {
		t.Fatalf("events after rename %q: the port's history was lost", evs)
	}
	for _, c := range tr.Active() {
		if c.Identity.Device != "mlx5_bond_0" {
			t.Errorf("%s %s still names %s", c.Identity.Key, c.Kind, c.Identity.Device)
		}
	}
	if got := len(tr.Active()); got != 2 {
		t.Fatalf("active %v, want port_down and kernel_log", activeStrings(tr))
	}
}

// A restart within the same boot keeps the active conditions and the flap history; a new boot
// starts clean; a corrupt state file is reported and ignored.
func TestWatchStatePersistence(t *testing.T) {
	dir := t.TempDir()
	tr := NewTracker(DefaultRules)
	tr.PortState(t0, prt, true, true, "")
	tr.PortState(t0.Add(time.Minute), prt, false, true, "")
	tr.PortState(t0.Add(2*time.Minute), prt, true, true, "")
	tr.PortState(t0.Add(3*time.Minute), prt, false, true, "")
	tr.KernelLog(t0, dev, report.Critical, "fatal")
	if err := saveState(dir, tr.export("boot-a", t0)); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(dir)
	if err != nil || s == nil {
		t.Fatalf("loadState: %v %v", s, err)
	}
	again := NewTracker(DefaultRules)
	if n := again.restore(*s); n != 2 {
		t.Fatalf("restored %d conditions, want 2", n)
	}
	// The flap history survived: one more down makes three within ten minutes.
	again.PortState(t0.Add(4*time.Minute), prt, true, true, "")
	evs := evStrings(again.PortState(t0.Add(5*time.Minute), prt, false, true, ""))
	if !strings.Contains(strings.Join(evs, "|"), "set port_flap critical") {
		t.Fatalf("after restart: %q, want the flap set from the saved history", evs)
	}
	if s.BootID != "boot-a" {
		t.Fatalf("boot id %q", s.BootID)
	}

	for name, content := range map[string]string{
		"garbage":      "{not json",
		"wrong format": `{"format":"something-else/9","conditions":[]}`,
		"bad severity": `{"format":"` + stateFormat + `","conditions":[{"identity":{"key":"x"},"kind":"port_down","severity":"fatal!"}]}`,
		"empty":        "",
	} {
		if err := os.WriteFile(filepath.Join(dir, StateFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := loadState(dir); err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
	// Unknown kinds and conditions without identity are dropped, not trusted.
	fresh := NewTracker(DefaultRules)
	if n := fresh.restore(savedState{Conditions: []Condition{{Kind: "bogus", Identity: dev}, {Kind: CondGone}}}); n != 0 {
		t.Fatalf("restored %d hostile conditions", n)
	}
}
