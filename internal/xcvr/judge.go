package xcvr

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Level is a verdict's weight: an alarm makes the module unfit (the check reports it
// critical), a warning needs attention, not_judged says what could not be judged and why.
type Level string

const (
	LevelAlarm     Level = "alarm"
	LevelWarning   Level = "warning"
	LevelNotJudged Level = "not_judged"
)

func (l Level) rank() int {
	switch l {
	case LevelAlarm:
		return 0
	case LevelWarning:
		return 1
	}
	return 2
}

// VerdictKind says what a verdict rests on.
type VerdictKind string

const (
	// KindThreshold: a value read now lies beyond one of the module's own thresholds.
	KindThreshold VerdictKind = "threshold"
	// KindFlag: a flag was set (latched flags: the condition happened since they were last
	// read; SFF-8472 flags: it holds now).
	KindFlag VerdictKind = "flag"
	// KindState: the module reports a fault state (CMIS ModuleFault).
	KindState VerdictKind = "state"
	// KindNotJudged: something could not be judged; Detail says why.
	KindNotJudged VerdictKind = "not_judged"
)

// Verdict is one judgement of a module.
type Verdict struct {
	Kind  VerdictKind
	Level Level
	// Quantity and Lane (1-based, 0 = module-level) say what was judged; Quantity is empty for
	// flags and states that are not about a monitor.
	Quantity Quantity
	Lane     int
	// Value is the current reading and Threshold the module's limit it crossed (Bound), both
	// in Quantity.Unit(); HasValue is false when no current reading exists.
	Value     float64
	HasValue  bool
	Threshold float64
	Bound     Bound
	// Flag is the flag of KindFlag verdicts.
	Flag FlagKind
	// Source is where the evidence was read (value, threshold or flag bits).
	Source string
	Detail string
}

// Worst returns the heaviest level among the verdicts, LevelNotJudged when there are none.
func Worst(vs []Verdict) Level {
	w := LevelNotJudged
	for _, v := range vs {
		if v.Level.rank() < w.rank() {
			w = v.Level
		}
	}
	return w
}

// Judge compares the module's monitors with its own thresholds (beyond an alarm threshold =
// alarm, beyond a warning threshold = warning) and turns latched flags into verdicts. An Rx
// LOS flag is an alarm unless the lane's Rx power shows light again now (then a warning):
// Judge cannot know whether the port is meant to be up, so a caller judging an
// administratively down port drops Kind == KindFlag, Flag == FlagRxLOS verdicts. Thresholds
// that are absent, zero or out of order are not judged, and say so.
func Judge(m *Module) []Verdict {
	if m == nil {
		return nil
	}
	var out []Verdict
	notJudged := func(q Quantity, lane int, why string) {
		out = append(out, Verdict{Kind: KindNotJudged, Level: LevelNotJudged, Quantity: q, Lane: lane, Detail: why})
	}
	if !m.Spec.decoded() {
		why := fmt.Sprintf("%s (%s) is not decoded", m.IdentifierName, m.Spec)
		if len(m.Unavailable) > 0 {
			why = m.Unavailable[0].Reason
		}
		notJudged("", 0, why)
		return out
	}
	if m.ModuleFault != "" {
		out = append(out, Verdict{Kind: KindState, Level: LevelAlarm, Source: "CMIS lower page byte 3 (module state), byte 41 (fault cause)",
			Detail: "module in ModuleFault state: " + m.ModuleFault})
	}
	if m.Media.Copper() {
		notJudged("", 0, fmt.Sprintf("%s cable: no optical monitors, lane flags not judged", m.Media))
		if m.Media == MediaCopperPassive {
			return out // nothing in a passive cable is measured
		}
	} else {
		// Parts that could not be read; missing thresholds of a read monitor are said per
		// quantity below.
		for _, u := range m.Unavailable {
			if !strings.Contains(u.Part, "threshold") || len(m.Monitors) == 0 {
				notJudged("", 0, u.Part+": "+u.Reason)
			}
		}
	}

	if m.Spec != SpecCMIS && m.NotReady != "" {
		// SFF-8636 Data_Not_Ready, SFF-8472 Data_Ready_Bar: neither monitors nor flags hold
		// data yet. (A CMIS module not ready still has valid module-level monitors.)
		notJudged("", 0, m.NotReady)
		return out
	}

	judged := map[[2]string]Level{} // quantity+lane -> level of a threshold verdict
	key := func(q Quantity, lane int) [2]string { return [2]string{string(q), fmt.Sprint(lane)} }
	said := map[string]bool{}
	once := func(k string, q Quantity, lane int, why string) {
		if !said[k] {
			said[k] = true
			notJudged(q, lane, why)
		}
	}
	laneReady := func(lane int) bool {
		if lane == 0 {
			return true
		}
		if why, off := m.LaneInactive[lane]; off {
			once(fmt.Sprint("lane", lane), "", lane, "lane inactive: "+why)
			return false
		}
		if m.NotReady != "" {
			once("notready-lanes", "", 0, m.NotReady)
			return false
		}
		return true
	}

	for _, mon := range m.Monitors {
		if !laneReady(mon.Lane) {
			continue
		}
		if math.IsNaN(mon.Value) || math.IsInf(mon.Value, 0) {
			once("nan"+string(mon.Quantity), mon.Quantity, mon.Lane, mon.Quantity.Label()+": calibrated value is not a number ("+mon.Source+")")
			continue
		}
		t, ok := m.Thresholds[mon.Quantity]
		if !ok {
			once("thr"+string(mon.Quantity), mon.Quantity, 0, mon.Quantity.Label()+": module thresholds unavailable ("+thresholdsWhy(m)+")")
			continue
		}
		if valid, why := t.valid(); !valid {
			once("thr"+string(mon.Quantity), mon.Quantity, 0, fmt.Sprintf("%s: %s (%s)", mon.Quantity.Label(), why, t.Source))
			continue
		}
		v := Verdict{Kind: KindThreshold, Quantity: mon.Quantity, Lane: mon.Lane, Value: mon.Value, HasValue: true,
			Source: mon.Source + "; thresholds " + t.Source}
		switch {
		case mon.Value > t.HighAlarm:
			v.Level, v.Bound, v.Threshold = LevelAlarm, HighAlarm, t.HighAlarm
		case mon.Value < t.LowAlarm:
			v.Level, v.Bound, v.Threshold = LevelAlarm, LowAlarm, t.LowAlarm
		case mon.Value > t.HighWarning:
			v.Level, v.Bound, v.Threshold = LevelWarning, HighWarning, t.HighWarning
		case mon.Value < t.LowWarning:
			v.Level, v.Bound, v.Threshold = LevelWarning, LowWarning, t.LowWarning
		default:
			continue
		}
		judged[key(mon.Quantity, mon.Lane)] = v.Level
		out = append(out, v)
	}

	for _, f := range m.Flags {
		if m.Media.Copper() && f.Lane > 0 {
			continue
		}
		if f.Lane > 0 && !laneReady(f.Lane) {
			continue
		}
		v := Verdict{Kind: KindFlag, Flag: f.Kind, Quantity: f.Quantity, Lane: f.Lane, Bound: f.Bound, Source: f.Source}
		cur, hasCur := m.Monitor(f.Quantity, f.Lane)
		state := "set"
		if f.Latched {
			state = "latched"
		}
		switch f.Kind {
		case FlagFirmware:
			v.Level, v.Detail = LevelAlarm, "the module reports a firmware error"
		case FlagTxFault:
			v.Level, v.Detail = LevelAlarm, "transmitter fault "+state
		case FlagRxLOS:
			v.Quantity = RxPower
			v.Level, v.Detail = LevelAlarm, "Rx loss of signal "+state
			if rx, ok := m.Monitor(RxPower, f.Lane); ok {
				v.Value, v.HasValue = rx.Value, true
				if t, ok := m.Thresholds[RxPower]; ok {
					if valid, _ := t.valid(); valid && rx.Value >= t.LowWarning {
						v.Level, v.Detail = LevelWarning, "Rx loss of signal "+state+", light is back"
					}
				}
			}
		case FlagTxLOS:
			v.Level, v.Detail = LevelWarning, "Tx loss of signal "+state+": the host's electrical signal into the module was lost"
		case FlagRxLOL:
			v.Level, v.Detail = LevelWarning, "Rx CDR loss of lock "+state
		case FlagTxLOL:
			v.Level, v.Detail = LevelWarning, "Tx CDR loss of lock "+state
		case FlagTxEQFault:
			v.Level, v.Detail = LevelWarning, "Tx adaptive equalization fault "+state
		case FlagThreshold:
			if l, ok := judged[key(f.Quantity, f.Lane)]; ok && (l == LevelAlarm || f.Bound == HighWarning || f.Bound == LowWarning) {
				continue // the current value already carries this verdict
			}
			alarm := f.Bound == HighAlarm || f.Bound == LowAlarm
			v.Level, v.Detail = LevelWarning, fmt.Sprintf("%s flag %s", f.Bound, state)
			if hasCur {
				v.Value, v.HasValue = cur.Value, true
			}
			t, ok := m.Thresholds[f.Quantity]
			valid := false
			if ok {
				valid, _ = t.valid()
			}
			switch {
			case alarm && hasCur && valid:
				v.Detail = fmt.Sprintf("%s flag %s, back within the alarm thresholds", f.Bound, state)
			case alarm:
				v.Level = LevelAlarm
				v.Detail = fmt.Sprintf("%s flag %s and no thresholds to show it cleared", f.Bound, state)
			}
		default:
			continue
		}
		out = append(out, v)
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Level.rank() != b.Level.rank() {
			return a.Level.rank() < b.Level.rank()
		}
		if a.Lane != b.Lane {
			return a.Lane < b.Lane
		}
		return a.Quantity.rank() < b.Quantity.rank()
	})
	return out
}

// rank orders verdicts of one lane: module-wide first, then module monitors, then optics.
func (q Quantity) rank() int {
	for i, o := range []Quantity{"", Temperature, Voltage, RxPower, TxPower, TxBias} {
		if q == o {
			return i
		}
	}
	return 6
}

func thresholdsWhy(m *Module) string {
	for _, u := range m.Unavailable {
		if strings.Contains(u.Part, "threshold") {
			return u.Part + ": " + u.Reason
		}
	}
	return "not advertised"
}

// FormatValue renders a value of q with its unit; optical power also in dBm.
func FormatValue(q Quantity, v float64) string {
	switch q {
	case TxPower, RxPower:
		d := DBm(v)
		if math.IsInf(d, -1) {
			return "0 mW (no light)"
		}
		return fmt.Sprintf("%.2f dBm (%.4f mW)", d, v)
	case Temperature:
		return fmt.Sprintf("%.1f °C", v)
	case Voltage:
		return fmt.Sprintf("%.3f V", v)
	case TxBias:
		return fmt.Sprintf("%.2f mA", v)
	}
	return fmt.Sprint(v)
}

func (v Verdict) subject() string {
	s := ""
	if v.Lane > 0 {
		s = fmt.Sprintf("lane %d ", v.Lane)
	}
	if v.Quantity != "" {
		s += v.Quantity.Label()
	} else if v.Lane == 0 {
		s += "module"
	}
	return strings.TrimSpace(s)
}

// String is one evidence line, e.g.
// "alarm: lane 3 Rx power -19.10 dBm (0.0123 mW) below the module's low alarm threshold -15.00 dBm (0.0316 mW) [...]".
func (v Verdict) String() string {
	switch v.Kind {
	case KindThreshold:
		dir := "above"
		if v.Bound == LowAlarm || v.Bound == LowWarning {
			dir = "below"
		}
		return fmt.Sprintf("%s: %s %s %s the module's %s threshold %s [%s]", v.Level, v.subject(),
			FormatValue(v.Quantity, v.Value), dir, v.Bound, FormatValue(v.Quantity, v.Threshold), v.Source)
	case KindFlag:
		s := fmt.Sprintf("%s: %s: %s", v.Level, v.subject(), v.Detail)
		if v.HasValue {
			s += ", now " + FormatValue(v.Quantity, v.Value)
		}
		return s + " [" + v.Source + "]"
	case KindState:
		return fmt.Sprintf("%s: %s [%s]", v.Level, v.Detail, v.Source)
	}
	if sub := v.subject(); sub != "module" && v.Quantity == "" {
		return fmt.Sprintf("not judged: %s: %s", sub, v.Detail)
	}
	return "not judged: " + v.Detail
}

// Summary is a one-line description, e.g. "QSFP28 optical, FINISAR CORP FTLC9551REPM, 4 lanes, 38.5 °C".
func Summary(m *Module) string {
	if m == nil {
		return "no module"
	}
	if !m.Spec.decoded() {
		return fmt.Sprintf("%s (%02xh): not decoded", m.IdentifierName, m.Identifier)
	}
	media := string(m.Media)
	if m.CableLengthM > 0 {
		media += fmt.Sprintf(" %gm", m.CableLengthM)
	}
	parts := []string{m.IdentifierName + " " + media}
	if id := strings.TrimSpace(m.Vendor.Name + " " + m.Vendor.PartNumber); id != "" {
		parts = append(parts, id)
	}
	if m.Lanes == 1 {
		parts = append(parts, "1 lane")
	} else {
		parts = append(parts, fmt.Sprintf("%d lanes", m.Lanes))
	}
	if t, ok := m.Monitor(Temperature, 0); ok && !m.FlatMemory {
		parts = append(parts, FormatValue(Temperature, t.Value))
	}
	return strings.Join(parts, ", ")
}
