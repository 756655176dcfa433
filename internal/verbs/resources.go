package verbs

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PD is a protection domain.
type PD struct {
	c *Context
	p unsafe.Pointer
}

// AllocPD is ibv_alloc_pd.
func (c *Context) AllocPD() (*PD, error) {
	p, e := c.lib.call(c.lib.allocPD, uintptr(c.p))
	if p == 0 {
		return nil, &Error{Verb: "ibv_alloc_pd", Object: c.info.Name, Errno: e}
	}
	return &PD{c: c, p: cptr(p)}, nil
}

// Dealloc is ibv_dealloc_pd. It is idempotent.
func (pd *PD) Dealloc() error {
	if pd == nil || pd.p == nil {
		return nil
	}
	r := callRet(pd.c.lib.deallocPD, uintptr(pd.p))
	pd.p = nil
	if r != 0 {
		return &Error{Verb: "ibv_dealloc_pd", Object: pd.c.info.Name, Errno: retErrno(r)}
	}
	return nil
}

// MR is a registered memory region.
type MR struct {
	c    *Context
	p    unsafe.Pointer
	LKey uint32
	RKey uint32
}

// RegMR is ibv_reg_mr over the whole of m. The plain exported symbol is
// called: the header's macro only diverts to ibv_reg_mr_iova2 for the
// optional-access bits, which this binding never sets.
func (pd *PD) RegMR(m *Mem, access int) (*MR, error) {
	p, e := pd.c.lib.call(pd.c.lib.regMR, uintptr(pd.p), m.Addr(), uintptr(m.Len()), uintptr(access))
	if p == 0 {
		return nil, &Error{Verb: "ibv_reg_mr", Object: fmt.Sprintf("%s, %d bytes", pd.c.info.Name, m.Len()), Errno: e}
	}
	h := (*mrHead)(cptr(p))
	return &MR{c: pd.c, p: cptr(p), LKey: h.LKey, RKey: h.RKey}, nil
}

// Dereg is ibv_dereg_mr. It is idempotent.
func (mr *MR) Dereg() error {
	if mr == nil || mr.p == nil {
		return nil
	}
	r := callRet(mr.c.lib.deregMR, uintptr(mr.p))
	mr.p = nil
	if r != 0 {
		return &Error{Verb: "ibv_dereg_mr", Object: mr.c.info.Name, Errno: retErrno(r)}
	}
	return nil
}

// CQ is a completion queue.
type CQ struct {
	c *Context
	p unsafe.Pointer
}

// CreateCQ is ibv_create_cq without a completion channel.
func (c *Context) CreateCQ(cqe int) (*CQ, error) {
	p, e := c.lib.call(c.lib.createCQ, uintptr(c.p), uintptr(cqe), 0, 0, 0)
	if p == 0 {
		return nil, &Error{Verb: "ibv_create_cq", Object: fmt.Sprintf("%s, cqe=%d", c.info.Name, cqe), Errno: e}
	}
	return &CQ{c: c, p: cptr(p)}, nil
}

// CQE is the capacity the provider granted (at least what was asked).
func (cq *CQ) CQE() int { return int((*cqHead)(cq.p).CQE) }

// Addr identifies the CQ in async events.
func (cq *CQ) Addr() uintptr { return uintptr(cq.p) }

// Poll is the inline ibv_poll_cq: the provider's ops.poll_cq. wc must be in
// C memory (NewSlice).
func (cq *CQ) Poll(wc []WC) (int, error) {
	fn := (*contextHead)(cptr((*cqHead)(cq.p).Context)).Ops.PollCQ
	n := callRet(fn, uintptr(cq.p), uintptr(len(wc)), uintptr(unsafe.Pointer(&wc[0])))
	if n < 0 {
		return 0, &Error{Verb: "ibv_poll_cq", Object: cq.c.info.Name, Errno: retErrno(n)}
	}
	if int(n) > len(wc) {
		return 0, fmt.Errorf("ibv_poll_cq on %s: %d completions for room of %d", cq.c.info.Name, n, len(wc))
	}
	return int(n), nil
}

// Destroy is ibv_destroy_cq. It is idempotent.
func (cq *CQ) Destroy() error {
	if cq == nil || cq.p == nil {
		return nil
	}
	r := callRet(cq.c.lib.destroyCQ, uintptr(cq.p))
	cq.p = nil
	if r != 0 {
		return &Error{Verb: "ibv_destroy_cq", Object: cq.c.info.Name, Errno: retErrno(r)}
	}
	return nil
}

// QP is a queue pair.
type QP struct {
	c *Context
	p unsafe.Pointer
}

// CreateQP is ibv_create_qp. It returns the capacities the provider granted.
func (pd *PD) CreateQP(init QPInitAttr) (*QP, QPCap, error) {
	var qp *QP
	var granted QPCap
	err := pd.c.withScratch(func(a *Arena) error {
		ia, err := New[QPInitAttr](a)
		if err != nil {
			return err
		}
		*ia = init
		p, e := pd.c.lib.call(pd.c.lib.createQP, uintptr(pd.p), uintptr(unsafe.Pointer(ia)))
		if p == 0 {
			return &Error{Verb: "ibv_create_qp", Object: fmt.Sprintf("%s, cap %+v", pd.c.info.Name, init.Cap), Errno: e}
		}
		qp = &QP{c: pd.c, p: cptr(p)}
		granted = ia.Cap
		return nil
	})
	return qp, granted, err
}

// Num is the QP number.
func (qp *QP) Num() uint32 { return (*qpHead)(qp.p).QPNum }

// Addr identifies the QP in async events.
func (qp *QP) Addr() uintptr { return uintptr(qp.p) }

// Modify is ibv_modify_qp; verb names the transition in errors.
func (qp *QP) Modify(attr QPAttr, mask int, verb string) error {
	return qp.c.withScratch(func(a *Arena) error {
		at, err := New[QPAttr](a)
		if err != nil {
			return err
		}
		*at = attr
		if r := callRet(qp.c.lib.modifyQP, uintptr(qp.p), uintptr(unsafe.Pointer(at)), uintptr(mask)); r != 0 {
			return &Error{Verb: verb, Object: fmt.Sprintf("%s QP 0x%x, mask 0x%x", qp.c.info.Name, qp.Num(), mask), Errno: retErrno(r)}
		}
		return nil
	})
}

// Query is ibv_query_qp.
func (qp *QP) Query(mask int) (QPAttr, error) {
	var out QPAttr
	err := qp.c.withScratch(func(a *Arena) error {
		at, err := New[QPAttr](a)
		if err != nil {
			return err
		}
		ia, err := New[QPInitAttr](a)
		if err != nil {
			return err
		}
		if r := callRet(qp.c.lib.queryQP, uintptr(qp.p), uintptr(unsafe.Pointer(at)), uintptr(mask), uintptr(unsafe.Pointer(ia))); r != 0 {
			return &Error{Verb: "ibv_query_qp", Object: fmt.Sprintf("%s QP 0x%x", qp.c.info.Name, qp.Num()), Errno: retErrno(r)}
		}
		out = *at
		return nil
	})
	return out, err
}

// PostSend is the inline ibv_post_send: the provider's ops.post_send. wr
// (and its chain and SGEs) must be in C memory; bad receives the failing WR.
func (qp *QP) PostSend(wr *SendWR, bad *uintptr) error {
	fn := (*contextHead)(cptr((*qpHead)(qp.p).Context)).Ops.PostSend
	if r := callRet(fn, uintptr(qp.p), uintptr(unsafe.Pointer(wr)), uintptr(unsafe.Pointer(bad))); r != 0 {
		return &Error{Verb: "ibv_post_send", Object: fmt.Sprintf("%s QP 0x%x", qp.c.info.Name, qp.Num()), Errno: retErrno(r)}
	}
	return nil
}

// PostRecv is the inline ibv_post_recv: the provider's ops.post_recv.
func (qp *QP) PostRecv(wr *RecvWR, bad *uintptr) error {
	fn := (*contextHead)(cptr((*qpHead)(qp.p).Context)).Ops.PostRecv
	if r := callRet(fn, uintptr(qp.p), uintptr(unsafe.Pointer(wr)), uintptr(unsafe.Pointer(bad))); r != 0 {
		return &Error{Verb: "ibv_post_recv", Object: fmt.Sprintf("%s QP 0x%x", qp.c.info.Name, qp.Num()), Errno: retErrno(r)}
	}
	return nil
}

// Destroy is ibv_destroy_qp. It is idempotent.
func (qp *QP) Destroy() error {
	if qp == nil || qp.p == nil {
		return nil
	}
	num := qp.Num()
	r := callRet(qp.c.lib.destroyQP, uintptr(qp.p))
	qp.p = nil
	if r != 0 {
		return &Error{Verb: "ibv_destroy_qp", Object: fmt.Sprintf("%s QP 0x%x", qp.c.info.Name, num), Errno: retErrno(r)}
	}
	return nil
}

// AsyncEvent is an event read from the context's async fd; it has already
// been acknowledged.
type AsyncEvent struct {
	Type    uint32
	Element uintptr // the CQ/QP address (compare with CQ.Addr/QP.Addr) or the port number
}

// Name is the enum name of the event type.
func (e AsyncEvent) Name() string { return EventName(e.Type) }

// SetAsyncNonblock makes ReadAsyncEvent return instead of waiting.
func (c *Context) SetAsyncNonblock() error {
	if err := unix.SetNonblock(c.AsyncFD(), true); err != nil {
		return fmt.Errorf("%s: async fd %d: set non-blocking: %w", c.info.Name, c.AsyncFD(), err)
	}
	return nil
}

// ReadAsyncEvent reads one pending async event and acknowledges it at once:
// destroying a CQ or QP waits until every event read for it is acknowledged,
// so an event must never be held. ok is false when none is pending (the fd
// must be non-blocking, see SetAsyncNonblock).
func (c *Context) ReadAsyncEvent() (ev AsyncEvent, ok bool, err error) {
	err = c.withScratch(func(a *Arena) error {
		ae, err := New[asyncEvent](a)
		if err != nil {
			return err
		}
		r, e := c.lib.call(c.lib.getAsyncEvent, uintptr(c.p), uintptr(unsafe.Pointer(ae)))
		if int32(r) != 0 {
			if e == syscall.EAGAIN {
				return nil
			}
			return &Error{Verb: "ibv_get_async_event", Object: c.info.Name, Errno: e}
		}
		ev = AsyncEvent{Type: ae.EventType, Element: ae.Element}
		ok = true
		callRet(c.lib.ackAsyncEvent, uintptr(unsafe.Pointer(ae)))
		return nil
	})
	return ev, ok, err
}

// Len is the registered length.
func (mr *MR) Len() int {
	if mr == nil || mr.p == nil {
		return 0
	}
	return int((*mrHead)(mr.p).Length)
}
