package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// CQResult is the cq-layer probe's outcome.
type CQResult struct {
	Result
	Requested int `json:"requested"` // N work requests and CQ entries asked for
	Granted   int `json:"granted"`   // cq->cqe the provider gave
	Completed int `json:"completed"` // successful completions polled
	// Overrun is filled when the overrun check was asked for.
	Overrun *Overrun `json:"overrun,omitempty"`
}

// Overrun is what the device reported when the probe overran its own CQ.
type Overrun struct {
	Requested   int      `json:"requested_cqe"`
	Granted     int      `json:"granted_cqe"`
	Posted      int      `json:"posted"` // signaled work requests posted without polling
	CQErrEvents int      `json:"cq_err_events"`
	OtherEvents []string `json:"other_events,omitempty"`
	QPState     string   `json:"qp_state"` // after the overrun
	Polled      int      `json:"polled"`   // completions still retrievable
	Detected    bool     `json:"detected"` // IBV_EVENT_CQ_ERR arrived for the probe's CQ
	WaitedFor   string   `json:"waited_for"`
	Events      int      `json:"events"` // all async events read (and acknowledged)
}

// CQ is the cq-layer probe: post N signaled RDMA WRITEs into a CQ sized for
// them and check that all N complete. With overrun it also overruns a
// one-entry CQ of its own and checks that the device raises IBV_EVENT_CQ_ERR
// on the async fd.
func CQ(ctx context.Context, lib *verbs.Lib, dev string, port int, overrun bool, o Options) (r CQResult) {
	// r is named: the deferred cleanup completes it after return.
	s, done, ok := begin(ctx, lib, "cq", dev, port, o, &r.Result)
	if !ok {
		return r
	}
	defer done()
	if s.requireActive() != nil {
		return r
	}
	n := orDefault(o.CQDepth, 64)
	n = min(n, int(s.dattr.MaxQPWR), int(s.dattr.MaxCQE))
	r.Requested = n
	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	const slot = 64
	mem, mr, err := s.regMem(pd, 2*n*slot)
	if err != nil {
		return r
	}
	cq, err := s.createCQ(n)
	if err != nil {
		r.Granted = cqeOf(cq)
		return r
	}
	r.Granted = cq.CQE()
	qp, _, err := s.createQP(pd, cq, verbs.QPCap{MaxSendWR: uint32(n), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	if err != nil {
		return r
	}
	var trans []Transition
	if s.connectSelf(qp, &trans) != nil {
		return r
	}
	a, err := s.arena(n*int(160) + 4096)
	if err != nil {
		return r
	}
	if s.step(StagePostSend, func() error {
		return postWrites(a, qp, mr, mem.Addr(), n, slot, 0)
	}) != nil {
		return r
	}
	if s.step(StagePoll, func() error {
		wcs, err := s.pollN(a, cq, n)
		r.Completed = len(wcs)
		if err != nil {
			return err
		}
		seen := make(map[uint64]bool, n)
		for _, w := range wcs {
			if seen[w.WRID] || w.WRID >= uint64(n) {
				return fmt.Errorf("unexpected or duplicate completion for work request %d", w.WRID)
			}
			seen[w.WRID] = true
		}
		return nil
	}) != nil {
		return r
	}
	if overrun {
		r.Overrun = &Overrun{}
		s.overrun(pd, mr, mem.Addr(), r.Overrun)
	}
	return r
}

func cqeOf(cq *verbs.CQ) int {
	if cq == nil {
		return 0
	}
	return cq.CQE()
}

// postWrites posts n signaled RDMA WRITEs of slot bytes as one chain, from
// the first half of the buffer at base to the second half.
func postWrites(a *verbs.Arena, qp *verbs.QP, mr *verbs.MR, base uintptr, n, slot int, firstID uint64) error {
	sges, err := verbs.NewSlice[verbs.SGE](a, n)
	if err != nil {
		return err
	}
	wrs, err := verbs.NewSlice[verbs.SendWR](a, n)
	if err != nil {
		return err
	}
	for i := range n {
		sges[i] = verbs.SGE{Addr: uint64(base) + uint64(i*slot), Length: uint32(slot), LKey: mr.LKey}
		wrs[i] = verbs.SendWR{WRID: firstID + uint64(i), SGList: sgeAddr(&sges[i]), NumSGE: 1, Opcode: verbs.WROpRDMAWrite,
			SendFlags: verbs.SendSignaled, RemoteAddr: uint64(base) + uint64((n+i)*slot), RKey: mr.RKey}
		if i > 0 {
			wrs[i-1].Next = sendWRAddr(&wrs[i])
		}
	}
	var bad uintptr
	return qp.PostSend(&wrs[0], &bad)
}

// overrun gives a fresh QP a one-entry CQ, posts more signaled work than it
// holds without polling, and collects the async events the device raises.
func (s *session) overrun(pd *verbs.PD, mr *verbs.MR, base uintptr, ov *Overrun) {
	s.step(StageOverrun, func() error {
		if err := s.vc.SetAsyncNonblock(); err != nil {
			return err
		}
		ov.Requested = 1
		small, err := s.vc.CreateCQ(1)
		if err != nil {
			return err
		}
		s.tr.push("ibv_destroy_cq (overrun)", small.Destroy)
		ov.Granted = small.CQE()
		// Enough to overrun whatever the provider rounded the CQ up to.
		m := min(ov.Granted+16, int(s.dattr.MaxQPWR), (mr.Len()/2)/64)
		if m <= ov.Granted {
			return fmt.Errorf("cannot overrun a CQ of %d entries with at most %d work requests", ov.Granted, m)
		}
		qp, _, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: small.Addr(), RecvCQ: small.Addr(), QPType: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: uint32(m), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1}})
		if err != nil {
			return err
		}
		s.tr.push("ibv_destroy_qp (overrun)", qp.Destroy)
		var trans []Transition
		if err := s.connectSelf(qp, &trans); err != nil {
			return err
		}
		s.res.Stage = StageOverrun
		a, err := verbs.NewArena(m*160 + 4096)
		if err != nil {
			return err
		}
		s.tr.push("munmap arena (overrun)", a.Free)
		if err := postWrites(a, qp, mr, base, m, 64, 0); err != nil {
			return err
		}
		ov.Posted = m
		// Wait for the event; it can trail the completions on hardware.
		deadline := time.Now().Add(time.Second)
		if d, ok := s.ctx.Deadline(); ok && time.Until(d) < 2*time.Second {
			deadline = time.Now().Add(time.Until(d) / 2)
		}
		ov.WaitedFor = time.Until(deadline).Round(time.Millisecond).String()
		for time.Now().Before(deadline) {
			if err := s.drainEvents(small, ov); err != nil {
				return err
			}
			if ov.CQErrEvents >= ov.Posted-ov.Granted {
				break // one event per lost completion (rxe) has arrived
			}
			if s.ctx.Err() != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := s.drainEvents(small, ov); err != nil {
			return err
		}
		if at, err := qp.Query(verbs.QPAttrState); err == nil {
			ov.QPState = verbs.QPStateName(at.QPState)
		}
		wc, err := verbs.NewSlice[verbs.WC](a, 16)
		if err != nil {
			return err
		}
		for {
			k, err := small.Poll(wc)
			if err != nil || k == 0 {
				break
			}
			ov.Polled += k
		}
		if !ov.Detected {
			return fmt.Errorf("posted %d signaled work requests into a CQ of %d entries without polling, but no IBV_EVENT_CQ_ERR arrived within %s (events: %v)",
				m, ov.Granted, ov.WaitedFor, ov.OtherEvents)
		}
		return nil
	})
}

// drainEvents reads (and acknowledges) every pending async event.
func (s *session) drainEvents(small *verbs.CQ, ov *Overrun) error {
	for {
		ev, ok, err := s.vc.ReadAsyncEvent()
		if err != nil || !ok {
			return err
		}
		ov.Events++
		if ev.Type == verbs.EventCQErr && ev.Element == small.Addr() {
			ov.CQErrEvents++
			ov.Detected = true
			continue
		}
		if len(ov.OtherEvents) < 16 {
			ov.OtherEvents = append(ov.OtherEvents, ev.Name())
		}
	}
}
