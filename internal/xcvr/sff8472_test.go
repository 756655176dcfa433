package xcvr

import (
	"encoding/binary"
	"math"
	"testing"
)

// a2 returns the diagnostics page (A2h, i2c 0x51) of an eeprom, creating it.
func (e *eeprom) a2() []byte {
	k := pageKey{i2cDiag, 0, 0, false}
	if e.pages[k] == nil {
		e.pages[k] = make([]byte, pageSize)
	}
	return e.pages[k]
}

func (e *eeprom) a2put16(addr int, v uint16) { binary.BigEndian.PutUint16(e.a2()[addr:], v) }

func (e *eeprom) a2thresholds(addr int, raw func(float64) uint16, ha, la, hw, lw float64) {
	for i, v := range []float64{ha, la, hw, lw} {
		e.a2put16(addr+2*i, raw(v))
	}
}

// sff8472Optical builds an internally calibrated 10GBASE-SR SFP+ with diagnostics, alarm and
// warning flags, soft Rx LOS and Tx fault, every value inside its thresholds, at the SFF-8472
// Rev 12.4 addresses the decoder cites.
func sff8472Optical() *eeprom {
	e := newEEPROM()
	e.put(0, 0, 0x03)
	e.put(0, 2, 0x07) // LC
	e.put(0, 3, 0x10) // 10GBASE-SR
	e.put(0, 12, 0x67)
	e.str(0, 20, 16, "FINISAR CORP.")
	e.put(0, 37, 0x00, 0x90, 0x65)
	e.str(0, 40, 16, "FTLX8574D3BCL")
	e.str(0, 56, 4, "A")
	e.put16(0, 60, 850)
	e.str(0, 68, 16, "AQA0TZ1")
	e.str(0, 84, 8, "150214")
	e.put(0, 92, 0x68) // DDM, internally calibrated, average Rx power
	e.put(0, 93, 0xF0) // alarm/warning flags, soft Tx disable, Tx fault, Rx LOS
	e.put(0, 94, 0x08)
	e.a2thresholds(0, rawTemp, 78, -13, 73, -8)
	e.a2thresholds(8, rawVolts, 3.7, 2.9, 3.6, 3.0)
	e.a2thresholds(16, rawMA, 13, 4, 12, 5)
	e.a2thresholds(24, rawMW, 1.0, 0.15, 0.8, 0.19)
	e.a2thresholds(32, rawMW, 1.26, 0.02, 0.8, 0.04)
	e.a2put16(96, rawTemp(36.0))
	e.a2put16(98, rawVolts(3.31))
	e.a2put16(100, rawMA(7.8))
	e.a2put16(102, rawMW(0.55))
	e.a2put16(104, rawMW(0.5))
	return e
}

func TestSFF8472Decode(t *testing.T) {
	e := sff8472Optical()
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecSFF8472 || m.IdentifierName != "SFP/SFP+/SFP28" || m.Revision != "SFF-8472 Rev 12.3 or later" ||
		m.Media != MediaOptical || m.MediaDetail != "850 nm" || m.Interface != "10GBASE-SR" || m.Lanes != 1 ||
		m.NominalBitRateMbps != 10300 || m.ConnectorName != "LC" {
		t.Errorf("module %+v", m)
	}
	want := Vendor{Name: "FINISAR CORP.", OUI: "00:90:65", PartNumber: "FTLX8574D3BCL", Revision: "A", Serial: "AQA0TZ1", DateCode: "150214"}
	if m.Vendor != want {
		t.Errorf("vendor %+v", m.Vendor)
	}
	if !e.read(pageKey{i2cDiag, 0, 0, false}) {
		t.Error("A2h not read")
	}
	if rx, _ := m.Monitor(RxPower, 1); math.Abs(rx.Value-0.5) > 1e-9 || rx.Source != "SFF-8472 A2h bytes 104-105" {
		t.Errorf("rx %+v", rx)
	}
	if vs := Judge(m); len(vs) != 0 {
		t.Errorf("healthy module judged:\n%s", dump(vs))
	}
	if s := Summary(m); s != "SFP/SFP+/SFP28 optical, FINISAR CORP. FTLX8574D3BCL, 1 lane, 36.0 °C" {
		t.Errorf("summary %q", s)
	}
}

func TestSFF8472Judge(t *testing.T) {
	cases := []judgeCase{
		{
			name: "dark receiver with LOS and alarm flag",
			mutate: func(e *eeprom) {
				e.a2put16(104, rawMW(0.001))
				e.a2()[110] |= 0x02 // Rx_LOS
				e.a2()[113] |= 0x40 // Rx power low alarm
			},
			want: []verdictKey{
				{KindThreshold, LevelAlarm, RxPower, 1, LowAlarm, ""},
				{KindFlag, LevelAlarm, RxPower, 1, "", FlagRxLOS},
			},
			lines: []string{
				"alarm: lane 1 Rx power -30.00 dBm (0.0010 mW) below the module's low alarm threshold -16.99 dBm (0.0200 mW) [SFF-8472 A2h bytes 104-105; thresholds SFF-8472 A2h bytes 32-39]",
				"alarm: lane 1 Rx power: Rx loss of signal set, now -30.00 dBm",
			},
		},
		{
			name:   "Rx LOS state not implemented is ignored",
			mutate: func(e *eeprom) { e.put(0, 93, 0x80); e.a2()[110] |= 0x02 },
		},
		{
			name:   "Tx disabled",
			mutate: func(e *eeprom) { e.a2()[110] |= 0x80; e.a2put16(102, 0) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, "", 1, "", ""}},
		},
		{
			name:   "data not ready",
			mutate: func(e *eeprom) { e.a2()[110] |= 0x01; e.a2put16(104, 0) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}},
			lines:  []string{"not judged: Data_Ready_Bar is set"},
		},
		{
			name:   "no diagnostics",
			mutate: func(e *eeprom) { e.put(0, 92, 0x00) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}},
			lines:  []string{"not judged: address A2h (diagnostics): not implemented (SFF-8472 A0h byte 92 bit 6 clear)"},
		},
		{
			name:   "A2h unreadable",
			mutate: func(e *eeprom) { delete(e.pages, pageKey{i2cDiag, 0, 0, false}) },
			want:   []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}},
			lines:  []string{"not judged: address A2h (diagnostics and thresholds): page not implemented by the module"},
		},
	}
	runJudgeCases(t, sff8472Optical, cases)
}

func TestSFF8472ExternalCalibration(t *testing.T) {
	e := sff8472Optical()
	e.put(0, 92, 0x58) // DDM, externally calibrated, average power
	a2 := e.a2()
	// Rx power = 2*raw + 100 (in 0.1 uW): coefficients Rx_PWR(4..0) = 0, 0, 0, 2, 100.
	for i, c := range []float32{0, 0, 0, 2, 100} {
		binary.BigEndian.PutUint32(a2[56+4*i:], math.Float32bits(c))
	}
	binary.BigEndian.PutUint16(a2[84:], 512)            // temperature slope 2.0 (8.8 fixed point)
	binary.BigEndian.PutUint16(a2[86:], uint16(0xFF00)) // offset -256 = -1 °C
	binary.BigEndian.PutUint16(a2[88:], 256)            // voltage slope 1
	binary.BigEndian.PutUint16(a2[76:], 256)            // bias slope 1
	binary.BigEndian.PutUint16(a2[80:], 256)            // Tx power slope 1
	e.a2put16(96, rawTemp(-10))
	e.a2put16(104, 2450) // 2*2450+100 = 5000 -> 0.5 mW
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	temp, _ := m.Monitor(Temperature, 0)
	rx, _ := m.Monitor(RxPower, 1)
	if math.Abs(temp.Value-(-21)) > 1e-9 || math.Abs(rx.Value-0.5) > 1e-9 {
		t.Errorf("temperature %v (want -21), rx %v (want 0.5)", temp.Value, rx.Value)
	}
}

func TestRealSFF8472NoDiagnostics(t *testing.T) {
	e := loadDump(t, "testdata/sff8472-sfp-gpon-odi.hex")
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	want := Vendor{Name: "ODI", OUI: "00:00:00", PartNumber: "DFP-34X-2C2", Serial: "XPON23040711", DateCode: "230504"}
	if m.Vendor != want {
		t.Errorf("vendor %+v", m.Vendor)
	}
	if m.Spec != SpecSFF8472 || m.ConnectorName != "SC" || m.Media != MediaOptical || m.MediaDetail != "1310 nm" ||
		m.NominalBitRateMbps != 1300 || m.Revision != "diagnostics not included" {
		t.Errorf("module %+v", m)
	}
	if e.read(pageKey{i2cDiag, 0, 0, false}) {
		t.Error("A2h read although byte 92 says there are no diagnostics")
	}
	sameKeys(t, Judge(m), []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
}
