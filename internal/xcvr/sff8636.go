package xcvr

import "fmt"

// Offsets below are SFF-8636 Rev 2.10a byte addresses (0-127 lower page 00h, 128-255 the
// selected upper page); lower page fields are cited by the spec's table, upper page 00h and
// upper page 03h (thresholds) fields by page and byte. ethtool's qsfp.h defines the same
// addresses.

// sff8636Revisions is SFF-8636 Rev 2.10a Table 6-3 "Revision Compliance" (byte 1).
var sff8636Revisions = map[byte]string{
	0x00: "revision not specified",
	0x01: "SFF-8436 Rev 4.8 or earlier",
	0x02: "SFF-8436 Rev 4.8 or earlier (bytes 186-187 as SFF-8636)",
	0x03: "SFF-8636 Rev 1.3 or earlier",
	0x04: "SFF-8636 Rev 1.4",
	0x05: "SFF-8636 Rev 1.5",
	0x06: "SFF-8636 Rev 2.0",
	0x07: "SFF-8636 Rev 2.5, 2.6 and 2.7",
	0x08: "SFF-8636 Rev 2.8, 2.9 and 2.10",
}

// sff8636Ext names the common SFF-8024 Table 4-4 "Extended Specification Compliance" codes
// that SFF-8636 byte 192 carries when byte 131 bit 7 is set.
var sff8636Ext = map[byte]string{
	0x01: "100G AOC (FEC-dependent BER)",
	0x02: "100GBASE-SR4 or 25GBASE-SR",
	0x03: "100GBASE-LR4 or 25GBASE-LR",
	0x04: "100GBASE-ER4 or 25GBASE-ER",
	0x05: "100GBASE-SR10",
	0x06: "100G CWDM4",
	0x07: "100G PSM4",
	0x08: "100G ACC (FEC-dependent BER)",
	0x0B: "100GBASE-CR4, 25GBASE-CR CA-25G-L or 50GBASE-CR2 with RS FEC",
	0x0C: "25GBASE-CR CA-25G-S or 50GBASE-CR2 with BASE-R FEC",
	0x0D: "25GBASE-CR CA-25G-N or 50GBASE-CR2 without FEC",
	0x17: "100G CLR4",
	0x18: "100G AOC (BER 1e-12)",
	0x19: "100G ACC (BER 1e-12)",
	0x20: "100G SWDM4",
	0x25: "100GBASE-DR",
	0x26: "100G-FR or 100GBASE-FR1",
	0x27: "100G-LR or 100GBASE-LR1",
	0x40: "50GBASE-CR, 100GBASE-CR2 or 200GBASE-CR4",
	0x41: "50GBASE-SR, 100GBASE-SR2 or 200GBASE-SR4",
	0x42: "50GBASE-FR or 200GBASE-DR4",
	0x43: "200GBASE-FR4",
	0x46: "200GBASE-LR4",
}

// sff8636Compliance names byte 131's 10/40G Ethernet compliance bits (SFF-8636 Rev 2.10a
// upper page 00h "Specification Compliance"; bit 7 = see byte 192).
var sff8636Compliance = []struct {
	bit  byte
	name string
}{
	{0x01, "40G active cable (XLPPI)"}, {0x02, "40GBASE-LR4"}, {0x04, "40GBASE-SR4"},
	{0x08, "40GBASE-CR4"}, {0x10, "10GBASE-SR"}, {0x20, "10GBASE-LR"}, {0x40, "10GBASE-LRM"},
}

const sff8636Lanes = 4

// sff8636LaneMon is where each per-lane monitor lives in lower page 00h (Table 6-8 "Channel
// Monitoring Values", bytes 34-57, 2 bytes per lane, lane 1 first) and its thresholds in
// upper page 03h ("Channel Thresholds", bytes 176-199: high alarm, low alarm, high
// warning, low warning, 2 bytes each).
var sff8636LaneMon = []struct {
	q       Quantity
	mon     int // address of lane 1
	thr     int // address of the high alarm threshold in page 03h
	flags   int // first of the two flag bytes (Table 6-6)
	convert func(uint16) float64
}{
	{RxPower, 34, 176, 9, powerMW},
	{TxBias, 42, 184, 11, biasMA},
	{TxPower, 50, 192, 13, powerMW},
}

func decodeSFF8636(r PageReader, m *Module, lo, up page) {
	// Byte 1 Revision Compliance, byte 2 Status Indicators (Table 6-2): bit 2 Flat_mem
	// (upper page 00h only), bit 0 Data_Not_Ready.
	m.Revision = sff8636Revisions[lo.at(1)]
	if m.Revision == "" {
		m.Revision = fmt.Sprintf("revision code %02xh", lo.at(1))
	}
	m.FlatMemory = lo.at(2)&0x04 != 0
	if lo.at(2)&0x01 != 0 {
		m.NotReady = "Data_Not_Ready is set (SFF-8636 byte 2 bit 0): monitors are not valid yet"
	}
	m.Lanes = sff8636Lanes

	// Upper page 00h: 130 connector, 146 cable length, 147 device technology,
	// 148-163 vendor name, 165-167 OUI, 168-183 part number, 184-185 revision,
	// 196-211 serial, 212-219 date code.
	m.Vendor = Vendor{
		Name:       up.ascii(148, 163),
		OUI:        up.oui(165),
		PartNumber: up.ascii(168, 183),
		Revision:   up.ascii(184, 185),
		Serial:     up.ascii(196, 211),
		DateCode:   up.ascii(212, 219),
	}
	m.Connector = up.at(130)
	m.ConnectorName = connectorName(m.Connector)
	tech := up.at(147) >> 4
	m.MediaDetail = transmitterTech[tech]
	m.Media = techMedia(tech)
	if m.Media == MediaOptical && m.Connector == 0x23 {
		m.Media = MediaAOC
	}
	if m.Media != MediaOptical {
		// Byte 146: length of a copper or active cable assembly in 1 m units.
		m.CableLengthM = float64(up.at(146))
	}
	// Byte 140 nominal bit rate in 100 Mb/s units; FFh defers to byte 222 in 250 Mb/s units.
	if br := up.at(140); br == 0xFF {
		m.NominalBitRateMbps = int(up.at(222)) * 250
	} else {
		m.NominalBitRateMbps = int(br) * 100
	}
	m.Interface = sff8636Interface(up)
	// Byte 220 Diagnostic Monitoring Type: bit 3 Rx power is average (else OMA), bit 2 Tx
	// power monitoring supported.
	m.RxPowerOMA = up.at(220)&0x08 == 0
	txPowerSupported := up.at(220)&0x04 != 0

	// Byte 86 Tx Disable (Table 6-9 "Control Bytes"), bits 3-0 = lanes 4-1.
	for lane := 1; lane <= sff8636Lanes; lane++ {
		if lo.at(86)&(1<<(lane-1)) != 0 {
			m.inactive(lane, "Tx disabled by the host (SFF-8636 byte 86)")
		}
	}

	copper := m.Media.Copper()
	// A passive copper cable has no electronics to measure anything: whatever its lower page
	// holds is not a monitor (real cables leave it FFh). Active copper may monitor temperature
	// and voltage. Neither has optical lane monitors, and lane flags are meaningless on them.
	if m.Media == MediaCopperPassive {
		m.unavailable("monitors and flags", "passive copper cable (SFF-8636 byte 147): no diagnostics")
		return
	}
	{
		// Table 6-7 "Free Side Monitoring Values": 22-23 temperature, 26-27 supply voltage.
		m.Monitors = append(m.Monitors,
			Monitor{Quantity: Temperature, Value: tempC(lo.s16(22)), Source: "SFF-8636 lower page 00h bytes 22-23"},
			Monitor{Quantity: Voltage, Value: voltsV(lo.u16(26)), Source: "SFF-8636 lower page 00h bytes 26-27"})
		sff8636ModuleFlags(m, lo)
	}
	if !copper {
		for _, l := range sff8636LaneMon {
			if l.q == TxPower && !txPowerSupported {
				m.unavailable("Tx power monitors", "not implemented by the module (SFF-8636 byte 220 bit 2 clear)")
				continue
			}
			for lane := 1; lane <= sff8636Lanes; lane++ {
				a := l.mon + 2*(lane-1)
				m.Monitors = append(m.Monitors, Monitor{Quantity: l.q, Lane: lane, Value: l.convert(lo.u16(a)),
					Source: fmt.Sprintf("SFF-8636 lower page 00h bytes %d-%d", a, a+1)})
			}
		}
		sff8636LaneFlags(m, lo, txPowerSupported)
	}

	if m.FlatMemory {
		m.unavailable("page 03h (thresholds)", "flat memory (SFF-8636 byte 2 bit 2): the module has no threshold page")
		return
	}
	p3, err := readPage(r, i2cModule, 3, 0, true)
	if err != nil {
		m.unavailable("page 03h (thresholds)", err.Error())
		return
	}
	m.Thresholds = map[Quantity]Thresholds{}
	// Upper page 03h "Free Side Device Thresholds": 128-135 temperature, 144-151 supply voltage.
	m.Thresholds[Temperature] = thresholds(p3, 128, func(a int) float64 { return tempC(p3.s16(a)) }, "SFF-8636 page 03h")
	m.Thresholds[Voltage] = thresholds(p3, 144, func(a int) float64 { return voltsV(p3.u16(a)) }, "SFF-8636 page 03h")
	if !copper {
		for _, l := range sff8636LaneMon {
			conv := l.convert
			m.Thresholds[l.q] = thresholds(p3, l.thr, func(a int) float64 { return conv(p3.u16(a)) }, "SFF-8636 page 03h")
		}
	}
}

// thresholds reads four consecutive 2-byte thresholds at addr: high alarm, low alarm, high
// warning, low warning (the order of both SFF-8636 page 03h and CMIS page 02h).
func thresholds(p page, addr int, val func(int) float64, where string) Thresholds {
	return Thresholds{
		HighAlarm: val(addr), LowAlarm: val(addr + 2), HighWarning: val(addr + 4), LowWarning: val(addr + 6),
		Source: fmt.Sprintf("%s bytes %d-%d", where, addr, addr+7),
	}
}

func sff8636Interface(up page) string {
	c := up.at(131)
	if c&0x80 != 0 {
		code := up.at(192)
		if n, ok := sff8636Ext[code]; ok {
			return n
		}
		return fmt.Sprintf("extended compliance code %02xh (SFF-8024 Table 4-4)", code)
	}
	for _, b := range sff8636Compliance {
		if c&b.bit != 0 {
			return b.name
		}
	}
	return ""
}

// sff8636ModuleFlags decodes Table 6-5 "Free Side Monitor Interrupt Flags": byte 6
// temperature and byte 7 supply voltage, bit 7 high alarm, 6 low alarm, 5 high warning,
// 4 low warning. All are latched.
func sff8636ModuleFlags(m *Module, lo page) {
	for _, f := range []struct {
		addr int
		q    Quantity
	}{{6, Temperature}, {7, Voltage}} {
		for i, b := range []Bound{HighAlarm, LowAlarm, HighWarning, LowWarning} {
			if lo.at(f.addr)&(0x80>>i) != 0 {
				m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagThreshold, Quantity: f.q, Bound: b,
					Source: fmt.Sprintf("SFF-8636 lower page 00h byte %d bit %d", f.addr, 7-i)})
			}
		}
	}
}

// sff8636LaneFlags decodes Table 6-4 "Channel Status Interrupt Flags" (byte 3: bits 3-0 Rx
// LOS lanes 4-1, bits 7-4 Tx LOS lanes 4-1; byte 4: bits 3-0 Tx fault; byte 5: bits 3-0 Rx
// CDR LOL, bits 7-4 Tx CDR LOL) and Table 6-6 "Channel Monitor Interrupt Flags" (bytes 9-14,
// two lanes per byte: lane 1 in bits 7-4 of the first byte as high alarm, low alarm, high
// warning, low warning; lane 2 in bits 3-0). All are latched.
func sff8636LaneFlags(m *Module, lo page, txPower bool) {
	for lane := 1; lane <= sff8636Lanes; lane++ {
		low := byte(1) << (lane - 1)
		high := low << 4
		for _, f := range []struct {
			addr int
			bit  byte
			kind FlagKind
		}{
			{3, low, FlagRxLOS}, {3, high, FlagTxLOS}, {4, low, FlagTxFault},
			{4, high, FlagTxEQFault}, {5, low, FlagRxLOL}, {5, high, FlagTxLOL},
		} {
			if lo.at(f.addr)&f.bit != 0 {
				m.Flags = append(m.Flags, Flag{Latched: true, Kind: f.kind, Lane: lane,
					Source: fmt.Sprintf("SFF-8636 lower page 00h byte %d bit %d", f.addr, bitIndex(f.bit))})
			}
		}
		for _, l := range sff8636LaneMon {
			if l.q == TxPower && !txPower {
				continue
			}
			addr := l.flags + (lane-1)/2
			shift := 4
			if lane%2 == 0 {
				shift = 0
			}
			for i, b := range []Bound{HighAlarm, LowAlarm, HighWarning, LowWarning} {
				bit := byte(0x08>>i) << shift
				if lo.at(addr)&bit != 0 {
					m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagThreshold, Quantity: l.q, Bound: b, Lane: lane,
						Source: fmt.Sprintf("SFF-8636 lower page 00h byte %d bit %d", addr, bitIndex(bit))})
				}
			}
		}
	}
}

func bitIndex(b byte) int {
	for i := 0; i < 8; i++ {
		if b == 1<<i {
			return i
		}
	}
	return -1
}
