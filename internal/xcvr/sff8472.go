package xcvr

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Offsets below are SFF-8472 Rev 12.4 byte addresses: address A0h (i2c 0x50) is Table 4-1
// "Data Fields - Address A0h", address A2h (i2c 0x51) Table 4-2 "Data Fields - Address A2h"
// (diagnostics, section 9). The kernel's include/linux/sfp.h names the same addresses
// (struct sfp_eeprom_base, SFP_TEMP ... SFP_WARN1).

const i2cDiag uint8 = 0x51 // A2h in 8-bit notation

// sff8472Revisions is A0h byte 94 "SFF-8472 Compliance" (sfp.h SFP_SFF8472_COMPLIANCE_*).
var sff8472Revisions = map[byte]string{
	0x00: "diagnostics not included", 0x01: "SFF-8472 Rev 9.3", 0x02: "SFF-8472 Rev 9.5",
	0x03: "SFF-8472 Rev 10.2", 0x04: "SFF-8472 Rev 10.4", 0x05: "SFF-8472 Rev 11.0",
	0x06: "SFF-8472 Rev 11.3", 0x07: "SFF-8472 Rev 11.4", 0x08: "SFF-8472 Rev 12.3 or later",
}

// sff8472Mon is where each monitor lives in A2h (bytes 96-105, one lane), where its
// thresholds start (bytes 0-39: high alarm, low alarm, high warning, low warning), and its
// alarm and warning flag bits (bytes 112-113 alarms, 116-117 warnings: the high bit of each
// pair is the high flag).
var sff8472Mon = []struct {
	q        Quantity
	mon, thr int
	flagByte int
	highBit  uint
}{
	{Temperature, 96, 0, 112, 7},
	{Voltage, 98, 8, 112, 5},
	{TxBias, 100, 16, 112, 3},
	{TxPower, 102, 24, 112, 1},
	{RxPower, 104, 32, 113, 7},
}

// decodeSFF8472 reads A0h bytes 0-95 from the lower half (the upper half, 128-255, is
// vendor specific) and the diagnostics from A2h.
func decodeSFF8472(r PageReader, m *Module, lo page) {
	a0 := func(addr int) byte { return lo.at(addr) }
	m.Revision = sff8472Revisions[a0(94)]
	if m.Revision == "" {
		m.Revision = fmt.Sprintf("compliance code %02xh", a0(94))
	}
	m.Lanes = 1
	// 20-35 vendor name, 37-39 OUI, 40-55 part number, 56-59 revision, 68-83 serial,
	// 84-91 date code.
	m.Vendor = Vendor{
		Name:       lo.ascii(20, 35),
		OUI:        lo.oui(37),
		PartNumber: lo.ascii(40, 55),
		Revision:   lo.ascii(56, 59),
		Serial:     lo.ascii(68, 83),
		DateCode:   lo.ascii(84, 91),
	}
	m.Connector = a0(2)
	m.ConnectorName = connectorName(m.Connector)
	// Byte 8 "SFP+ Cable Technology": bit 2 passive cable, bit 3 active cable; byte 18 is then
	// the copper cable length in metres.
	switch {
	case a0(8)&0x04 != 0:
		m.Media, m.MediaDetail = MediaCopperPassive, "passive copper cable"
		m.CableLengthM = float64(a0(18))
	case a0(8)&0x08 != 0:
		m.Media, m.MediaDetail = MediaCopperActive, "active copper cable"
		m.CableLengthM = float64(a0(18))
	default:
		m.Media = MediaOptical
		if m.Connector == 0x23 {
			m.Media = MediaAOC
		}
		// Bytes 60-61: laser wavelength in nm for optical modules.
		if wl := binary.BigEndian.Uint16(lo[60:]); wl != 0 {
			m.MediaDetail = fmt.Sprintf("%d nm", wl)
		}
	}
	// Byte 12 nominal rate in 100 Mb/s units; FFh defers to byte 66 in 250 Mb/s units.
	if br := a0(12); br == 0xFF {
		m.NominalBitRateMbps = int(a0(66)) * 250
	} else {
		m.NominalBitRateMbps = int(br) * 100
	}
	// Byte 36 extended compliance (SFF-8024 Table 4-4); byte 3 bits 7-4 10G Ethernet codes.
	if n, ok := sff8636Ext[a0(36)]; ok {
		m.Interface = n
	} else {
		for _, c := range []struct {
			bit  byte
			name string
		}{{0x10, "10GBASE-SR"}, {0x20, "10GBASE-LR"}, {0x40, "10GBASE-LRM"}, {0x80, "10GBASE-ER"}} {
			if a0(3)&c.bit != 0 {
				m.Interface = c.name
				break
			}
		}
	}
	if m.Media == MediaCopperPassive {
		m.unavailable("monitors and flags", "passive copper cable (SFF-8472 A0h byte 8 bit 2): no diagnostics")
		return
	}
	// Byte 92 Diagnostic Monitoring Type: bit 6 diagnostics implemented, bit 5 internally
	// calibrated, bit 4 externally calibrated, bit 3 Rx power average (else OMA).
	dm := a0(92)
	if dm&0x40 == 0 {
		m.unavailable("address A2h (diagnostics)", "not implemented (SFF-8472 A0h byte 92 bit 6 clear)")
		return
	}
	m.RxPowerOMA = dm&0x08 == 0
	a2, err := readPage(r, i2cDiag, 0, 0, false)
	if err != nil {
		m.unavailable("address A2h (diagnostics and thresholds)", err.Error())
		return
	}
	cal := internalCal
	if dm&0x20 == 0 && dm&0x10 != 0 {
		cal = externalCal(a2)
	}
	m.Thresholds = map[Quantity]Thresholds{}
	for _, s := range sff8472Mon {
		conv := func(a int) float64 { return cal(s.q, a2.u16(a)) }
		m.Monitors = append(m.Monitors, Monitor{Quantity: s.q, Lane: lane(s.q), Value: conv(s.mon),
			Source: fmt.Sprintf("SFF-8472 A2h bytes %d-%d", s.mon, s.mon+1)})
		m.Thresholds[s.q] = thresholds(a2, s.thr, conv, "SFF-8472 A2h")
	}
	// Byte 110 Status/Control: bit 0 Data_Ready_Bar, bit 1 Rx_LOS state, bit 2 Tx_Fault state,
	// bit 7 Tx_Disable state; Rx_LOS and Tx_Fault only when A0h byte 93 (Enhanced Options)
	// bits 4 and 5 say the module implements them. Bytes 112-117 alarm and warning flags
	// exist when byte 93 bit 7 is set. SFF-8472 flags are the module's current state.
	st, eo := a2.at(110), a0(93)
	if st&0x01 != 0 {
		m.NotReady = "Data_Ready_Bar is set (SFF-8472 A2h byte 110 bit 0): monitors are not valid yet"
	}
	if st&0x80 != 0 {
		m.inactive(1, "Tx disabled (SFF-8472 A2h byte 110 bit 7)")
	}
	if eo&0x10 != 0 && st&0x02 != 0 {
		m.Flags = append(m.Flags, Flag{Kind: FlagRxLOS, Lane: 1, Source: "SFF-8472 A2h byte 110 bit 1"})
	}
	if eo&0x20 != 0 && st&0x04 != 0 {
		m.Flags = append(m.Flags, Flag{Kind: FlagTxFault, Lane: 1, Source: "SFF-8472 A2h byte 110 bit 2"})
	}
	if eo&0x80 != 0 {
		for _, s := range sff8472Mon {
			for _, f := range []struct {
				addr  int
				shift uint
				b     Bound
			}{
				{s.flagByte, s.highBit, HighAlarm}, {s.flagByte, s.highBit - 1, LowAlarm},
				{s.flagByte + 4, s.highBit, HighWarning}, {s.flagByte + 4, s.highBit - 1, LowWarning},
			} {
				if a2.at(f.addr)&(1<<f.shift) != 0 {
					m.Flags = append(m.Flags, Flag{Kind: FlagThreshold, Quantity: s.q, Bound: f.b, Lane: lane(s.q),
						Source: fmt.Sprintf("SFF-8472 A2h byte %d bit %d", f.addr, f.shift)})
				}
			}
		}
	}
}

func lane(q Quantity) int {
	if q.PerLane() {
		return 1
	}
	return 0
}

// internalCal converts internally calibrated A2h values (the units SFF-8636 uses too).
func internalCal(q Quantity, raw uint16) float64 {
	switch q {
	case Temperature:
		return tempC(int16(raw))
	case Voltage:
		return voltsV(raw)
	case TxBias:
		return biasMA(raw)
	}
	return powerMW(raw)
}

// externalCal applies the calibration constants of A2h bytes 56-91 (SFF-8472 §9.3
// "External Calibration"): Rx power is a 4th-order polynomial of IEEE 754 single-precision
// coefficients at 56-75 (Rx_PWR(4) first); the others are slope (unsigned 8.8 fixed point)
// times the raw value plus a signed offset: Tx bias 76/78, Tx power 80/82, temperature
// 84/86, voltage 88/90 (sfp.h SFP_CAL_*).
func externalCal(a2 page) func(Quantity, uint16) float64 {
	f32 := func(a int) float64 { return float64(math.Float32frombits(binary.BigEndian.Uint32(a2[a:]))) }
	lin := func(slope, offset int, x float64) float64 {
		return float64(a2.u16(slope))/256*x + float64(a2.s16(offset))
	}
	return func(q Quantity, raw uint16) float64 {
		switch q {
		case Temperature:
			return lin(84, 86, float64(int16(raw))) / 256 // the temperature reading is signed
		case Voltage:
			return lin(88, 90, float64(raw)) / 10000
		case TxBias:
			return lin(76, 78, float64(raw)) * 2 / 1000
		case TxPower:
			return lin(80, 82, float64(raw)) / 10000
		}
		x := float64(raw)
		v := f32(56)*x*x*x*x + f32(60)*x*x*x + f32(64)*x*x + f32(68)*x + f32(72)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return math.NaN()
		}
		return v / 10000
	}
}
