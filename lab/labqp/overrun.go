package main

import (
	"fmt"
	"unsafe"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// overrun makes a CQ really overrun, the way an application that under-sizes its CQ does: one RC
// QP connected to itself completes n receives and n signaled sends into a CQ of cqDepth entries
// that nobody polls. On rxe the responder cannot post its receive completion into the full CQ:
// rxe_cq_post() (drivers/infiniband/sw/rxe/rxe_cq.c) raises IB_EVENT_CQ_ERR, which reaches
// userspace as IBV_EVENT_CQ_ERR, and returns -EBUSY, which the responder (rxe_resp.c) turns into
// RESPST_ERR_CQ_OVERFLOW and the QP into ERR (recorded in the lab: fixtures/sysfs/cq-overrun).
// The QP and the CQ are kept (added to h) so that rdmadiag sees them live; the function returns
// the QP's state afterwards.
func (h *held) overrun(port uint8, p verbs.PortAttr, gid [16]byte, gidIndex uint8, n, cqDepth int) (string, error) {
	cq, err := h.ctx.CreateCQ(cqDepth)
	if err != nil {
		return "", err
	}
	h.extraCQs = append(h.extraCQs, cq)
	qp, _, err := h.pd.CreateQP(verbs.QPInitAttr{SendCQ: cq.Addr(), RecvCQ: cq.Addr(), QPType: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: uint32(n), MaxRecvWR: uint32(n), MaxSendSGE: 1, MaxRecvSGE: 1}})
	if err != nil {
		return "", err
	}
	h.qps = append(h.qps, qp)
	if err := connectSelf(qp, port, p, gid, gidIndex); err != nil {
		return "", err
	}
	const slot = 64
	mem, err := verbs.NewMem(2 * n * slot)
	if err != nil {
		return "", err
	}
	h.mems = append(h.mems, mem)
	mr, err := h.pd.RegMR(mem, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		return "", err
	}
	h.mrs = append(h.mrs, mr)
	a, err := verbs.NewArena(n*256 + 4096)
	if err != nil {
		return "", err
	}
	defer a.Free()
	rsges, _ := verbs.NewSlice[verbs.SGE](a, n)
	rwrs, _ := verbs.NewSlice[verbs.RecvWR](a, n)
	ssges, _ := verbs.NewSlice[verbs.SGE](a, n)
	swrs, err := verbs.NewSlice[verbs.SendWR](a, n)
	if err != nil {
		return "", err
	}
	base := uint64(mem.Addr())
	for i := range n {
		rsges[i] = verbs.SGE{Addr: base + uint64((n+i)*slot), Length: slot, LKey: mr.LKey}
		rwrs[i] = verbs.RecvWR{WRID: uint64(i), SGList: uintptr(unsafe.Pointer(&rsges[i])), NumSGE: 1}
		ssges[i] = verbs.SGE{Addr: base + uint64(i*slot), Length: slot, LKey: mr.LKey}
		swrs[i] = verbs.SendWR{WRID: uint64(n + i), SGList: uintptr(unsafe.Pointer(&ssges[i])), NumSGE: 1,
			Opcode: verbs.WROpSend, SendFlags: verbs.SendSignaled}
		if i > 0 {
			rwrs[i-1].Next = uintptr(unsafe.Pointer(&rwrs[i]))
			swrs[i-1].Next = uintptr(unsafe.Pointer(&swrs[i]))
		}
	}
	var bad uintptr
	if err := qp.PostRecv(&rwrs[0], &bad); err != nil {
		return "", fmt.Errorf("post %d receives: %w", n, err)
	}
	if err := qp.PostSend(&swrs[0], &bad); err != nil {
		return "", fmt.Errorf("post %d sends: %w", n, err)
	}
	at, err := qp.Query(verbs.QPAttrState)
	if err != nil {
		return "", err
	}
	return verbs.QPStateName(at.QPState), nil
}
