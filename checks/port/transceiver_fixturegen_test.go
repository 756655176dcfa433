package port_test

// The synthetic fixtures port-xcvr-alarm (a QSFP28 optical module on a ConnectX-6 Dx port losing
// light on one lane and running hot) and port-xcvr-ok (a QSFP56 optical module within all its
// thresholds, and a passive copper cable on a second port) are generated here, with port-xcvr-cmis
// and port-xcvr-eperm (transceiver_cmis_fixturegen_test.go): module memory laid out at the
// SFF-8636 or CMIS addresses internal/xcvr decodes, served by the ethtool netlink model of
// internal/ethtoolnl/ethtooltest and kept as the replies to exactly the MODULE_EEPROM_GET reads
// the transceiver decoder makes. The normal test run checks that the committed snapshot.txtar
// files are what this generator writes; `make regen` (which `make golden` runs) regenerates them
// with every other generated fixture and then the goldens, or alone:
//
//	go test ./checks/port -run TestTransceiverFixtures -gen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/xcvr"
)

// sff8636 is the module memory of a QSFP28/QSFP56 module: the lower page (bytes 0-127), upper
// page 00h and upper page 03h (bytes 128-255 of their page views).
type sff8636 struct{ lower, up0, up3 [256]byte }

func (m *sff8636) put16(p *[256]byte, addr int, v uint16) { p[addr], p[addr+1] = byte(v>>8), byte(v) }

func (m *sff8636) str(addr, n int, s string) {
	copy(m.up0[addr:addr+n], fmt.Sprintf("%-*s", n, s))
}

// mw is an optical power in SFF-8636's 0.1 µW unit (Table 6-8), from dBm.
func mw(dbm float64) uint16 { return uint16(math.Round(math.Pow(10, dbm/10) * 10000)) }

// tempRaw is a temperature in SFF-8636's signed 1/256 °C (Table 6-7).
func tempRaw(c float64) uint16 { return uint16(int16(c * 256)) }

// thresholds writes high alarm, low alarm, high warning, low warning (SFF-8636 page 03h order).
func (m *sff8636) thresholds(addr int, ha, la, hw, lw uint16) {
	for i, v := range []uint16{ha, la, hw, lw} {
		m.put16(&m.up3, addr+2*i, v)
	}
}

// checkCodes sets CC_BASE (byte 191, low 8 bits of the sum of bytes 128-190) and CC_EXT (byte 223,
// over 192-222), SFF-8636 Rev 2.10a Table 6-15.
func (m *sff8636) checkCodes() {
	sum := func(from, to int) (s byte) {
		for _, b := range m.up0[from : to+1] {
			s += b
		}
		return s
	}
	m.up0[191] = sum(128, 190)
	m.up0[223] = sum(192, 222)
}

// view is the Model's page views: page 0 (lower + upper 00h) and, unless flat, page 3.
func (m *sff8636) view(flat bool) map[uint16][]byte {
	p0 := append(append([]byte(nil), m.lower[:128]...), m.up0[128:]...)
	v := map[uint16][]byte{ethtooltest.PageKey(0x50, 0): p0}
	if !flat {
		v[ethtooltest.PageKey(0x50, 3)] = append([]byte(nil), m.up3[:]...)
	}
	return v
}

type opticalSpec struct {
	vendor, part, serial, date string
	compliance                 byte // SFF-8024 Table 4-4 extended compliance (byte 192)
	rateUnits                  byte // byte 222, 250 Mb/s units
	tempC, volts               float64
	rxDBm, txDBm               [4]float64
	biasMA                     float64
	rxThr, txThr               [4]float64 // dBm: high alarm, low alarm, high warning, low warning
	flags                      map[int]byte
}

// optical lays out a paged SFF-8636 Rev 2.10a optical module (850 nm VCSEL, MPO connector).
func optical(s opticalSpec) *sff8636 {
	m := &sff8636{}
	m.lower[0] = 0x11 // SFF-8024 Table 4-1: QSFP28 or later (QSFP56 too)
	m.lower[1] = 0x08 // Table 6-3: SFF-8636 Rev 2.8-2.10
	m.lower[2] = 0x00 // Table 6-2: paged memory, Data_Not_Ready clear
	for a, v := range s.flags {
		m.lower[a] = v
	}
	m.put16(&m.lower, 22, tempRaw(s.tempC))                // Table 6-7: 1/256 °C
	m.put16(&m.lower, 26, uint16(math.Round(s.volts*1e4))) // Table 6-7: 100 µV
	for l := 0; l < 4; l++ {
		m.put16(&m.lower, 34+2*l, mw(s.rxDBm[l]))                      // Table 6-8 Rx power
		m.put16(&m.lower, 42+2*l, uint16(math.Round(s.biasMA*1000/2))) // Table 6-8 Tx bias, 2 µA
		m.put16(&m.lower, 50+2*l, mw(s.txDBm[l]))                      // Table 6-8 Tx power
	}
	m.up0[128] = 0x11
	m.up0[130] = 0x0C // SFF-8024 Table 4-3: MPO 1x12
	m.up0[131] = 0x80 // extended compliance in byte 192
	m.up0[140] = 0xFF // nominal rate in byte 222
	m.up0[147] = 0x00 // byte 147 "Device Technology" 0h: 850 nm VCSEL
	m.str(148, 16, s.vendor)
	m.str(168, 16, s.part)
	m.str(184, 2, "A0")
	m.up0[192] = s.compliance
	m.str(196, 16, s.serial)
	m.str(212, 8, s.date)
	m.up0[220] = 0x0C // byte 220 "Diagnostic Monitoring Type": average Rx power, Tx power monitored
	m.up0[222] = s.rateUnits
	m.checkCodes()
	// Page 03h "Free Side Device Thresholds" and "Channel Thresholds".
	m.thresholds(128, tempRaw(75), tempRaw(-5), tempRaw(70), tempRaw(0))
	m.thresholds(144, 36300, 29700, 34650, 31350)
	m.thresholds(176, mw(s.rxThr[0]), mw(s.rxThr[1]), mw(s.rxThr[2]), mw(s.rxThr[3]))
	m.thresholds(184, 7500, 1000, 6000, 1500) // 15, 2, 12, 3 mA
	m.thresholds(192, mw(s.txThr[0]), mw(s.txThr[1]), mw(s.txThr[2]), mw(s.txThr[3]))
	return m
}

// passiveDAC lays out a flat-memory QSFP56 passive copper cable.
func passiveDAC() *sff8636 {
	m := &sff8636{}
	m.lower[0] = 0x11
	m.lower[1] = 0x08
	m.lower[2] = 0x04 // Table 6-2: Flat_mem
	m.up0[128] = 0x11
	m.up0[130] = 0x23 // SFF-8024 Table 4-3: no separable connector
	m.up0[131] = 0x80
	m.up0[146] = 2    // cable length 2 m
	m.up0[147] = 0xA0 // byte 147 "Device Technology" Ah: copper cable, unequalized
	m.str(148, 16, "EXAMPLE CABLES")
	m.str(168, 16, "DAC-200G-CR4-2M")
	m.str(184, 2, "A")
	m.up0[192] = 0x40 // SFF-8024 Table 4-4: 50GBASE-CR, 100GBASE-CR2 or 200GBASE-CR4
	m.str(196, 16, "SYNDAC0002")
	m.str(212, 8, "250301")
	m.checkCodes()
	return m
}

// recordingConn keeps the replies to the requests a reader makes.
type recordingConn struct {
	host.NetlinkConn
	t     *testing.T
	files map[string]string
}

func (c *recordingConn) Exchange(req host.Request) ([]byte, error) {
	b, err := c.NetlinkConn.Exchange(req)
	var errno syscall.Errno
	switch {
	case errors.As(err, &errno):
		// A kernel error is kept as netlinkraw.Recorder keeps it: <key>.err, the decimal errno.
		c.files["ethtool-netlink/"+req.Key()+".err"] = strconv.Itoa(int(errno))
		return nil, err
	case err != nil:
		c.t.Fatalf("fixture model failed %s: %v", req.Key(), err)
	}
	c.files["ethtool-netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	return b, nil
}

type xcvrScenario struct {
	name, base, title, description, values string
	netdevs                                []ethtooltest.Netdev
	// edit changes the base fixture's files (changed says what, and cites it); refused is the
	// errno the module EEPROM read is refused with, if it is.
	edit    func(t *testing.T, files map[string]string)
	changed string
	refused syscall.Errno
	sources []string
}

func xcvrScenarios() []xcvrScenario {
	alarm := optical(opticalSpec{vendor: "EXAMPLE OPTICS", part: "QSFP28-SR4-EX", serial: "SYNXCVR0001", date: "250115",
		compliance: 0x02, rateUnits: 103, tempC: 72.5, volts: 3.30,
		rxDBm: [4]float64{-1.0, -17.0, -1.2, -0.9}, txDBm: [4]float64{-0.5, -0.6, -0.4, -0.5}, biasMA: 7.5,
		rxThr: [4]float64{3.4, -13.3, 2.4, -10.3}, txThr: [4]float64{3.4, -10.4, 2.4, -8.4},
		flags: map[int]byte{6: 0x20, 9: 0x05}})
	ok := optical(opticalSpec{vendor: "EXAMPLE OPTICS", part: "QSFP56-SR4-EX", serial: "SYNXCVR0002", date: "250220",
		compliance: 0x41, rateUnits: 212, tempC: 45.0, volts: 3.29,
		rxDBm: [4]float64{-2.0, -2.1, -1.9, -2.0}, txDBm: [4]float64{-1.0, -1.1, -0.9, -1.0}, biasMA: 8.0,
		rxThr: [4]float64{5.0, -10.9, 4.0, -7.9}, txThr: [4]float64{5.0, -8.5, 4.0, -6.5}})
	return []xcvrScenario{cmisScenario(), epermScenario(),
		{name: "port-xcvr-alarm", base: "fw-inbox-cx6dx", title: "a QSFP28 optical module losing light on one lane and running hot",
			sources:     sff8636Sources,
			description: "Synthetic: a ConnectX-6 Dx RoCE port whose QSFP28 100GBASE-SR4 module receives -17 dBm on lane 2, below its low alarm threshold, at 72.5 °C, above its high warning threshold",
			netdevs:     []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROM: alarm.view(false)}},
			values: `- module memory, SNIA SFF-8636 Rev 2.10a (tables cited per value) and SNIA SFF-8024 codes:
- ens1f0np0: QSFP28 (SFF-8024 Table 4-1 identifier 11h), SFF-8636 Rev 2.10a memory map
  (byte 1 08h, Table 6-3), paged (byte 2 bit 2 clear), data ready (bit 0 clear); upper page 00h:
  connector 0Ch MPO 1x12 (SFF-8024 Table 4-3), byte 131 bit 7 with byte 192 02h 100GBASE-SR4
  (SFF-8024 Table 4-4), nominal rate 103 x 250 Mb/s (bytes 140 FFh, 222), 850 nm VCSEL (byte 147
  "Device Technology" 0h), average Rx power and Tx power monitored (byte 220 "Diagnostic
  Monitoring Type" 0Ch); vendor, part and
  serial made up ("EXAMPLE OPTICS", "QSFP28-SR4-EX", "SYNXCVR0001"); check codes CC_BASE/CC_EXT
  computed (Table 6-15).
- monitors (lower page Tables 6-7 and 6-8): temperature 72.5 °C, supply 3.30 V, Rx power lanes
  1-4 -1.0, -17.0, -1.2, -0.9 dBm, Tx power -0.5, -0.6, -0.4, -0.5 dBm, bias 7.5 mA.
- thresholds (page 03h, made up): temperature 75/-5/70/0 °C (high/low alarm, high/low warning);
  supply 3.63/2.97/3.465/3.135 V (3.3 V +-10% and +-5%); Rx power +3.4/-13.3/+2.4/-10.3 dBm and
  Tx power +3.4/-10.4/+2.4/-8.4 dBm (warnings at the 100GBASE-SR4 receive and launch power
  ranges per lane of IEEE Std 802.3 Clause 95.7.1 and 95.7.2, alarms 1-3 dB beyond); bias
  15/2/12/3 mA.
- latched flags: byte 6 bit 5 (temperature high warning, Table 6-5), byte 9 bits 2 and 0 (lane 2
  Rx power low alarm and low warning, Table 6-6).
Expected: port.transceiver critical (lane 2 Rx power below the low alarm threshold) with the
temperature above its high warning threshold as a warning in the same finding; everything else
as in fw-inbox-cx6dx.`},
		{name: "port-xcvr-ok", base: "port-roce", title: "a QSFP56 optical module within its thresholds and a passive copper cable",
			sources:     sff8636Sources,
			description: "Synthetic: the two ConnectX-6 Dx ports of port-roce with a QSFP56 200GBASE-SR4 module within all its thresholds on ens1f0np0 and a passive QSFP56 copper cable on ens2f0np0",
			netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROM: ok.view(false)},
				{Ifindex: 5, Ifname: "ens2f0np0", EEPROM: passiveDAC().view(true)}},
			values: `- module memory, SNIA SFF-8636 Rev 2.10a (tables cited per value) and SNIA SFF-8024 codes:
- ens1f0np0: QSFP56 (SFF-8024 Table 4-1 identifier 11h, QSFP28 or later), SFF-8636 Rev 2.10a
  as for port-xcvr-alarm but byte 192 41h 50GBASE-SR, 100GBASE-SR2 or 200GBASE-SR4 (SFF-8024
  Table 4-4) and nominal rate 212 x 250 Mb/s (53 Gb/s PAM4 lanes); made-up identity
  "EXAMPLE OPTICS", "QSFP56-SR4-EX", "SYNXCVR0002"; temperature 45.0 °C, supply 3.29 V, Rx power
  -2.0, -2.1, -1.9, -2.0 dBm, Tx power -1.0, -1.1, -0.9, -1.0 dBm, bias 8.0 mA; thresholds made up:
  Rx +5.0/-10.9/+4.0/-7.9 dBm and Tx +5.0/-8.5/+4.0/-6.5 dBm (warnings at the 200GBASE-SR4
  ranges of IEEE Std 802.3 Clause 138.7.1 and 138.7.2), temperature, supply and bias as in
  port-xcvr-alarm; no flag set.
- ens2f0np0: a passive copper QSFP56 cable: flat memory (byte 2 bit 2), no separable connector
  (23h), copper unequalized (byte 147 "Device Technology" Ah), 2 m (byte 146), byte 192 40h
  200GBASE-CR4; made-up identity "EXAMPLE CABLES", "DAC-200G-CR4-2M". Its port is down
  (port-roce's mlx5_1/1): a passive cable is read all the same.
Expected: port.transceiver ok on mlx5_0/1 and info on mlx5_1/1 (a passive cable has no
diagnostics); everything else as in port-roce.`},
	}
}

// xcvrComment follows checktest.GeneratedBy's opening.
const xcvrComment = `No pluggable module exists in the lab: %s.
Built on the files of fixtures/sysfs/%s, whose archive comment cites each of them; %sadded here:
- ethtool-netlink/: generic netlink replies encoded by internal/ethtoolnl/ethtooltest as
  net/ethtool/eeprom.c lays them out, for exactly the reads the transceiver decoder makes; ids
  from include/uapi/linux/ethtool_netlink.h and genetlink.h: family "ethtool" (resolved with
  CTRL_CMD_GETFAMILY=3 on nlctrl GENL_ID_CTRL 0x10, id 0x14 here), ETHTOOL_MSG_MODULE_EEPROM_GET=31
  (reply 32) with _OFFSET, _LENGTH (128: one half page), _PAGE, _BANK 0, _I2C_ADDRESS 0x50 and
  ETHTOOL_A_MODULE_EEPROM_DATA in the reply. FEC statistics are not part of this scenario (not
  recorded).
%s
`

var sff8636Sources = []string{"SNIA SFF-8636 Rev 2.10a", "SNIA SFF-8024", "IEEE Std 802.3 Clause 95 and 138"}

func xcvrFixture(t *testing.T, s xcvrScenario) []byte {
	files := checktest.FixtureFiles(t, s.base)
	for name := range files {
		if strings.HasPrefix(name, "ethtool-netlink/") {
			delete(files, name)
		}
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(files["meta.json"]), &meta); err != nil {
		t.Fatalf("%s meta.json: %v", s.base, err)
	}
	changed := ""
	if s.edit != nil {
		s.edit(t, files)
		changed = "changed here:\n" + s.changed + "\n"
	}
	sources := append([]string{"fixtures/sysfs/" + s.base, "include/uapi/linux/ethtool_netlink.h", "net/ethtool/eeprom.c"}, s.sources...)
	m := checktest.Meta(s.description, append(sources, checktest.Generator(t)))
	// What the base's recording could not read stays unreadable here.
	if u, ok := meta["unreadable"]; ok {
		m["unreadable"] = u
	}
	files["meta.json"] = checktest.JSON(m)
	rec := &recordingConn{NetlinkConn: ethtooltest.Model{Family: ethtoolFamily, Netdevs: s.netdevs}.Conn(), t: t, files: files}
	c := ethtoolnl.NewClient(rec)
	names := make([]string, 0, len(s.netdevs))
	for _, n := range s.netdevs {
		names = append(names, n.Ifname)
	}
	sort.Strings(names)
	for _, nd := range names {
		_, err := xcvr.Read(c.PageReader(nd))
		if en, _ := ethtoolnl.Errno(err); s.refused != 0 && en != s.refused || s.refused == 0 && err != nil {
			t.Fatalf("%s %s: %v", s.name, nd, err)
		}
	}
	return checktest.Txtar(checktest.GeneratedBy(t, s.name)+fmt.Sprintf(xcvrComment, s.title, s.base, changed, s.values), files)
}

func TestTransceiverFixtures(t *testing.T) {
	for _, s := range xcvrScenarios() {
		checktest.Generated(t, s.name, xcvrFixture(t, s))
	}
}
