// Package rawctx decodes the raw hardware QP and CQ contexts that RDMA netlink returns for
// RDMA_NLDEV_CMD_RES_QP_GET_RAW / RES_CQ_GET_RAW (attribute RDMA_NLDEV_ATTR_RES_RAW, 85) into
// the few facts the CQ-depth check needs: which hardware CQs a QP sends and receives on, how
// deep its queues are, its state, and a CQ's hardware number and depth.
//
// The kernel core adds nothing to a raw entry (no QPN, CQN or state): the blob is whatever
// the driver put there, so the layout is the driver's and differs between drivers and kernel
// versions. In Linux 6.1 and 6.12 only HiSilicon hns and mlx5 implement the raw ops; bnxt_re
// added a firmware blob later that has no public field layout, so it is not decoded here.
//
// # What is verified from kernel source
//
// hns (drivers/infiniband/hw/hns/hns_roce_restrack.c, hns_roce_hw_v2.h, Debian 6.1.192 and
// 6.12.117): the three blob formats and their lengths (QP 136 / 512 / 576, CQ 60 / 64), the
// element order of the 6.1 compact format, and every QPC/CQC bit position read here
// (FIELD_LOC(h,l): bit N in the little-endian u32 at byte 4*(N/32)). The driver writes
// QPC_SQ_SHIFT/QPC_RQ_SHIFT as ilog2 of the WQE counts and CQC_SHIFT as ilog2 of the CQ
// depth, and the non-raw cqe is depth-1. What is inferred, not seen on hardware: a QP without
// an RQ of its own reads RQ_SHIFT 15 (the runtime ilog2(0) = -1 masked to 4 bits).
//
// mlx5 (drivers/infiniband/hw/mlx5/restrack.c, include/linux/mlx5/mlx5_ifc.h): the blob is a
// firmware resource-dump stream (segments framed by a BE16 length_dw and BE16 segment_type;
// a resource segment has 16 bytes of framing with index1 = the QPN or CQN the kernel asked
// for), and the qpc/cqc field offsets inside the PRM structs are verified.
//
// # What is not verified, and why the caller must validate
//
// Where the PRM data starts inside the mlx5 resource segment's payload is documented nowhere
// public: the only statement is that the segments hold "the resource dump in PRM query
// format". It may be the whole query_qp_out / query_cq_out command output (qpc at payload
// byte 24, cq_context at byte 16: LayoutQueryOut) or the bare context (LayoutContext). Both
// candidates are offered by Layouts; a wrong one still decodes into plausible-looking numbers.
// The caller must therefore check each candidate against the kernel's non-raw dump (CQ:
// Depth == RES_CQE+1 on both drivers; QP: IBState == RES_STATE) and use only a layout under
// which every object agrees. The same check guards the hns formats against a kernel that
// changed the layout without changing the length.
package rawctx
