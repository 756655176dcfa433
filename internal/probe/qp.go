package probe

import (
	"fmt"
	"math/rand/v2"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// Transition is one ibv_modify_qp step of the RC connection.
type Transition struct {
	To    string `json:"to"`   // INIT, RTR, RTS
	Mask  int    `json:"mask"` // attribute mask passed
	OK    bool   `json:"ok"`
	Errno string `json:"errno,omitempty"`
}

// Masks rc_pingpong uses for the RC transitions.
const (
	maskInit = verbs.QPAttrState | verbs.QPAttrPKeyIndex | verbs.QPAttrPort | verbs.QPAttrAccessFlags
	maskRTR  = verbs.QPAttrState | verbs.QPAttrAV | verbs.QPAttrPathMTU | verbs.QPAttrDestQPN |
		verbs.QPAttrRQPSN | verbs.QPAttrMaxDestRdAtom | verbs.QPAttrMinRNRTimer
	maskRTS = verbs.QPAttrState | verbs.QPAttrTimeout | verbs.QPAttrRetryCnt | verbs.QPAttrRNRRetry |
		verbs.QPAttrSQPSN | verbs.QPAttrMaxQPRdAtomic
)

// rtrAttr builds the RTR attributes for a QP connected to dest on the same
// port: GRH with the chosen GID on RoCE, the port's LID on InfiniBand.
func rtrAttr(p verbs.PortAttr, port uint8, gid *GIDChoice, destQPN, psn uint32) (verbs.QPAttr, error) {
	at := verbs.QPAttr{
		QPState:         verbs.QPStateRTR,
		PathMTU:         p.ActiveMTU,
		DestQPNum:       destQPN,
		RQPSN:           psn,
		MaxDestRdAtomic: 1,
		MinRNRTimer:     12,
	}
	at.AH.PortNum = port
	switch {
	case p.LinkLayer == verbs.LinkLayerInfiniBand:
		if p.LID == 0 {
			return at, fmt.Errorf("InfiniBand port %d has LID 0 (no subnet manager has configured it)", port)
		}
		at.AH.DLID = p.LID
	case gid != nil:
		// RoCE carries no LID: the GRH is the address and is mandatory.
		at.AH.IsGlobal = 1
		at.AH.GRH.DGID = gid.Raw
		at.AH.GRH.SGIDIndex = uint8(gid.Index)
		at.AH.GRH.HopLimit = 64
	default:
		return at, fmt.Errorf("port %d is RoCE but no source GID was chosen", port)
	}
	return at, nil
}

// connectSelf drives qp RESET -> INIT -> RTR -> RTS with itself as the
// remote end, recording each transition.
func (s *session) connectSelf(qp *verbs.QP, trans *[]Transition) error {
	psn := rand.Uint32() & 0xffffff
	return s.connect(qp, qp.Num(), psn, psn, trans)
}

// connectPair connects a and b to each other (two QPs on one port, as
// ib_write_bw's client and server are), a first.
func (s *session) connectPair(a, b *verbs.QP, trans *[]Transition) error {
	pa, pb := rand.Uint32()&0xffffff, rand.Uint32()&0xffffff
	if err := s.connect(a, b.Num(), pa, pb, trans); err != nil {
		return err
	}
	return s.connect(b, a.Num(), pb, pa, trans)
}

// connect drives qp RESET -> INIT -> RTR -> RTS towards destQPN on the same
// port: qp sends from sqPSN and expects the remote's packets from rqPSN.
func (s *session) connect(qp *verbs.QP, destQPN, sqPSN, rqPSN uint32, trans *[]Transition) error {
	return s.connectTo(qp, func() (verbs.QPAttr, error) { return rtrAttr(s.pattr, s.port, s.gid, destQPN, rqPSN) }, sqPSN, trans)
}

// connectTo drives qp RESET -> INIT -> RTR -> RTS with the RTR attributes rtr builds (the
// remote end's address, QPN and PSN): qp sends from sqPSN.
func (s *session) connectTo(qp *verbs.QP, rtr func() (verbs.QPAttr, error), sqPSN uint32, trans *[]Transition) error {
	record := func(to string, mask int, err error) error {
		t := Transition{To: to, Mask: mask, OK: err == nil}
		if ve, ok := err.(*verbs.Error); ok && ve.Errno != 0 {
			t.Errno = verbs.ErrnoName(ve.Errno)
		}
		*trans = append(*trans, t)
		return err
	}
	if err := s.step(StageInit, func() error {
		at := verbs.QPAttr{QPState: verbs.QPStateInit, PortNum: s.port,
			QPAccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead}
		return record("INIT", maskInit, qp.Modify(at, maskInit, "ibv_modify_qp(INIT)"))
	}); err != nil {
		return err
	}
	if err := s.step(StageRTR, func() error {
		at, err := rtr()
		if err != nil {
			return err
		}
		return record("RTR", maskRTR, qp.Modify(at, maskRTR, "ibv_modify_qp(RTR)"))
	}); err != nil {
		return err
	}
	return s.step(StageRTS, func() error {
		// timeout 14 x retry 7 bounds a dead path to about half a second;
		// rnr_retry 6 (not 7, which means forever) keeps a missing receive
		// from retrying without end.
		at := verbs.QPAttr{QPState: verbs.QPStateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 6, SQPSN: sqPSN, MaxRdAtomic: 1}
		return record("RTS", maskRTS, qp.Modify(at, maskRTS, "ibv_modify_qp(RTS)"))
	})
}

// allocPD, regMem, createCQ and createQP create a resource inside a stage
// and register its destruction.

func (s *session) allocPD() (*verbs.PD, error) {
	var pd *verbs.PD
	err := s.step(StageAllocPD, func() error {
		var err error
		if pd, err = s.vc.AllocPD(); err == nil {
			s.tr.push("ibv_dealloc_pd", pd.Dealloc)
		}
		return err
	})
	return pd, err
}

// regMem maps n bytes outside the Go heap and registers them.
func (s *session) regMem(pd *verbs.PD, n int) (*verbs.Mem, *verbs.MR, error) {
	var m *verbs.Mem
	var mr *verbs.MR
	err := s.step(StageRegMR, func() error {
		var err error
		if m, err = verbs.NewMem(n); err != nil {
			return err
		}
		s.tr.push("munmap", m.Free)
		if mr, err = pd.RegMR(m, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
			return err
		}
		s.tr.push("ibv_dereg_mr", mr.Dereg)
		return nil
	})
	return m, mr, err
}

func (s *session) createCQ(cqe int) (*verbs.CQ, error) {
	var cq *verbs.CQ
	err := s.step(StageCreateCQ, func() error {
		var err error
		if cq, err = s.vc.CreateCQ(cqe); err != nil {
			return err
		}
		s.tr.push("ibv_destroy_cq", cq.Destroy)
		if cq.CQE() < cqe {
			return fmt.Errorf("ibv_create_cq(%d) granted only %d entries", cqe, cq.CQE())
		}
		return nil
	})
	return cq, err
}

func (s *session) createQP(pd *verbs.PD, cq *verbs.CQ, c verbs.QPCap) (*verbs.QP, verbs.QPCap, error) {
	var qp *verbs.QP
	var granted verbs.QPCap
	err := s.step(StageCreateQP, func() error {
		var err error
		qp, granted, err = pd.CreateQP(verbs.QPInitAttr{SendCQ: cq.Addr(), RecvCQ: cq.Addr(), Cap: c, QPType: verbs.QPTypeRC})
		if err != nil {
			return err
		}
		s.tr.push("ibv_destroy_qp", qp.Destroy)
		return nil
	})
	return qp, granted, err
}

// arena maps scratch memory for work requests and completions.
func (s *session) arena(n int) (*verbs.Arena, error) {
	a, err := verbs.NewArena(n)
	if err != nil {
		return nil, s.failErr(s.res.Stage, err)
	}
	s.tr.push("munmap arena", a.Free)
	return a, nil
}
