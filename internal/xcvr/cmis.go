package xcvr

import "fmt"

// Offsets below are OIF-CMIS-05.2 byte addresses: lower memory §8.2, upper page 00h §8.3,
// page 01h (advertising) §8.4, page 02h (monitor thresholds) §8.5, page 11h (lane dynamic
// status) §8.9. CMIS 4.0 uses the same addresses for every field read here. ethtool's cmis.h
// defines the same addresses.

// cmisBankLanes is the number of lanes a bank of pages 10h-1Fh covers (CMIS 5.2 §8.4.4;
// page 01h byte 142 advertises the banks).
const cmisBankLanes = 8

// cmisStates is the module state encoding of lower page byte 3 bits 3-1 (CMIS 5.2 §8.2.2).
var cmisStates = map[byte]string{
	1: "ModuleLowPwr", 2: "ModulePwrUp", 3: "ModuleReady", 4: "ModulePwrDn", 5: "ModuleFault",
}

// cmisFaultCauses is lower page byte 41 "Module Fault Information" (CMIS 5.2 §8.2.10).
var cmisFaultCauses = map[byte]string{
	0: "no fault detected or not supported", 1: "TEC runaway",
	2: "data memory corrupted", 3: "program memory corrupted",
}

// cmisMediaTypes is lower page byte 85 MediaType (CMIS 5.2 Table 8-18), which selects the
// SFF-8024 table the media interface codes come from.
var cmisMediaTypes = map[byte]string{
	1: "MMF", 2: "SMF", 3: "passive copper", 4: "active cable", 5: "BASE-T",
}

// cmisMMF names common SFF-8024 Table 4-6 multimode media interface codes.
var cmisMMF = map[byte]string{
	0x02: "10GBASE-SR", 0x03: "25GBASE-SR", 0x07: "50GBASE-SR", 0x09: "100GBASE-SR4",
	0x0D: "100GBASE-SR1", 0x0E: "200GBASE-SR4", 0x10: "400GBASE-SR8", 0x11: "400GBASE-SR4",
	0x12: "800GBASE-SR8",
}

// cmisLaneMon locates each lane quantity: page 11h monitors (Table 8-82: Tx power 154-169,
// Tx bias 170-185, Rx power 186-201, 2 bytes per lane, lane 1 first), page 02h thresholds
// (§8.5 lane-related thresholds: Tx power 176-183, Tx bias 184-191, Rx power 192-199, each
// high alarm, low alarm, high warning, low warning), page 11h latched threshold flags
// (Tables 8-80 and 8-81: one byte per bound, bit n = lane n+1; Tx power 139-142, Tx bias
// 143-146, Rx power 149-152) and the page 01h byte 160 bit advertising the monitor.
var cmisLaneMon = []struct {
	q         Quantity
	mon, thr  int
	flags     int
	advertBit byte
}{
	{TxPower, 154, 176, 139, 0x02},
	{TxBias, 170, 184, 143, 0x01},
	{RxPower, 186, 192, 149, 0x04},
}

func decodeCMIS(r PageReader, m *Module, lo, up page) {
	// Byte 1 CMIS revision, major in bits 7-4, minor in bits 3-0; byte 2 bit 7 MemoryModel
	// (1 = flat: upper page 00h only) (§8.2.1).
	m.Revision = fmt.Sprintf("%d.%d", lo.at(1)>>4, lo.at(1)&0x0F)
	m.FlatMemory = lo.at(2)&0x80 != 0
	state := lo.at(3) >> 1 & 0x07
	m.ModuleState = cmisStates[state]
	if m.ModuleState == "" {
		m.ModuleState = fmt.Sprintf("reserved state %d", state)
	}
	if state == 5 {
		// Byte 41: fault cause, meaningful in ModuleFault only.
		cause, ok := cmisFaultCauses[lo.at(41)]
		if !ok {
			cause = fmt.Sprintf("cause code %02xh", lo.at(41))
		}
		m.ModuleFault = cause
	}

	// Upper page 00h (§8.3): 129-144 vendor name, 145-147 OUI, 148-163 part number,
	// 164-165 revision, 166-181 serial, 182-189 date code, 202 cable assembly length,
	// 203 connector (SFF-8024 Table 4-3), 212 media interface technology.
	m.Vendor = Vendor{
		Name:       up.ascii(129, 144),
		OUI:        up.oui(145),
		PartNumber: up.ascii(148, 163),
		Revision:   up.ascii(164, 165),
		Serial:     up.ascii(166, 181),
		DateCode:   up.ascii(182, 189),
	}
	m.Connector = up.at(203)
	m.ConnectorName = connectorName(m.Connector)
	mediaType := lo.at(85)
	tech := up.at(212)
	if tech <= 0x0F {
		m.MediaDetail = transmitterTech[tech]
	} else {
		m.MediaDetail = fmt.Sprintf("media interface technology %02xh", tech)
	}
	m.Media = cmisMedia(mediaType, tech, m.Connector)
	if m.Media != MediaOptical {
		m.CableLengthM = cmisCableLength(up.at(202))
	}
	hostLanes, mediaLanes := cmisApplication(m, lo, mediaType)
	m.Lanes = mediaLanes
	if m.Lanes == 0 {
		m.Lanes = cmisDefaultLanes(m.Identifier)
	}

	if m.FlatMemory {
		m.unavailable("pages 01h, 02h, 11h (advertising, thresholds, lane monitors)",
			"flat memory (CMIS byte 2 bit 7): the module has only upper page 00h")
		return
	}
	copper := m.Media.Copper()
	if m.Media == MediaCopperPassive {
		m.unavailable("monitors and flags", "passive copper cable (CMIS byte 85): no diagnostics")
		return
	}
	ready := state == 3
	if !ready {
		m.NotReady = fmt.Sprintf("module state %s (CMIS byte 3), not ModuleReady: lane monitors and flags are not valid", m.ModuleState)
	}
	// Lower page Table 8-10 "Module-Level Monitor Values": 14-15 temperature, 16-17 supply
	// voltage. Table 8-9 "Module Flags": byte 8 bit 1 ModuleFirmwareError, bit 2
	// DataPathFirmwareError; byte 9 bits 0-3 temperature high alarm, low alarm, high warning,
	// low warning, bits 4-7 the same for supply voltage. All latched.
	p1, err1 := readPage(r, i2cModule, 1, 0, true)
	if err1 != nil {
		m.unavailable("page 01h (advertising; lane monitors and flags need it)", err1.Error())
	}
	// Byte 159 (page 01h) advertises the module monitors: bit 0 temperature, bit 1 voltage.
	tempOK, vccOK := true, true
	if p1 != nil {
		tempOK, vccOK = p1.at(159)&0x01 != 0, p1.at(159)&0x02 != 0
	}
	if tempOK {
		m.Monitors = append(m.Monitors, Monitor{Quantity: Temperature, Value: tempC(lo.s16(14)), Source: "CMIS lower page bytes 14-15"})
	}
	if vccOK {
		m.Monitors = append(m.Monitors, Monitor{Quantity: Voltage, Value: voltsV(lo.u16(16)), Source: "CMIS lower page bytes 16-17"})
	}
	for _, f := range []struct {
		bit  byte
		name string
	}{{0x02, "module firmware error"}, {0x04, "data path firmware error"}} {
		if lo.at(8)&f.bit != 0 {
			m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagFirmware, Source: fmt.Sprintf("CMIS lower page byte 8 bit %d (%s)", bitIndex(f.bit), f.name)})
		}
	}
	for i, b := range []Bound{HighAlarm, LowAlarm, HighWarning, LowWarning} {
		if tempOK && lo.at(9)&(1<<i) != 0 {
			m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagThreshold, Quantity: Temperature, Bound: b, Source: fmt.Sprintf("CMIS lower page byte 9 bit %d", i)})
		}
		if vccOK && lo.at(9)&(0x10<<i) != 0 {
			m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagThreshold, Quantity: Voltage, Bound: b, Source: fmt.Sprintf("CMIS lower page byte 9 bit %d", i+4)})
		}
	}

	// Page 02h thresholds (§8.5): 128-135 temperature, 136-143 supply voltage, then the lane
	// thresholds. Bias values scale with the page 01h multiplier.
	biasMul := 1.0
	var p2 page
	if p1 != nil {
		// Page 01h byte 160 bits 4-3: Tx bias current multiplier 1, 2 or 4 (Table 8-47);
		// byte 151 bit 4: Rx power measured as average (else OMA).
		biasMul = [4]float64{1, 2, 4, 1}[p1.at(160)>>3&0x03]
		m.RxPowerOMA = p1.at(151)&0x10 == 0
	}
	if p, err := readPage(r, i2cModule, 2, 0, true); err != nil {
		m.unavailable("page 02h (thresholds)", err.Error())
	} else {
		p2 = p
		m.Thresholds = map[Quantity]Thresholds{
			Temperature: thresholds(p2, 128, func(a int) float64 { return tempC(p2.s16(a)) }, "CMIS page 02h"),
			Voltage:     thresholds(p2, 136, func(a int) float64 { return voltsV(p2.u16(a)) }, "CMIS page 02h"),
		}
	}
	if copper {
		return
	}
	if p1 == nil {
		return // recorded above: without the advertisement, lane monitors cannot be scaled or trusted
	}
	if p2 != nil {
		for _, l := range cmisLaneMon {
			if p1.at(160)&l.advertBit == 0 {
				continue
			}
			conv := cmisConv(l.q, biasMul)
			m.Thresholds[l.q] = thresholds(p2, l.thr, func(a int) float64 { return conv(p2.u16(a)) }, "CMIS page 02h")
		}
	}
	p11, err := readPage(r, i2cModule, 0x11, 0, true)
	if err != nil {
		m.unavailable("page 11h (lane flags and monitors)", err.Error())
		return
	}
	lanes := m.Lanes
	if lanes > cmisBankLanes {
		m.unavailable(fmt.Sprintf("lanes %d-%d", cmisBankLanes+1, lanes), "only bank 0 (lanes 1-8) is read")
		lanes = cmisBankLanes
	}
	for _, l := range cmisLaneMon {
		if p1.at(160)&l.advertBit == 0 {
			m.unavailable(l.q.Label()+" monitors", fmt.Sprintf("not supported by the module (CMIS page 01h byte 160 bit %d clear)", bitIndex(l.advertBit)))
			continue
		}
		conv := cmisConv(l.q, biasMul)
		for lane := 1; lane <= lanes; lane++ {
			a := l.mon + 2*(lane-1)
			m.Monitors = append(m.Monitors, Monitor{Quantity: l.q, Lane: lane, Value: conv(p11.u16(a)),
				Source: fmt.Sprintf("CMIS page 11h bytes %d-%d", a, a+1)})
			for i, b := range []Bound{HighAlarm, LowAlarm, HighWarning, LowWarning} {
				if p11.at(l.flags+i)&(1<<(lane-1)) != 0 {
					m.Flags = append(m.Flags, Flag{Latched: true, Kind: FlagThreshold, Quantity: l.q, Bound: b, Lane: lane,
						Source: fmt.Sprintf("CMIS page 11h byte %d bit %d", l.flags+i, lane-1)})
				}
			}
		}
	}
	// Page 11h lane flags (Tables 8-80, 8-81), bit n = lane n+1, each present only when page
	// 01h advertises it: byte 157 (Tx) bit 0 fault, bit 1 LOS, bit 2 CDR LOL, bit 3 adaptive
	// EQ fault; byte 158 (Rx) bit 1 LOS, bit 2 CDR LOL.
	for _, f := range []struct {
		addr      int
		advert    int
		advertBit byte
		kind      FlagKind
	}{
		{135, 157, 0x01, FlagTxFault}, {136, 157, 0x02, FlagTxLOS}, {137, 157, 0x04, FlagTxLOL},
		{138, 157, 0x08, FlagTxEQFault}, {147, 158, 0x02, FlagRxLOS}, {148, 158, 0x04, FlagRxLOL},
	} {
		if p1.at(f.advert)&f.advertBit == 0 {
			continue
		}
		for lane := 1; lane <= lanes; lane++ {
			if p11.at(f.addr)&(1<<(lane-1)) != 0 {
				m.Flags = append(m.Flags, Flag{Latched: true, Kind: f.kind, Lane: lane, Source: fmt.Sprintf("CMIS page 11h byte %d bit %d", f.addr, lane-1)})
			}
		}
	}
	// Page 11h bytes 128-131: data path state per host lane, lane 1 in bits 3-0 of byte 128
	// (§8.9.1); 1 = DPDeactivated. Host lanes map one to one onto media lanes only when the
	// application uses as many of each; otherwise a lane is inactive only when all are.
	deactivated := func(hostLane int) bool {
		v := p11.at(128 + (hostLane-1)/2)
		if hostLane%2 == 0 {
			v >>= 4
		}
		return v&0x0F == 1
	}
	if hostLanes == lanes {
		for lane := 1; lane <= lanes; lane++ {
			if deactivated(lane) {
				m.inactive(lane, "data path deactivated (CMIS page 11h DPState)")
			}
		}
	} else if hostLanes > 0 && hostLanes <= cmisBankLanes {
		all := true
		for hl := 1; hl <= hostLanes; hl++ {
			all = all && deactivated(hl)
		}
		if all {
			for lane := 1; lane <= lanes; lane++ {
				m.inactive(lane, "data path deactivated on every host lane (CMIS page 11h DPState)")
			}
		}
	}
}

// cmisConv converts a raw lane monitor or threshold; Tx bias is 2 µA times the multiplier.
func cmisConv(q Quantity, biasMul float64) func(uint16) float64 {
	if q == TxBias {
		return func(v uint16) float64 { return biasMA(v) * biasMul }
	}
	return powerMW
}

func cmisMedia(mediaType, tech, connector byte) Media {
	switch mediaType {
	case 3:
		return MediaCopperPassive
	case 5:
		return MediaBaseT
	case 4:
		if tech >= 0x0A && tech <= 0x0F {
			return MediaCopperActive
		}
		return MediaAOC
	case 1, 2:
		if connector == 0x23 {
			return MediaAOC
		}
		return MediaOptical
	}
	if tech <= 0x0F {
		return techMedia(tech)
	}
	return MediaUnknown
}

// cmisCableLength decodes upper page 00h byte 202: bits 7-6 multiplier (0.1, 1, 10, 100 m),
// bits 5-0 base length (§8.3, cable assembly length).
func cmisCableLength(b byte) float64 {
	mul := [4]float64{0.1, 1, 10, 100}[b>>6]
	return float64(b&0x3F) * mul
}

// cmisApplication reads the first application descriptor (lower page bytes 86-89, §8.2.11
// "Application Advertising": host interface code, media interface code, host lane count in
// bits 7-4 and media lane count in bits 3-0 of byte 88) and returns its lane counts.
func cmisApplication(m *Module, lo page, mediaType byte) (host, media int) {
	hostID, mediaID := lo.at(86), lo.at(87)
	if hostID == 0x00 || hostID == 0xFF {
		return 0, 0
	}
	host, media = int(lo.at(88)>>4), int(lo.at(88)&0x0F)
	name := fmt.Sprintf("media interface %02xh", mediaID)
	if mediaType == 1 {
		if n, ok := cmisMMF[mediaID]; ok {
			name = n
		}
	}
	mt := cmisMediaTypes[mediaType]
	if mt == "" {
		mt = fmt.Sprintf("media type %02xh", mediaType)
	}
	m.Interface = fmt.Sprintf("%s (%s), host interface %02xh, %d host / %d media lanes", name, mt, hostID, host, media)
	if media < 1 || media > 16 {
		media = 0
	}
	return host, media
}

// cmisDefaultLanes is the electrical lane count of the form factor: 8 for QSFP-DD and OSFP,
// 4 for QSFP+, 2 for DSFP and SFP-DD, 1 for SFP+.
func cmisDefaultLanes(id byte) int {
	switch id {
	case 0x1E:
		return 4
	case 0x1B, 0x1F:
		return 2
	case 0x20:
		return 1
	}
	return 8
}
