package firmware_test

// The synthetic fixture fw-inbox-cx6dx (a healthy ConnectX-6 Dx RoCE port on the in-box mlx5_core
// of a distribution kernel) is generated here, like fw-devlink: its RDMA netlink and devlink
// replies are encoded by internal/nldev/nltest and internal/devlink/dltest. The normal test run
// checks that the committed snapshot.txtar is what this generator writes; regenerate with
//
//	go test ./checks/firmware -run TestInboxFixture -gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

const inboxFixture = "fw-inbox-cx6dx"

// The values of the card, each cited in inboxComment.
const (
	inboxKernel   = "6.1.0-56-amd64"
	inboxFW       = "22.48.1000"
	inboxPSID     = "MT_0000000436"
	inboxRootPort = "0000:3a:00.0"
	inboxBDF      = "0000:3b:00.0"
	inboxNetdev   = "ens1f0np0"
	inboxGUID     = "0ac0:eb03:001a:2b3c"
	// 192.0.2.10 (RFC 5737 documentation range) as the IPv4-mapped GID the kernel adds for it.
	inboxIPGID = "0000:0000:0000:0000:0000:ffff:c000:020a"
	inboxLLGID = "fe80:0000:0000:0000:0ac0:ebff:fe1a:2b3c"
)

// inboxComment follows checktest.GeneratedBy's opening.
const inboxComment = `No ConnectX exists in the lab.
A healthy ConnectX-6 Dx (one PF, mlx5_0 on 0000:3b:00.0) on the in-box mlx5_core of Debian 12's
kernel 6.1.0-56-amd64, firmware 22.48.1000, RoCE port ACTIVE at 100 Gb/s with an IPv4 RoCE v2 GID.
Expected: every check ok, info or skipped; exit 0.
Sources:
- PCI id 15b3:101d "ConnectX-6 Dx" in mlx5_core_pci_table
  (drivers/net/ethernet/mellanox/mlx5/core/main.c); class 0x020000 (Ethernet controller, PCI
  Code and ID Assignment Specification); hca_type "MT%d" of the decimal device id = MT4125, fw_ver
  "%d.%d.%04d" (drivers/infiniband/hw/mlx5/main.c); board_id PSID: digits made up.
- firmware 22.48.1000: the ConnectX-6 Dx firmware bundled with NVIDIA MFT 4.35.0 (NVIDIA Firmware
  Tools (MFT) Documentation v4.35.0, "Supported Adapter Cards Firmware Versions").
- in-box driver: no /sys/module/mlx5_core/version (upstream mlx5_core declares no MODULE_VERSION);
  /proc/modules untainted, no mlx_compat (kernel/module/procfs.c format); kernel release and the
  RDMA options of /boot/config-6.1.0-56-amd64 as in Debian's linux-image-6.1.0-56-amd64 (the
  kernel of the lab fixtures, e.g. fixtures/sysfs/healthy).
- kernel log: "firmware version: %d.%d.%d" of mlx5_function_enable
  (drivers/net/ethernet/mellanox/mlx5/core/main.c) and "%u.%03u Gb/s available PCIe bandwidth
  (%s x%d link)" of pcie_print_link_status (drivers/pci/pci.c): 16.0 GT/s x16 = 252.048 Gb/s.
- PCIe: Gen4 x16 ("16.0 GT/s PCIe", drivers/pci/pci-sysfs.c) under a Gen5 root port (8086:352a,
  as in port-roce); AER counters all zero (drivers/pci/pcie/aer.c names).
- port (drivers/infiniband/core/sysfs.c): state "4: ACTIVE", phys_state "5: LinkUp",
  link_layer "Ethernet", rate "100 Gb/sec (4X EDR)" (mlx5 reports 100GBASE-CR4 as 4X EDR,
  translate_eth_legacy_proto_oper in drivers/infiniband/hw/mlx5/main.c), lid/sm_lid 0x0 on RoCE;
  GIDs: the link-local fe80:: GID of the made-up MAC 08:c0:eb:1a:2b:3c and the IPv4-mapped GID
  of 192.0.2.10 (RFC 5737), each as "IB/RoCE v1" and "RoCE v2" (gid_attrs/types), netdev
  ens1f0np0 (gid_attrs/ndevs) up at 100000 Mb/s, MTU 9000 (RoCE MTU 4096 after the 96 header
  bytes of iboe_get_mtu, include/rdma/ib_addr.h); all error counters zero.
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest: mlx5_0 protocol "roce", port 1
  bound to ens1f0np0, the GSI QP1 and the [ib_core] MAD CQ.
- devlink/: replies encoded by internal/devlink/dltest as for fw-devlink (ids of
  include/uapi/linux/devlink.h; mlx5_devlink_info_get in
  drivers/net/ethernet/mellanox/mlx5/core/devlink.c): running = stored fw.version 22.48.1000
  (nothing pending), fw.psid = board_id; reporters fw, fw_fatal, vnic, tx, rx healthy with no
  error, vnic counters zero.
`

func inboxFixtureFiles(t *testing.T) map[string]string {
	f := map[string]string{}
	f["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a healthy ConnectX-6 Dx (RoCE, firmware 22.48.1000) on the in-box mlx5_core of Debian's 6.1.0-56-amd64",
		[]string{"drivers/net/ethernet/mellanox/mlx5/core/main.c", "drivers/infiniband/hw/mlx5/main.c",
			"drivers/infiniband/core/sysfs.c", "NVIDIA Firmware Tools (MFT) Documentation v4.35.0, Supported Adapter Cards Firmware Versions",
			"include/uapi/linux/devlink.h", checktest.Generator(t)}))
	f["facts.json"] = checktest.JSON(host.Facts{Hostname: "synthetic-2", KernelRelease: inboxKernel, EUID: 0, MemlockSoft: ^uint64(0), MemlockHard: ^uint64(0),
		CharDevs: []host.CharDev{{Path: "/dev/infiniband/uverbs0", Major: 231, Minor: 192, Mode: "-rw-rw-rw-"}},
		Libraries: []host.Library{{Name: "libibverbs.so.1", Path: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"},
			{Name: "libmlx5-rdmav34.so", Path: "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so"}},
		VerbsDevices: []host.VerbsDevice{{Name: "mlx5_0", MaxQP: 131072, MaxQPWR: 32768, MaxCQ: 16777216, MaxCQE: 4194303,
			MaxSRQ: 8388608, MaxMR: 16777216, MaxPD: 8388608, NumCompVectors: 4}}})
	f["kmsg"] = fmt.Sprintf("6,100,4100000,-;mlx5_core %s: firmware version: %s\n SUBSYSTEM=pci\n DEVICE=+pci:%s\n", inboxBDF, inboxFW, inboxBDF) +
		fmt.Sprintf("6,101,4100400,-;mlx5_core %s: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)\n SUBSYSTEM=pci\n DEVICE=+pci:%s\n", inboxBDF, inboxBDF)

	var irqs strings.Builder
	irqs.WriteString("            CPU0       CPU1       CPU2       CPU3\n")
	for n := 0; n < 5; n++ {
		name := fmt.Sprintf("mlx5_comp%d", n-1)
		if n == 0 {
			name = "mlx5_async0"
		}
		fmt.Fprintf(&irqs, " %d:          3          7          0          1  IR-PCI-MSIX-%s    %d-edge      %s@pci:%s\n", 100+n, inboxBDF, n, name, inboxBDF)
	}
	irqs.WriteString(" NMI:          0          0          0          0   Non-maskable interrupts\n")
	f["root/proc/interrupts"] = irqs.String()
	f["root/proc/modules"] = "mlx5_ib 479232 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 2 rdma_ucm,mlx5_ib, Live 0x0000000000000000\n" +
		"ib_umad 45056 0 - Live 0x0000000000000000\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000\n" +
		"iw_cm 61440 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_cm 139264 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_core 442368 8 rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm,mlx5_ib, Live 0x0000000000000000\n" +
		"mlx5_core 2326528 1 mlx5_ib, Live 0x0000000000000000\n" +
		"mlxfw 36864 1 mlx5_core, Live 0x0000000000000000\n"
	f["root/boot/config-"+inboxKernel] = "CONFIG_PCIEAER=y\nCONFIG_MLX5_CORE=m\nCONFIG_MLX5_CORE_EN=y\nCONFIG_INFINIBAND=m\n" +
		"CONFIG_INFINIBAND_USER_MAD=m\nCONFIG_INFINIBAND_USER_ACCESS=m\nCONFIG_INFINIBAND_ADDR_TRANS=y\nCONFIG_MLX5_INFINIBAND=m\n"
	f["root/proc/sys/kernel/osrelease"] = inboxKernel + "\n"
	f["root/proc/sys/kernel/hostname"] = "synthetic-2\n"
	f["root/proc/uptime"] = "3600.00 14000.00\n"
	f["root/sys/class/infiniband_verbs/abi_version"] = "6\n"
	f["root/etc/libibverbs.d/mlx5.driver"] = "driver mlx5\n"
	f["root/sys/bus/pci/drivers/mlx5_core/.keep"] = ""
	f["root/sys/bus/pci/drivers/pcieport/.keep"] = ""
	inboxSysfs(f)

	guid := nldev.GUID(parseGUID(inboxGUID))
	nl := nltest.Model{
		Devices: []nldev.Device{{Index: 0, Name: "mlx5_0", NumPorts: 1, FWVersion: inboxFW, NodeGUID: guid, SysImageGUID: guid,
			NodeType: 1, Protocol: "roce", HasDIM: true}},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp,
			NetdevIndex: 4, NetdevName: inboxNetdev}},
		QPs: []nldev.QP{{DevIndex: 0, Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}},
		CQs: []nldev.CQ{{DevIndex: 0, CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, HasDIM: true, KernName: "ib_core"}},
	}.Conn()
	for _, req := range []host.Request{nldev.DevicesRequest(), nldev.ResSummaryRequest(), nldev.PortsRequest(0),
		nldev.QPsRequest(0), nldev.CQsRequest(0), nldev.MRsRequest(0)} {
		b, err := nl.Exchange(req)
		if err != nil {
			panic(err)
		}
		f["netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}

	h := devlink.PCI(inboxBDF)
	dm := dltest.Model{Family: devlinkFamily, Devices: []devlink.Handle{h},
		Infos: []devlink.Info{{Handle: h, Driver: "mlx5_core", Serial: "MT2235X01234",
			Fixed:   []devlink.Version{{Name: "fw.psid", Value: inboxPSID}},
			Running: []devlink.Version{{Name: "fw.version", Value: inboxFW}, {Name: "fw", Value: inboxFW}},
			Stored:  []devlink.Version{{Name: "fw.version", Value: inboxFW}, {Name: "fw", Value: inboxFW}}}},
		Reporters: []devlink.Reporter{
			{Handle: h, Name: "fw", AutoDump: true, HasAutoDump: true},
			{Handle: h, Name: "fw_fatal", GracePeriod: 60000, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true},
			{Handle: h, Name: "vnic", AutoDump: true, HasAutoDump: true},
			{Handle: h, Port: 65535, HasPort: true, Name: "tx", GracePeriod: 500, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true},
			{Handle: h, Port: 65535, HasPort: true, Name: "rx", GracePeriod: 500, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true}},
		Diagnoses: []dltest.Diagnosis{{Handle: h, Reporter: "vnic", Object: vnicCounters(0)}},
	}
	dl := dm.Conn()
	for _, req := range []host.Request{devlink.FamilyRequest(devlink.FamilyName), devlink.DevicesRequest(devlinkFamily),
		devlink.ReportersRequest(devlinkFamily), devlink.InfoRequest(devlinkFamily, h), devlink.DiagnoseRequest(devlinkFamily, h, "vnic")} {
		b, err := dl.Exchange(req)
		if err != nil {
			panic(err)
		}
		f["devlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	return f
}

// aerUncorZero is an aer_dev_fatal or aer_dev_nonfatal file with no error: the names of
// aer_uncorrectable_error_string (drivers/pci/pcie/aer.c) and the total line.
func aerUncorZero(total string) string {
	var b strings.Builder
	for _, n := range []string{"Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF", "MalfTLP",
		"ECRC", "UnsupReq", "ACSViol", "UncorrIntErr", "BlockedTLP", "AtomicOpBlocked", "TLPBlockedErr", "PoisonTLPBlocked"} {
		b.WriteString(n + " 0\n")
	}
	return b.String() + total + " 0\n"
}

func inboxSysfs(f map[string]string) {
	rpDir := "sys/devices/pci0000:3a/" + inboxRootPort
	pciDir := rpDir + "/" + inboxBDF
	for k, v := range map[string]string{"vendor": "0x8086\n", "device": "0x352a\n", "class": "0x060400\n", "numa_node": "0\n",
		"current_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "16\n", "max_link_speed": "32.0 GT/s PCIe\n", "max_link_width": "16\n",
		"aer_dev_correctable": aerZero, "aer_dev_nonfatal": aerUncorZero("TOTAL_ERR_NONFATAL"), "aer_dev_fatal": aerUncorZero("TOTAL_ERR_FATAL"),
		"aer_rootport_total_err_cor": "0\n", "aer_rootport_total_err_nonfatal": "0\n", "aer_rootport_total_err_fatal": "0\n"} {
		f["root/"+rpDir+"/"+k] = v
	}
	f["root/"+rpDir+"/driver -> ../../../bus/pci/drivers/pcieport"] = ""
	f["root/sys/bus/pci/devices/"+inboxRootPort+" -> ../../../"+strings.TrimPrefix(rpDir, "sys/")] = ""
	for k, v := range map[string]string{"vendor": "0x15b3\n", "device": "0x101d\n", "class": "0x020000\n", "numa_node": "0\n",
		"current_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "16\n", "max_link_speed": "16.0 GT/s PCIe\n", "max_link_width": "16\n",
		"aer_dev_correctable": aerZero, "aer_dev_nonfatal": aerUncorZero("TOTAL_ERR_NONFATAL"), "aer_dev_fatal": aerUncorZero("TOTAL_ERR_FATAL")} {
		f["root/"+pciDir+"/"+k] = v
	}
	for n := 0; n < 5; n++ {
		f[fmt.Sprintf("root/%s/msi_irqs/%d", pciDir, 100+n)] = "msix\n"
	}
	f["root/"+pciDir+"/driver -> ../../../../bus/pci/drivers/mlx5_core"] = ""
	f["root/sys/bus/pci/devices/"+inboxBDF+" -> ../../../"+strings.TrimPrefix(pciDir, "sys/")] = ""

	nd := pciDir + "/net/" + inboxNetdev
	for k, v := range map[string]string{"carrier": "1\n", "mtu": "9000\n", "operstate": "up\n", "speed": "100000\n",
		"statistics/rx_crc_errors": "0\n", "statistics/rx_dropped": "0\n", "statistics/rx_errors": "0\n",
		"statistics/tx_dropped": "0\n", "statistics/tx_errors": "0\n"} {
		f["root/"+nd+"/"+k] = v
	}
	f["root/sys/class/net/"+inboxNetdev+" -> ../../"+strings.TrimPrefix(nd, "sys/")] = ""

	ib := pciDir + "/infiniband/mlx5_0"
	f["root/sys/class/infiniband/mlx5_0 -> ../../"+strings.TrimPrefix(ib, "sys/")] = ""
	f["root/"+ib+"/device -> ../../../"+inboxBDF] = ""
	port := ib + "/ports/1/"
	for k, v := range map[string]string{"node_type": "1: CA\n", "fw_ver": inboxFW + "\n", "board_id": inboxPSID + "\n", "hca_type": "MT4125\n",
		"node_guid": inboxGUID + "\n"} {
		f["root/"+ib+"/"+k] = v
	}
	for k, v := range map[string]string{"state": "4: ACTIVE\n", "phys_state": "5: LinkUp\n", "rate": "100 Gb/sec (4X EDR)\n",
		"link_layer": "Ethernet\n", "cap_mask": "0x00010000\n", "lid": "0x0\n", "sm_lid": "0x0\n",
		"gids/0": inboxLLGID + "\n", "gids/1": inboxLLGID + "\n", "gids/2": inboxIPGID + "\n", "gids/3": inboxIPGID + "\n",
		"gid_attrs/types/0": "IB/RoCE v1\n", "gid_attrs/types/1": "RoCE v2\n", "gid_attrs/types/2": "IB/RoCE v1\n", "gid_attrs/types/3": "RoCE v2\n",
		"gid_attrs/ndevs/0": inboxNetdev + "\n", "gid_attrs/ndevs/1": inboxNetdev + "\n", "gid_attrs/ndevs/2": inboxNetdev + "\n",
		"gid_attrs/ndevs/3": inboxNetdev + "\n"} {
		f["root/"+port+k] = v
	}
	for _, k := range []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "local_link_integrity_errors",
		"port_rcv_errors", "port_xmit_discards", "symbol_error", "port_rcv_data", "port_xmit_data"} {
		f["root/"+port+"counters/"+k] = "0\n"
	}
	for _, k := range []string{"implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent", "out_of_sequence", "packet_seq_err", "req_cqe_error",
		"resp_cqe_error", "rnr_nak_retry_err", "rp_cnp_handled", "lifespan"} {
		f["root/"+port+"hw_counters/"+k] = "0\n"
	}
	f["root/sys/class/infiniband_verbs/uverbs0 -> ../../"+strings.TrimPrefix(pciDir, "sys/")+"/infiniband_verbs/uverbs0"] = ""
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/ibdev"] = "mlx5_0\n"
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/dev"] = "231:192\n"
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/abi_version"] = "1\n"
}

func TestInboxFixture(t *testing.T) {
	checktest.Generated(t, inboxFixture, checktest.Txtar(checktest.GeneratedBy(t, inboxFixture)+inboxComment, inboxFixtureFiles(t)))
}
