package probe

import (
	"context"
	"errors"
	"fmt"
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
	// memory than the host could give (ENOMEM) but each limit on its own
	// was accepted: a resource limit, not an inconsistency.
	MemoryBound bool `json:"memory_bound"`
}

// LimitAttempt is one ibv_create_qp at (some of) the advertised limits.
type LimitAttempt struct {
	What    string      `json:"what"`
	Cap     verbs.QPCap `json:"cap"`
	Granted verbs.QPCap `json:"granted"`
	Errno   string      `json:"errno,omitempty"`
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
	attempts := []LimitAttempt{
		{What: "max_qp_wr and max_sge", Cap: r.Requested},
		{What: "max_qp_wr, one SGE", Cap: verbs.QPCap{MaxSendWR: wr, MaxRecvWR: wr, MaxSendSGE: 1, MaxRecvSGE: 1}},
		{What: "max_sge, one WR", Cap: verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: sge, MaxRecvSGE: sge}},
	}
	s.step(StageCreateQP, func() error {
		for i := range attempts {
			a := &attempts[i]
			qp, granted, err := pd.CreateQP(verbs.QPInitAttr{SendCQ: cq.Addr(), RecvCQ: cq.Addr(), Cap: a.Cap, QPType: verbs.QPTypeRC})
			r.Attempts = append(r.Attempts, *a)
			last := &r.Attempts[len(r.Attempts)-1]
			if err == nil {
				last.Granted = granted
				if i == 0 {
					r.Granted = granted
				}
				// Destroy at once: the next attempt may need the memory.
				if derr := qp.Destroy(); derr != nil {
					return derr
				}
				if i == 0 {
					return nil
				}
				continue
			}
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
		for _, a := range r.Attempts[1:] {
			if a.Errno != "" {
				return fmt.Errorf("ibv_create_qp at %s: %s; the device cannot create a QP at its advertised limits (host memory or device resources exhausted)", a.What, a.Errno)
			}
		}
		r.MemoryBound = true
		return nil
	})
	if r.Inconsistent {
		r.Remedy = inconsistentRemedy
	}
	return r
}
