package xcvr

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// cmisOptical builds a paged QSFP-DD 400GBASE-SR8 module (CMIS 5.2), ModuleReady, every lane's
// data path activated and every value inside its thresholds, at the CMIS 5.2 addresses the
// decoder cites.
func cmisOptical() *eeprom {
	e := newEEPROM()
	e.put(0, 0, 0x18)                    // QSFP-DD
	e.put(0, 1, 0x52)                    // CMIS 5.2
	e.put(0, 2, 0x00)                    // paged memory
	e.put(0, 3, 3<<1)                    // ModuleReady
	e.put16(0, 14, rawTemp(45.25))       // temperature
	e.put16(0, 16, rawVolts(3.29))       // supply voltage
	e.put(0, 85, 0x01)                   // MMF
	e.put(0, 86, 0x11, 0x10, 0x88, 0x01) // 400GAUI-8 host, 400GBASE-SR8 media, 8/8 lanes
	e.put(0, 90, 0xFF)                   // end of application list
	e.put(0, 128, 0x18)
	e.str(0, 129, 16, "NVIDIA")
	e.put(0, 145, 0x00, 0x02, 0xc9)
	e.str(0, 148, 16, "MMA1T00-VS")
	e.str(0, 164, 2, "A2")
	e.str(0, 166, 16, "MT2315FT01234")
	e.str(0, 182, 8, "230410")
	e.put(0, 203, 0x0D) // MPO 2x16
	e.put(0, 212, 0x00) // 850 nm VCSEL
	// Page 01h advertising.
	e.put(1, 151, 0x10)      // Rx power measured as average
	e.put(1, 157, 0x0F)      // Tx fault, LOS, LOL, adaptive EQ fault flags supported
	e.put(1, 158, 0x06)      // Rx LOS, LOL flags supported
	e.put(1, 159, 0x03)      // temperature and voltage monitors
	e.put(1, 160, 0x07|1<<3) // Tx bias, Tx power, Rx power monitors; bias multiplier 2
	// Page 02h thresholds.
	e.putThresholds(2, 128, rawTemp, 75, -5, 70, 0)
	e.putThresholds(2, 136, rawVolts, 3.63, 2.97, 3.465, 3.135)
	e.putThresholds(2, 176, rawMW, 3.0, 0.1, 2.5, 0.2)
	e.putThresholds(2, 184, func(ma float64) uint16 { return rawMA(ma / 2) }, 15, 2, 13, 3) // stored before the ×2 multiplier
	e.putThresholds(2, 192, rawMW, 3.0, 0.04, 2.5, 0.08)
	// Page 11h lane status and monitors.
	e.put(0x11, 128, 0x44, 0x44, 0x44, 0x44) // DPActivated on lanes 1-8
	for lane := 0; lane < 8; lane++ {
		e.put16(0x11, 154+2*lane, rawMW(0.9))
		e.put16(0x11, 170+2*lane, rawMA(7.0/2)) // 7 mA after the multiplier
		e.put16(0x11, 186+2*lane, rawMW(0.85))
	}
	return e
}

func TestCMISDecode(t *testing.T) {
	e := cmisOptical()
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecCMIS || m.Revision != "5.2" || m.IdentifierName != "QSFP-DD" || m.ModuleState != "ModuleReady" ||
		m.Lanes != 8 || m.Media != MediaOptical || m.ConnectorName != "MPO 2x16" || m.RxPowerOMA {
		t.Errorf("module %+v", m)
	}
	if m.Interface != "400GBASE-SR8 (MMF), host interface 11h, 8 host / 8 media lanes" {
		t.Errorf("interface %q", m.Interface)
	}
	want := Vendor{Name: "NVIDIA", OUI: "00:02:c9", PartNumber: "MMA1T00-VS", Revision: "A2", Serial: "MT2315FT01234", DateCode: "230410"}
	if m.Vendor != want {
		t.Errorf("vendor %+v", m.Vendor)
	}
	for _, k := range []pageKey{{i2cModule, 1, 0, true}, {i2cModule, 2, 0, true}, {i2cModule, 0x11, 0, true}} {
		if !e.read(k) {
			t.Errorf("page %02xh not read", k.page)
		}
	}
	bias, _ := m.Monitor(TxBias, 8)
	if math.Abs(bias.Value-7) > 1e-9 || bias.Source != "CMIS page 11h bytes 184-185" {
		t.Errorf("bias with multiplier %+v", bias)
	}
	if th := m.Thresholds[TxBias]; math.Abs(th.HighAlarm-15) > 1e-9 {
		t.Errorf("bias thresholds %+v", th)
	}
	if len(m.Monitors) != 2+3*8 {
		t.Errorf("%d monitors", len(m.Monitors))
	}
	if vs := Judge(m); len(vs) != 0 {
		t.Errorf("healthy module judged:\n%s", dump(vs))
	}
	if s := Summary(m); s != "QSFP-DD optical, NVIDIA MMA1T00-VS, 8 lanes, 45.2 °C" {
		t.Errorf("summary %q", s)
	}
}

func TestCMISJudge(t *testing.T) {
	cases := []judgeCase{
		{
			name: "latched Rx LOS on a dark lane and a Tx power low warning",
			mutate: func(e *eeprom) {
				e.put16(0x11, 186+2*4, 0)           // lane 5 Rx power 0
				e.setBit(0x11, 147, 4)              // lane 5 Rx LOS
				e.setBit(0x11, 150, 4)              // lane 5 Rx power low alarm flag
				e.put16(0x11, 154+2*1, rawMW(0.15)) // lane 2 Tx power between low alarm and low warning
				e.setBit(0x11, 142, 1)              // lane 2 Tx power low warning flag
			},
			want: []verdictKey{
				{KindThreshold, LevelAlarm, RxPower, 5, LowAlarm, ""},
				{KindFlag, LevelAlarm, RxPower, 5, "", FlagRxLOS},
				{KindThreshold, LevelWarning, TxPower, 2, LowWarning, ""},
			},
			lines: []string{
				"alarm: lane 5 Rx power 0 mW (no light) below the module's low alarm threshold -13.98 dBm (0.0400 mW) [CMIS page 11h bytes 194-195; thresholds CMIS page 02h bytes 192-199]",
				"alarm: lane 5 Rx power: Rx loss of signal latched, now 0 mW (no light) [CMIS page 11h byte 147 bit 4]",
				"warning: lane 2 Tx power -8.24 dBm (0.1500 mW) below the module's low warning threshold -6.99 dBm (0.2000 mW)",
			},
		},
		{
			name:   "module fault",
			mutate: func(e *eeprom) { e.put(0, 3, 5<<1); e.put(0, 41, 1) },
			want: []verdictKey{
				{KindState, LevelAlarm, "", 0, "", ""},
				{KindNotJudged, LevelNotJudged, "", 0, "", ""},
			},
			lines: []string{"alarm: module in ModuleFault state: TEC runaway", "not judged: module state ModuleFault (CMIS byte 3)"},
		},
		{
			name: "low power: lanes not judged, temperature still is",
			mutate: func(e *eeprom) {
				e.put(0, 3, 1<<1)
				e.put16(0, 14, rawTemp(80))
				e.put16(0x11, 186, 0)
				e.setBit(0x11, 147, 0)
			},
			want: []verdictKey{
				{KindThreshold, LevelAlarm, Temperature, 0, HighAlarm, ""},
				{KindNotJudged, LevelNotJudged, "", 0, "", ""},
			},
		},
		{
			name: "deactivated data path lanes are not judged",
			mutate: func(e *eeprom) {
				e.put(0x11, 130, 0x11, 0x11) // lanes 5-8 DPDeactivated
				for lane := 4; lane < 8; lane++ {
					e.put16(0x11, 186+2*lane, 0)
					e.put16(0x11, 154+2*lane, 0)
				}
				e.put(0x11, 147, 0xF0)
			},
			want: []verdictKey{
				{KindNotJudged, LevelNotJudged, "", 5, "", ""}, {KindNotJudged, LevelNotJudged, "", 6, "", ""},
				{KindNotJudged, LevelNotJudged, "", 7, "", ""}, {KindNotJudged, LevelNotJudged, "", 8, "", ""},
			},
		},
		{
			name:   "firmware error flag",
			mutate: func(e *eeprom) { e.setBit(0, 8, 1) },
			want:   []verdictKey{{KindFlag, LevelAlarm, "", 0, "", FlagFirmware}},
			lines:  []string{"alarm: module: the module reports a firmware error [CMIS lower page byte 8 bit 1 (module firmware error)]"},
		},
		{
			name:   "unadvertised Rx LOS flag is ignored",
			mutate: func(e *eeprom) { e.put(1, 158, 0x00); e.setBit(0x11, 147, 0) },
			want:   nil,
		},
	}
	runJudgeCases(t, cmisOptical, cases)
}

func TestCMISFlatMemory(t *testing.T) {
	e := newEEPROM()
	e.put(0, 0, 0x18)
	e.put(0, 1, 0x40)
	e.put(0, 2, 0x80) // flat
	e.put(0, 85, 0x03)
	e.put(0, 86, 0x1d, 0x01, 0x88, 0x01)
	e.str(0, 129, 16, "Amphenol")
	e.put(0, 202, 0x40|2) // 2 m
	e.put(0, 203, 0x23)
	e.put(0, 212, 0x0A)
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.reads) != 2 {
		t.Errorf("flat memory module: read %v", e.reads)
	}
	if !m.FlatMemory || m.Media != MediaCopperPassive || m.CableLengthM != 2 || m.Lanes != 8 || m.Revision != "4.0" {
		t.Errorf("module %+v", m)
	}
	sameKeys(t, Judge(m), []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
}

func TestCMISOptionalPageErrors(t *testing.T) {
	cases := []struct {
		page     uint8
		part     string
		monitors int
		judged   []verdictKey
	}{
		{0x11, "page 11h (lane flags and monitors)", 2, []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}}},
		{0x02, "page 02h (thresholds)", 2 + 3*8, []verdictKey{
			{KindNotJudged, LevelNotJudged, Temperature, 0, "", ""}, {KindNotJudged, LevelNotJudged, Voltage, 0, "", ""},
			{KindNotJudged, LevelNotJudged, RxPower, 0, "", ""}, {KindNotJudged, LevelNotJudged, TxPower, 0, "", ""},
			{KindNotJudged, LevelNotJudged, TxBias, 0, "", ""},
		}},
		{0x01, "page 01h (advertising; lane monitors and flags need it)", 2, []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}}},
	}
	for _, c := range cases {
		e := cmisOptical()
		e.errs[pageKey{i2cModule, c.page, 0, true}] = errors.New("netlink: Input/output error")
		m, err := Read(e)
		if err != nil {
			t.Fatalf("page %02xh: %v", c.page, err)
		}
		if len(m.Unavailable) == 0 || m.Unavailable[0].Part != c.part {
			t.Errorf("page %02xh: unavailable %+v", c.page, m.Unavailable)
		}
		if len(m.Monitors) != c.monitors {
			t.Errorf("page %02xh: %d monitors", c.page, len(m.Monitors))
		}
		vs := Judge(m)
		sameKeys(t, vs, c.judged)
		if c.page != 0x02 && !strings.Contains(vs[0].String(), "Input/output error") {
			t.Errorf("page %02xh: %q does not say why", c.page, vs[0].String())
		}
	}
}

func TestCMISAdvertisement(t *testing.T) {
	e := cmisOptical()
	e.put(1, 160, 0x05|2<<3) // Tx bias and Rx power monitors only; bias multiplier 4
	e.put16(0x11, 170, rawMA(2.5))
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Monitor(TxPower, 1); ok {
		t.Error("unadvertised Tx power monitor decoded")
	}
	if b, _ := m.Monitor(TxBias, 1); math.Abs(b.Value-10) > 1e-9 {
		t.Errorf("bias with multiplier 4 = %v, want 10 mA", b.Value)
	}
	vs := Judge(m)
	sameKeys(t, vs, []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
	if !strings.Contains(vs[0].String(), "Tx power monitors: not supported by the module (CMIS page 01h byte 160 bit 1 clear)") {
		t.Errorf("%q", vs[0].String())
	}
	if Worst(vs) != LevelNotJudged || Worst(nil) != LevelNotJudged {
		t.Error("worst of nothing judged")
	}
	e.put16(0x11, 170, rawMA(32/4.0)) // 32 mA > 30 mA: the thresholds scale by 4 as well
	m, _ = Read(e)
	if w := Worst(Judge(m)); w != LevelAlarm {
		t.Errorf("worst %v", w)
	}
}
