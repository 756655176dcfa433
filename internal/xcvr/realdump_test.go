package xcvr

import (
	"math"
	"testing"
)

// Module memories published by others (each file names its source), decoded as they are.

func TestRealCMISFlatDAC(t *testing.T) {
	e := loadDump(t, "testdata/cmis-qsfpdd-dac-amphenol.hex")
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.reads) != 2 {
		t.Errorf("flat memory: read %v", e.reads)
	}
	want := Vendor{Name: "Amphenol", OUI: "78:a7:14", PartNumber: "NDYYYF-0001", Revision: "D", Serial: "APF19170018HMH", DateCode: "190426"}
	if m.Vendor != want {
		t.Errorf("vendor %+v", m.Vendor)
	}
	if m.Spec != SpecCMIS || m.Revision != "3.0" || !m.FlatMemory || m.Media != MediaCopperPassive ||
		m.CableLengthM != 1 || m.ConnectorName != "no separable connector" || m.Lanes != 8 ||
		m.MediaDetail != "copper cable, unequalized" {
		t.Errorf("module %+v", m)
	}
	if m.Interface != "media interface 01h (passive copper), host interface 1dh, 8 host / 8 media lanes" {
		t.Errorf("interface %q", m.Interface)
	}
	sameKeys(t, Judge(m), []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
	if s := Summary(m); s != "QSFP-DD passive copper 1m, Amphenol NDYYYF-0001, 8 lanes" {
		t.Errorf("summary %q", s)
	}
}

func TestRealSFF8636AOCDeadTxLane(t *testing.T) {
	e := loadDump(t, "testdata/sff8636-qsfp28-aoc-finisar.hex")
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.Spec != SpecSFF8636 || m.Revision != "SFF-8636 Rev 2.8, 2.9 and 2.10" || m.Media != MediaAOC ||
		m.CableLengthM != 5 || m.Vendor.Name != "FINISAR CORP" || m.Vendor.OUI != "00:90:65" {
		t.Errorf("module %+v", m)
	}
	for _, c := range []struct {
		q    Quantity
		lane int
		want float64
	}{
		{Temperature, 0, 19.51953125}, {Voltage, 0, 3.2979}, {RxPower, 1, 1.3001}, {RxPower, 4, 1.2099},
		{TxBias, 1, 0}, {TxBias, 2, 7.998},
	} {
		mon, ok := m.Monitor(c.q, c.lane)
		if !ok || math.Abs(mon.Value-c.want) > 1e-9 {
			t.Errorf("%s lane %d = %v (%v), want %v", c.q, c.lane, mon.Value, ok, c.want)
		}
	}
	if !e.read(pageKey{i2cModule, 3, 0, true}) {
		t.Error("paged module: page 03h not tried")
	}
	var problems []verdictKey
	for _, v := range Judge(m) {
		if v.Level != LevelNotJudged {
			problems = append(problems, verdictKey{v.Kind, v.Level, v.Quantity, v.Lane, v.Bound, v.Flag})
		}
	}
	want := []verdictKey{
		{KindFlag, LevelWarning, "", 1, "", FlagTxLOS},
		{KindFlag, LevelWarning, "", 1, "", FlagTxLOL},
	}
	if len(problems) != len(want) || problems[0] != want[0] || problems[1] != want[1] {
		t.Errorf("verdicts %+v, want %+v", problems, want)
	}
}

func TestRealSFF8636DACWithFFLowerPage(t *testing.T) {
	e := loadDump(t, "testdata/sff8636-qsfp-dac-fs.hex")
	m, err := Read(e)
	if err != nil {
		t.Fatal(err)
	}
	if m.IdentifierName != "QSFP+" || m.Media != MediaCopperPassive || m.CableLengthM != 1 ||
		m.Vendor.Name != "FS" || m.Vendor.PartNumber != "Q28-PC01" || m.Vendor.OUI != "00:02:c9" ||
		m.Interface != "100GBASE-CR4, 25GBASE-CR CA-25G-L or 50GBASE-CR2 with RS FEC" {
		t.Errorf("module %+v", m)
	}
	if len(m.Flags) != 0 || len(m.Monitors) != 0 || len(e.reads) != 2 {
		t.Errorf("flags %v monitors %v reads %v", m.Flags, m.Monitors, e.reads)
	}
	sameKeys(t, Judge(m), []verdictKey{{KindNotJudged, LevelNotJudged, "", 0, "", ""}})
}
