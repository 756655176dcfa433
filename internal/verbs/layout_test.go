package verbs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// layoutFacts pairs a C expression over <infiniband/verbs.h> with the value
// the Go declarations in this package imply for it.
func layoutFacts() []struct {
	c     string
	goVal int64
} {
	var (
		qc  QPCap
		ia  QPInitAttr
		gr  GlobalRoute
		ah  AHAttr
		qa  QPAttr
		sg  SGE
		sw  SendWR
		rw  RecvWR
		wc  WC
		da  DeviceAttr
		pa  PortAttr
		ge  GIDEntry
		ae  asyncEvent
		ops contextOps
		ch  contextHead
		dh  deviceHead
		cq  cqHead
		qh  qpHead
		mr  mrHead
	)
	type f = struct {
		c     string
		goVal int64
	}
	sz := func(s string, v uintptr) f { return f{"sizeof(struct " + s + ")", int64(v)} }
	off := func(s, field string, v uintptr) f { return f{"offsetof(struct " + s + ", " + field + ")", int64(v)} }
	k := func(name string, v int64) f { return f{name, v} }
	return []f{
		sz("ibv_qp_cap", unsafe.Sizeof(qc)),
		off("ibv_qp_cap", "max_send_wr", unsafe.Offsetof(qc.MaxSendWR)),
		off("ibv_qp_cap", "max_recv_wr", unsafe.Offsetof(qc.MaxRecvWR)),
		off("ibv_qp_cap", "max_send_sge", unsafe.Offsetof(qc.MaxSendSGE)),
		off("ibv_qp_cap", "max_recv_sge", unsafe.Offsetof(qc.MaxRecvSGE)),
		off("ibv_qp_cap", "max_inline_data", unsafe.Offsetof(qc.MaxInlineData)),

		sz("ibv_qp_init_attr", unsafe.Sizeof(ia)),
		off("ibv_qp_init_attr", "qp_context", unsafe.Offsetof(ia.QPContext)),
		off("ibv_qp_init_attr", "send_cq", unsafe.Offsetof(ia.SendCQ)),
		off("ibv_qp_init_attr", "recv_cq", unsafe.Offsetof(ia.RecvCQ)),
		off("ibv_qp_init_attr", "srq", unsafe.Offsetof(ia.SRQ)),
		off("ibv_qp_init_attr", "cap", unsafe.Offsetof(ia.Cap)),
		off("ibv_qp_init_attr", "qp_type", unsafe.Offsetof(ia.QPType)),
		off("ibv_qp_init_attr", "sq_sig_all", unsafe.Offsetof(ia.SQSigAll)),

		sz("ibv_global_route", unsafe.Sizeof(gr)),
		off("ibv_global_route", "dgid", unsafe.Offsetof(gr.DGID)),
		off("ibv_global_route", "flow_label", unsafe.Offsetof(gr.FlowLabel)),
		off("ibv_global_route", "sgid_index", unsafe.Offsetof(gr.SGIDIndex)),
		off("ibv_global_route", "hop_limit", unsafe.Offsetof(gr.HopLimit)),
		off("ibv_global_route", "traffic_class", unsafe.Offsetof(gr.TrafficClass)),

		sz("ibv_ah_attr", unsafe.Sizeof(ah)),
		off("ibv_ah_attr", "grh", unsafe.Offsetof(ah.GRH)),
		off("ibv_ah_attr", "dlid", unsafe.Offsetof(ah.DLID)),
		off("ibv_ah_attr", "sl", unsafe.Offsetof(ah.SL)),
		off("ibv_ah_attr", "src_path_bits", unsafe.Offsetof(ah.SrcPathBits)),
		off("ibv_ah_attr", "static_rate", unsafe.Offsetof(ah.StaticRate)),
		off("ibv_ah_attr", "is_global", unsafe.Offsetof(ah.IsGlobal)),
		off("ibv_ah_attr", "port_num", unsafe.Offsetof(ah.PortNum)),

		sz("ibv_qp_attr", unsafe.Sizeof(qa)),
		off("ibv_qp_attr", "qp_state", unsafe.Offsetof(qa.QPState)),
		off("ibv_qp_attr", "cur_qp_state", unsafe.Offsetof(qa.CurQPState)),
		off("ibv_qp_attr", "path_mtu", unsafe.Offsetof(qa.PathMTU)),
		off("ibv_qp_attr", "path_mig_state", unsafe.Offsetof(qa.PathMigState)),
		off("ibv_qp_attr", "qkey", unsafe.Offsetof(qa.QKey)),
		off("ibv_qp_attr", "rq_psn", unsafe.Offsetof(qa.RQPSN)),
		off("ibv_qp_attr", "sq_psn", unsafe.Offsetof(qa.SQPSN)),
		off("ibv_qp_attr", "dest_qp_num", unsafe.Offsetof(qa.DestQPNum)),
		off("ibv_qp_attr", "qp_access_flags", unsafe.Offsetof(qa.QPAccessFlags)),
		off("ibv_qp_attr", "cap", unsafe.Offsetof(qa.Cap)),
		off("ibv_qp_attr", "ah_attr", unsafe.Offsetof(qa.AH)),
		off("ibv_qp_attr", "alt_ah_attr", unsafe.Offsetof(qa.AltAH)),
		off("ibv_qp_attr", "pkey_index", unsafe.Offsetof(qa.PKeyIndex)),
		off("ibv_qp_attr", "alt_pkey_index", unsafe.Offsetof(qa.AltPKeyIndex)),
		off("ibv_qp_attr", "en_sqd_async_notify", unsafe.Offsetof(qa.EnSQDAsyncNotify)),
		off("ibv_qp_attr", "sq_draining", unsafe.Offsetof(qa.SQDraining)),
		off("ibv_qp_attr", "max_rd_atomic", unsafe.Offsetof(qa.MaxRdAtomic)),
		off("ibv_qp_attr", "max_dest_rd_atomic", unsafe.Offsetof(qa.MaxDestRdAtomic)),
		off("ibv_qp_attr", "min_rnr_timer", unsafe.Offsetof(qa.MinRNRTimer)),
		off("ibv_qp_attr", "port_num", unsafe.Offsetof(qa.PortNum)),
		off("ibv_qp_attr", "timeout", unsafe.Offsetof(qa.Timeout)),
		off("ibv_qp_attr", "retry_cnt", unsafe.Offsetof(qa.RetryCnt)),
		off("ibv_qp_attr", "rnr_retry", unsafe.Offsetof(qa.RNRRetry)),
		off("ibv_qp_attr", "alt_port_num", unsafe.Offsetof(qa.AltPortNum)),
		off("ibv_qp_attr", "alt_timeout", unsafe.Offsetof(qa.AltTimeout)),
		off("ibv_qp_attr", "rate_limit", unsafe.Offsetof(qa.RateLimit)),

		sz("ibv_sge", unsafe.Sizeof(sg)),
		off("ibv_sge", "addr", unsafe.Offsetof(sg.Addr)),
		off("ibv_sge", "length", unsafe.Offsetof(sg.Length)),
		off("ibv_sge", "lkey", unsafe.Offsetof(sg.LKey)),

		sz("ibv_send_wr", unsafe.Sizeof(sw)),
		off("ibv_send_wr", "wr_id", unsafe.Offsetof(sw.WRID)),
		off("ibv_send_wr", "next", unsafe.Offsetof(sw.Next)),
		off("ibv_send_wr", "sg_list", unsafe.Offsetof(sw.SGList)),
		off("ibv_send_wr", "num_sge", unsafe.Offsetof(sw.NumSGE)),
		off("ibv_send_wr", "opcode", unsafe.Offsetof(sw.Opcode)),
		off("ibv_send_wr", "send_flags", unsafe.Offsetof(sw.SendFlags)),
		off("ibv_send_wr", "imm_data", unsafe.Offsetof(sw.ImmData)),
		off("ibv_send_wr", "wr.rdma.remote_addr", unsafe.Offsetof(sw.RemoteAddr)),
		off("ibv_send_wr", "wr.rdma.rkey", unsafe.Offsetof(sw.RKey)),

		sz("ibv_recv_wr", unsafe.Sizeof(rw)),
		off("ibv_recv_wr", "wr_id", unsafe.Offsetof(rw.WRID)),
		off("ibv_recv_wr", "next", unsafe.Offsetof(rw.Next)),
		off("ibv_recv_wr", "sg_list", unsafe.Offsetof(rw.SGList)),
		off("ibv_recv_wr", "num_sge", unsafe.Offsetof(rw.NumSGE)),

		sz("ibv_wc", unsafe.Sizeof(wc)),
		off("ibv_wc", "wr_id", unsafe.Offsetof(wc.WRID)),
		off("ibv_wc", "status", unsafe.Offsetof(wc.Status)),
		off("ibv_wc", "opcode", unsafe.Offsetof(wc.Opcode)),
		off("ibv_wc", "vendor_err", unsafe.Offsetof(wc.VendorErr)),
		off("ibv_wc", "byte_len", unsafe.Offsetof(wc.ByteLen)),
		off("ibv_wc", "imm_data", unsafe.Offsetof(wc.ImmData)),
		off("ibv_wc", "qp_num", unsafe.Offsetof(wc.QPNum)),
		off("ibv_wc", "src_qp", unsafe.Offsetof(wc.SrcQP)),
		off("ibv_wc", "wc_flags", unsafe.Offsetof(wc.WCFlags)),
		off("ibv_wc", "pkey_index", unsafe.Offsetof(wc.PKeyIndex)),
		off("ibv_wc", "slid", unsafe.Offsetof(wc.SLID)),
		off("ibv_wc", "sl", unsafe.Offsetof(wc.SL)),
		off("ibv_wc", "dlid_path_bits", unsafe.Offsetof(wc.DLIDPathBits)),

		sz("ibv_device_attr", unsafe.Sizeof(da)),
		off("ibv_device_attr", "fw_ver", unsafe.Offsetof(da.FWVer)),
		off("ibv_device_attr", "node_guid", unsafe.Offsetof(da.NodeGUID)),
		off("ibv_device_attr", "sys_image_guid", unsafe.Offsetof(da.SysImageGUID)),
		off("ibv_device_attr", "max_mr_size", unsafe.Offsetof(da.MaxMRSize)),
		off("ibv_device_attr", "page_size_cap", unsafe.Offsetof(da.PageSizeCap)),
		off("ibv_device_attr", "vendor_id", unsafe.Offsetof(da.VendorID)),
		off("ibv_device_attr", "vendor_part_id", unsafe.Offsetof(da.VendorPartID)),
		off("ibv_device_attr", "hw_ver", unsafe.Offsetof(da.HWVer)),
		off("ibv_device_attr", "max_qp", unsafe.Offsetof(da.MaxQP)),
		off("ibv_device_attr", "max_qp_wr", unsafe.Offsetof(da.MaxQPWR)),
		off("ibv_device_attr", "device_cap_flags", unsafe.Offsetof(da.DeviceCapFlags)),
		off("ibv_device_attr", "max_sge", unsafe.Offsetof(da.MaxSGE)),
		off("ibv_device_attr", "max_sge_rd", unsafe.Offsetof(da.MaxSGERd)),
		off("ibv_device_attr", "max_cq", unsafe.Offsetof(da.MaxCQ)),
		off("ibv_device_attr", "max_cqe", unsafe.Offsetof(da.MaxCQE)),
		off("ibv_device_attr", "max_mr", unsafe.Offsetof(da.MaxMR)),
		off("ibv_device_attr", "max_pd", unsafe.Offsetof(da.MaxPD)),
		off("ibv_device_attr", "max_qp_rd_atom", unsafe.Offsetof(da.MaxQPRdAtom)),
		off("ibv_device_attr", "max_ee_rd_atom", unsafe.Offsetof(da.MaxEERdAtom)),
		off("ibv_device_attr", "max_res_rd_atom", unsafe.Offsetof(da.MaxResRdAtom)),
		off("ibv_device_attr", "max_qp_init_rd_atom", unsafe.Offsetof(da.MaxQPInitRdAtom)),
		off("ibv_device_attr", "max_ee_init_rd_atom", unsafe.Offsetof(da.MaxEEInitRdAtom)),
		off("ibv_device_attr", "atomic_cap", unsafe.Offsetof(da.AtomicCap)),
		off("ibv_device_attr", "max_ee", unsafe.Offsetof(da.MaxEE)),
		off("ibv_device_attr", "max_rdd", unsafe.Offsetof(da.MaxRDD)),
		off("ibv_device_attr", "max_mw", unsafe.Offsetof(da.MaxMW)),
		off("ibv_device_attr", "max_raw_ipv6_qp", unsafe.Offsetof(da.MaxRawIPv6QP)),
		off("ibv_device_attr", "max_raw_ethy_qp", unsafe.Offsetof(da.MaxRawEthyQP)),
		off("ibv_device_attr", "max_mcast_grp", unsafe.Offsetof(da.MaxMcastGrp)),
		off("ibv_device_attr", "max_mcast_qp_attach", unsafe.Offsetof(da.MaxMcastQPAttach)),
		off("ibv_device_attr", "max_total_mcast_qp_attach", unsafe.Offsetof(da.MaxTotalMcastQPAttach)),
		off("ibv_device_attr", "max_ah", unsafe.Offsetof(da.MaxAH)),
		off("ibv_device_attr", "max_fmr", unsafe.Offsetof(da.MaxFMR)),
		off("ibv_device_attr", "max_map_per_fmr", unsafe.Offsetof(da.MaxMapPerFMR)),
		off("ibv_device_attr", "max_srq", unsafe.Offsetof(da.MaxSRQ)),
		off("ibv_device_attr", "max_srq_wr", unsafe.Offsetof(da.MaxSRQWR)),
		off("ibv_device_attr", "max_srq_sge", unsafe.Offsetof(da.MaxSRQSGE)),
		off("ibv_device_attr", "max_pkeys", unsafe.Offsetof(da.MaxPKeys)),
		off("ibv_device_attr", "local_ca_ack_delay", unsafe.Offsetof(da.LocalCAAckDelay)),
		off("ibv_device_attr", "phys_port_cnt", unsafe.Offsetof(da.PhysPortCnt)),

		// The Go mirror is the rdma-core 44 prefix; newer headers may only
		// grow the struct, so the size check is "header >= mirror" below.
		off("ibv_port_attr", "state", unsafe.Offsetof(pa.State)),
		off("ibv_port_attr", "max_mtu", unsafe.Offsetof(pa.MaxMTU)),
		off("ibv_port_attr", "active_mtu", unsafe.Offsetof(pa.ActiveMTU)),
		off("ibv_port_attr", "gid_tbl_len", unsafe.Offsetof(pa.GIDTblLen)),
		off("ibv_port_attr", "port_cap_flags", unsafe.Offsetof(pa.PortCapFlags)),
		off("ibv_port_attr", "max_msg_sz", unsafe.Offsetof(pa.MaxMsgSz)),
		off("ibv_port_attr", "bad_pkey_cntr", unsafe.Offsetof(pa.BadPKeyCntr)),
		off("ibv_port_attr", "qkey_viol_cntr", unsafe.Offsetof(pa.QKeyViolCntr)),
		off("ibv_port_attr", "pkey_tbl_len", unsafe.Offsetof(pa.PKeyTblLen)),
		off("ibv_port_attr", "lid", unsafe.Offsetof(pa.LID)),
		off("ibv_port_attr", "sm_lid", unsafe.Offsetof(pa.SMLID)),
		off("ibv_port_attr", "lmc", unsafe.Offsetof(pa.LMC)),
		off("ibv_port_attr", "max_vl_num", unsafe.Offsetof(pa.MaxVLNum)),
		off("ibv_port_attr", "sm_sl", unsafe.Offsetof(pa.SMSL)),
		off("ibv_port_attr", "subnet_timeout", unsafe.Offsetof(pa.SubnetTimeout)),
		off("ibv_port_attr", "init_type_reply", unsafe.Offsetof(pa.InitTypeReply)),
		off("ibv_port_attr", "active_width", unsafe.Offsetof(pa.ActiveWidth)),
		off("ibv_port_attr", "active_speed", unsafe.Offsetof(pa.ActiveSpeed)),
		off("ibv_port_attr", "phys_state", unsafe.Offsetof(pa.PhysState)),
		off("ibv_port_attr", "link_layer", unsafe.Offsetof(pa.LinkLayer)),
		off("ibv_port_attr", "flags", unsafe.Offsetof(pa.Flags)),
		off("ibv_port_attr", "port_cap_flags2", unsafe.Offsetof(pa.PortCapFlags2)),

		sz("ibv_gid_entry", unsafe.Sizeof(ge)),
		off("ibv_gid_entry", "gid", unsafe.Offsetof(ge.GID)),
		off("ibv_gid_entry", "gid_index", unsafe.Offsetof(ge.GIDIndex)),
		off("ibv_gid_entry", "port_num", unsafe.Offsetof(ge.PortNum)),
		off("ibv_gid_entry", "gid_type", unsafe.Offsetof(ge.GIDType)),
		off("ibv_gid_entry", "ndev_ifindex", unsafe.Offsetof(ge.NdevIfindex)),

		sz("ibv_async_event", unsafe.Sizeof(ae)),
		off("ibv_async_event", "element", unsafe.Offsetof(ae.Element)),
		off("ibv_async_event", "event_type", unsafe.Offsetof(ae.EventType)),

		sz("ibv_context_ops", unsafe.Sizeof(ops)),
		off("ibv_context_ops", "poll_cq", unsafe.Offsetof(ops.PollCQ)),
		off("ibv_context_ops", "req_notify_cq", unsafe.Offsetof(ops.ReqNotifyCQ)),
		off("ibv_context_ops", "post_send", unsafe.Offsetof(ops.PostSend)),
		off("ibv_context_ops", "post_recv", unsafe.Offsetof(ops.PostRecv)),
		sz("ibv_context", unsafe.Sizeof(ch)),
		off("ibv_context", "device", unsafe.Offsetof(ch.Device)),
		off("ibv_context", "ops", unsafe.Offsetof(ch.Ops)),
		off("ibv_context", "ops.poll_cq", unsafe.Offsetof(ch.Ops)+unsafe.Offsetof(ops.PollCQ)),
		off("ibv_context", "ops.post_send", unsafe.Offsetof(ch.Ops)+unsafe.Offsetof(ops.PostSend)),
		off("ibv_context", "ops.post_recv", unsafe.Offsetof(ch.Ops)+unsafe.Offsetof(ops.PostRecv)),
		off("ibv_context", "cmd_fd", unsafe.Offsetof(ch.CmdFD)),
		off("ibv_context", "async_fd", unsafe.Offsetof(ch.AsyncFD)),
		off("ibv_context", "num_comp_vectors", unsafe.Offsetof(ch.NumCompVectors)),
		off("ibv_context", "abi_compat", unsafe.Offsetof(ch.ABICompat)),
		k("(long)sizeof(pthread_mutex_t)", 40),

		// verbs_context members as offsets from the embedded ibv_context.
		k("(long)offsetof(struct verbs_context, sz) - (long)offsetof(struct verbs_context, context)", vctxSzOff),
		k("(long)offsetof(struct verbs_context, query_port) - (long)offsetof(struct verbs_context, context)", vctxQueryPortOff),
		k("(long)(sizeof(struct verbs_context) - offsetof(struct verbs_context, query_port))", vctxQueryPortNeed),
		k("(long)(offsetof(struct verbs_context, context) + sizeof(struct ibv_context) == sizeof(struct verbs_context))", 1),
		k("(long)(uintptr_t)__VERBS_ABI_IS_EXTENDED", int64(uintptrVal(abiIsExtended))),

		sz("ibv_device", unsafe.Sizeof(dh)),
		off("ibv_device", "node_type", unsafe.Offsetof(dh.NodeType)),
		off("ibv_device", "transport_type", unsafe.Offsetof(dh.TransportType)),
		off("ibv_device", "name", unsafe.Offsetof(dh.Name)),
		off("ibv_device", "dev_name", unsafe.Offsetof(dh.DevName)),
		off("ibv_device", "dev_path", unsafe.Offsetof(dh.DevPath)),
		off("ibv_device", "ibdev_path", unsafe.Offsetof(dh.IBDevPath)),

		off("ibv_cq", "context", unsafe.Offsetof(cq.Context)),
		off("ibv_cq", "channel", unsafe.Offsetof(cq.Channel)),
		off("ibv_cq", "cq_context", unsafe.Offsetof(cq.CQContext)),
		off("ibv_cq", "handle", unsafe.Offsetof(cq.Handle)),
		off("ibv_cq", "cqe", unsafe.Offsetof(cq.CQE)),
		off("ibv_qp", "context", unsafe.Offsetof(qh.Context)),
		off("ibv_qp", "qp_context", unsafe.Offsetof(qh.QPContext)),
		off("ibv_qp", "pd", unsafe.Offsetof(qh.PD)),
		off("ibv_qp", "send_cq", unsafe.Offsetof(qh.SendCQ)),
		off("ibv_qp", "recv_cq", unsafe.Offsetof(qh.RecvCQ)),
		off("ibv_qp", "srq", unsafe.Offsetof(qh.SRQ)),
		off("ibv_qp", "handle", unsafe.Offsetof(qh.Handle)),
		off("ibv_qp", "qp_num", unsafe.Offsetof(qh.QPNum)),
		off("ibv_qp", "state", unsafe.Offsetof(qh.State)),
		off("ibv_qp", "qp_type", unsafe.Offsetof(qh.QPType)),
		off("ibv_mr", "context", unsafe.Offsetof(mr.Context)),
		off("ibv_mr", "pd", unsafe.Offsetof(mr.PD)),
		off("ibv_mr", "addr", unsafe.Offsetof(mr.Addr)),
		off("ibv_mr", "length", unsafe.Offsetof(mr.Length)),
		off("ibv_mr", "handle", unsafe.Offsetof(mr.Handle)),
		off("ibv_mr", "lkey", unsafe.Offsetof(mr.LKey)),
		off("ibv_mr", "rkey", unsafe.Offsetof(mr.RKey)),

		k("IBV_QPT_RC", QPTypeRC),
		k("IBV_QPS_RESET", QPStateReset), k("IBV_QPS_INIT", QPStateInit), k("IBV_QPS_RTR", QPStateRTR),
		k("IBV_QPS_RTS", QPStateRTS), k("IBV_QPS_SQD", QPStateSQD), k("IBV_QPS_SQE", QPStateSQE),
		k("IBV_QPS_ERR", QPStateErr),
		k("IBV_PORT_DOWN", PortDown), k("IBV_PORT_INIT", PortInit), k("IBV_PORT_ARMED", PortArmed),
		k("IBV_PORT_ACTIVE", PortActive), k("IBV_PORT_ACTIVE_DEFER", PortActiveDefer),
		k("IBV_LINK_LAYER_UNSPECIFIED", LinkLayerUnspecified), k("IBV_LINK_LAYER_INFINIBAND", LinkLayerInfiniBand),
		k("IBV_LINK_LAYER_ETHERNET", LinkLayerEthernet),
		k("IBV_MTU_256", MTU256), k("IBV_MTU_512", MTU512), k("IBV_MTU_1024", MTU1024),
		k("IBV_MTU_2048", MTU2048), k("IBV_MTU_4096", MTU4096),
		k("IBV_GID_TYPE_IB", GIDTypeIB), k("IBV_GID_TYPE_ROCE_V1", GIDTypeRoCEv1), k("IBV_GID_TYPE_ROCE_V2", GIDTypeRoCEv2),
		k("IBV_ACCESS_LOCAL_WRITE", AccessLocalWrite), k("IBV_ACCESS_REMOTE_WRITE", AccessRemoteWrite),
		k("IBV_ACCESS_REMOTE_READ", AccessRemoteRead),
		k("IBV_WR_RDMA_WRITE", WROpRDMAWrite), k("IBV_WR_SEND", WROpSend), k("IBV_SEND_SIGNALED", SendSignaled),
		k("IBV_WC_SUCCESS", WCStatusSuccess), k("IBV_WC_SEND", WCOpSend), k("IBV_WC_RDMA_WRITE", WCOpRDMAWrite),
		k("IBV_WC_RECV", WCOpRecv),
		k("IBV_QP_STATE", QPAttrState), k("IBV_QP_ACCESS_FLAGS", QPAttrAccessFlags),
		k("IBV_QP_PKEY_INDEX", QPAttrPKeyIndex), k("IBV_QP_PORT", QPAttrPort), k("IBV_QP_AV", QPAttrAV),
		k("IBV_QP_PATH_MTU", QPAttrPathMTU), k("IBV_QP_TIMEOUT", QPAttrTimeout), k("IBV_QP_RETRY_CNT", QPAttrRetryCnt),
		k("IBV_QP_RNR_RETRY", QPAttrRNRRetry), k("IBV_QP_RQ_PSN", QPAttrRQPSN),
		k("IBV_QP_MAX_QP_RD_ATOMIC", QPAttrMaxQPRdAtomic), k("IBV_QP_MIN_RNR_TIMER", QPAttrMinRNRTimer),
		k("IBV_QP_SQ_PSN", QPAttrSQPSN), k("IBV_QP_MAX_DEST_RD_ATOMIC", QPAttrMaxDestRdAtom),
		k("IBV_QP_CAP", QPAttrCap), k("IBV_QP_DEST_QPN", QPAttrDestQPN),
		k("IBV_EVENT_CQ_ERR", EventCQErr), k("IBV_EVENT_QP_FATAL", EventQPFatal), k("IBV_EVENT_QP_REQ_ERR", EventQPReqErr),
		k("IBV_EVENT_QP_ACCESS_ERR", EventQPAccessErr), k("IBV_EVENT_COMM_EST", EventCommEst),
		k("IBV_EVENT_DEVICE_FATAL", EventDeviceFatal), k("IBV_EVENT_PORT_ACTIVE", EventPortActive),
		k("IBV_EVENT_PORT_ERR", EventPortErr), k("IBV_EVENT_GID_CHANGE", EventGIDChange), k("IBV_EVENT_WQ_FATAL", EventWQFatal),
		k("IBV_WC_RETRY_EXC_ERR", 12), k("IBV_WC_WR_FLUSH_ERR", 5), k("IBV_WC_TM_RNDV_INCOMPLETE", int64(len(wcStatusNames)-1)),
	}
}

// headerMinimums are facts where the real header may be larger than the
// mirror (the struct grew at its end in later rdma-core releases).
func headerMinimums() []struct {
	c     string
	goVal int64
} {
	return []struct {
		c     string
		goVal int64
	}{{"sizeof(struct ibv_port_attr)", int64(unsafe.Sizeof(PortAttr{}))}}
}

// TestLayoutMatchesVerbsH compiles a C program against the system's
// <infiniband/verbs.h> and compares every mirrored size, offset and constant.
func TestLayoutMatchesVerbsH(t *testing.T) {
	const header = "/usr/include/infiniband/verbs.h"
	cc, ccErr := exec.LookPath("gcc")
	if ccErr != nil {
		cc, ccErr = exec.LookPath("cc")
	}
	_, hdrErr := os.Stat(header)
	if ccErr != nil || hdrErr != nil {
		msg := fmt.Sprintf("layout check needs a C compiler and %s (libibverbs-dev / rdma-core-devel): compiler: %v, header: %v", header, ccErr, hdrErr)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	facts := layoutFacts()
	mins := headerMinimums()
	var src bytes.Buffer
	src.WriteString("#include <stddef.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <pthread.h>\n#include <infiniband/verbs.h>\nint main(void) {\n")
	for _, f := range append(append([]struct {
		c     string
		goVal int64
	}{}, facts...), mins...) {
		fmt.Fprintf(&src, "\tprintf(\"%%lld\\n\", (long long)(%s));\n", f.c)
	}
	src.WriteString("\treturn 0;\n}\n")
	dir := t.TempDir()
	cfile := filepath.Join(dir, "layout.c")
	bin := filepath.Join(dir, "layout")
	if err := os.WriteFile(cfile, src.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-Wall", "-o", bin, cfile).CombinedOutput(); err != nil {
		t.Fatalf("compile %s against %s: %v\n%s", cfile, header, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run layout program: %v", err)
	}
	var got []int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		v, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			t.Fatalf("layout program output %q: %v", sc.Text(), err)
		}
		got = append(got, v)
	}
	if len(got) != len(facts)+len(mins) {
		t.Fatalf("layout program printed %d values, want %d", len(got), len(facts)+len(mins))
	}
	for i, f := range facts {
		if got[i] != f.goVal {
			t.Errorf("%s: verbs.h says %d, Go mirror says %d", f.c, got[i], f.goVal)
		}
	}
	for i, f := range mins {
		if c := got[len(facts)+i]; c < f.goVal {
			t.Errorf("%s: verbs.h says %d, smaller than the Go mirror's %d", f.c, c, f.goVal)
		}
	}
	t.Logf("compared %d sizes, offsets and constants with %s", len(got), header)
}

// uintptrVal lets an all-ones uintptr constant convert to int64 at run time.
func uintptrVal(u uintptr) uintptr { return u }
