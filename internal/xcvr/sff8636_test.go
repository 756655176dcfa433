package xcvr

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// sff8636Optical builds a paged QSFP28 100GBASE-SR4 module with every value inside its
// thresholds, at the SFF-8636 Rev 2.10a addresses the decoder cites.
func sff8636Optical() *eeprom {
	e := newEEPROM()
	e.put(0, 0, 0x11)   // identifier QSFP28 (SFF-8024 Table 4-1)
	e.put(0, 1, 0x08)   // Rev 2.8-2.10 (Table 6-3)
	e.put(0, 2, 0x00)   // paged, data ready (Table 6-2)
	e.put(0, 128, 0x11) // upper page 00h identifier
	e.put(0, 130, 0x0C) // MPO 1x12
	e.put(0, 131, 0x80) // extended compliance in byte 192
	e.put(0, 192, 0x02) // 100GBASE-SR4
	e.put(0, 140, 0xFF) // nominal rate in byte 222
	e.put(0, 222, 103)  // 103 * 250 Mb/s
	e.put(0, 147, 0x00) // 850 nm VCSEL
	e.str(0, 148, 16, "FINISAR CORP")
	e.put(0, 165, 0x00, 0x90, 0x65)
	e.str(0, 168, 16, "FTLC9551REPM")
	e.str(0, 184, 2, "A0")
	e.str(0, 196, 16, "X8ZAB12")
	e.str(0, 212, 8, "190607")
	e.put(0, 220, 0x0C) // average Rx power, Tx power supported
	e.put16(0, 22, rawTemp(38.5))
	e.put16(0, 26, rawVolts(3.3))
	for lane := 0; lane < 4; lane++ {
		e.put16(0, 34+2*lane, rawMW(0.8))
		e.put16(0, 42+2*lane, rawMA(7.5))
		e.put16(0, 50+2*lane, rawMW(0.7))
	}
	// Page 03h thresholds.
	e.putThresholds(3, 128, rawTemp, 75, -5, 70, 0)
	e.putThresholds(3, 144, rawVolts, 3.63, 2.97, 3.465, 3.135)
	e.putThresholds(3, 176, rawMW, 2.0, 0.0316, 1.5, 0.0631)
	e.putThresholds(3, 184, rawMA, 15, 2, 12, 3)
	e.putThresholds(3, 192, rawMW, 2.0, 0.1, 1.5, 0.2)
	return e
}

// sff8636DAC builds a flat-memory QSFP28 passive copper cable.
func sff8636DAC() *eeprom {
	e := newEEPROM()
	e.put(0, 0, 0x11)
	e.put(0, 1, 0x07)
	e.put(0, 2, 0x04)   // flat memory
	e.put(0, 3, 0xFF)   // garbage a passive cable may hold: never a flag
	e.put(0, 130, 0x23) // no separable connector
	e.put(0, 131, 0x80)
	e.put(0, 192, 0x0B) // 100GBASE-CR4
	e.put(0, 146, 3)    // 3 m
	e.put(0, 147, 0xA0) // copper cable, unequalized
	e.str(0, 148, 16, "Amphenol")
	e.put(0, 165, 0x78, 0xa7, 0x14)
	e.str(0, 168, 16, "NDAAFT-F312")
	e.str(0, 196, 16, "APF1937312431U")
	return e
}

func TestSFF8636Decode(t *testing.T) {
	e := sff8636Optical()
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecSFF8636 || m.IdentifierName != "QSFP28" || m.Revision != "SFF-8636 Rev 2.8, 2.9 and 2.10" {
		t.Errorf("spec %q %q %q", m.Spec, m.IdentifierName, m.Revision)
	}
	want := Vendor{Name: "FINISAR CORP", OUI: "00:90:65", PartNumber: "FTLC9551REPM", Revision: "A0", Serial: "X8ZAB12", DateCode: "190607"}
	if m.Vendor != want {
		t.Errorf("vendor %+v, want %+v", m.Vendor, want)
	}
	if m.Media != MediaOptical || m.MediaDetail != "850 nm VCSEL" || m.ConnectorName != "MPO 1x12" ||
		m.NominalBitRateMbps != 25750 || m.Interface != "100GBASE-SR4 or 25GBASE-SR" || m.Lanes != 4 || m.RxPowerOMA {
		t.Errorf("module %+v", m)
	}
	if !e.read(pageKey{i2cModule, 3, 0, true}) {
		t.Error("page 03h not read on a paged module")
	}
	checks := []struct {
		q    Quantity
		lane int
		want float64
	}{
		{Temperature, 0, 38.5}, {Voltage, 0, 3.3}, {RxPower, 1, 0.8}, {TxBias, 4, 7.5}, {TxPower, 2, 0.7},
	}
	for _, c := range checks {
		mon, ok := m.Monitor(c.q, c.lane)
		if !ok || math.Abs(mon.Value-c.want) > 1e-3 {
			t.Errorf("%s lane %d = %v (%v), want %v", c.q, c.lane, mon.Value, ok, c.want)
		}
	}
	th := m.Thresholds[RxPower]
	if math.Abs(th.LowAlarm-0.0316) > 1e-4 || th.Source != "SFF-8636 page 03h bytes 176-183" {
		t.Errorf("rx thresholds %+v", th)
	}
	if vs := Judge(m); len(vs) != 0 {
		t.Errorf("healthy module judged %v", vs)
	}
	if s := Summary(m); s != "QSFP28 optical, FINISAR CORP FTLC9551REPM, 4 lanes, 38.5 °C" {
		t.Errorf("summary %q", s)
	}
}

func TestSFF8636Judge(t *testing.T) {
	cases := []judgeCase{
		{
			name: "rx power below low alarm with LOS, another lane below low warning, hot module",
			mutate: func(e *eeprom) {
				e.put16(0, 34+2*2, rawMW(0.02)) // lane 3 Rx: -17 dBm < -15 dBm low alarm
				e.put16(0, 34+2*3, rawMW(0.05)) // lane 4 Rx: -13 dBm < -12 dBm low warning
				e.setBit(0, 3, 2)               // lane 3 Rx LOS
				e.put16(0, 22, rawTemp(72))     // above 70 °C high warning
				e.setBit(0, 6, 5)               // temperature high warning flag
			},
			want: []verdictKey{
				{KindThreshold, LevelAlarm, RxPower, 3, LowAlarm, ""},
				{KindFlag, LevelAlarm, RxPower, 3, "", FlagRxLOS},
				{KindThreshold, LevelWarning, Temperature, 0, HighWarning, ""},
				{KindThreshold, LevelWarning, RxPower, 4, LowWarning, ""},
			},
			lines: []string{
				"alarm: lane 3 Rx power -16.99 dBm (0.0200 mW) below the module's low alarm threshold -15.00 dBm (0.0316 mW) [SFF-8636 lower page 00h bytes 38-39; thresholds SFF-8636 page 03h bytes 176-183]",
				"alarm: lane 3 Rx power: Rx loss of signal latched, now -16.99 dBm (0.0200 mW) [SFF-8636 lower page 00h byte 3 bit 2]",
				"warning: temperature 72.0 °C above the module's high warning threshold 70.0 °C",
				"warning: lane 4 Rx power -13.01 dBm",
			},
		},
		{
			name: "tx bias above high alarm, tx fault latched",
			mutate: func(e *eeprom) {
				e.put16(0, 42, rawMA(16)) // lane 1 bias > 15 mA
				e.setBit(0, 4, 0)         // lane 1 Tx fault
			},
			want: []verdictKey{
				{KindFlag, LevelAlarm, "", 1, "", FlagTxFault},
				{KindThreshold, LevelAlarm, TxBias, 1, HighAlarm, ""},
			},
			lines: []string{
				"alarm: lane 1: transmitter fault latched [SFF-8636 lower page 00h byte 4 bit 0]",
				"alarm: lane 1 Tx bias 16.00 mA above the module's high alarm threshold 15.00 mA",
			},
		},
		{
			name: "latched rx LOS with light back is a warning; latched alarm flag with value back in range is a warning",
			mutate: func(e *eeprom) {
				e.setBit(0, 3, 1) // lane 2 Rx LOS
				e.setBit(0, 9, 2) // lane 2 Rx power low alarm (byte 9 bits 3-0 = lane 2)
			},
			want: []verdictKey{
				{KindFlag, LevelWarning, RxPower, 2, "", FlagRxLOS},
				{KindFlag, LevelWarning, RxPower, 2, LowAlarm, FlagThreshold},
			},
			lines: []string{
				"warning: lane 2 Rx power: Rx loss of signal latched, light is back, now -0.97 dBm (0.8000 mW) [SFF-8636 lower page 00h byte 3 bit 1]",
				"warning: lane 2 Rx power: low alarm flag latched, back within the alarm thresholds, now -0.97 dBm (0.8000 mW) [SFF-8636 lower page 00h byte 9 bit 2]",
			},
		},
		{
			name: "Tx disabled lane is not judged",
			mutate: func(e *eeprom) {
				e.put(0, 86, 0x08)               // lane 4 Tx disabled
				e.put16(0, 50+2*3, rawMW(0))     // lane 4 Tx power 0
				e.put16(0, 42+2*3, rawMA(0))     // lane 4 bias 0
				e.put16(0, 34+2*3, rawMW(0.001)) // and Rx dark: still skipped (whole lane inactive)
			},
			want:  []verdictKey{{KindNotJudged, LevelNotJudged, "", 4, "", ""}},
			lines: []string{"not judged: lane 4: lane inactive: Tx disabled by the host (SFF-8636 byte 86)"},
		},
		{
			name:   "thresholds read as zero are not judged",
			mutate: func(e *eeprom) { e.putThresholds(3, 176, rawMW, 0, 0, 0, 0); e.put16(0, 34, 0) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, RxPower, 0, "", ""}},
			lines:  []string{"not judged: Rx power: thresholds read as zero (SFF-8636 page 03h bytes 176-183)"},
		},
		{
			name:   "data not ready",
			mutate: func(e *eeprom) { e.put(0, 2, 0x01); e.put16(0, 34, 0); e.setBit(0, 3, 0) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}},
			lines:  []string{"not judged: Data_Not_Ready is set"},
		},
	}
	runJudgeCases(t, sff8636Optical, cases)
}

func TestSFF8636DAC(t *testing.T) {
	e := sff8636DAC()
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.reads) != 2 {
		t.Errorf("a flat passive cable needs only lower and upper page 00h, read %v", e.reads)
	}
	if m.Media != MediaCopperPassive || m.CableLengthM != 3 || !m.FlatMemory || len(m.Monitors) != 0 || len(m.Flags) != 0 {
		t.Errorf("dac %+v", m)
	}
	vs := Judge(m)
	sameKeys(t, vs, []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
	if got := vs[0].String(); got != "not judged: passive copper cable: no optical monitors, lane flags not judged" {
		t.Errorf("%q", got)
	}
	if s := Summary(m); s != "QSFP28 passive copper 3m, Amphenol NDAAFT-F312, 4 lanes" {
		t.Errorf("summary %q", s)
	}
}

func TestSFF8636OptionalPageError(t *testing.T) {
	e := sff8636Optical()
	e.errs[pageKey{i2cModule, 3, 0, true}] = errors.New("netlink: Input/output error")
	e.setBit(0, 6, 7) // temperature high alarm latched
	m, err := Read(e)
	if err != nil {
		t.Fatalf("an optional page failing failed the module: %v", err)
	}
	if len(m.Unavailable) != 1 || m.Unavailable[0].Part != "page 03h (thresholds)" || !strings.Contains(m.Unavailable[0].Reason, "Input/output error") {
		t.Errorf("unavailable %+v", m.Unavailable)
	}
	if _, ok := m.Monitor(RxPower, 1); !ok {
		t.Error("monitors lost with the threshold page")
	}
	vs := Judge(m)
	// No thresholds: the latched high alarm is the module's own word and stays an alarm.
	if vs[0].Level != LevelAlarm || vs[0].Flag != FlagThreshold || vs[0].Quantity != Temperature || vs[0].Bound != HighAlarm {
		t.Errorf("first verdict %v", vs[0])
	}
	var notJudged []string
	for _, v := range vs[1:] {
		if v.Kind != KindNotJudged {
			t.Errorf("unexpected %v", v)
		}
		notJudged = append(notJudged, v.String())
	}
	if len(notJudged) != 5 || !strings.Contains(notJudged[0], "thresholds unavailable (page 03h (thresholds): netlink: Input/output error)") {
		t.Errorf("not judged:\n%s", strings.Join(notJudged, "\n"))
	}
}

func TestReadRequiredPages(t *testing.T) {
	for _, k := range []pageKey{{i2cModule, 0, 0, false}, {i2cModule, 0, 0, true}} {
		e := sff8636Optical()
		e.errs[k] = errors.New("netlink: Operation not supported")
		if _, err := Read(e); err == nil || !strings.Contains(err.Error(), "Operation not supported") {
			t.Errorf("%+v: err %v", k, err)
		}
	}
	short := shortReader{}
	if _, err := Read(short); !errors.Is(err, ErrShortPage) {
		t.Errorf("short page: %v", err)
	}
}

type shortReader struct{}

func (shortReader) ReadPage(_, _, _ uint8, _, _ uint32) ([]byte, error) { return []byte{0x11}, nil }

func TestVendorStringsSanitised(t *testing.T) {
	e := sff8636Optical()
	e.put(0, 148, 'A', 0x1b, '[', '2', 'J', 0x00, 0xff)
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.Vendor.Name != "A?[2J ? CORP" {
		t.Errorf("vendor name %q", m.Vendor.Name)
	}
}
