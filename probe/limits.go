package probe

import (
	"context"
	"errors"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// LimitsResult is the firmware-layer probe's outcome.
type LimitsResult struct {
	Result
	Requested verbs.QPCap `json:"requested"` // max_qp_wr / max_sge as the device reports them
	Granted   verbs.QPCap `json:"granted"`   // what ibv_create_qp returned
	// Inconsistent is true when the device rejects (EINVAL) a QP at the
	// limits it reports itself: the documented firmware/driver mismatch.
	Inconsistent bool `json:"inconsistent"`
}

// Limits is the firmware-layer probe: create an RC QP asking for the limits
// ibv_query_device reports (max_qp_wr work requests, max_sge SGEs).
func Limits(ctx context.Context, lib *verbs.Lib, dev string, port int, o Options) LimitsResult {
	var r LimitsResult
	s, done, ok := begin(ctx, lib, "firmware", dev, port, o, &r.Result)
	if !ok {
		return r
	}
	defer done()
	if s.requireActive() != nil {
		return r
	}
	r.Requested = verbs.QPCap{
		MaxSendWR:  uint32(s.dattr.MaxQPWR),
		MaxRecvWR:  uint32(s.dattr.MaxQPWR),
		MaxSendSGE: uint32(s.dattr.MaxSGE),
		MaxRecvSGE: uint32(s.dattr.MaxSGE),
	}
	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	cq, err := s.createCQ(1)
	if err != nil {
		return r
	}
	if _, granted, err := s.createQP(pd, cq, r.Requested); err == nil {
		r.Granted = granted
		return r
	}
	if errors.Is(r.Err, syscall.EINVAL) {
		r.Inconsistent = true
		r.Remedy = "the device rejects a QP at the max_qp_wr/max_sge it advertises: a firmware/driver inconsistency; " +
			"update NIC firmware and driver to a matched release, and size QPs below the advertised maxima"
	}
	return r
}
