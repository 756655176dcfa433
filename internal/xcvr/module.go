package xcvr

import "math"

// Spec is the management interface specification a module's identifier selects.
type Spec string

const (
	SpecSFF8636 Spec = "SFF-8636"
	SpecCMIS    Spec = "CMIS"
	SpecSFF8472 Spec = "SFF-8472"
	// SpecUnknown: an identifier this package does not decode (or none: 00h).
	SpecUnknown Spec = "unknown"
)

func (s Spec) decoded() bool { return s == SpecSFF8636 || s == SpecCMIS || s == SpecSFF8472 }

// Media tells optical modules from copper cables. Copper cables carry no optical monitors.
type Media string

const (
	MediaOptical Media = "optical"
	// MediaAOC is an active optical cable: optical inside, no separable connector.
	MediaAOC Media = "active optical cable"
	// MediaCopperPassive is a passive direct-attach copper cable (DAC).
	MediaCopperPassive Media = "passive copper"
	// MediaCopperActive is an active copper cable (ACC/AEC): equalisers, still no optics.
	MediaCopperActive Media = "active copper"
	MediaBaseT        Media = "BASE-T"
	MediaUnknown      Media = "unknown"
)

// Copper reports whether the medium is a copper cable (no lasers, no optical monitors).
func (m Media) Copper() bool { return m == MediaCopperPassive || m == MediaCopperActive }

// Quantity is a monitored value. Units: temperature °C, vcc V, tx_power and rx_power mW,
// tx_bias mA.
type Quantity string

const (
	Temperature Quantity = "temperature"
	Voltage     Quantity = "vcc"
	TxPower     Quantity = "tx_power"
	RxPower     Quantity = "rx_power"
	TxBias      Quantity = "tx_bias"
)

// Unit is the unit a Quantity's values are expressed in.
func (q Quantity) Unit() string {
	switch q {
	case Temperature:
		return "°C"
	case Voltage:
		return "V"
	case TxPower, RxPower:
		return "mW"
	case TxBias:
		return "mA"
	}
	return ""
}

// Label is the quantity's name for people.
func (q Quantity) Label() string {
	switch q {
	case Temperature:
		return "temperature"
	case Voltage:
		return "supply voltage"
	case TxPower:
		return "Tx power"
	case RxPower:
		return "Rx power"
	case TxBias:
		return "Tx bias"
	}
	return string(q)
}

// PerLane reports whether the quantity is measured per lane (the others are module-level).
func (q Quantity) PerLane() bool { return q == TxPower || q == RxPower || q == TxBias }

// Vendor is the module's identity, each string trimmed of padding and with non-printable bytes
// replaced, so that it can be printed as evidence safely.
type Vendor struct {
	Name       string
	OUI        string // "00:90:65"
	PartNumber string
	Revision   string
	Serial     string
	DateCode   string // as stored: YYMMDD plus an optional lot code
}

// Monitor is one measured value.
type Monitor struct {
	Quantity Quantity
	// Lane is 1-based for per-lane quantities and 0 for module-level ones.
	Lane  int
	Value float64 // in Quantity.Unit()
	// Source says where the value was read, e.g. "SFF-8636 lower page 00h bytes 34-35".
	Source string
}

// Thresholds are the module's own limits for one quantity (the same for every lane).
type Thresholds struct {
	HighAlarm, LowAlarm, HighWarning, LowWarning float64
	Source                                       string
}

// valid reports whether the thresholds can be judged against: not all zero (a module without
// them leaves the bytes zero) and ordered low alarm <= low warning <= high warning <= high alarm.
func (t Thresholds) valid() (bool, string) {
	if t.HighAlarm == 0 && t.LowAlarm == 0 && t.HighWarning == 0 && t.LowWarning == 0 {
		return false, "thresholds read as zero"
	}
	for _, v := range []float64{t.HighAlarm, t.LowAlarm, t.HighWarning, t.LowWarning} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false, "thresholds not numbers"
		}
	}
	if !(t.LowAlarm <= t.LowWarning && t.LowWarning <= t.HighWarning && t.HighWarning <= t.HighAlarm && t.LowAlarm < t.HighAlarm) {
		return false, "thresholds out of order (low alarm <= low warning <= high warning <= high alarm does not hold)"
	}
	return true, ""
}

// Bound names one of the four thresholds.
type Bound string

const (
	HighAlarm   Bound = "high alarm"
	LowAlarm    Bound = "low alarm"
	HighWarning Bound = "high warning"
	LowWarning  Bound = "low warning"
)

// FlagKind classifies a latched flag.
type FlagKind string

const (
	// FlagThreshold: the module saw a monitor cross one of its thresholds (Bound says which).
	FlagThreshold FlagKind = "threshold"
	FlagRxLOS     FlagKind = "rx_los"
	FlagTxLOS     FlagKind = "tx_los"
	FlagRxLOL     FlagKind = "rx_lol"
	FlagTxLOL     FlagKind = "tx_lol"
	FlagTxFault   FlagKind = "tx_fault"
	FlagTxEQFault FlagKind = "tx_adaptive_eq_fault"
	// FlagFirmware: the module reports a firmware fault (CMIS module flags).
	FlagFirmware FlagKind = "firmware_fault"
)

// Flag is one flag the module had set when read. SFF-8636 and CMIS flags are latched and
// clear-on-read (Latched): the condition happened since the flags were last read. SFF-8472
// flags are the module's current state.
type Flag struct {
	Kind    FlagKind
	Latched bool
	// Quantity and Bound are set for threshold flags.
	Quantity Quantity
	Bound    Bound
	Lane     int // 1-based; 0 for module-level flags
	Source   string
}

// Unavailable records a part of the memory map that was not decoded and why.
type Unavailable struct {
	Part   string // e.g. "page 03h (thresholds)"
	Reason string
}

// Module is a decoded module memory map.
type Module struct {
	Identifier     byte
	IdentifierName string // SFF-8024 Table 4-1, e.g. "QSFP28"
	Spec           Spec
	// Revision is the specification revision the module declares ("Rev 2.8, 2.9 and 2.10"
	// for SFF-8636 byte 1 = 08h; "5.2" for CMIS byte 1 = 52h).
	Revision string
	Vendor   Vendor

	Connector     byte
	ConnectorName string // SFF-8024 Table 4-3
	Media         Media
	// MediaDetail is the transmitter technology or media interface, e.g. "850 nm VCSEL".
	MediaDetail string
	// CableLengthM is the length of a cable assembly (copper or AOC) in metres, 0 if not given.
	CableLengthM float64
	// NominalBitRateMbps is SFF-8636's nominal signalling rate per lane, 0 if absent.
	NominalBitRateMbps int
	// Interface names the module's main interface: SFF-8636's compliance code or CMIS's first
	// application (host and media interface codes of SFF-8024 Tables 4-5 to 4-10).
	Interface string
	Lanes     int
	// FlatMemory: the module implements only lower page 00h and upper page 00h (no
	// thresholds, no lane pages); passive copper cables are.
	FlatMemory bool
	// NotReady explains, when set, why the monitors may not be valid yet (SFF-8636
	// Data_Not_Ready, a CMIS module state other than ModuleReady).
	NotReady string
	// ModuleState is CMIS's module state (CMIS 5.2 §8.2.2), empty for SFF-8636.
	ModuleState string
	// ModuleFault is set when a CMIS module is in ModuleFault state, with the cause.
	ModuleFault string
	// RxPowerOMA: the Rx power monitors measure OMA rather than average power.
	RxPowerOMA bool

	Monitors   []Monitor
	Thresholds map[Quantity]Thresholds
	Flags      []Flag
	// LaneInactive maps a 1-based lane to why it is not carrying traffic (Tx disabled, CMIS
	// data path deactivated); such lanes are not judged.
	LaneInactive map[int]string
	Unavailable  []Unavailable
}

// Monitor returns the value of a quantity on a lane (0 for module-level) and whether it was read.
func (m *Module) Monitor(q Quantity, lane int) (Monitor, bool) {
	for _, mon := range m.Monitors {
		if mon.Quantity == q && mon.Lane == lane {
			return mon, true
		}
	}
	return Monitor{}, false
}

func (m *Module) unavailable(part, reason string) {
	m.Unavailable = append(m.Unavailable, Unavailable{Part: part, Reason: reason})
}

func (m *Module) inactive(lane int, why string) {
	if m.LaneInactive == nil {
		m.LaneInactive = map[int]string{}
	}
	m.LaneInactive[lane] = why
}
