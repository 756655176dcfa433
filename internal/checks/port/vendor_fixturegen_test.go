package port_test

// The synthetic fixtures vendor-efa (an AWS Elastic Fabric Adapter), vendor-irdma (an Intel
// E810 in RoCEv2 mode) and vendor-hns (a HiSilicon hns RoCE port) are generated here: healthy
// devices of drivers the lab cannot show, laid out as Linux 6.12.19 lays them out, so that a
// check assuming one vendor's sysfs fails on them in a test. The normal test run checks that the
// committed snapshot.txtar files are what this generator writes; regenerate with
//
//	go test ./internal/checks/port -run TestVendorFixtures -gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/checks/checktest"
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

func TestVendorFixtures(t *testing.T) {
	checktest.Generated(t, "vendor-efa", efaFixture(t))
}
