package port_test

// The synthetic fixtures port-congestion-mlx5 (a ConnectX-6 Dx RoCE port that went through a PFC
// storm) and port-congestion-bnxt (a Broadcom BCM57508 RoCE port with pauses and
// retransmissions) are generated here from the files of fw-inbox-cx6dx, with the driver
// statistics of `ethtool -S` and the RDMA hw_counters of each driver. The normal test run checks
// that the committed snapshot.txtar files are what this generator writes; regenerate with
//
//	go test ./checks/port -run TestCongestionFixtures -gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

const congBase = "fw-inbox-cx6dx"

// congPortDir is the RDMA port directory of fw-inbox-cx6dx's mlx5_0.
const congPortDir = "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/"

// congMlx5Stats are mlx5's `ethtool -S` statistics of a port with PFC on priority 3 (the
// per-priority group is listed for PFC-enabled priorities only, mlx5e_grp_per_prio_pfc_fill_strings
// in drivers/net/ethernet/mellanox/mlx5/core/en_stats.c; the storm counters when the device has
// stall detection).
var congMlx5Stats = map[string]uint64{
	"rx_prio3_pause": 1204332, "rx_prio3_pause_duration": 8410000, "rx_prio3_pause_transition": 601000,
	"tx_prio3_pause": 52118, "tx_prio3_pause_duration": 310000,
	"rx_pause_ctrl_phy": 0, "tx_pause_ctrl_phy": 0,
	"tx_pause_storm_warning_events": 4, "tx_pause_storm_error_events": 1,
	"rx_discards_phy": 18230, "tx_discards_phy": 0, "rx_out_of_buffer": 0, "rx_buffer_passed_thres_phy": 2291,
	"link_down_events_phy": 0,
}

// congBnxtStats are bnxt_en's: bnxt_port_stats_arr and bnxt_port_stats_ext_arr names in
// drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c, PFC on priority 3.
var congBnxtStats = map[string]uint64{
	"rx_pfc_ena_frames_pri3": 880412, "tx_pfc_ena_frames_pri3": 10233,
	"pfc_pri3_rx_duration_us": 5120000, "pfc_pri3_tx_duration_us": 90000, "pfc_pri3_rx_transitions": 440000,
	"rx_pause_frames": 0, "tx_pause_frames": 0, "rx_stat_discard": 0, "tx_stat_discard": 0,
	"rx_discard_packets_cos3": 0,
}

// congBnxtCounters are bnxt_re's hw_counters (bnxt_re_stat_descs in
// drivers/infiniband/hw/bnxt_re/hw_counters.c, 6.12.19), a subset, values made up.
var congBnxtCounters = map[string]string{
	"to_retransmits": "12", "seq_err_naks_rcvd": "3", "max_retry_exceeded": "0", "rnr_naks_rcvd": "0",
	"oos_drop_count": "2", "dup_req": "1", "rx_out_of_buffer": "0", "rx_roce_discards": "0", "tx_roce_discards": "0",
	"rx_roce_errors": "0", "tx_roce_errors": "0", "tx_cnp_pkts": "9000", "rx_cnp_pkts": "8800",
	"rx_ecn_marked_pkts": "9120", "lifespan": "10",
}

const congMlx5Comment = `No ConnectX exists in the lab: a RoCE port of a ConnectX-6 Dx whose PFC storm
prevention fired once since boot.
Built on the files of fixtures/sysfs/fw-inbox-cx6dx (mlx5_0 on 0000:3b:00.0, in-box mlx5_core of
Debian's 6.1.0-56-amd64, RoCE port ACTIVE at 100 Gb/s on ens1f0np0, /proc/uptime 3600 s), whose
archive comment cites each of them; added here:
- ethtool/ens1f0np0.json: mlx5's ethtool -S statistics (names of en_stats.c; meanings and pause
  durations in microseconds from Documentation/networking/device_drivers/ethernet/mellanox/mlx5/
  counters.rst), PFC on priority 3 only: rx_prio3_pause 1,204,332 frames and 8.41 s paused by the
  switch, tx_prio3_pause 52,118 and 0.31 s pausing it; tx_pause_storm_warning_events 4 and
  tx_pause_storm_error_events 1 (the device paused for its whole pfc-prevention-tout and stopped);
  rx_discards_phy 18,230; rx_buffer_passed_thres_phy 2,291; the rest 0. Values made up.
- hw_counters/out_of_buffer 135, duplicate_request 0, roce_adp_retrans 17 (mlx5 Q counters,
  drivers/infiniband/hw/mlx5/counters.c), made up.
Expected: port.congestion warning (one PFC storm error event since boot), action fix-configuration;
port.counters info (out_of_buffer and roce_adp_retrans since boot, not alarming on one reading);
everything else as in fw-inbox-cx6dx; exit 1.
`

const congBnxtComment = `No Broadcom adapter exists in the lab: a BCM57508 RoCE port on bnxt_en and bnxt_re.
Built on the layout of fixtures/sysfs/fw-inbox-cx6dx (the same PCI path 0000:3b:00.0 under the
Gen5 root port, netdev ens1f0np0 at 100 Gb/s, GIDs, uptime 3600 s, kernel 6.1.0-56-amd64), with the
Broadcom driver's values instead of mlx5's:
- PCI id 14e4:1750 (BCM57508 in bnxt_pci_tbl, drivers/net/ethernet/broadcom/bnxt/bnxt.c), driver
  bnxt_en; RDMA device bnxt_re0 ("bnxt_re%d", bnxt_re_register_ib in
  drivers/infiniband/hw/bnxt_re/main.c); hca_type is the node description "Broadcom
  NetXtreme-C/E RoCE Driver HCA" (hca_type_show, BNXT_RE_DESC in bnxt_re.h); no board_id (bnxt_re
  has none); fw_ver 230.0.157.0 in bnxt_re_query_fw_str's "%d.%d.%d.%d" (digits made up).
- no PMA counters/ directory: bnxt_re has no process_mad, so ib_core creates none
  (drivers/infiniband/core/sysfs.c); hw_counters/ holds bnxt_re's names (bnxt_re_stat_descs in
  drivers/infiniband/hw/bnxt_re/hw_counters.c): to_retransmits 12, seq_err_naks_rcvd 3,
  oos_drop_count 2, dup_req 1, tx_cnp_pkts 9,000, rx_cnp_pkts 8,800, rx_ecn_marked_pkts 9,120,
  the rest 0 (made up).
- /proc/modules: bnxt_re using bnxt_en and ib_core (module sizes made up); kernel config
  CONFIG_BNXT and CONFIG_INFINIBAND_BNXT_RE; libibverbs provider libbnxt_re-rdmav34.so
  (rdma-core's providers/bnxt_re); interrupts named "%s-%s-%d" with "TxRx"
  (bnxt_setup_msix, bnxt.c); the kernel log keeps pcie_print_link_status's line, printed by
  bnxt_init_one.
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest: bnxt_re0 protocol "roce",
  port 1 bound to ens1f0np0, the GSI QP1 and the [ib_core] MAD CQ. No devlink answers.
- ethtool/ens1f0np0.json: bnxt_en's names (bnxt_port_stats_arr, bnxt_port_stats_ext_arr in
  bnxt_ethtool.c), PFC on priority 3: rx_pfc_ena_frames_pri3 880,412, tx_pfc_ena_frames_pri3
  10,233, pfc_pri3_rx_duration_us 5,120,000, pfc_pri3_tx_duration_us 90,000; discards 0.
Expected: port.congestion info (pause frames on priority 3 since boot); port.counters info
(to_retransmits, seq_err_naks_rcvd, oos_drop_count since boot, not alarming on one reading); no
check fails for the vendor; exit 0.
`

func congMlx5Fixture(t *testing.T) []byte {
	files := checktest.FixtureFiles(t, congBase)
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a ConnectX-6 Dx RoCE port whose PFC storm prevention fired once since boot, with pauses on priority 3 and discards",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "drivers/net/ethernet/mellanox/mlx5/core/en_stats.c",
			"Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst", "drivers/infiniband/hw/mlx5/counters.c",
			checktest.Generator(t)}))
	files["ethtool/ens1f0np0.json"] = checktest.JSON(congMlx5Stats)
	files[congPortDir+"hw_counters/out_of_buffer"] = "135\n"
	files[congPortDir+"hw_counters/duplicate_request"] = "0\n"
	files[congPortDir+"hw_counters/roce_adp_retrans"] = "17\n"
	return checktest.Txtar(checktest.GeneratedBy(t, "port-congestion-mlx5")+congMlx5Comment, files)
}

// congBnxtFixture lays fw-inbox-cx6dx's tree out again for bnxt_en and bnxt_re.
func congBnxtFixture(t *testing.T) []byte {
	base := checktest.FixtureFiles(t, congBase)
	rename := strings.NewReplacer("mlx5_0", "bnxt_re0", "drivers/mlx5_core", "drivers/bnxt_en", "mlx5.driver", "bnxt_re.driver",
		"libmlx5-rdmav34.so", "libbnxt_re-rdmav34.so")
	files := map[string]string{}
	for name, data := range base {
		switch {
		case strings.HasPrefix(name, "devlink/"), strings.HasPrefix(name, "netlink/"),
			strings.HasPrefix(name, congPortDir+"counters/"), strings.HasPrefix(name, congPortDir+"hw_counters/"):
			continue
		}
		files[rename.Replace(name)] = rename.Replace(data)
	}
	dev := "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/"
	ib := dev + "infiniband/bnxt_re0/"
	port := ib + "ports/1/"
	files[dev+"vendor"], files[dev+"device"] = "0x14e4\n", "0x1750\n"
	delete(files, ib+"board_id")
	files[ib+"hca_type"] = "Broadcom NetXtreme-C/E RoCE Driver HCA\n"
	files[ib+"fw_ver"] = "230.0.157.0\n"
	for n, v := range congBnxtCounters {
		files[port+"hw_counters/"+n] = v + "\n"
	}
	files["root/etc/libibverbs.d/bnxt_re.driver"] = "driver bnxt_re\n"
	files["root/proc/modules"] = "bnxt_re 294912 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 2 rdma_ucm,bnxt_re, Live 0x0000000000000000\n" +
		"ib_umad 45056 0 - Live 0x0000000000000000\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000\n" +
		"iw_cm 61440 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_cm 139264 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_core 442368 8 rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm,bnxt_re, Live 0x0000000000000000\n" +
		"bnxt_en 389120 1 bnxt_re, Live 0x0000000000000000\n"
	files["root/boot/config-6.1.0-56-amd64"] = "CONFIG_PCIEAER=y\nCONFIG_BNXT=m\nCONFIG_INFINIBAND=m\n" +
		"CONFIG_INFINIBAND_USER_MAD=m\nCONFIG_INFINIBAND_USER_ACCESS=m\nCONFIG_INFINIBAND_ADDR_TRANS=y\nCONFIG_INFINIBAND_BNXT_RE=m\n"
	var irqs strings.Builder
	irqs.WriteString("            CPU0       CPU1       CPU2       CPU3\n")
	for n := 0; n < 5; n++ {
		fmt.Fprintf(&irqs, " %d:          3          7          0          1  IR-PCI-MSIX-0000:3b:00.0    %d-edge      ens1f0np0-TxRx-%d\n", 100+n, n, n)
	}
	irqs.WriteString(" NMI:          0          0          0          0   Non-maskable interrupts\n")
	files["root/proc/interrupts"] = irqs.String()
	files["kmsg"] = "6,101,4100400,-;bnxt_en 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)\n SUBSYSTEM=pci\n DEVICE=+pci:0000:3b:00.0\n"
	files["ethtool/ens1f0np0.json"] = checktest.JSON(congBnxtStats)
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a Broadcom BCM57508 RoCE port (bnxt_en, bnxt_re) with PFC pauses on priority 3 and a few retransmissions since boot",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "drivers/net/ethernet/broadcom/bnxt/bnxt.c", "drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c",
			"drivers/infiniband/hw/bnxt_re/main.c", "drivers/infiniband/hw/bnxt_re/hw_counters.c", checktest.Generator(t)}))

	guid := nldev.GUID(0x0ac0eb03001a2b3c) // fw-inbox-cx6dx's node_guid
	nl := nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: "bnxt_re0", NumPorts: 1, FWVersion: "230.0.157.0", NodeGUID: guid, SysImageGUID: guid,
			NodeType: 1, Protocol: "roce"}},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp,
			NetdevIndex: 4, NetdevName: "ens1f0np0"}},
		QPs: []nldev.QP{{DevIndex: 0, Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}},
		CQs: []nldev.CQ{{DevIndex: 0, CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, KernName: "ib_core"}},
	}.Conn()
	for _, req := range []host.Request{nldev.DevicesRequest(), nldev.ResSummaryRequest(), nldev.PortsRequest(0),
		nldev.QPsRequest(0), nldev.CQsRequest(0), nldev.MRsRequest(0)} {
		b, err := nl.Exchange(req)
		if err != nil {
			t.Fatal(err)
		}
		files["netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	return checktest.Txtar(checktest.GeneratedBy(t, "port-congestion-bnxt")+congBnxtComment, files)
}

func TestCongestionFixtures(t *testing.T) {
	checktest.Generated(t, "port-congestion-mlx5", congMlx5Fixture(t))
	checktest.Generated(t, "port-congestion-bnxt", congBnxtFixture(t))
}
