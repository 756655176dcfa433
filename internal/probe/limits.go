package probe

import (
	"context"
	"errors"
	"fmt"
	"math"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// LimitsResult is the firmware-layer probe's outcome.
type LimitsResult struct {
	Result
	Requested verbs.QPCap `json:"requested"` // max_qp_wr / max_sge as the device reports them
	Granted   verbs.QPCap `json:"granted"`   // what ibv_create_qp returned for Requested
	// Attempts lists every QP creation tried, in order.
	Attempts []LimitAttempt `json:"attempts"`
	// Inconsistent is true when the device rejects (EINVAL) a QP at the
	// limits it reports itself: the documented firmware/driver mismatch.
	Inconsistent bool `json:"inconsistent"`
	// MemoryBound is true when the QP at all limits at once needed more
	// memory than the host could give (ENOMEM) or than the probe's budget
	// allows, and each limit on its own that fits was accepted: a resource
	// limit, not an inconsistency.
	MemoryBound bool `json:"memory_bound"`
}

// LimitAttempt is one ibv_create_qp at (some of) the advertised limits.
type LimitAttempt struct {
	What    string      `json:"what"`
	Cap     verbs.QPCap `json:"cap"`
	Granted verbs.QPCap `json:"granted"`
	Errno   string      `json:"errno,omitempty"`
	// NotTried says why the QP was not created: its queues need more memory than the probe's
	// budget (Options.Memory), or other devices' limits probes held the budget until this
	// probe's deadline.
	NotTried string `json:"not_tried,omitempty"`
}

// Tried says whether the QP was created or refused, as opposed to left out.
func (a LimitAttempt) Tried() bool { return a.NotTried == "" }

// QueueBytes is a lower bound of the memory a QP of c needs for its queues: 16 bytes per
// scatter/gather entry, plus one 16-byte control segment per send work request. That is the
// smallest work-request layout among the providers (mlx5 builds WQEs of 16-byte segments,
// include/linux/mlx5/qp.h; rxe's struct rxe_send_wqe and rxe_recv_wqe, include/uapi/rdma/
// rdma_user_rxe.h, are larger), so an attempt is left out only when it cannot fit.
func QueueBytes(c verbs.QPCap) uint64 {
	return addSat(mulSat(uint64(c.MaxSendWR), 16*(uint64(c.MaxSendSGE)+1)), mulSat(uint64(c.MaxRecvWR), 16*uint64(c.MaxRecvSGE)))
}

// mulSat and addSat saturate at the largest uint64: the limits come from the device, and a
// bound that wrapped around would let a huge QP through.
func mulSat(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

func addSat(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// MemoryBudgetRemedy is how to verify the limits a memory budget left out.
const MemoryBudgetRemedy = "The limits probes of a run keep their QPs together within a quarter of the memory the kernel reports available (MemAvailable): " +
	"rdmadiag's own margin, so that a health check does not take memory from the node's jobs. Run it again when more memory is free to verify the limits left out."

// MemoryWaitRemedy is how to verify the limits left out because other devices' limits probes
// held the memory budget until the probe's deadline.
const MemoryWaitRemedy = "The limits probes of all devices share one memory budget; this one's deadline came while others held it. " +
	"Run it again with a longer --probe-timeout, or on this device alone (--only firmware.limits_probe), to verify the limits left out."

// rxeVendorID is the vendor_id Soft-RoCE reports (RXE_VENDOR_ID, drivers/infiniband/sw/rxe/
// rxe_param.h).
const rxeVendorID = 0xffffff

// RXEQueueBytes is a lower bound of what rxe allocates for a QP of c: rxe_queue_init
// (drivers/infiniband/sw/rxe/rxe_queue.c) gives each queue roundup_pow_of_two(max_wr + 1) slots
// of roundup_pow_of_two(element) bytes, at least a cache line (64 bytes), and rxe_qp.c sizes a
// send element as struct rxe_send_wqe plus the SGEs, a receive element as struct rxe_recv_wqe
// plus the SGEs (include/uapi/rdma/rdma_user_rxe.h); 128 and 32 bytes are below those structs'
// sizes. At rxe's max_qp_wr (1 << 20) one queue alone is 2^21 slots: hundreds of MiB.
func RXEQueueBytes(c verbs.QPCap) uint64 {
	queue := func(wr, elem uint64) uint64 { return mulSat(pow2(wr+1), pow2(max(elem, 64))) }
	return addSat(queue(uint64(c.MaxSendWR), 128+16*uint64(c.MaxSendSGE)), queue(uint64(c.MaxRecvWR), 32+16*uint64(c.MaxRecvSGE)))
}

func pow2(v uint64) uint64 {
	p := uint64(1)
	for p < v && p < 1<<62 {
		p <<= 1
	}
	return p
}

// planLimits lists the QPs the probe creates, in order: both limits at once, then each on its
// own (tried only if the first fails with ENOMEM, or is left out). An attempt whose queues
// (need, a lower bound) cannot fit in budget (bytes; 0: no bound) is marked NotTried.
func planLimits(wr, sge uint32, budget uint64, why string, need func(verbs.QPCap) uint64) []LimitAttempt {
	if why != "" {
		why = " (" + why + ")"
	}
	attempts := []LimitAttempt{
		{What: "max_qp_wr and max_sge", Cap: verbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: sge, MaxRecvSGE: sge}},
		{What: "max_qp_wr, one SGE", Cap: verbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: 1, MaxRecvSGE: 1}},
		{What: "max_sge, one WR", Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: sge, MaxRecvSGE: sge}},
	}
	for i := range attempts {
		if n := need(attempts[i].Cap); budget > 0 && n > budget {
			attempts[i].NotTried = fmt.Sprintf("needs at least %d MiB of queue memory, over the probe's budget of %d MiB%s", n>>20, budget>>20, why)
		}
	}
	return attempts
}

const inconsistentRemedy = "the device rejects a QP at the max_qp_wr/max_sge it advertises: a firmware/driver inconsistency; " +
	"update NIC firmware and driver to a matched release, and size QPs below the advertised maxima"

// Limits is the firmware-layer probe: create an RC QP asking for the limits
// ibv_query_device reports (max_qp_wr work requests and max_sge SGEs, both
// queues). EINVAL fails the probe as the firmware/driver inconsistency.
// ENOMEM says only that the host could not back that much queue memory, so
// the probe then asks for each limit on its own (max_qp_wr with one SGE,
// max_sge with one WR); EINVAL there is the inconsistency again.
func Limits(ctx context.Context, lib *verbs.Lib, dev string, port int, o Options) (r LimitsResult) {
	// r is named: the deferred cleanup completes it after return.
	s, done, ok := begin(ctx, lib, "firmware", dev, port, o, &r.Result)
	if !ok {
		return r
	}
	defer done()
	if s.requireActive() != nil {
		return r
	}
	wr, sge := uint32(s.dattr.MaxQPWR), uint32(s.dattr.MaxSGE)
	r.Requested = verbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: sge, MaxRecvSGE: sge}
	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	cq, err := s.createCQ(1)
	if err != nil {
		return r
	}
	need := QueueBytes
	if s.dattr.VendorID == rxeVendorID {
		need = RXEQueueBytes
	}
	attempts := planLimits(wr, sge, o.Memory.Total(), o.Memory.Why(), need)
	if !attempts[0].Tried() && !attempts[1].Tried() && !attempts[2].Tried() {
		r.Attempts = attempts
		s.res.Remedy = MemoryBudgetRemedy
		_ = s.skip(StageCreateQP, fmt.Errorf("no QP at the limits fits the probe's memory budget: %s", attempts[2].NotTried))
		return r
	}
	var waited error // why an attempt could not have its memory: the limit of this run
	s.step(StageCreateQP, func() error {
		for i := range attempts {
			a := &attempts[i]
			if !a.Tried() {
				r.Attempts = append(r.Attempts, *a)
				continue
			}
			// The queues' memory is reserved from the run's pool before the QP exists and
			// given back once it is destroyed: other devices' limits probes share the pool.
			release, err := o.Memory.Reserve(s.ctx, need(a.Cap))
			if errors.Is(err, ErrOverBudget) { // planLimits left these out already
				a.NotTried = err.Error()
				r.Attempts = append(r.Attempts, *a)
				continue
			}
			if err != nil {
				if ctx.Err() != nil {
					return err // the run ended: reported as any stage the run's end cut short
				}
				// The probe's own deadline came while other devices' limits probes held the
				// pool: those attempts are left out as over the budget, not failed.
				waited = fmt.Errorf("the probe's deadline came while other devices' limits probes held the probe memory budget of %d MiB (%w)", o.Memory.Total()>>20, err)
				for j := i; j < len(attempts); j++ {
					if attempts[j].Tried() {
						attempts[j].NotTried = fmt.Sprintf("waited until the probe's deadline for %d MiB of the probe memory budget of %d MiB, held by other devices' limits probes",
							need(attempts[j].Cap)>>20, o.Memory.Total()>>20)
					}
					r.Attempts = append(r.Attempts, attempts[j])
				}
				break
			}
			qp, granted, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq.Addr(), RecvCQ: cq.Addr(), Cap: a.Cap, QPType: verbs.QPTypeRC})
			r.Attempts = append(r.Attempts, *a)
			last := &r.Attempts[len(r.Attempts)-1]
			if err == nil {
				last.Granted = granted
				if i == 0 {
					r.Granted = granted
				}
				// Destroy at once: the next attempt, or another device's, may need the memory.
				if derr := qp.Destroy(); derr != nil {
					// The queues may still be mapped: the pool has them back only with the
					// probe's teardown, whose ibv_close_device frees what the context holds.
					s.tr.push("probe memory reservation", func() error { release(); return nil })
					return derr
				}
				release()
				if i == 0 {
					return nil
				}
				continue
			}
			release()
			var ve *verbs.Error
			if errors.As(err, &ve) && ve.Errno != 0 {
				last.Errno = verbs.ErrnoName(ve.Errno)
			}
			switch {
			case errors.Is(err, syscall.EINVAL):
				r.Inconsistent = true
				return err
			case errors.Is(err, syscall.ENOMEM):
				continue
			default:
				return err
			}
		}
		tried := false
		for k, a := range r.Attempts {
			if !a.Tried() {
				continue
			}
			tried = true
			if k > 0 && a.Errno != "" {
				return fmt.Errorf("ibv_create_qp at %s: %s; the device cannot create a QP at its advertised limits (host memory or device resources exhausted)", a.What, a.Errno)
			}
		}
		if waited != nil {
			s.res.Remedy = MemoryWaitRemedy
		}
		if !tried {
			return s.skip(StageCreateQP, fmt.Errorf("no QP at the limits created: %w", waited))
		}
		r.MemoryBound = true
		return nil
	})
	if r.Inconsistent {
		r.Remedy = inconsistentRemedy
	}
	return r
}
