package firmware_test

// The synthetic fixture fw-devlink (two ConnectX-7 PFs, one with a flashed-but-inactive firmware
// and CQ overruns counted by the firmware) is generated here: its netlink and devlink replies are
// encoded by internal/nldev/nltest and internal/devlink/dltest, so that the bytes are exactly what
// the decoders read from a kernel. The normal test run checks that the committed snapshot.txtar
// is what this generator writes; regenerate with
//
//	go test ./checks/firmware -run TestDevlinkFixture -gen

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

const fixtureName = "fw-devlink"

// devlinkFamily is the id the recorded kernel gave the devlink family; any value above nlctrl's
// 0x10 is what a kernel hands out, and replay uses the recorded one.
const devlinkFamily = 0x1b

type card struct {
	name, rootPort, bdf, guid string
	running, stored           string
	index                     uint32
	irq                       int
	vnic                      devlink.Object
	fwErrors                  uint64
}

func vnicCounters(cqOverrun uint32) devlink.Object {
	// diag/reporter_vnic.c: one "vNIC env counters" pair holding u32 counters and the u64
	// nic_receive_steering_discard, in this order.
	return devlink.Object{{Name: "vNIC env counters", Value: devlink.Object{
		{Name: "total_error_queues", Value: uint32(0)},
		{Name: "send_queue_priority_update_flow", Value: uint32(0)},
		{Name: "comp_eq_overrun", Value: uint32(0)},
		{Name: "async_eq_overrun", Value: uint32(0)},
		{Name: "cq_overrun", Value: cqOverrun},
		{Name: "invalid_command", Value: uint32(0)},
		{Name: "quota_exceeded_command", Value: uint32(0)},
		{Name: "nic_receive_steering_discard", Value: uint64(0)},
	}}}
}

func cards() []card {
	return []card{
		{name: "mlx5_0", rootPort: "0000:18:01.0", bdf: "0000:19:00.0", guid: "b8ce:f603:00a1:b200", running: "28.39.1002", stored: "28.41.1000",
			index: 0, irq: 100, vnic: vnicCounters(3), fwErrors: 2},
		{name: "mlx5_1", rootPort: "0000:98:01.0", bdf: "0000:99:00.0", guid: "b8ce:f603:00a1:b300", running: "28.41.1000", stored: "28.41.1000",
			index: 1, irq: 110, vnic: vnicCounters(0)},
	}
}

// comment follows checktest.GeneratedBy's opening.
const comment = `No devlink device exists in the lab.
Two ConnectX-7 PFs under MLNX_OFED 23.10: mlx5_0 runs 28.39.1002 while 28.41.1000 is flashed
(stored) and waits for a reset; mlx5_1 runs and stores 28.41.1000. The firmware of mlx5_0
counted 3 CQ overruns (vnic cq_overrun) and its fw health reporter counted 2 errors.
Sources:
- devlink/: generic netlink replies encoded by internal/devlink/dltest as net/devlink lays them
  out; ids from include/uapi/linux/devlink.h (enum devlink_command, enum devlink_attr) and
  include/uapi/linux/genetlink.h: family "devlink" (resolved with CTRL_CMD_GETFAMILY=3 on nlctrl
  GENL_ID_CTRL 0x10, CTRL_ATTR_FAMILY_ID=1, id 0x1b here), DEVLINK_CMD_GET=1, INFO_GET=51,
  HEALTH_REPORTER_GET=52, HEALTH_REPORTER_DIAGNOSE=55; BUS_NAME=1 "pci", DEV_NAME=2,
  PORT_INDEX=3; INFO_DRIVER_NAME=98, INFO_SERIAL_NUMBER=99, INFO_VERSION_FIXED=100, _RUNNING=101,
  _STORED=102, _NAME=103, _VALUE=104; HEALTH_REPORTER=114, _NAME=115, _STATE=116 (0 healthy),
  _ERR_COUNT=117, _RECOVER_COUNT=118, _GRACEFUL_PERIOD=120, _AUTO_RECOVER=121, _AUTO_DUMP=141;
  FMSG=106, OBJ_NEST_START=107, PAIR_NEST_START=108, NEST_END=110, OBJ_NAME=111,
  OBJ_VALUE_TYPE=112 (NLA_U32=3, NLA_U64=4 of include/net/netlink.h), OBJ_VALUE_DATA=113.
- devlink info of an mlx5 PF (drivers/net/ethernet/mellanox/mlx5/core/devlink.c,
  mlx5_devlink_info_get; Documentation/networking/devlink/mlx5.rst): fixed "fw.psid" = board_id,
  running and stored "fw.version" and "fw" ("%d.%d.%04d"); stored = the pending image.
- reporters (drivers/net/ethernet/mellanox/mlx5/core/health.c, en/reporter_tx.c,
  en/reporter_rx.c, diag/reporter_vnic.c; Documentation/networking/devlink/mlx5.rst): device
  reporters fw (no recover: no grace period), fw_fatal (grace 60000 ms, auto recover), vnic
  (diagnose only: total_error_queues, send_queue_priority_update_flow, comp_eq_overrun,
  async_eq_overrun, cq_overrun, invalid_command, quota_exceeded_command,
  nic_receive_steering_discard in one "vNIC env counters" object); port reporters tx and rx
  (grace 500 ms) on devlink port 65535, the uplink vport 0xffff (MLX5_VPORT_UPLINK) of vhca 0.
- netlink/: RDMA netlink replies encoded by internal/nldev/nltest (GSI QP1 and the [ib_core] MAD CQ
  of each device, as in internal/nldev/testdata/rxe0-6.1).
- sysfs: as in the fw-drift fixture: formats of drivers/infiniband/core/sysfs.c and
  drivers/infiniband/hw/mlx5/main.c (fw_ver "%d.%d.%04d"; hca_type "MT%d" of the decimal PCI
  device id, MT4129 = 0x1021 ConnectX-7 in mlx5_core_pci_table); PSID MT_0000000838 and fw
  28.41.1000 as on a ConnectX-7 in leptonai/gpud's InfiniBand testdata; 28.39.1002 is the
  firmware of MLNX_OFED 23.10-0.5.5.0 (NVIDIA MLNX_OFED Documentation v23.10-0.5.5.0, "Legal
  Notices and 3rd Party Licenses"); /sys/module/mlx5_core/version "23.10-1.1.9" is the OFED
  driver's version (MLNX_OFED 23.10-1.1.9.0 LTS).
`

func fixtureFiles(t *testing.T) map[string]string {
	f := map[string]string{}
	cs := cards()
	f["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: two ConnectX-7 PFs; mlx5_0 has firmware 28.41.1000 flashed but runs 28.39.1002, and its firmware counted 3 CQ overruns and 2 fw reporter errors",
		[]string{"include/uapi/linux/devlink.h", "drivers/net/ethernet/mellanox/mlx5/core/devlink.c",
			"Documentation/networking/devlink/mlx5.rst", "drivers/infiniband/core/sysfs.c", "drivers/infiniband/hw/mlx5/main.c",
			"NVIDIA MLNX_OFED Documentation v23.10-0.5.5.0, Legal Notices and 3rd Party Licenses", checktest.Generator(t)}))
	facts := host.Facts{Hostname: "synthetic-1", KernelRelease: "6.8.0-45-generic", EUID: 0, MemlockSoft: ^uint64(0), MemlockHard: ^uint64(0),
		Libraries: []host.Library{{Name: "libibverbs.so.1", Path: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"},
			{Name: "libmlx5-rdmav34.so", Path: "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so"}}}
	var kmsg strings.Builder
	var irqs strings.Builder
	irqs.WriteString("            CPU0       CPU1       CPU2       CPU3\n")
	var devs []nldev.Device
	var ports []nldev.Port
	var qps []nldev.QP
	var cqs []nldev.CQ
	dm := dltest.Model{Family: devlinkFamily}
	for i, c := range cs {
		facts.CharDevs = append(facts.CharDevs, host.CharDev{Path: fmt.Sprintf("/dev/infiniband/uverbs%d", i), Major: 231, Minor: uint32(192 + i), Mode: "-rw-rw-rw-"})
		facts.VerbsDevices = append(facts.VerbsDevices, host.VerbsDevice{Name: c.name, MaxQP: 131072, MaxQPWR: 32768, MaxCQ: 16777216,
			MaxCQE: 4194303, MaxSRQ: 8388608, MaxMR: 16777216, MaxPD: 8388608, NumCompVectors: 4})
		fmt.Fprintf(&kmsg, "6,%d,%d,-;mlx5_core %s: firmware version: %s\n SUBSYSTEM=pci\n DEVICE=+pci:%s\n", 100+i, 4100000+i*1000, c.bdf, c.running, c.bdf)
		for n := 0; n < 5; n++ {
			name := fmt.Sprintf("mlx5_comp%d", n-1)
			if n == 0 {
				name = "mlx5_async0"
			}
			fmt.Fprintf(&irqs, " %d:          3          7          0          1  IR-PCI-MSIX-%s    %d-edge      %s@pci:%s\n", c.irq+n, c.bdf, n, name, c.bdf)
		}
		guid := parseGUID(c.guid)
		devs = append(devs, nldev.Device{Index: c.index, Name: c.name, NumPorts: 1, FWVersion: c.running, NodeGUID: nldev.GUID(guid),
			SysImageGUID: nldev.GUID(guid), NodeType: 1, Protocol: "ib", HasDIM: true})
		ports = append(ports, nldev.Port{DevIndex: c.index, Index: 1, State: nldev.PortStateActive, PhysState: nldev.PortPhysStateLinkUp,
			HasIB: true, LID: 0x10 + c.index, SMLID: 1, SubnetPrefix: 0xfe80000000000000})
		qps = append(qps, nldev.QP{DevIndex: c.index, Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"})
		cqs = append(cqs, nldev.CQ{DevIndex: c.index, CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, HasDIM: true, KernName: "ib_core"})

		h := devlink.PCI(c.bdf)
		dm.Devices = append(dm.Devices, h)
		dm.Infos = append(dm.Infos, devlink.Info{Handle: h, Driver: "mlx5_core", Serial: fmt.Sprintf("MT2244X0%04d", 1234+i),
			Fixed:   []devlink.Version{{Name: "fw.psid", Value: "MT_0000000838"}},
			Running: []devlink.Version{{Name: "fw.version", Value: c.running}, {Name: "fw", Value: c.running}},
			Stored:  []devlink.Version{{Name: "fw.version", Value: c.stored}, {Name: "fw", Value: c.stored}}})
		dm.Reporters = append(dm.Reporters,
			devlink.Reporter{Handle: h, Name: "fw", ErrCount: c.fwErrors, AutoDump: true, HasAutoDump: true},
			devlink.Reporter{Handle: h, Name: "fw_fatal", GracePeriod: 60000, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true},
			devlink.Reporter{Handle: h, Name: "vnic", AutoDump: true, HasAutoDump: true},
			devlink.Reporter{Handle: h, Port: 65535, HasPort: true, Name: "tx", GracePeriod: 500, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true},
			devlink.Reporter{Handle: h, Port: 65535, HasPort: true, Name: "rx", GracePeriod: 500, HasGracePeriod: true, AutoRecover: true, AutoDump: true, HasAutoDump: true})
		dm.Diagnoses = append(dm.Diagnoses, dltest.Diagnosis{Handle: h, Reporter: "vnic", Object: c.vnic})
		sysfsCard(f, c, i)
	}
	f["facts.json"] = checktest.JSON(facts)
	f["kmsg"] = kmsg.String()
	f["root/proc/interrupts"] = irqs.String() + " NMI:          0          0          0          0   Non-maskable interrupts\n"

	nl := nltest.Model{Devices: devs, Ports: ports, QPs: qps, CQs: cqs}.Conn()
	reqs := []host.Request{nldev.DevicesRequest(), nldev.ResSummaryRequest()}
	for _, c := range cs {
		reqs = append(reqs, nldev.PortsRequest(c.index), nldev.QPsRequest(c.index), nldev.CQsRequest(c.index), nldev.MRsRequest(c.index))
	}
	for _, req := range reqs {
		b, err := nl.Exchange(req)
		if err != nil {
			panic(err)
		}
		f["netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	// The devlink answers are exactly those the recorder asks (snapshot.recordDevlink), replayed
	// through the same keys.
	dl := dm.Conn()
	dreqs := []host.Request{devlink.FamilyRequest(devlink.FamilyName), devlink.DevicesRequest(devlinkFamily), devlink.ReportersRequest(devlinkFamily)}
	for _, h := range dm.Devices {
		dreqs = append(dreqs, devlink.InfoRequest(devlinkFamily, h), devlink.DiagnoseRequest(devlinkFamily, h, "vnic"))
	}
	for _, req := range dreqs {
		b, err := dl.Exchange(req)
		if err != nil {
			panic(err)
		}
		f["devlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}

	f["root/proc/modules"] = "mlx5_ib 479232 0 - Live 0x0000000000000000 (OE)\n" +
		"ib_uverbs 167936 1 mlx5_ib, Live 0x0000000000000000 (OE)\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000 (OE)\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000 (OE)\n" +
		"iw_cm 57344 1 rdma_cm, Live 0x0000000000000000 (OE)\n" +
		"ib_cm 131072 1 rdma_cm, Live 0x0000000000000000 (OE)\n" +
		"ib_umad 40960 0 - Live 0x0000000000000000 (OE)\n" +
		"ib_core 458752 8 rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm,mlx5_ib, Live 0x0000000000000000 (OE)\n" +
		"mlx5_core 2326528 1 mlx5_ib, Live 0x0000000000000000 (OE)\n" +
		"mlx_compat 16384 8 mlx5_ib,mlx5_core,ib_core, Live 0x0000000000000000 (OE)\n"
	f["root/sys/module/mlx5_core/version"] = "23.10-1.1.9\n"
	f["root/proc/sys/kernel/osrelease"] = "6.8.0-45-generic\n"
	f["root/proc/sys/kernel/hostname"] = "synthetic-1\n"
	f["root/proc/uptime"] = "3600.00 14000.00\n"
	f["root/sys/class/infiniband_verbs/abi_version"] = "6\n"
	f["root/etc/libibverbs.d/mlx5.driver"] = "driver mlx5\n"
	f["root/sys/bus/pci/drivers/mlx5_core/.keep"] = ""
	f["root/sys/bus/pci/drivers/pcieport/.keep"] = ""
	return f
}

const aerZero = "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n"

func sysfsCard(f map[string]string, c card, i int) {
	rpDir := "sys/devices/pci0000:" + c.rootPort[5:7] + "/" + c.rootPort
	pciDir := rpDir + "/" + c.bdf
	for k, v := range map[string]string{"vendor": "0x8086\n", "device": "0x352a\n", "class": "0x060400\n", "numa_node": "0\n",
		"current_link_speed": "32.0 GT/s PCIe\n", "current_link_width": "16\n", "max_link_speed": "32.0 GT/s PCIe\n", "max_link_width": "16\n",
		"aer_dev_correctable": aerZero, "aer_dev_nonfatal": aerZero, "aer_dev_fatal": aerZero,
		"aer_rootport_total_err_cor": "0\n", "aer_rootport_total_err_nonfatal": "0\n", "aer_rootport_total_err_fatal": "0\n"} {
		f["root/"+rpDir+"/"+k] = v
	}
	f["root/"+rpDir+"/driver -> ../../../bus/pci/drivers/pcieport"] = ""
	f["root/sys/bus/pci/devices/"+c.rootPort+" -> ../../../"+rpDir] = ""
	for k, v := range map[string]string{"vendor": "0x15b3\n", "device": "0x1021\n", "class": "0x020700\n", "numa_node": "0\n",
		"current_link_speed": "32.0 GT/s PCIe\n", "current_link_width": "16\n", "max_link_speed": "32.0 GT/s PCIe\n", "max_link_width": "16\n",
		"aer_dev_correctable": aerZero, "aer_dev_nonfatal": aerZero, "aer_dev_fatal": aerZero} {
		f["root/"+pciDir+"/"+k] = v
	}
	for n := 0; n < 5; n++ {
		f[fmt.Sprintf("root/%s/msi_irqs/%d", pciDir, c.irq+n)] = "msix\n"
	}
	f["root/"+pciDir+"/driver -> ../../../../bus/pci/drivers/mlx5_core"] = ""
	f["root/sys/bus/pci/devices/"+c.bdf+" -> ../../../"+pciDir] = ""
	ib := pciDir + "/infiniband/" + c.name
	f["root/sys/class/infiniband/"+c.name+" -> ../../"+strings.TrimPrefix(ib, "sys/")] = ""
	f["root/"+ib+"/device -> ../../../"+c.bdf] = ""
	for k, v := range map[string]string{"node_type": "1: CA\n", "fw_ver": c.running + "\n", "board_id": "MT_0000000838\n", "hca_type": "MT4129\n",
		"node_guid": c.guid + "\n", "ports/1/state": "4: ACTIVE\n", "ports/1/rate": "400 Gb/sec (4X NDR)\n", "ports/1/link_layer": "InfiniBand\n",
		"ports/1/phys_state": "5: LinkUp\n", "ports/1/cap_mask": "0xa751e84a\n", "ports/1/lid": fmt.Sprintf("0x%x\n", 0x10+i), "ports/1/sm_lid": "0x1\n",
		"ports/1/gids/0": "fe80:0000:0000:0000:" + c.guid + "\n"} {
		f["root/"+ib+"/"+k] = v
	}
	for _, k := range []string{"VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery", "local_link_integrity_errors",
		"port_rcv_errors", "port_xmit_discards", "symbol_error", "port_rcv_data", "port_xmit_data"} {
		f["root/"+ib+"/ports/1/counters/"+k] = "0\n"
	}
	for _, k := range []string{"implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent", "out_of_sequence", "packet_seq_err", "req_cqe_error",
		"resp_cqe_error", "rnr_nak_retry_err", "rp_cnp_handled", "lifespan"} {
		f["root/"+ib+"/ports/1/hw_counters/"+k] = "0\n"
	}
	uv := fmt.Sprintf("uverbs%d", i)
	f["root/sys/class/infiniband_verbs/"+uv+" -> ../../"+strings.TrimPrefix(pciDir, "sys/")+"/infiniband_verbs/"+uv] = ""
	f["root/"+pciDir+"/infiniband_verbs/"+uv+"/ibdev"] = c.name + "\n"
	f["root/"+pciDir+"/infiniband_verbs/"+uv+"/dev"] = fmt.Sprintf("231:%d\n", 192+i)
	f["root/"+pciDir+"/infiniband_verbs/"+uv+"/abi_version"] = "1\n"
}

func parseGUID(s string) uint64 {
	var v uint64
	for _, c := range strings.ReplaceAll(s, ":", "") {
		v <<= 4
		switch {
		case c >= '0' && c <= '9':
			v |= uint64(c - '0')
		default:
			v |= uint64(c-'a') + 10
		}
	}
	return v
}

func TestDevlinkFixture(t *testing.T) {
	checktest.Generated(t, fixtureName, checktest.Txtar(checktest.GeneratedBy(t, fixtureName)+comment, fixtureFiles(t)))
}
