package qp_test

// The synthetic qp/cq fixtures (hardware the lab cannot emulate: an mlx5 HCA, a device near its
// max_qp, a logged mlx5 CQ error) are generated here from nldev values through nltest, so that
// the netlink bytes are exactly what the decoder reads from a kernel. The normal test run checks
// that the committed snapshot.txtar files are what this generator writes; regenerate with
//
//	go test ./checks/qp -run TestSyntheticFixtures -gen

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/checks/internal/rawctx"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

const (
	bdf      = "0000:3b:00.0"
	rootPort = "0000:3a:00.0"
	rpDir    = "sys/devices/pci0000:00/" + rootPort
	pciDir   = rpDir + "/" + bdf
)

// sources are cited in every synthetic fixture's meta.json.
var sources = []string{
	"netlink replies encoded by internal/nldev/nltest as drivers/infiniband/core/nldev.c lays them out (fill_res_qp_entry, fill_res_cq_entry, res summary); enum values from include/uapi/rdma/rdma_netlink.h and include/rdma/ib_verbs.h (ib_qp_state, ib_qp_type, ib_poll_context)",
	"GSI QP1 owned by [ib_core] in RTS and the [ib_core] MAD CQ (cqe 1023, WORKQUEUE) as in the real rxe0 replies of internal/nldev/testdata/rxe0-6.1",
	"PCI ids 15b3:101d (Mellanox ConnectX-6 Dx) from the PCI ID database; mlx5 IRQ names mlx5_async0/mlx5_compN@pci:<bdf> as drivers/net/ethernet/mellanox/mlx5/core/pci_irq.c names them",
	"kernel log line formats from drivers/net/ethernet/mellanox/mlx5/core/eq.c (\"CQ error on CQN 0x%x, syndrome 0x%x\") with the mlx5_core_err prefix \"%s:%d:(pid %d): \" (mlx5_core.h)",
}

type synth struct {
	name, desc string
	qps        []nldev.QP
	cqs        []nldev.CQ
	summaryQP  uint64 // 0: derived from qps
	maxQP      int64
	kmsg       string
	comms      map[uint32]string
	// noCompVectors: the driver registered no completion EQ (verbs num_comp_vectors 0, only the
	// async vector in /proc/interrupts and msi_irqs).
	noCompVectors bool
	// rawQPs and rawCQs, when set, are the raw contexts of qps and cqs (same order), encoded
	// with rawLayout as the RES_{QP,CQ}_GET_RAW replies.
	rawQPs    []rawctx.QP
	rawCQs    []rawctx.CQ
	rawLayout rawctx.Layout
	// unprivileged: recorded by a user whom kernel.dmesg_restrict=1 keeps from /dev/kmsg, so the
	// snapshot holds no kernel log and meta.json says why, as `rdmadiag record` writes it.
	unprivileged bool
}

func mlx5Device() nldev.Device {
	return nldev.Device{Index: 0, Name: "mlx5_0", NumPorts: 1, CapFlags: 0, FWVersion: "22.39.1002",
		NodeGUID: 0xb8cef60300a1b2c3, SysImageGUID: 0xb8cef60300a1b2c3, NodeType: 1, Protocol: "roce", HasDIM: true}
}

func kernCQ() nldev.CQ {
	return nldev.CQ{CQN: 0, CQE: 1023, Users: 2, PollCtx: 2, HasPollCtx: true, HasDIM: true, KernName: "ib_core"}
}

func userQPs(from, n uint32, state uint8, pid uint32) []nldev.QP {
	out := make([]nldev.QP, n)
	for i := range out {
		out[i] = nldev.QP{Port: 1, LQPN: from + uint32(i), Type: nldev.QPTypeRC, State: state, PID: pid,
			PDN: 3, HasPDN: true, RQPN: from + uint32(i) + 1000, HasRQPN: true, HasRQPSN: true, HasPathMig: true}
	}
	return out
}

func gsi() nldev.QP {
	return nldev.QP{Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}
}

func compVectors(s synth) int {
	if s.noCompVectors {
		return 0
	}
	return 4
}

func synthetics() []synth {
	exhausted := append([]nldev.QP{gsi()}, userQPs(0x100, 484, nldev.QPStateRTS, 4242)...)
	return []synth{
		{
			name: "qp-exhausted",
			desc: "Synthetic: mlx5_0 with 485 QPs against a max_qp of 500 (97 %): new QPs are about to fail with ENOMEM. " +
				"max_qp 500 is deliberately small so that the dump stays reviewable (a real ConnectX reports about 2^17-2^18 and " +
				"would need a dump of that many QPs); the judgement depends only on the ratio.",
			qps: exhausted, cqs: []nldev.CQ{kernCQ(), {CQN: 1, CQE: 4095, Users: 484, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			maxQP: 500, comms: map[uint32]string{4242: "trainer"},
		},
		{
			name: "qp-kernel-err",
			desc: "Synthetic: mlx5_0 with 430 QPs against a max_qp of 500 (86 %, between the 80 % warning and the 95 % " +
				"critical thresholds), and two kernel-owned QPs in ERR: the GSI QP of ib_core (QP1, which carries the port's " +
				"management traffic) and an rdma_cm QP (an NVMe-oF or RDS connection, say), next to 427 healthy RTS QPs of " +
				"pid 4242. Kernel-owned QPs in ERR are judged more serious than an application's: no process will recreate them.",
			qps: append(append([]nldev.QP{
				{Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateErr, KernName: "ib_core"},
				{Port: 1, LQPN: 0x90, Type: nldev.QPTypeRC, State: nldev.QPStateErr, KernName: "rdma_cm", RQPN: 0x1090, HasRQPN: true, HasRQPSN: true, HasPathMig: true},
			}, userQPs(0x100, 427, nldev.QPStateRTS, 4242)...), nldev.QP{Port: 1, LQPN: 0x91, Type: nldev.QPTypeRC, State: nldev.QPStateRTS, KernName: "rdma_cm", RQPN: 0x1091, HasRQPN: true, HasRQPSN: true, HasPathMig: true}),
			cqs:   []nldev.CQ{kernCQ(), {CQN: 1, CQE: 4095, Users: 427, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			maxQP: 500, comms: map[uint32]string{4242: "trainer"},
		},
		{
			name: "cq-no-vectors",
			desc: "Synthetic: mlx5_0 registered with no completion EQ: ibv_open_device reports num_comp_vectors 0 and " +
				"/proc/interrupts and msi_irqs hold only the async vector (mlx5_async0), as when MSI-X allocation fails at " +
				"probe. No CQ can get completion events; applications that wait for events hang.",
			qps:           append([]nldev.QP{gsi()}, userQPs(0x100, 2, nldev.QPStateRTS, 4242)...),
			cqs:           []nldev.CQ{kernCQ(), {CQN: 1, CQE: 255, Users: 4, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			maxQP:         262144,
			comms:         map[uint32]string{4242: "trainer"},
			noCompVectors: true,
		},
		{
			name: "cq-depth-128",
			desc: "Synthetic: the worked example of README.md \"How CQ depth is judged\". pid 4242 (trainer) has a CQ of " +
				"depth 128 shared by 2 RC QPs; with --wr-concurrency 256 (args) it must be critical with a recommended depth " +
				"of 512. (mlx5 itself reports 2^n-1 depths; 128 is a round example value.)",
			qps:   append([]nldev.QP{gsi()}, userQPs(0x100, 2, nldev.QPStateRTS, 4242)...),
			cqs:   []nldev.CQ{kernCQ(), {CQN: 1, CQE: 128, Users: 4, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			maxQP: 262144, comms: map[uint32]string{4242: "trainer"},
		},
		{
			name: "cq-raw-mlx5",
			desc: "Synthetic: mlx5_0 read with --raw-contexts (args). pid 4242 (trainer) has three CQs. cqe 255 (256 entries) " +
				"is shared by 2 RC QPs whose receive queues alone hold 512 work requests: a warning (an overrun if the " +
				"application fills its queues) with a recommended depth of 512. cqe 511 serves one QP whose receive queue " +
				"(128) fits but whose send queue of 512 WQE blocks may not: info, since a block count is only an upper bound " +
				"on work requests. cqe 1023 serves one QP of 256 receive + 512 send blocks and is fine. The [ib_core] MAD CQ " +
				"is a kernel consumer's and is not judged. The raw contexts are mlx5 resource-dump streams encoded by " +
				"checks/internal/rawctx with the PRM query-output layout: where the PRM payload starts inside the segment is not " +
				"in any public source (see the rawctx package doc), which is why the check accepts a layout only when every " +
				"CQ's raw depth equals the kernel's cqe+1 and every QP's raw number and state match its kernel ones, as here.",
			qps: append([]nldev.QP{gsi()}, userQPs(0x100, 4, nldev.QPStateRTS, 4242)...),
			cqs: []nldev.CQ{kernCQ(), {CQN: 1, CQE: 255, Users: 4, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true},
				{CQN: 2, CQE: 1023, Users: 2, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true},
				{CQN: 3, CQE: 511, Users: 2, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			// ib_mad's GSI QP: send 128, receive 512 (mad_sendq_size/mad_recvq_size defaults,
			// drivers/infiniband/core/mad.c); mlx5 QPC state RTS = 3 (MLX5_QPC_STATE_RTS).
			rawQPs: []rawctx.QP{
				{Format: rawctx.FormatMLX5, State: 3, QPN: 1, HasQPN: true, SendCQ: 0x400, RecvCQ: 0x400, SQ: 128, SQBlocks: true, RQ: 512},
				{Format: rawctx.FormatMLX5, State: 3, QPN: 0x100, HasQPN: true, SendCQ: 0x401, RecvCQ: 0x401, SQ: 256, SQBlocks: true, RQ: 256},
				{Format: rawctx.FormatMLX5, State: 3, QPN: 0x101, HasQPN: true, SendCQ: 0x401, RecvCQ: 0x401, SQ: 256, SQBlocks: true, RQ: 256},
				{Format: rawctx.FormatMLX5, State: 3, QPN: 0x102, HasQPN: true, SendCQ: 0x402, RecvCQ: 0x402, SQ: 512, SQBlocks: true, RQ: 256},
				{Format: rawctx.FormatMLX5, State: 3, QPN: 0x103, HasQPN: true, SendCQ: 0x403, RecvCQ: 0x403, SQ: 512, SQBlocks: true, RQ: 128},
			},
			rawCQs: []rawctx.CQ{
				{Format: rawctx.FormatMLX5, CQN: 0x400, HasCQN: true, Depth: 1024},
				{Format: rawctx.FormatMLX5, CQN: 0x401, HasCQN: true, Depth: 256},
				{Format: rawctx.FormatMLX5, CQN: 0x402, HasCQN: true, Depth: 1024},
				{Format: rawctx.FormatMLX5, CQN: 0x403, HasCQN: true, Depth: 512},
			},
			rawLayout: rawctx.LayoutQueryOut,
			maxQP:     262144, comms: map[uint32]string{4242: "trainer"},
		},
		{
			name: "klog-unprivileged",
			desc: "Synthetic: a healthy mlx5_0 RoCE host recorded by a user (uid 1000) on a kernel with kernel.dmesg_restrict=1: " +
				"opening /dev/kmsg failed with EPERM (kernel/printk/printk.c check_syslog_permissions: without CAP_SYSLOG, " +
				"dmesg_restrict refuses SYSLOG_ACTION_READ_ALL), so the snapshot holds no kmsg and meta.json lists it as " +
				"unreadable with the error `rdmadiag record` reports. Everything else is as a root recording has it, so that " +
				"only the kernel log is missing. The kernel-log parts of driver.kernel_log, cq.errors, pcie.link, pcie.aer " +
				"and pcie.dma are skipped with a source limit (record as root) and the verdict is not unknown; args skip " +
				"firmware.version, which has no matrix row for this in-box ConnectX-6 Dx and would be unknown for that reason.",
			qps:   append([]nldev.QP{gsi()}, userQPs(0x100, 2, nldev.QPStateRTS, 4242)...),
			cqs:   []nldev.CQ{kernCQ(), {CQN: 1, CQE: 1023, Users: 4, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			maxQP: 262144, comms: map[uint32]string{4242: "trainer"},
			unprivileged: true,
		},
		{
			name: "cq-error-logged",
			desc: "Synthetic: mlx5 logged \"CQ error on CQN 0x407, syndrome 0x1\" (a CQ overrun) for pid 4242's CQ; the two QPs " +
				"completing into it went to ERR.",
			qps:   append([]nldev.QP{gsi()}, append(userQPs(0x100, 2, nldev.QPStateErr, 4242), userQPs(0x102, 1, nldev.QPStateRTS, 4242)...)...),
			cqs:   []nldev.CQ{kernCQ(), {CQN: 1, CQE: 255, Users: 4, PID: 4242, CtxN: 1, HasCtxN: true, HasDIM: true}},
			kmsg:  "3,1877,86400123456,-;mlx5_core " + bdf + ": cq_err_event_notifier:735:(pid 0): CQ error on CQN 0x407, syndrome 0x1\n SUBSYSTEM=pci\n DEVICE=+pci:" + bdf + "\n",
			maxQP: 262144, comms: map[uint32]string{4242: "trainer"},
		},
	}
}

func (s synth) files() map[string]string {
	f := map[string]string{}
	meta := checktest.Meta(s.desc, sources)
	meta["redacted"] = false
	if s.unprivileged {
		// The reason is the *os.PathError live.ReadKmsg returns for an EPERM open.
		meta["unreadable"] = []host.Unreadable{{Path: "kmsg", Reason: "open /dev/kmsg: operation not permitted"}}
	}
	f["meta.json"] = checktest.JSON(meta)
	facts := host.Facts{Hostname: "synthetic", KernelRelease: "6.1.0-56-amd64", EUID: 0, MemlockSoft: ^uint64(0), MemlockHard: ^uint64(0),
		CharDevs:     []host.CharDev{{Path: "/dev/infiniband/uverbs0", Major: 231, Minor: 192, Mode: "-rw-rw-rw-"}},
		Libraries:    []host.Library{{Name: "libibverbs.so.1", Path: "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"}, {Name: "libmlx5-rdmav34.so", Path: "/usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so"}},
		VerbsDevices: []host.VerbsDevice{{Name: "mlx5_0", MaxQP: s.maxQP, MaxQPWR: 32768, MaxCQ: 16777216, MaxCQE: 4194303, MaxSRQ: 8388608, MaxMR: 16777216, MaxPD: 8388608, NumCompVectors: compVectors(s)}}}
	if s.unprivileged {
		facts.EUID = 1000
	}
	f["facts.json"] = checktest.JSON(facts)
	if !s.unprivileged {
		f["kmsg"] = "6,1201,5012345,-;mlx5_core " + bdf + ": firmware version: 22.39.1002\n SUBSYSTEM=pci\n DEVICE=+pci:" + bdf + "\n" + s.kmsg
	}
	dev := mlx5Device()
	m := nltest.Model{Devices: []nldev.Device{dev},
		Ports: []nldev.Port{{DevIndex: 0, Index: 1, State: nldev.PortStateActive, PhysState: 5, NetdevIndex: 4, NetdevName: "ens1f0np0"}},
		QPs:   s.qps, CQs: s.cqs}
	if s.summaryQP != 0 {
		m.Summary = []nldev.ResSummary{{DevIndex: 0, DevName: dev.Name, Counts: map[string]uint64{"qp": s.summaryQP}}}
	}
	c := m.Conn()
	for _, req := range []host.Request{nldev.DevicesRequest(), nldev.ResSummaryRequest(), nldev.PortsRequest(0),
		nldev.QPsRequest(0), nldev.CQsRequest(0), nldev.MRsRequest(0)} {
		b, err := c.Exchange(req)
		if err != nil {
			panic(err)
		}
		f["netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	if s.rawQPs != nil {
		enc := func(objs int, one func(i int) ([]byte, error)) []nldev.Raw {
			out := make([]nldev.Raw, objs)
			for i := range out {
				b, err := one(i)
				if err != nil {
					panic(err)
				}
				out[i] = nldev.Raw{Data: b}
			}
			return out
		}
		qps := enc(len(s.rawQPs), func(i int) ([]byte, error) { return rawctx.EncodeQP(rawctx.MLX5, s.rawLayout, s.rawQPs[i]) })
		cqs := enc(len(s.rawCQs), func(i int) ([]byte, error) { return rawctx.EncodeCQ(rawctx.MLX5, s.rawLayout, s.rawCQs[i]) })
		f["netlink/"+nldev.QPsRawRequest(0).Key()+".bin.hex"] = checktest.HexLines(nltest.QPRawDump(0, dev.Name, qps))
		f["netlink/"+nldev.CQsRawRequest(0).Key()+".bin.hex"] = checktest.HexLines(nltest.CQRawDump(0, dev.Name, cqs))
	}
	for pid, comm := range s.comms {
		f[fmt.Sprintf("root/proc/%d/comm", pid)] = comm + "\n"
	}
	f["root/proc/sys/kernel/osrelease"] = "6.1.0-56-amd64\n"
	// The PCI function, its root port and the class links, as on a real host.
	ib := pciDir + "/infiniband/mlx5_0"
	for k, v := range map[string]string{
		"vendor": "0x15b3\n", "device": "0x101d\n", "class": "0x020000\n", "subsystem_vendor": "0x15b3\n",
		"subsystem_device": "0x0016\n", "numa_node": "0\n", "current_link_speed": "16.0 GT/s PCIe\n",
		"current_link_width": "16\n", "max_link_speed": "16.0 GT/s PCIe\n", "max_link_width": "16\n",
	} {
		f["root/"+pciDir+"/"+k] = v
	}
	irqs := []string{"120", "121", "122", "123", "124"}
	if s.noCompVectors {
		irqs = irqs[:1]
	}
	for _, irq := range irqs {
		f["root/"+pciDir+"/msi_irqs/"+irq] = "msix\n"
	}
	f["root/"+ib+"/node_type"] = "1: CA\n"
	f["root/"+ib+"/fw_ver"] = "22.39.1002\n"
	f["root/"+ib+"/node_guid"] = "b8ce:f603:00a1:b2c3\n"
	f["root/"+ib+"/ports/1/link_layer"] = "Ethernet\n"
	f["root/"+ib+"/ports/1/state"] = "4: ACTIVE\n"
	f["root/"+ib+"/ports/1/phys_state"] = "5: LinkUp\n"
	f["root/"+ib+"/device -> ../../../"+bdf] = ""
	f["root/"+pciDir+"/driver -> ../../../../bus/pci/drivers/mlx5_core"] = ""
	f["root/sys/bus/pci/drivers/mlx5_core/.keep"] = ""
	f["root/sys/class/infiniband/mlx5_0 -> ../../"+strings.TrimPrefix(ib, "sys/")] = ""
	f["root/sys/bus/pci/devices/"+bdf+" -> ../../../"+pciDir] = ""
	f["root/sys/bus/pci/devices/"+rootPort+" -> ../../../"+rpDir] = ""
	for k, v := range map[string]string{"vendor": "0x8086\n", "device": "0x2030\n", "class": "0x060400\n",
		"current_link_speed": "16.0 GT/s PCIe\n", "current_link_width": "16\n", "max_link_speed": "16.0 GT/s PCIe\n",
		"max_link_width": "16\n", "aer_dev_correctable": aerZero, "aer_dev_nonfatal": aerZero, "aer_dev_fatal": aerZero,
		"aer_rootport_total_err_cor": "0\n", "aer_rootport_total_err_fatal": "0\n", "aer_rootport_total_err_nonfatal": "0\n"} {
		f["root/"+rpDir+"/"+k] = v
	}
	f["root/"+rpDir+"/driver -> ../../../bus/pci/drivers/pcieport"] = ""
	for _, k := range []string{"aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal"} {
		f["root/"+pciDir+"/"+k] = aerZero
	}
	// The rest of a healthy RoCE host, so that the lower layers have nothing to say about it.
	f["root/proc/modules"] = "mlx5_ib 479232 0 - Live 0x0000000000000000\n" +
		"ib_uverbs 200704 2 rdma_ucm,mlx5_ib, Live 0x0000000000000000\n" +
		"ib_umad 45056 0 - Live 0x0000000000000000\n" +
		"rdma_ucm 32768 0 - Live 0x0000000000000000\n" +
		"rdma_cm 139264 1 rdma_ucm, Live 0x0000000000000000\n" +
		"iw_cm 61440 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_cm 139264 1 rdma_cm, Live 0x0000000000000000\n" +
		"ib_core 458752 8 rdma_ucm,ib_uverbs,ib_umad,rdma_cm,iw_cm,ib_cm,mlx5_ib, Live 0x0000000000000000\n" +
		"mlx5_core 2326528 1 mlx5_ib, Live 0x0000000000000000\n" +
		"mlxfw 36864 1 mlx5_core, Live 0x0000000000000000\n"
	f["root/proc/sys/kernel/hostname"] = "synthetic\n"
	f["root/proc/uptime"] = "86500.00 170000.00\n"
	f["root/etc/libibverbs.d/mlx5.driver"] = "driver mlx5\n"
	f["root/sys/class/infiniband_verbs/abi_version"] = "6\n"
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/abi_version"] = "1\n"
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/dev"] = "231:192\n"
	f["root/"+pciDir+"/infiniband_verbs/uverbs0/ibdev"] = "mlx5_0\n"
	f["root/sys/class/infiniband_verbs/uverbs0 -> ../../"+strings.TrimPrefix(pciDir, "sys/")+"/infiniband_verbs/uverbs0"] = ""
	nd := pciDir + "/net/ens1f0np0"
	for k, v := range map[string]string{"carrier": "1\n", "mtu": "4200\n", "operstate": "up\n", "speed": "100000\n"} {
		f["root/"+nd+"/"+k] = v
	}
	for _, k := range []string{"rx_crc_errors", "rx_dropped", "rx_errors", "tx_dropped", "tx_errors"} {
		f["root/"+nd+"/statistics/"+k] = "0\n"
	}
	f["root/sys/class/net/ens1f0np0 -> ../../"+strings.TrimPrefix(nd, "sys/")] = ""
	f["root/"+ib+"/ports/1/gids/0"] = "fe80:0000:0000:0000:bace:f6ff:fea1:b2c3\n"
	f["root/"+ib+"/ports/1/gids/1"] = "0000:0000:0000:0000:0000:ffff:0a00:0011\n"
	f["root/"+ib+"/ports/1/gid_attrs/types/0"] = "RoCE v2\n"
	f["root/"+ib+"/ports/1/gid_attrs/types/1"] = "RoCE v2\n"
	f["root/"+ib+"/ports/1/gid_attrs/ndevs/0"] = "ens1f0np0\n"
	f["root/"+ib+"/ports/1/gid_attrs/ndevs/1"] = "ens1f0np0\n"
	f["root/"+ib+"/ports/1/rate"] = "100 Gb/sec (4X EDR)\n"
	f["root/"+ib+"/ports/1/lid"] = "0x0\n"
	f["root/"+ib+"/ports/1/sm_lid"] = "0x0\n"
	f["root/"+ib+"/ports/1/cap_mask"] = "0x00010000\n"
	interrupts := "" +
		"            CPU0       CPU1\n" +
		" 120:         12          3  IR-PCI-MSIX-" + bdf + "    0-edge      mlx5_async0@pci:" + bdf + "\n"
	if !s.noCompVectors {
		interrupts += "" +
			" 121:     104857          0  IR-PCI-MSIX-" + bdf + "    1-edge      mlx5_comp0@pci:" + bdf + "\n" +
			" 122:          0      98304  IR-PCI-MSIX-" + bdf + "    2-edge      mlx5_comp1@pci:" + bdf + "\n" +
			" 123:       5120          0  IR-PCI-MSIX-" + bdf + "    3-edge      mlx5_comp2@pci:" + bdf + "\n" +
			" 124:          0       4096  IR-PCI-MSIX-" + bdf + "    4-edge      mlx5_comp3@pci:" + bdf + "\n"
	}
	f["root/proc/interrupts"] = interrupts + " NMI:          0          0   Non-maskable interrupts\n"
	return f
}

const aerZero = "RxErr 0\nBadTLP 0\nBadDLLP 0\nRollover 0\nTimeout 0\nNonFatalErr 0\nCorrIntErr 0\nHeaderOF 0\nTOTAL_ERR_COR 0\n"

func txtar(t *testing.T, s synth) []byte {
	var b bytes.Buffer
	b.WriteString(checktest.GeneratedBy(t, s.name))
	fmt.Fprintf(&b, "%s\nSources:\n", s.desc)
	for _, src := range sources {
		fmt.Fprintf(&b, "- %s\n", src)
	}
	return checktest.Txtar(b.String(), s.files())
}

func TestSyntheticFixtures(t *testing.T) {
	for _, s := range synthetics() {
		checktest.Generated(t, s.name, txtar(t, s))
	}
}
