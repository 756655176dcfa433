package port_test

// Two more scenarios of TestTransceiverFixtures (transceiver_fixturegen_test.go):
// port-xcvr-cmis, a CMIS 5.2 OSFP module on a ConnectX-7 400 GbE port, and port-xcvr-eperm, a
// snapshot whose ordinary recording user was refused the module EEPROM.

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
)

// cmisModule is the memory of a paged CMIS module: the lower page (bytes 0-127) and upper pages
// 00h, 01h, 02h and 11h of bank 0 (bytes 128-255 of their page views).
type cmisModule struct{ lower, up0, up1, up2, up11 [256]byte }

func put16(p *[256]byte, addr int, v uint16) { p[addr], p[addr+1] = byte(v>>8), byte(v) }

func (m *cmisModule) str(addr, n int, s string) { copy(m.up0[addr:addr+n], fmt.Sprintf("%-*s", n, s)) }

// cmisThresholds writes high alarm, low alarm, high warning, low warning at addr of page 02h.
func (m *cmisModule) cmisThresholds(addr int, ha, la, hw, lw uint16) {
	for i, v := range []uint16{ha, la, hw, lw} {
		put16(&m.up2, addr+2*i, v)
	}
}

// view is the Model's page views: page 0 (lower + upper 00h), then pages 01h, 02h and 11h.
func (m *cmisModule) view() map[uint16][]byte {
	p0 := append(append([]byte(nil), m.lower[:128]...), m.up0[128:]...)
	return map[uint16][]byte{
		ethtooltest.PageKey(0x50, 0): p0, ethtooltest.PageKey(0x50, 1): append([]byte(nil), m.up1[:]...),
		ethtooltest.PageKey(0x50, 2): append([]byte(nil), m.up2[:]...), ethtooltest.PageKey(0x50, 0x11): append([]byte(nil), m.up11[:]...),
	}
}

// mA is a Tx bias current in CMIS's 2 µA unit with multiplier 1 (page 01h byte 160 bits 4-3 00b).
func mA(v float64) uint16 { return uint16(math.Round(v * 500)) }

// cmisOSFP lays out the port-xcvr-cmis module; its comment (cmisValues) cites every byte.
func cmisOSFP() *cmisModule {
	m := &cmisModule{}
	m.lower[0] = 0x19 // OSFP
	m.lower[1] = 0x52 // CMIS 5.2
	m.lower[2] = 0x00 // paged memory
	m.lower[3] = 0x06 // ModuleReady, interrupt asserted
	m.lower[4] = 0x01 // a flag is set on bank 0 page 11h
	put16(&m.lower, 14, tempRaw(48))
	put16(&m.lower, 16, 33000) // 3.30 V in 100 µV
	m.lower[85] = 0x01         // MMF
	m.lower[86], m.lower[87], m.lower[88], m.lower[89] = 0x4F, 0x11, 0x44, 0x01
	m.lower[90] = 0xFF // no second application
	m.up0[128] = 0x19
	m.str(129, 16, "EXAMPLE OPTICS")
	m.str(148, 16, "OSFP-400G-SR4-EX")
	m.str(164, 2, "A1")
	m.str(166, 16, "SYNXCVR0003")
	m.str(182, 8, "250301")
	m.up0[203] = 0x0C // MPO 1x12
	m.up0[212] = 0x00 // 850 nm VCSEL
	var sum byte
	for _, b := range m.up0[128:222] {
		sum += b
	}
	m.up0[222] = sum
	m.up1[151] = 0x10 // Rx power measured as average
	m.up1[157] = 0x0F // Tx fault, LOS, CDR LOL, adaptive EQ fault flags supported
	m.up1[158] = 0x06 // Rx LOS, CDR LOL flags supported
	m.up1[159] = 0x03 // temperature and supply voltage monitors
	m.up1[160] = 0x07 // Tx bias, Tx power, Rx power monitors; bias multiplier 1
	m.cmisThresholds(128, tempRaw(75), tempRaw(-5), tempRaw(70), tempRaw(0))
	m.cmisThresholds(136, 36300, 29700, 34650, 31350)
	m.cmisThresholds(176, mw(4.0), mw(-8.0), mw(3.0), mw(-6.0))
	m.cmisThresholds(184, mA(15), mA(2), mA(13), mA(3))
	m.cmisThresholds(192, mw(5.0), mw(-10.4), mw(4.0), mw(-7.4))
	m.up11[128], m.up11[129] = 0x44, 0x44 // host lanes 1-4 DPActivated
	m.up11[130], m.up11[131] = 0x11, 0x11 // host lanes 5-8 unused
	tx := [4]float64{0.5, 0.4, 0.6, 0.5}
	rx := [4]float64{-1.0, -1.2, -8.0, -0.9}
	for l := 0; l < 4; l++ {
		put16(&m.up11, 154+2*l, mw(tx[l]))
		put16(&m.up11, 170+2*l, mA(8.0))
		put16(&m.up11, 186+2*l, mw(rx[l]))
	}
	m.up11[148] = 0x04 // lane 3 Rx CDR loss of lock, latched
	m.up11[152] = 0x04 // lane 3 Rx power low warning, latched
	return m
}

const cmisValues = `- module memory, OIF-CMIS-05.2 (Common Management Interface Specification Rev 5.2; byte
  addresses as in ethtool's cmis.h) and SNIA SFF-8024 codes; every value not given by these
  documents is made up:
- ens1f0np0: an OSFP 400GBASE-SR4 optical module. Lower page: byte 0 19h OSFP (SFF-8024
  Table 4-1; §8.2.1 Table 8-5), byte 1 52h CMIS 5.2 (major in bits 7-4, minor in 3-0), byte 2
  bit 7 clear: paged memory (pages 00h-02h, 10h-11h); byte 3 06h: ModuleState 011b ModuleReady
  in bits 3-1 (Table 8-6, encoding Table 8-7), bit 0 clear: interrupt asserted because flags
  are latched; byte 4 bit 0: a flag is set on bank 0 page 11h (Table 8-8); bytes 8-9 zero: no
  module flag (Table 8-9); bytes 14-15 temperature 48.0 °C (signed 1/256 °C) and 16-17 supply
  3.30 V (100 µV) (Table 8-10); byte 85 01h MediaType MMF (Table 8-18); bytes 86-89 the first
  application descriptor (§8.2.11): host interface 4Fh 400GAUI-4-S C2M (SFF-8024 Table 4-5),
  media interface 11h 400GBASE-SR4 (SFF-8024 Table 4-6, MMF), byte 88 44h 4 host and 4 media
  lanes, byte 89 01h host lane assignment starting at lane 1; byte 90 FFh: no further
  application.
- upper page 00h (§8.3): byte 128 19h (identifier copy), 129-144 vendor name "EXAMPLE OPTICS",
  145-147 OUI 00:00:00, 148-163 part number "OSFP-400G-SR4-EX", 164-165 revision "A1", 166-181
  serial "SYNXCVR0003", 182-189 date code "250301" (all made up; Table 8-23); byte 203
  connector 0Ch MPO 1x12 (SFF-8024 Table 4-3); byte 212 media interface technology 0h 850 nm
  VCSEL; byte 222 the checksum of bytes 128-221.
- page 01h (§8.4): byte 151 bit 4: Rx power measured as average; byte 157 0Fh: Tx fault, Tx
  LOS, Tx CDR LOL and Tx adaptive EQ fault flags supported, byte 158 06h: Rx LOS and Rx CDR LOL
  flags supported (Table 8-46); byte 159 03h: temperature and supply voltage monitors, byte 160
  07h: Tx bias, Tx power and Rx power monitors, bits 4-3 00b: Tx bias multiplier 1 (Table 8-47).
- page 02h thresholds (§8.5, each high alarm, low alarm, high warning, low warning, made up):
  bytes 128-135 temperature 75/-5/70/0 °C; 136-143 supply 3.63/2.97/3.465/3.135 V (3.3 V
  +-10% and +-5%); 176-183 Tx power +4.0/-8.0/+3.0/-6.0 dBm; 184-191 Tx bias 15/2/13/3 mA;
  192-199 Rx power +5.0/-10.4/+4.0/-7.4 dBm (0.1 µW units, as the monitors).
- page 11h (§8.9): bytes 128-129 44h: host lanes 1-4 DPActivated, 130-131 11h: lanes 5-8
  DPDeactivated or unused (Table 8-76, encoding Table 8-77); media lane monitors (Table 8-82,
  lane 1 first): Tx power 154-161 +0.5/+0.4/+0.6/+0.5 dBm, Tx bias 170-177 8.0 mA each, Rx
  power 186-193 -1.0/-1.2/-8.0/-0.9 dBm: lane 3 below its -7.4 dBm low warning threshold, above
  its -10.4 dBm low alarm threshold; latched flags: byte 148 bit 2 Rx CDR loss of lock on lane
  3 and byte 152 bit 2 Rx power low warning on lane 3 (Table 8-81); every other flag clear.
Expected: port.transceiver warning on mlx5_0/1: lane 3 Rx power below its low warning threshold
and lane 3's latched Rx CDR loss of lock (the latched low warning flag is carried by the
current value); everything else inside its thresholds; everything else as in fw-inbox-cx6dx
with the ConnectX-7 changes above.`

// cx7Changed says what cx7Ethernet changes in fw-inbox-cx6dx, and the source of each value.
const cx7Changed = `- the card is a ConnectX-7 running 400 GbE: PCI device 15b3:1021 "ConnectX-7" in
  mlx5_core_pci_table (drivers/net/ethernet/mellanox/mlx5/core/main.c; in Debian's 6.1 kernel),
  hca_type MT4129 ("MT%d" of the decimal device id, drivers/infiniband/hw/mlx5/main.c);
  firmware 28.48.1000 everywhere fw-inbox-cx6dx has 22.48.1000 (sysfs fw_ver, the RDMA netlink
  and devlink replies, the kernel log), the ConnectX-7 firmware bundled with NVIDIA MFT 4.35.0
  (NVIDIA Firmware Tools (MFT) Documentation v4.35.0, "Supported Adapter Cards Firmware
  Versions"); PSID and serial unchanged (made up).
- PCIe Gen5 x16: the card's and its root port's link "32.0 GT/s PCIe" (drivers/pci/pci-sysfs.c;
  ConnectX-7 is a PCIe 5.0 x16 adapter, NVIDIA ConnectX-7 Adapter Cards User Manual,
  "Specifications") and the kernel log line of pcie_print_link_status (drivers/pci/pci.c) at
  32.0 GT/s x16: 16 x 31507 Mb/s (32000 x 128/130, PCIE_SPEED2MBS_ENC) = 504.112 Gb/s.
- the port at 400 Gb/s: rate "400 Gb/sec (4X NDR)" (mlx5 reports 400GAUI-4 links as 4X NDR,
  translate_eth_ext_proto_oper in drivers/infiniband/hw/mlx5/main.c) and netdev speed 400000.`

// cx7Ethernet turns fw-inbox-cx6dx's ConnectX-6 Dx at 100 GbE into a ConnectX-7 at 400 GbE:
// the firmware version wherever it appears (the same length, so the netlink attributes of the
// binary replies keep their sizes), the PCI id, hca_type, PCIe speed and the port's rate.
func cx7Ethernet(t *testing.T, files map[string]string) {
	const oldFW, newFW = "22.48.1000", "28.48.1000"
	pci := "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/"
	set := func(name, from, to string) {
		if files[name] != from {
			t.Fatalf("fw-inbox-cx6dx %s is %q, want %q", name, files[name], from)
		}
		files[name] = to
	}
	for name, data := range files {
		switch {
		case strings.HasSuffix(name, ".hex"):
			b, err := hex.DecodeString(strings.ReplaceAll(data, "\n", ""))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			files[name] = checktest.HexLines(bytes.ReplaceAll(b, []byte(oldFW), []byte(newFW)))
		default:
			files[name] = strings.ReplaceAll(data, oldFW, newFW)
		}
	}
	set(pci+"device", "0x101d\n", "0x1021\n")
	set(pci+"infiniband/mlx5_0/hca_type", "MT4125\n", "MT4129\n")
	for _, f := range []string{pci + "current_link_speed", pci + "max_link_speed", "root/sys/devices/pci0000:3a/0000:3a:00.0/current_link_speed"} {
		set(f, "16.0 GT/s PCIe\n", "32.0 GT/s PCIe\n")
	}
	const oldBW = "252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)"
	if !strings.Contains(files["kmsg"], oldBW) {
		t.Fatalf("fw-inbox-cx6dx kmsg has no %q", oldBW)
	}
	files["kmsg"] = strings.ReplaceAll(files["kmsg"], oldBW, "504.112 Gb/s available PCIe bandwidth (32.0 GT/s PCIe x16 link)")
	set(pci+"infiniband/mlx5_0/ports/1/rate", "100 Gb/sec (4X EDR)\n", "400 Gb/sec (4X NDR)\n")
	set(pci+"net/ens1f0np0/speed", "100000\n", "400000\n")
}

func cmisScenario() xcvrScenario {
	return xcvrScenario{name: "port-xcvr-cmis", base: "fw-inbox-cx6dx",
		title:       "a CMIS 5.2 OSFP 400GBASE-SR4 module on a ConnectX-7 400 GbE port, one lane receiving little light",
		description: "Synthetic: a ConnectX-7 RoCE port at 400 Gb/s whose OSFP 400GBASE-SR4 module (CMIS 5.2) receives -8.0 dBm on lane 3, below its low warning threshold, with a latched Rx CDR loss of lock on that lane",
		netdevs:     []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROM: cmisOSFP().view()}},
		edit:        cx7Ethernet, changed: cx7Changed, values: cmisValues,
		sources: []string{"OIF-CMIS-05.2", "SNIA SFF-8024", "ethtool cmis.h", "drivers/net/ethernet/mellanox/mlx5/core/main.c",
			"drivers/infiniband/hw/mlx5/main.c", "NVIDIA Firmware Tools (MFT) Documentation v4.35.0, Supported Adapter Cards Firmware Versions"},
	}
}

func epermScenario() xcvrScenario {
	return xcvrScenario{name: "port-xcvr-eperm", base: "klog-unprivileged",
		title:       "a snapshot recorded by an ordinary user, whom the kernel refused the module EEPROM",
		description: "Synthetic: the klog-unprivileged recording (uid 1000) with the ethtool netlink exchanges an unprivileged rdmadiag record makes: the family resolved, MODULE_EEPROM_GET of ens1f0np0 refused with EPERM",
		netdevs:     []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0", EEPROMErrno: syscall.EPERM}},
		refused:     syscall.EPERM,
		sources:     []string{"Documentation/networking/ethtool-netlink.rst", "internal/netlinkraw/record.go"},
		values: `- the recording user: uid 1000 (facts.json euid of klog-unprivileged), without CAP_NET_ADMIN.
- ethtool-netlink/: the family resolution answered as for root; the first MODULE_EEPROM_GET
  (lower page, ens1f0np0) answered with NLMSG_ERROR -EPERM, kept as rdmadiag record keeps a
  kernel error (internal/netlinkraw/record.go: <key>.err holding the decimal errno, 1). Some
  ethtool "get" requests are admin-only (Documentation/networking/ethtool-netlink.rst, "Basic
  information"); Debian's 6.1 kernel refuses MODULE_EEPROM_GET to an ordinary user with EPERM,
  as the lab scenario "unprivileged" shows live. Nothing else was asked after the refusal.
Expected: port.transceiver skipped on mlx5_0/1 with a privilege limit whose lift is to record the
snapshot as root; the verdict stays as in klog-unprivileged.`,
	}
}
