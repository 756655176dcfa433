package probe

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// Completion is one polled work completion.
type Completion struct {
	WRID       uint64 `json:"wr_id"`
	Opcode     string `json:"opcode"`
	Status     string `json:"status"`      // enum name, e.g. IBV_WC_RETRY_EXC_ERR
	StatusText string `json:"status_text"` // libibverbs' description
	ByteLen    uint32 `json:"byte_len"`
	VendorErr  uint32 `json:"vendor_err,omitempty"`
}

// LoopbackResult is the qp-layer probe's outcome.
type LoopbackResult struct {
	Result
	QPN         uint32       `json:"qpn"`
	Transitions []Transition `json:"transitions"`
	Completions []Completion `json:"completions"`
	// WritePayloadOK / SendPayloadOK: the bytes arrived intact.
	WritePayloadOK bool          `json:"write_payload_ok"`
	SendPayloadOK  bool          `json:"send_payload_ok"`
	QPState        string        `json:"qp_state,omitempty"` // queried after a failure
	RoundTrip      time.Duration `json:"round_trip_ns"`
}

func wcOpcodeName(op uint32) string {
	switch op {
	case verbs.WCOpSend:
		return "SEND"
	case verbs.WCOpRDMAWrite:
		return "RDMA_WRITE"
	case verbs.WCOpRecv:
		return "RECV"
	}
	return fmt.Sprintf("opcode %d", op)
}

func (s *session) completion(w *verbs.WC) Completion {
	return Completion{WRID: w.WRID, Opcode: wcOpcodeName(w.Opcode), Status: verbs.WCStatusName(w.Status),
		StatusText: s.lib.WCStatusString(w.Status), ByteLen: w.ByteLen, VendorErr: w.VendorErr}
}

// Work-request ids of the loopback exchange.
const (
	idWrite = 1
	idSend  = 2
	idRecv  = 3
)

// Loopback is the qp-layer probe: one RC QP connected to itself, RESET ->
// INIT -> RTR -> RTS with rc_pingpong's masks, then a signaled RDMA WRITE
// and a SEND whose completions and payloads are checked.
func Loopback(ctx context.Context, lib *verbs.Lib, dev string, port int, o Options) (r LoopbackResult) {
	// r is named: the deferred cleanup completes it after return.
	s, done, ok := begin(ctx, lib, "qp", dev, port, o, &r.Result)
	if !ok {
		return r
	}
	defer done()
	var qp *verbs.QP
	defer func() {
		// After a failure the QP state tells "never connected" from "went to ERR".
		if r.Status != Pass && r.Status != Skipped && qp != nil && len(r.Transitions) > 0 {
			if at, err := qp.Query(verbs.QPAttrState); err == nil {
				r.QPState = verbs.QPStateName(at.QPState)
			}
		}
	}()
	if s.requireActive() != nil {
		return r
	}
	const page = 4096
	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	mem, mr, err := s.regMem(pd, 4*page)
	if err != nil {
		return r
	}
	cq, err := s.createCQ(8)
	if err != nil {
		return r
	}
	if qp, _, err = s.createQP(pd, cq, verbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}); err != nil {
		return r
	}
	r.QPN = qp.Num()
	if s.connectSelf(qp, &r.Transitions) != nil {
		return r
	}
	a, err := s.arena(page)
	if err != nil {
		return r
	}
	buf := mem.Bytes()
	base := mem.Addr()
	// Regions: write source, write target, send source, receive target.
	wsrc, wdst, ssrc, rdst := 0, page, 2*page, 3*page
	stamp := time.Now().UnixNano()
	wmsg := fmt.Appendf(nil, "rdmadiag RDMA WRITE loopback %d", stamp)
	smsg := fmt.Appendf(nil, "rdmadiag SEND loopback %d", stamp)
	copy(buf[wsrc:], wmsg)
	copy(buf[ssrc:], smsg)

	var bad uintptr
	if s.step(StagePostRecv, func() error {
		sge, wr, err := allocRecv(a)
		if err != nil {
			return err
		}
		*sge = verbs.SGE{Addr: uint64(base) + uint64(rdst), Length: page, LKey: mr.LKey}
		*wr = verbs.RecvWR{WRID: idRecv, SGList: sgeAddr(sge), NumSGE: 1}
		return qp.PostRecv(wr, &bad)
	}) != nil {
		return r
	}
	t0 := time.Now()
	if s.step(StagePostSend, func() error {
		sges, err := verbs.NewSlice[verbs.SGE](a, 2)
		if err != nil {
			return err
		}
		wrs, err := verbs.NewSlice[verbs.SendWR](a, 2)
		if err != nil {
			return err
		}
		sges[0] = verbs.SGE{Addr: uint64(base) + uint64(wsrc), Length: uint32(len(wmsg)), LKey: mr.LKey}
		sges[1] = verbs.SGE{Addr: uint64(base) + uint64(ssrc), Length: uint32(len(smsg)), LKey: mr.LKey}
		wrs[0] = verbs.SendWR{WRID: idWrite, SGList: sgeAddr(&sges[0]), NumSGE: 1, Opcode: verbs.WROpRDMAWrite,
			SendFlags: verbs.SendSignaled, RemoteAddr: uint64(base) + uint64(wdst), RKey: mr.RKey}
		wrs[1] = verbs.SendWR{WRID: idSend, SGList: sgeAddr(&sges[1]), NumSGE: 1, Opcode: verbs.WROpSend,
			SendFlags: verbs.SendSignaled}
		wrs[0].Next = sendWRAddr(&wrs[1])
		return qp.PostSend(&wrs[0], &bad)
	}) != nil {
		return r
	}
	var wcs []verbs.WC
	if s.step(StagePoll, func() error {
		var err error
		wcs, err = s.pollN(a, cq, 3)
		for i := range wcs {
			r.Completions = append(r.Completions, s.completion(&wcs[i]))
		}
		return err
	}) != nil {
		return r
	}
	r.RoundTrip = time.Since(t0)
	s.step(StageVerify, func() error {
		for _, c := range r.Completions {
			if c.Status != "IBV_WC_SUCCESS" {
				return fmt.Errorf("work request %d (%s) completed with %s (%s), vendor_err 0x%x", c.WRID, c.Opcode, c.Status, c.StatusText, c.VendorErr)
			}
		}
		r.WritePayloadOK = bytes.Equal(buf[wdst:wdst+len(wmsg)], wmsg)
		r.SendPayloadOK = bytes.Equal(buf[rdst:rdst+len(smsg)], smsg)
		for _, c := range r.Completions {
			if c.WRID == idRecv && c.ByteLen != uint32(len(smsg)) {
				r.SendPayloadOK = false
			}
		}
		if !r.WritePayloadOK || !r.SendPayloadOK {
			return fmt.Errorf("payload mismatch: RDMA WRITE intact=%v, SEND intact=%v", r.WritePayloadOK, r.SendPayloadOK)
		}
		return nil
	})
	return r
}

// pollN polls cq until n completions arrived, one failed, or the deadline.
func (s *session) pollN(a *verbs.Arena, cq *verbs.CQ, n int) ([]verbs.WC, error) {
	buf, err := verbs.NewSlice[verbs.WC](a, 16)
	if err != nil {
		return nil, err
	}
	var out []verbs.WC
	idle := 0
	checked := time.Now()
	for len(out) < n {
		k, err := cq.Poll(buf)
		if err != nil {
			return out, err
		}
		out = append(out, buf[:k]...)
		for _, w := range buf[:k] {
			if w.Status != verbs.WCStatusSuccess {
				return out, fmt.Errorf("work request %d completed with %s", w.WRID, verbs.WCStatusName(w.Status))
			}
		}
		if now := time.Now(); now.Sub(checked) > checkEvery {
			checked = now
			if err := s.interrupted(); err != nil {
				return out, fmt.Errorf("%d of %d completions before %w", len(out), n, err)
			}
		}
		if k > 0 {
			idle = 0
			continue
		}
		// Spin briefly, then back off so a slow software device gets the CPU.
		if idle++; idle > 100 {
			time.Sleep(50 * time.Microsecond)
		}
	}
	return out, nil
}
