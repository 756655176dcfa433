package port_test

// The synthetic fixtures vendor-efa (an AWS Elastic Fabric Adapter), vendor-irdma (an Intel
// E810 in RoCEv2 mode) and vendor-hns (a HiSilicon hns RoCE port) are generated here: healthy
// devices of drivers the lab cannot show, laid out as Linux 6.12.19 lays them out, so that a
// check assuming one vendor's sysfs fails on them in a test. The normal test run checks that the
// committed snapshot.txtar files are what this generator writes; regenerate with
//
//	go test ./checks/port -run TestVendorFixtures -gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// vendorRelease is the kernel every vendor fixture stands for: the 6.12.19 sources the
// comments cite.
const vendorRelease = "6.12.19"

// vendorHost holds the files every vendor fixture shares: kernel release, uptime, hostname,
// the uverbs class.
func vendorHost(hostname string) map[string]string {
	return map[string]string{
		"root/proc/sys/kernel/hostname":               hostname + "\n",
		"root/proc/sys/kernel/osrelease":              vendorRelease + "\n",
		"root/proc/uptime":                            "3600.00 14000.00\n",
		"root/sys/class/infiniband_verbs/abi_version": "6\n",
	}
}

// vendorNetlink encodes the RDMA netlink replies of model for every request the checks ask.
func vendorNetlink(t *testing.T, files map[string]string, m nltest.Model) {
	nl := m.Conn()
	for _, req := range []host.Request{nldev.DevicesRequest(), nldev.ResSummaryRequest(), nldev.PortsRequest(0),
		nldev.QPsRequest(0), nldev.CQsRequest(0), nldev.MRsRequest(0)} {
		b, err := nl.Exchange(req)
		if err != nil {
			t.Fatal(err)
		}
		files["netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
}

// vendorInterrupts lays /proc/interrupts out for 4 CPUs, one MSI-X vector of fn per name.
func vendorInterrupts(fn string, first int, names []string) string {
	var b strings.Builder
	b.WriteString("            CPU0       CPU1       CPU2       CPU3\n")
	for i, n := range names {
		fmt.Fprintf(&b, " %d:          3          7          0          1  PCI-MSIX-%s    %d-edge      %s\n", first+i, fn, i, n)
	}
	b.WriteString(" NMI:          0          0          0          0   Non-maskable interrupts\n")
	return b.String()
}

// vendorFacts is facts.json: root, unlimited memlock, one uverbs node, libibverbs and provider.
func vendorFacts(hostname, provider string, verbs map[string]any) string {
	return checktest.JSON(map[string]any{
		"hostname": hostname, "kernel_release": vendorRelease, "euid": 0,
		"memlock_soft": uint64(18446744073709551615), "memlock_hard": uint64(18446744073709551615),
		"char_devs": []map[string]any{{"path": "/dev/infiniband/uverbs0", "major": 231, "minor": 192, "mode": "-rw-rw-rw-"}},
		"libraries": []map[string]any{
			{"name": "libibverbs.so.1", "path": "/usr/lib64/libibverbs.so.1"},
			{"name": provider, "path": "/usr/lib64/libibverbs/" + provider},
		},
		"in_container": false, "verbs_devices": []map[string]any{verbs},
	})
}

// efaCounters are the port's hw_counters (efa_port_stats_descs, EFA_DEFINE_PORT_STATS in
// drivers/infiniband/hw/efa/efa_verbs.c, 6.12.19); values made up, errors and drops zero.
var efaCounters = map[string]string{
	"tx_bytes": "81920000", "tx_pkts": "20000", "rx_bytes": "81920000", "rx_pkts": "20000", "rx_drops": "0",
	"send_bytes": "40960000", "send_wrs": "10000", "recv_bytes": "40960000", "recv_wrs": "10000",
	"rdma_read_wrs": "500", "rdma_read_bytes": "2048000", "rdma_read_wr_err": "0", "rdma_read_resp_bytes": "2048000",
	"rdma_write_wrs": "500", "rdma_write_bytes": "2048000", "rdma_write_wr_err": "0", "rdma_write_recv_bytes": "2048000",
}

// efaDeviceCounters are the device's hw_counters (efa_device_stats_descs,
// EFA_DEFINE_DEVICE_STATS in efa_verbs.c); values made up.
var efaDeviceCounters = map[string]string{
	"submitted_cmds": "412", "completed_cmds": "412", "cmds_err": "0", "no_completion_cmds": "0",
	"keep_alive_rcvd": "3600", "alloc_pd_err": "0", "create_qp_err": "0", "create_cq_err": "0", "reg_mr_err": "0",
	"alloc_ucontext_err": "0", "create_ah_err": "0", "mmap_err": "0",
}

const efaComment = `No EFA exists in the lab: a healthy AWS Elastic Fabric Adapter as an EC2 instance sees it.
Every value as Linux 6.12.19 lays it out (drivers/infiniband/hw/efa, drivers/infiniband/core):
- PCI function 0000:00:06.0 on the root bus, id 1d0f:efa1 (PCI_DEV_ID_EFA1_VF in efa_pci_tbl,
  drivers/infiniband/hw/efa/efa_main.c), class 0x020000, driver efa; a VF passed through with
  no physfn link (the PF is the hypervisor's). No PCIe link attributes and no AER counters are
  laid out (the instance sees no PCIe link of its own; which of them a Nitro instance shows is
  not established here).
- the ENA netdev ens5 on its own function 0000:00:05.0 (1d0f:ec20, driver ena): EFA has no
  netdev (efa_ib_dev_ops has no get_netdev), so no port is bound to one.
- RDMA device rdmap0s6: the kernel registers "efa_%d" (efa_ib_device_add), and rdma-core's
  kernel-boot/rdma-persistent-naming.rules call rdma_rename NAME_FALLBACK, which names a PCI
  device <prefix>p<bus>s<slot> (by_pci in kernel-boot/rdma_rename.c) with the prefix "rdma"
  for a device that reports no protocol (get_nldata_cb).
- node_type "7: unspecified" (node_type = RDMA_NODE_UNSPECIFIED in efa_ib_device_add;
  node_type_show, drivers/infiniband/core/sysfs.c); fw_ver empty (efa has no
  get_dev_fw_str, so ib_get_device_fw_str writes ""); no hca_type nor board_id (ib_core's
  ib_dev_attrs has neither; efa adds none).
- port 1: state "4: ACTIVE", phys_state "5: LinkUp", rate "100 Gb/sec (4X EDR)" (efa_query_port
  sets them unconditionally); link_layer "Unknown" (efa_port_link_layer returns
  IB_LINK_LAYER_UNSPECIFIED, link_layer_show prints its default); lid and sm_lid 0x0;
  one GID (gid_tbl_len 1, efa_query_gid copies the device address: a made-up fe80:: address),
  type "IB/RoCE v1" and no netdev (gid_attrs/ndevs/0 fails with EINVAL, print_ndev).
- no PMA counters/ directory (efa has no process_mad); hw_counters/ holds
  efa_port_stats_descs and the device's hw_counters/ efa_device_stats_descs (efa_verbs.c),
  values made up, errors zero.
- interrupts "efa-mgmnt@pci:%s" and "efa-comp%d@pci:%s" (efa_setup_mgmnt_irq,
  efa_setup_comp_irq in efa_main.c), one completion vector per CPU; the kernel log keeps
  efa's "Setup irq:%d name:%s" and ib_core's "IB device registered" under the kernel name efa_0.
- /proc/modules: efa, ib_uverbs, ib_core and ena only (no rdma_cm: sizes made up); the
  kernel config has CONFIG_INFINIBAND_EFA=m and CONFIG_INFINIBAND_ADDR_TRANS=y;
  libibverbs provider libefa-rdmav34.so (rdma-core's providers/efa); one uverbs node.
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest: rdmap0s6 with node type 7,
  no protocol (fill_dev_info puts none: efa's port has no core capability), no firmware
  string, port 1 ACTIVE with no netdev; no QP or CQ (no MAD agent without IB management).
Expected: every check ok, info or skipped; exit 0.
`

// efaFixture lays out an EC2 instance with one EFA and its ENA.
func efaFixture(t *testing.T) []byte {
	const host0 = "synthetic-efa"
	files := vendorHost(host0)
	efaFn, enaFn := "0000:00:06.0", "0000:00:05.0"
	dev := "root/sys/devices/pci0000:00/" + efaFn + "/"
	ena := "root/sys/devices/pci0000:00/" + enaFn + "/"
	ib := dev + "infiniband/rdmap0s6/"
	port := ib + "ports/1/"
	for k, v := range map[string]string{
		dev + "vendor": "0x1d0f\n", dev + "device": "0xefa1\n", dev + "class": "0x020000\n", dev + "numa_node": "0\n",
		dev + "driver -> ../../../bus/pci/drivers/efa": "",
		ena + "vendor": "0x1d0f\n", ena + "device": "0xec20\n", ena + "class": "0x020000\n", ena + "numa_node": "0\n",
		ena + "driver -> ../../../bus/pci/drivers/ena": "",
		ena + "net/ens5/operstate":                     "up\n", ena + "net/ens5/mtu": "9001\n", ena + "net/ens5/carrier": "1\n",
		"root/sys/class/net/ens5 -> ../../devices/pci0000:00/" + enaFn + "/net/ens5":     "",
		"root/sys/bus/pci/devices/" + efaFn + " -> ../../../devices/pci0000:00/" + efaFn: "",
		"root/sys/bus/pci/devices/" + enaFn + " -> ../../../devices/pci0000:00/" + enaFn: "",
		"root/sys/bus/pci/drivers/efa/.keep":                                             "", "root/sys/bus/pci/drivers/ena/.keep": "",
		"root/sys/class/infiniband/rdmap0s6 -> ../../devices/pci0000:00/" + efaFn + "/infiniband/rdmap0s6":           "",
		"root/sys/class/infiniband_verbs/uverbs0 -> ../../devices/pci0000:00/" + efaFn + "/infiniband_verbs/uverbs0": "",
		dev + "infiniband_verbs/uverbs0/ibdev": "rdmap0s6\n", dev + "infiniband_verbs/uverbs0/abi_version": "1\n",
		dev + "infiniband_verbs/uverbs0/dev": "231:192\n",
		ib + "device -> ../../../" + efaFn:   "",
		ib + "node_type":                     "7: unspecified\n", ib + "fw_ver": "\n", ib + "node_guid": "0000:0000:0000:0000\n",
		ib + "sys_image_guid": "0000:0000:0000:0000\n", ib + "node_desc": host0 + "\n",
		port + "state": "4: ACTIVE\n", port + "phys_state": "5: LinkUp\n", port + "rate": "100 Gb/sec (4X EDR)\n",
		port + "link_layer": "Unknown\n", port + "lid": "0x0\n", port + "sm_lid": "0x0\n", port + "cap_mask": "0x00000000\n",
		port + "gids/0": "fe80:0000:0000:0000:04f5:a1ff:fe3e:99f0\n", port + "gid_attrs/types/0": "IB/RoCE v1\n",
	} {
		files[k] = v
	}
	for n := 0; n < 5; n++ {
		files[fmt.Sprintf("%smsi_irqs/%d", dev, 100+n)] = "msix\n"
	}
	for n, v := range efaCounters {
		files[port+"hw_counters/"+n] = v + "\n"
	}
	for n, v := range efaDeviceCounters {
		files[ib+"hw_counters/"+n] = v + "\n"
	}
	files["read-errors.json"] = checktest.JSON(map[string]string{
		strings.TrimPrefix(port, "root") + "gid_attrs/ndevs/0": "EINVAL",
	})
	files["root/proc/interrupts"] = vendorInterrupts(efaFn, 100, []string{
		"efa-mgmnt@pci:" + efaFn, "efa-comp0@pci:" + efaFn, "efa-comp1@pci:" + efaFn, "efa-comp2@pci:" + efaFn, "efa-comp3@pci:" + efaFn})
	files["root/proc/modules"] = "efa 151552 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 1 efa, Live 0x0000000000000000\n" +
		"ib_core 475136 2 efa,ib_uverbs, Live 0x0000000000000000\n" +
		"ena 155648 0 - Live 0x0000000000000000\n"
	files["root/boot/config-"+vendorRelease] = "CONFIG_PCI=y\nCONFIG_PCIEAER=y\nCONFIG_ENA_ETHERNET=m\nCONFIG_INFINIBAND=m\n" +
		"CONFIG_INFINIBAND_USER_ACCESS=m\nCONFIG_INFINIBAND_ADDR_TRANS=y\nCONFIG_INFINIBAND_EFA=m\n"
	files["root/etc/libibverbs.d/efa.driver"] = "driver efa\n"
	files["facts.json"] = vendorFacts(host0, "libefa-rdmav34.so", map[string]any{
		"name": "rdmap0s6", "max_qp": 256, "max_qp_wr": 4096, "max_cq": 512, "max_cqe": 32768,
		"max_srq": 0, "max_mr": 262144, "max_pd": 256, "num_comp_vectors": 4})
	kmsg := fmt.Sprintf("6,100,4100000,-;efa %s: Setup irq:100 name:efa-mgmnt@pci:%s\n SUBSYSTEM=pci\n DEVICE=+pci:%s\n", efaFn, efaFn, efaFn)
	kmsg += "6,101,4100400,-;efa " + efaFn + " efa_0: IB device registered\n SUBSYSTEM=pci\n DEVICE=+pci:" + efaFn + "\n"
	files["kmsg"] = kmsg
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a healthy AWS Elastic Fabric Adapter (efa, 1d0f:efa1) on Linux 6.12.19, its ENA netdev on another function",
		[]string{"drivers/infiniband/hw/efa/efa_main.c", "drivers/infiniband/hw/efa/efa_verbs.c", "drivers/infiniband/core/sysfs.c",
			"rdma-core kernel-boot/rdma_rename.c", checktest.Generator(t)}))
	vendorNetlink(t, files, nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: "rdmap0s6", NumPorts: 1, NodeType: 7}},
		Ports:   []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp}},
	})
	return checktest.Txtar(checktest.GeneratedBy(t, "vendor-efa")+efaComment, files)
}

// irdmaCounters are irdma's hw_counters on an E810 (irdma_hw_stat_names in
// drivers/infiniband/hw/irdma/verbs.c, 6.12.19: gen 2 has every name); traffic made up, the
// discard and error counters zero.
var irdmaCounters = map[string]string{
	"ip4InDiscards": "0", "ip4InTruncatedPkts": "0", "ip4OutNoRoutes": "0", "ip6InDiscards": "0", "ip6InTruncatedPkts": "0",
	"ip6OutNoRoutes": "0", "tcpRetransSegs": "0", "tcpInOptErrors": "0", "tcpInProtoErrors": "0", "rxVlanErrors": "0",
	"ip4InOctets": "81920000", "ip4InPkts": "20000", "ip4InReasmRqd": "0", "ip4InMcastPkts": "0", "ip4OutOctets": "81920000",
	"ip4OutPkts": "20000", "ip4OutSegRqd": "0", "ip4OutMcastPkts": "0", "ip6InOctets": "0", "ip6InPkts": "0",
	"ip6InReasmRqd": "0", "ip6InMcastPkts": "0", "ip6OutOctets": "0", "ip6OutPkts": "0", "ip6OutSegRqd": "0",
	"ip6OutMcastPkts": "0", "tcpInSegs": "0", "tcpOutSegs": "0", "iwInRdmaReads": "500", "iwInRdmaSends": "10000",
	"iwInRdmaWrites": "500", "iwOutRdmaReads": "500", "iwOutRdmaSends": "10000", "iwOutRdmaWrites": "500",
	"iwRdmaBnd": "0", "iwRdmaInv": "0", "cnpHandled": "0", "cnpIgnored": "0", "cnpSent": "0",
	"ip4InMcastOctets": "0", "ip4OutMcastOctets": "0", "ip6InMcastOctets": "0", "ip6OutMcastOctets": "0",
	"RxUDP": "20000", "TxUDP": "20000", "RxECNMrkd": "0",
}

// iceStats are ice's `ethtool -S` names (ice_gstrings_pf_stats and the per-priority
// "tx_priority_%u_xon.nic" strings of ice_get_strings, drivers/net/ethernet/intel/ice/ice_ethtool.c),
// no pause and no drop.
var iceStats = map[string]uint64{
	"rx_dropped.nic": 0, "rx_crc_errors.nic": 0, "tx_errors.nic": 0, "link_xon_rx.nic": 0, "link_xoff_rx.nic": 0,
	"link_xon_tx.nic": 0, "link_xoff_tx.nic": 0, "rx_priority_3_xoff.nic": 0, "tx_priority_3_xoff.nic": 0,
	"rx_priority_3_xon.nic": 0, "tx_priority_3_xon.nic": 0, "mac_local_faults.nic": 0, "mac_remote_faults.nic": 0,
}

const irdmaComment = `No Intel E810 exists in the lab: a healthy E810-XXV RoCEv2 port on ice and irdma.
Built on the layout of fixtures/sysfs/fw-inbox-cx6dx (the PCI path 0000:3b:00.0 under the Gen5
root port, netdev ens1f0np0, GIDs, uptime 3600 s), with Linux 6.12.19's Intel values:
- PCI id 8086:159b (ICE_DEV_ID_E810_XXV_SFP, drivers/net/ethernet/intel/ice/ice_devids.h),
  driver ice, PCIe 4.0 x8 (Intel E810-XXVDA2 product brief); the kernel log keeps
  pcie_print_link_status's line for it (16.0 GT/s x8 = 126.024 Gb/s). The card's second
  function is not laid out.
- netdev ens1f0np0 at 25000 Mb/s; port rate "25 Gb/sec (1X EDR)" (ib_get_eth_speed: 25 Gb/s
  without a lane count is 1X EDR, ib_get_width_and_speed in drivers/infiniband/core/verbs.c).
- irdma binds to the auxiliary device ice adds under the PCI function, "ice.roce.1" (name
  "roce" in RoCEv2 mode, id pf->aux_idx allocated from 1: ice_plug_aux_dev and ice_init_rdma in
  drivers/net/ethernet/intel/ice/ice_idc.c; irdma_auxiliary_id_table in
  drivers/infiniband/hw/irdma/main.c), driver irdma (auxiliary_driver_register names it after
  the module). The RDMA device's parent is still the PCI function (irdma_init_rdma_device sets
  ibdev.dev.parent = &pcidev->dev, drivers/infiniband/hw/irdma/verbs.c), so
  /sys/class/infiniband/<dev>/device points to 0000:3b:00.0, not to ice.roce.1.
- RDMA device rocep59s0f0: the kernel registers "irdma%d" (irdma_ib_register_device), and
  rdma-core's rdma-persistent-naming.rules rename it NAME_FALLBACK to <protocol>p<bus>s<slot>f<fn>
  (by_pci in kernel-boot/rdma_rename.c: protocol "roce", bus 0x3b = 59, f0 as the card is
  multi-function).
- node_type "1: CA" (RDMA_NODE_IB_CA in RoCEv2 mode, irdma_init_roce_device); fw_ver 1.71 in
  irdma_get_dev_fw_str's "%u.%u" (digits made up); no hca_type nor board_id (irdma adds
  neither); link_layer "Ethernet" (irdma_get_link_layer).
- no PMA counters/ directory (irdma has no process_mad); hw_counters/ holds
  irdma_hw_stat_names (drivers/infiniband/hw/irdma/verbs.c), traffic made up, errors zero.
- interrupts: ice's "ice-0000:3b:00.0:misc" and "ice-ens1f0np0-TxRx-%d" (ice_req_irq_msix_misc,
  ice_vsi_req_irq_msix in ice_main.c), irdma's "irdma-0000:3b:00.0-AEQCEQ-0" and
  "irdma-0000:3b:00.0-CEQ-%d" (irdma_cfg_ceq_vector in hw.c; the AEQ shares CEQ 0's vector
  when irdma has no more vectors than CPUs, irdma_save_msix_info); 4 CPUs.
- /proc/modules: irdma using ice, ib_uverbs and ib_core, the RDMA CM stack (sizes made up);
  CONFIG_ICE, CONFIG_INFINIBAND_IRDMA; libibverbs provider libirdma-rdmav34.so (rdma-core's
  providers/irdma); verbs limits in facts.json as in fw-inbox-cx6dx (made up).
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest: rocep59s0f0 protocol "roce",
  port 1 bound to ens1f0np0, the GSI QP1 and the [ib_core] MAD CQ. No devlink answers.
- ethtool/ens1f0np0.json: ice's names (ice_gstrings_pf_stats, ice_get_strings in
  ice_ethtool.c), no pause, no drop.
Expected: every check ok, info or skipped; exit 0.
`

// irdmaFixture lays fw-inbox-cx6dx's tree out again for ice and irdma.
func irdmaFixture(t *testing.T) []byte {
	base := checktest.FixtureFiles(t, congBase)
	const name = "rocep59s0f0"
	rename := strings.NewReplacer("mlx5_0", name, "drivers/mlx5_core", "drivers/ice", "mlx5.driver", "irdma.driver",
		"libmlx5-rdmav34.so", "libirdma-rdmav34.so", "6.1.0-56-amd64", vendorRelease, "synthetic-2", "synthetic-irdma")
	files := map[string]string{}
	for n, data := range base {
		switch {
		case strings.HasPrefix(n, "devlink/"), strings.HasPrefix(n, "netlink/"),
			strings.HasPrefix(n, congPortDir+"counters/"), strings.HasPrefix(n, congPortDir+"hw_counters/"):
			continue
		}
		files[rename.Replace(n)] = rename.Replace(data)
	}
	fn := "0000:3b:00.0"
	dev := "root/sys/devices/pci0000:3a/0000:3a:00.0/" + fn + "/"
	ib := dev + "infiniband/" + name + "/"
	port := ib + "ports/1/"
	files[dev+"vendor"], files[dev+"device"] = "0x8086\n", "0x159b\n"
	delete(files, ib+"board_id")
	delete(files, ib+"hca_type")
	files[ib+"fw_ver"] = "1.71\n"
	// An E810-XXV port runs at 25 Gb/s on a PCIe 4.0 x8 card.
	files[dev+"net/ens1f0np0/speed"] = "25000\n"
	files[port+"rate"] = "25 Gb/sec (1X EDR)\n"
	files[dev+"current_link_width"], files[dev+"max_link_width"] = "8\n", "8\n"
	aux := dev + "ice.roce.1/"
	files[aux+"driver -> ../../../../../bus/auxiliary/drivers/irdma"] = ""
	files["root/sys/bus/auxiliary/devices/ice.roce.1 -> ../../../devices/pci0000:3a/0000:3a:00.0/"+fn+"/ice.roce.1"] = ""
	files["root/sys/bus/auxiliary/drivers/irdma/.keep"] = ""
	for n, v := range irdmaCounters {
		files[port+"hw_counters/"+n] = v + "\n"
	}
	files["root/etc/libibverbs.d/irdma.driver"] = "driver irdma\n"
	files["root/proc/modules"] = "irdma 425984 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 2 rdma_ucm,irdma, Live 0x0000000000000000\n" +
		"ib_umad 45056 0 - Live 0x0000000000000000\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000\n" +
		"iw_cm 61440 2 irdma,rdma_cm, Live 0x0000000000000000\n" +
		"ib_cm 139264 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_core 475136 8 irdma,rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm, Live 0x0000000000000000\n" +
		"ice 1097728 1 irdma, Live 0x0000000000000000\n"
	files["root/boot/config-"+vendorRelease] = "CONFIG_PCIEAER=y\nCONFIG_ICE=m\nCONFIG_INFINIBAND=m\n" +
		"CONFIG_INFINIBAND_USER_MAD=m\nCONFIG_INFINIBAND_USER_ACCESS=m\nCONFIG_INFINIBAND_ADDR_TRANS=y\nCONFIG_INFINIBAND_IRDMA=m\n"
	names := []string{"ice-" + fn + ":misc"}
	for n := 0; n < 4; n++ {
		names = append(names, fmt.Sprintf("ice-ens1f0np0-TxRx-%d", n))
	}
	names = append(names, "irdma-"+fn+"-AEQCEQ-0")
	for n := 1; n < 4; n++ {
		names = append(names, fmt.Sprintf("irdma-%s-CEQ-%d", fn, n))
	}
	for n := range names {
		files[fmt.Sprintf("%smsi_irqs/%d", dev, 100+n)] = "msix\n"
	}
	files["root/proc/interrupts"] = vendorInterrupts(fn, 100, names)
	files["kmsg"] = "6,101,4100400,-;ice " + fn + ": 126.024 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x8 link)\n SUBSYSTEM=pci\n DEVICE=+pci:" + fn + "\n"
	files["ethtool/ens1f0np0.json"] = checktest.JSON(iceStats)
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a healthy Intel E810-XXV RoCEv2 port (ice, irdma on the auxiliary device ice.roce.1) on Linux 6.12.19",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "drivers/net/ethernet/intel/ice/ice_idc.c", "drivers/net/ethernet/intel/ice/ice_ethtool.c",
			"drivers/infiniband/hw/irdma/main.c", "drivers/infiniband/hw/irdma/verbs.c", "rdma-core kernel-boot/rdma_rename.c", checktest.Generator(t)}))
	guid := nldev.GUID(0x0ac0eb03001a2b3c) // fw-inbox-cx6dx's node_guid
	vendorNetlink(t, files, nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: name, NumPorts: 1, FWVersion: "1.71", NodeGUID: guid, SysImageGUID: guid,
			NodeType: 1, Protocol: "roce"}},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp,
			NetdevIndex: 4, NetdevName: "ens1f0np0"}},
		QPs: []nldev.QP{{DevIndex: 0, Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}},
		CQs: []nldev.CQ{{DevIndex: 0, CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, KernName: "ib_core"}},
	})
	return checktest.Txtar(checktest.GeneratedBy(t, "vendor-irdma")+irdmaComment, files)
}

// hnsCounters are hns_roce_hw_v2's hw_counters (hns_roce_port_stats_descs in
// drivers/infiniband/hw/hns/hns_roce_main.c, 6.12.19); traffic made up, errors zero.
var hnsCounters = map[string]string{
	"rx_rc_pkt": "20000", "rx_uc_pkt": "0", "rx_ud_pkt": "12", "rx_xrc_pkt": "0", "rx_pkt": "20012", "rx_err_pkt": "0",
	"rx_cnp_pkt": "0", "tx_rc_pkt": "20000", "tx_uc_pkt": "0", "tx_ud_pkt": "12", "tx_xrc_pkt": "0", "tx_pkt": "20012",
	"tx_err_pkt": "0", "tx_cnp_pkt": "0", "trp_get_mpt_err_pkt": "0", "trp_get_irrl_err_pkt": "0", "ecn_doorbell": "0",
	"rx_buffer": "20012", "trp_rx_sof": "20012", "cq_cqe": "20012", "cq_poe": "0", "cq_notify": "0",
}

const hnsComment = `No HiSilicon SoC exists in the lab: a healthy hns RoCE port of a Kunpeng 920's integrated
25GE controller on hns3 and hns_roce_hw_v2, Linux 6.12.19.
Built on the files of fixtures/sysfs/fw-inbox-cx6dx (GIDs, uptime 3600 s), moved and renamed:
- PCI id 19e5:a222 (HNAE3_DEV_ID_25GE_RDMA, drivers/net/ethernet/hisilicon/hns3/hnae3.h; in
  hns_roce_hw_v2_pci_tbl, drivers/infiniband/hw/hns/hns_roce_hw_v2.c), driver hns3, function
  0000:7d:00.0 on the root bus: a Root Complex Integrated Endpoint. The PCIe link attributes
  exist (pci_is_pcie) but read "Unknown" and 0: an RCiEP has no link registers
  (pcie_cap_has_lnkctl in drivers/pci/access.c), so pcie_capability_read_word gives 0
  (current_link_speed_show, max_link_speed_show in drivers/pci/pci-sysfs.c). That Kunpeng's
  hns3 functions are RCiEPs on root bus 0x7d is taken from public lspci listings, not from the
  kernel.
  No AER counters are laid out (whether the endpoint has the AER capability is not
  established here).
- RDMA device hns_0, the kernel's name ("hns_%d", hns_roce_register_device in
  hns_roce_main.c), kept where rdma-core's persistent naming is not applied (NAME_KERNEL); its
  parent is the PCI function (ib_dev->dev.parent). node_type "1: CA" (RDMA_NODE_IB_CA),
  link_layer "Ethernet" (hns_roce_get_link_layer), fw_ver 1.20.0022 in hns_roce_get_fw_ver's
  "%u.%u.%04u" (digits made up), no hca_type nor board_id.
- netdev enp125s0f0 (systemd's name of bus 125, slot 0, function 0) at 25000 Mb/s; port rate
  "25 Gb/sec (1X EDR)" (hns_roce_query_port calls ib_get_eth_speed).
- no PMA counters/ directory (hns has no process_mad); hw_counters/ holds
  hns_roce_port_stats_descs (hns_roce_main.c), traffic made up, errors zero.
- interrupts: hclge's "hclge-misc-0000:7d:00.0" (hclge_get_misc_vector, hclge_main.c), hns3's
  "hns3-0000:7d:00.0-TxRx-%d" (hns3_nic_init_irq, hns3_enet.c), hns_roce's
  "hns-0000:7d:00.0-abn-0", "hns-0000:7d:00.0-aeq-0" and "hns-0000:7d:00.0-ceq-%d"
  (__hns_roce_request_irq, hns_roce_hw_v2.c); 4 CPUs.
- /proc/modules: hns_roce_hw_v2 using hnae3 and ib_core, hclge and hns3 using hnae3, the RDMA
  CM stack (sizes made up); CONFIG_HNS3, CONFIG_HNS3_HCLGE, CONFIG_INFINIBAND_HNS_HIP08;
  libibverbs provider libhns-rdmav34.so (rdma-core's providers/hns); no kernel log line.
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest: hns_0 protocol "roce",
  port 1 bound to enp125s0f0, the GSI QP1 and the [ib_core] MAD CQ. No devlink answers, no
  ethtool statistics.
Expected: every check ok, info or skipped; exit 0.
`

// hnsFixture lays fw-inbox-cx6dx's tree out again for an hns3 RCiEP on a root bus.
func hnsFixture(t *testing.T) []byte {
	base := checktest.FixtureFiles(t, congBase)
	const name = "hns_0"
	fn := "0000:7d:00.0"
	rename := strings.NewReplacer("pci0000:3a/0000:3a:00.0/0000:3b:00.0", "pci0000:7d/"+fn, "0000:3b:00.0", fn,
		"../../../../bus/pci/drivers/mlx5_core", "../../../bus/pci/drivers/hns3", "drivers/mlx5_core", "drivers/hns3",
		"mlx5_0", name, "mlx5.driver", "hns.driver", "libmlx5-rdmav34.so", "libhns-rdmav34.so", "ens1f0np0", "enp125s0f0",
		"6.1.0-56-amd64", vendorRelease, "synthetic-2", "synthetic-hns", "x86_64-linux-gnu", "aarch64-linux-gnu")
	files := map[string]string{}
	for n, data := range base {
		switch {
		case strings.HasPrefix(n, "devlink/"), strings.HasPrefix(n, "netlink/"), strings.Contains(n, "0000:3a:00.0/aer"),
			strings.HasPrefix(n, congPortDir+"counters/"), strings.HasPrefix(n, congPortDir+"hw_counters/"):
			continue
		}
		n, data = rename.Replace(n), rename.Replace(data)
		if strings.Contains(n, "0000:3a:00.0") || strings.Contains(n, "pcieport") {
			continue // the Gen5 root port: an RCiEP has none
		}
		files[n] = data
	}
	dev := "root/sys/devices/pci0000:7d/" + fn + "/"
	ib := dev + "infiniband/" + name + "/"
	port := ib + "ports/1/"
	for _, a := range []string{"aer_dev_correctable", "aer_dev_fatal", "aer_dev_nonfatal"} {
		delete(files, dev+a) // AER is not claimed for the integrated endpoint
	}
	files[dev+"vendor"], files[dev+"device"] = "0x19e5\n", "0xa222\n"
	files[dev+"current_link_speed"], files[dev+"max_link_speed"] = "Unknown\n", "Unknown\n"
	files[dev+"current_link_width"], files[dev+"max_link_width"] = "0\n", "0\n"
	files[dev+"net/enp125s0f0/speed"] = "25000\n"
	files[port+"rate"] = "25 Gb/sec (1X EDR)\n"
	delete(files, ib+"board_id")
	delete(files, ib+"hca_type")
	files[ib+"fw_ver"] = "1.20.0022\n"
	for n, v := range hnsCounters {
		files[port+"hw_counters/"+n] = v + "\n"
	}
	files["root/etc/libibverbs.d/hns.driver"] = "driver hns\n"
	files["root/proc/modules"] = "hns_roce_hw_v2 200704 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 1 rdma_ucm, Live 0x0000000000000000\n" +
		"ib_umad 45056 0 - Live 0x0000000000000000\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000\n" +
		"iw_cm 61440 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_cm 139264 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_core 475136 8 hns_roce_hw_v2,rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm, Live 0x0000000000000000\n" +
		"hclge 413696 0 - Live 0x0000000000000000\n" +
		"hns3 208896 1 hclge, Live 0x0000000000000000\n" +
		"hnae3 28672 3 hns_roce_hw_v2,hclge,hns3, Live 0x0000000000000000\n"
	files["root/boot/config-"+vendorRelease] = "CONFIG_PCIEAER=y\nCONFIG_HNS3=m\nCONFIG_HNS3_HCLGE=m\nCONFIG_HNS3_ENET=m\nCONFIG_INFINIBAND=m\n" +
		"CONFIG_INFINIBAND_USER_MAD=m\nCONFIG_INFINIBAND_USER_ACCESS=m\nCONFIG_INFINIBAND_ADDR_TRANS=y\nCONFIG_INFINIBAND_HNS_HIP08=m\n"
	names := []string{"hclge-misc-" + fn}
	for n := 0; n < 4; n++ {
		names = append(names, fmt.Sprintf("hns3-%s-TxRx-%d", fn, n))
	}
	names = append(names, "hns-"+fn+"-abn-0", "hns-"+fn+"-aeq-0")
	for n := 0; n < 4; n++ {
		names = append(names, fmt.Sprintf("hns-%s-ceq-%d", fn, n))
	}
	for n := range names {
		files[fmt.Sprintf("%smsi_irqs/%d", dev, 100+n)] = "msix\n"
	}
	files["root/proc/interrupts"] = strings.ReplaceAll(vendorInterrupts(fn, 100, names), "PCI-MSIX-", "ITS-PCI-MSIX-")
	files["kmsg"] = ""
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a healthy HiSilicon hns RoCE port (hns3, hns_roce_hw_v2) of an integrated 25GE controller on Linux 6.12.19",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "drivers/net/ethernet/hisilicon/hns3/hnae3.h", "drivers/infiniband/hw/hns/hns_roce_main.c",
			"drivers/infiniband/hw/hns/hns_roce_hw_v2.c", "drivers/pci/access.c", "drivers/pci/pci-sysfs.c", checktest.Generator(t)}))
	guid := nldev.GUID(0x0ac0eb03001a2b3c) // fw-inbox-cx6dx's node_guid
	vendorNetlink(t, files, nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: name, NumPorts: 1, FWVersion: "1.20.0022", NodeGUID: guid, SysImageGUID: guid,
			NodeType: 1, Protocol: "roce"}},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp,
			NetdevIndex: 4, NetdevName: "enp125s0f0"}},
		QPs: []nldev.QP{{DevIndex: 0, Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}},
		CQs: []nldev.CQ{{DevIndex: 0, CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, KernName: "ib_core"}},
	})
	return checktest.Txtar(checktest.GeneratedBy(t, "vendor-hns")+hnsComment, files)
}

func TestVendorFixtures(t *testing.T) {
	checktest.Generated(t, "vendor-efa", efaFixture(t))
	checktest.Generated(t, "vendor-irdma", irdmaFixture(t))
	checktest.Generated(t, "vendor-hns", hnsFixture(t))
}
