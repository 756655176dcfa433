package port_test

// The synthetic fixtures port-fec-errors (a RoCE port dropping frames to uncorrectable FEC
// blocks) and port-fec-ok (the same port with a clean link) are generated here: the healthy
// ConnectX-6 Dx of fw-inbox-cx6dx plus the ethtool netlink replies encoded by
// internal/ethtoolnl/ethtooltest and mlx5's PHY counters in `ethtool -S`. The normal test run
// checks that the committed snapshot.txtar files are what this generator writes; regenerate with
//
//	go test ./checks/port -run TestLinkQualityFixtures -gen

import (
	"fmt"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// ethtoolFamily is the id the recorded kernel gave the ethtool family; any value above nlctrl's
// 0x10 is what a kernel hands out, and replay uses the recorded one.
const ethtoolFamily = 0x14

const fecBase = "fw-inbox-cx6dx"

type fecScenario struct {
	name, title, description string
	corrected, uncorr        uint64
	stats                    map[string]uint64
	values                   string
}

func fecScenarios() []fecScenario {
	return []fecScenario{
		{name: "port-fec-errors", title: "a RoCE port losing frames to uncorrectable FEC blocks",
			description: "Synthetic: a ConnectX-6 Dx RoCE port at 100 Gb/s with RS-FEC whose link counted 37 uncorrectable FEC blocks and an effective BER of 5e-12 since boot",
			corrected:   1283492, uncorr: 37,
			stats: map[string]uint64{"link_down_events_phy": 0, "rx_pcs_symbol_err_phy": 1800, "rx_corrected_bits_phy": 36000000,
				"rx_err_lane_0_phy": 8900000, "rx_err_lane_1_phy": 9100000, "rx_err_lane_2_phy": 9000000, "rx_err_lane_3_phy": 9000000},
			values: `  1,283,492 corrected and 37 uncorrectable FEC blocks (made up); rx_corrected_bits_phy 36,000,000
  (the lanes' rx_err_lane_N_phy summed) and rx_pcs_symbol_err_phy 1,800 over 3,600 s of uptime at
  100 Gb/s (3.6e14 bits): raw BER 1e-7, effective BER 5e-12, above the 1e-12 limit (NVIDIA
  ibdiagnet User Manual v2.11, "Bit Error Rate (BER)", default threshold 10^-12).
Expected: port.link_quality warning (uncorrectable FEC blocks since boot, effective BER above
1e-12); everything else as in fw-inbox-cx6dx.`},
		{name: "port-fec-ok", title: "a RoCE port with a clean RS-FEC link",
			description: "Synthetic: a ConnectX-6 Dx RoCE port at 100 Gb/s with RS-FEC, a few corrected FEC blocks, no uncorrectable one, no symbol error",
			corrected:   2150, uncorr: 0,
			stats: map[string]uint64{"link_down_events_phy": 0, "rx_pcs_symbol_err_phy": 0, "rx_corrected_bits_phy": 36000,
				"rx_err_lane_0_phy": 9000, "rx_err_lane_1_phy": 9000, "rx_err_lane_2_phy": 9000, "rx_err_lane_3_phy": 9000},
			values: `  2,150 corrected and 0 uncorrectable FEC blocks (made up); rx_corrected_bits_phy 36,000 and
  rx_pcs_symbol_err_phy 0 over 3,600 s of uptime at 100 Gb/s: raw BER 1e-10, effective BER 0.
Expected: port.link_quality ok; everything as in fw-inbox-cx6dx, exit 0.`},
	}
}

// fecComment follows checktest.GeneratedBy's opening.
const fecComment = `No ConnectX exists in the lab: %s.
Built on the files of fixtures/sysfs/fw-inbox-cx6dx (a healthy ConnectX-6 Dx, mlx5_0 on
0000:3b:00.0, in-box mlx5_core of Debian's 6.1.0-56-amd64, RoCE port ACTIVE at 100 Gb/s on
ens1f0np0, /proc/uptime 3600 s), whose archive comment cites each of them; added here:
- ethtool-netlink/: generic netlink replies encoded by internal/ethtoolnl/ethtooltest as
  net/ethtool lays them out; ids from include/uapi/linux/ethtool_netlink.h and genetlink.h:
  family "ethtool" (resolved with CTRL_CMD_GETFAMILY=3 on nlctrl GENL_ID_CTRL 0x10, id 0x14
  here), ETHTOOL_MSG_FEC_GET=29 (reply 30, fec_fill_reply in net/ethtool/fec.c) with
  ETHTOOL_FLAG_STATS=4, ETHTOOL_MSG_LINKMODES_GET=4 (reply 4); ETHTOOL_A_HEADER_DEV_INDEX=1
  (ifindex 4, as in the RDMA netlink port reply), _DEV_NAME=2; ETHTOOL_A_FEC_MODES=2 (a verbose
  bitset listing ETHTOOL_LINK_MODE_FEC_RS_BIT 50 "RS"), _AUTO=3, _ACTIVE=4 (50: RS-FEC, which
  100GBASE-CR4 uses), _STATS=5 with _STAT_CORRECTED=2 and _STAT_UNCORR=3 as totals only (mlx5
  counts per lane only in FC mode: "net/mlx5e: Expose FEC counters via ethtool", 2021) and
  _STAT_CORR_BITS=4 empty (not reported); ETHTOOL_A_LINKMODES_SPEED=5 100000, _DUPLEX=6 full,
  _LANES=9 4, _AUTONEG=2 on. Module EEPROM pages are not part of this scenario (not recorded).
- ethtool/ens1f0np0.json: mlx5 PHY counters of ethtool -S (pport_phy_statistical_stats_desc and
  pport_phy_statistical_err_lanes_stats_desc in drivers/net/ethernet/mellanox/mlx5/core/en_stats.c;
  rx_bits_phy is absent, as in 6.1, so the bits are estimated from speed x uptime):
%s
`

func fecFixture(t *testing.T, s fecScenario) []byte {
	files := checktest.FixtureFiles(t, fecBase)
	files["meta.json"] = checktest.JSON(checktest.Meta(s.description,
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "include/uapi/linux/ethtool_netlink.h", "net/ethtool/fec.c",
			"drivers/net/ethernet/mellanox/mlx5/core/en_stats.c", "NVIDIA ibdiagnet User Manual v2.11, Bit Error Rate (BER)",
			checktest.Generator(t)}))
	files["ethtool/ens1f0np0.json"] = checktest.JSON(s.stats)
	m := ethtooltest.Model{Family: ethtoolFamily, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0",
		FEC:        &ethtoolnl.FEC{Active: ethtoolnl.FECRS, Corrected: &ethtoolnl.FECStat{Total: s.corrected}, Uncorrectable: &ethtoolnl.FECStat{Total: s.uncorr}},
		Configured: []ethtoolnl.FECMode{ethtoolnl.FECRS},
		LinkModes:  &ethtoolnl.LinkModes{SpeedMbps: 100000, Lanes: 4, Duplex: 1, Autoneg: true}}}}
	conn := m.Conn()
	for _, req := range append([]host.Request{ethtoolnl.FamilyRequest()},
		ethtoolnl.FECRequest(ethtoolFamily, "ens1f0np0"), ethtoolnl.LinkModesRequest(ethtoolFamily, "ens1f0np0")) {
		b, err := conn.Exchange(req)
		if err != nil {
			t.Fatal(err)
		}
		files["ethtool-netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	return checktest.Txtar(checktest.GeneratedBy(t, s.name)+fmt.Sprintf(fecComment, s.title, s.values), files)
}

func TestLinkQualityFixtures(t *testing.T) {
	for _, s := range fecScenarios() {
		checktest.Generated(t, s.name, fecFixture(t, s))
	}
}
