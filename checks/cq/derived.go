package cq

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rawctx"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
)

// Capacity is how many work requests the QPs attached to one CQ can hold, from the drivers'
// raw contexts: the send queues of QPs whose send CQ it is plus the receive queues of QPs
// whose receive CQ it is. It is what can complete on the CQ if every queue is full, which is
// the most that can be outstanding, not what an application keeps outstanding: libraries that
// share one CQ between many QPs (UCX, libfabric) limit their outstanding requests to the CQ's
// size themselves, so a CQ below its capacity is a warning, not the certain overrun a declared
// concurrency above the depth is.
type Capacity struct {
	// WRs is every queue counted; Exact the part known exactly. They differ by the mlx5 send
	// queues, counted in 64-byte WQE blocks: one block per work request at the least, so the
	// block count is an upper bound (a request with inline data or several SGEs takes more).
	WRs, Exact int64
	// QPs is the number of QP queues counted.
	QPs int
	// SRQ counts QPs that receive from a shared receive queue into this CQ: the SRQ's depth is
	// not in the QP context, so those receives are not in WRs (an understatement, never a
	// false alarm). RQAmbiguous counts hns QPs whose RQ_SHIFT 15 is read as "no RQ" although
	// it may be a 32768-entry RQ (likewise an understatement).
	SRQ, RQAmbiguous int
}

// Upper reports whether WRs includes a send queue counted in WQE blocks.
func (c Capacity) Upper() bool { return c.WRs != c.Exact }

// Derived is one device's capacities by restrack CQ number (nldev's CQN), or why there are none.
type Derived struct {
	// ByCQN holds every CQ of the dump, those no QP uses with a zero Capacity; a CQ missing
	// from it appeared after the dumps and is not judged.
	ByCQN map[uint32]Capacity
	// Layout names the raw format the contexts were read with.
	Layout string
	// Skipped counts kernel-owned QPs whose raw context could not be read or matched (mlx5
	// emulates the GSI QP; its raw dump is not known from hardware); their CQs are not judged.
	Skipped int
	// Reason says why capacities could not be derived; empty when ByCQN is usable.
	Reason string
}

// deriveAll computes capacities for every device, once per run.
func deriveAll(env *checks.Env) map[uint32]*Derived { return derivedFact.Get(env) }

var derivedFact = checks.NewFact("CQ capacities derived from raw contexts", func(env *checks.Env) map[uint32]*Derived {
	out := map[uint32]*Derived{}
	c := nldev.NewClient(env.Host.Netlink())
	devs, err := c.Devices()
	if err != nil {
		return out
	}
	inv := env.Inventory()
	for _, d := range devs {
		driver, software := "", false
		if dev := inv.Device(d.Name); dev != nil {
			driver, software = dev.Driver, dev.Software()
			if dev.PCI != nil {
				driver = dev.PCI.Driver
			}
		}
		out[d.Index] = derive(c, d, driver, software)
	}
	return out
})

// derive reads one device's raw QP and CQ contexts and turns them into capacities. Raw entries
// carry no object number, so they are tied to the plain dumps by position (both walk the
// kernel's resource table in the same order). Each raw dump is bracketed by a plain dump before
// and after it, which must list the same objects (CQ numbers are allocated cyclically and QP
// numbers are not reused at once, so a change between them shows); then every CQ's raw depth
// must equal the plain dump's cqe+1 and every QP's raw number and state its plain ones: a layout
// guessed wrong, or a table that changed, fails loudly instead of producing numbers.
func derive(c *nldev.Client, d nldev.Device, driver string, software bool) *Derived {
	drv, ok := rawctx.ForPCIDriver(driver)
	if !rawctx.WorthAsking(driver, software) {
		// Not asked: on hardware a raw dump costs a firmware command per object (bnxt_re), and
		// the answer could not be read anyway.
		return &Derived{Reason: fmt.Sprintf("%s (driver %s) has no raw contexts this version decodes (mlx5_core, hns3)", d.Name, orUnknown(driver))}
	}
	qps, rawQPs, err := bracket(d, "QP", c.QPs, c.QPsRaw, sameQPs)
	if err != nil {
		return &Derived{Reason: err.Error()}
	}
	// A software device (rxe, siw) is asked anyway: its refusal costs nothing and is the
	// kernel's own word on it.
	if !ok && len(rawQPs) == 0 {
		return &Derived{Reason: fmt.Sprintf("%s has no QPs, so the kernel had no raw context to refuse or give", d.Name)}
	}
	if !ok {
		return &Derived{Reason: fmt.Sprintf("%s (driver %s) returned raw contexts this version does not decode", d.Name, orUnknown(driver))}
	}
	cqs, rawCQs, err := bracket(d, "CQ", c.CQs, c.CQsRaw, sameCQs)
	if err != nil {
		return &Derived{Reason: err.Error()}
	}
	var tried []string
	for _, l := range rawctx.Layouts(drv) {
		der, why := deriveWith(drv, l, rawQPs, qps, rawCQs, cqs)
		if der != nil {
			return der
		}
		tried = append(tried, fmt.Sprintf("%v: %s", l, why))
	}
	return &Derived{Reason: fmt.Sprintf("raw contexts of %s do not agree with the kernel's own dump under any known layout, "+
		"so they are not used (%v)", d.Name, tried)}
}

// bracket takes a plain dump, the raw dump and the plain dump again, and returns the plain
// objects with their raw contexts when nothing changed in between.
func bracket[T any](d nldev.Device, what string, plain func(uint32) ([]T, error), raw func(uint32) ([]nldev.Raw, error),
	same func(a, b []T) bool) ([]T, []nldev.Raw, error) {
	before, err := plain(d.Index)
	if err != nil {
		return nil, nil, fmt.Errorf("%s dump of %s: %w", what, d.Name, err)
	}
	raws, err := raw(d.Index)
	if err != nil {
		return nil, nil, errors.New(rawRefusal(what, d.Name, err))
	}
	after, err := plain(d.Index)
	if err != nil {
		return nil, nil, fmt.Errorf("%s dump of %s: %w", what, d.Name, err)
	}
	if !same(before, after) || len(raws) != len(after) {
		return nil, nil, fmt.Errorf("the %s table of %s changed while it was read (%d, %d raw, then %d objects); run again at a quieter moment",
			what, d.Name, len(before), len(raws), len(after))
	}
	return after, raws, nil
}

func sameCQs(a, b []nldev.CQ) bool {
	return slices.EqualFunc(a, b, func(x, y nldev.CQ) bool { return x.CQN == y.CQN && x.CQE == y.CQE })
}

func sameQPs(a, b []nldev.QP) bool {
	return slices.EqualFunc(a, b, func(x, y nldev.QP) bool { return x.LQPN == y.LQPN && x.Port == y.Port && x.State == y.State })
}

func deriveWith(drv rawctx.Driver, l rawctx.Layout, rawQPs []nldev.Raw, qps []nldev.QP, rawCQs []nldev.Raw, cqs []nldev.CQ) (*Derived, string) {
	hwToRestrack := make(map[uint32]uint32, len(cqs))
	caps := make(map[uint32]Capacity, len(cqs))
	for i := range rawCQs {
		rc, err := rawctx.DecodeCQ(drv, l, rawCQs[i].Data)
		if err != nil {
			return nil, fmt.Sprintf("CQ %d: %v", cqs[i].CQN, err)
		}
		if !rc.HasCQN {
			return nil, fmt.Sprintf("the %s format carries no CQ number (hns before Linux 6.6)", rc.Format)
		}
		if int64(rc.Depth) != int64(cqs[i].CQE)+1 {
			return nil, fmt.Sprintf("CQ %d: raw depth %d, kernel cqe %d (want cqe+1)", cqs[i].CQN, rc.Depth, cqs[i].CQE)
		}
		hwToRestrack[rc.CQN] = cqs[i].CQN
		caps[cqs[i].CQN] = Capacity{}
	}
	update := func(hw uint32, f func(c *Capacity)) {
		if rt, ok := hwToRestrack[hw]; ok {
			c := caps[rt]
			f(&c)
			caps[rt] = c
		}
	}
	add := func(hw uint32, n uint32, upper bool) {
		if n == 0 {
			return
		}
		update(hw, func(c *Capacity) {
			c.WRs += int64(n)
			if !upper {
				c.Exact += int64(n)
			}
			c.QPs++
		})
	}
	der := &Derived{ByCQN: caps, Layout: fmt.Sprint(l)}
	for i := range rawQPs {
		kq := qps[i]
		if kq.State == nldev.QPStateReset {
			// A QP in RESET holds no work requests, and hns has not even written its context.
			continue
		}
		q, err := rawctx.DecodeQP(drv, l, rawQPs[i].Data)
		if err == nil && q.HasQPN && q.QPN != kq.LQPN {
			err = fmt.Errorf("raw QP %d is QP %d in the kernel's dump", q.QPN, kq.LQPN)
		}
		if st, ok := rawctx.IBState(q); err == nil && ok && st != kq.State {
			err = fmt.Errorf("raw state %s, kernel state %s", nldev.QPStateName(st), nldev.QPStateName(kq.State))
		}
		if err != nil {
			if kq.KernName != "" || kq.PID == 0 {
				// Kernel consumers' CQs are not judged; one odd kernel QP (the GSI QP mlx5
				// emulates) must not cost the applications' verdicts.
				der.Skipped++
				continue
			}
			return nil, fmt.Sprintf("QP %d: %v", kq.LQPN, err)
		}
		add(q.SendCQ, q.SQ, q.SQBlocks)
		add(q.RecvCQ, q.RQ, false)
		if q.SRQ {
			update(q.RecvCQ, func(c *Capacity) { c.SRQ++ })
		}
		if q.RQAmbiguous {
			update(q.RecvCQ, func(c *Capacity) { c.RQAmbiguous++ })
		}
	}
	return der, ""
}

// rawRefusal explains why the kernel would not give raw contexts.
func rawRefusal(what, dev string, err error) string {
	switch {
	case errors.Is(err, syscall.EPERM):
		return fmt.Sprintf("raw %s contexts of %s need CAP_NET_ADMIN (run as root)", what, dev)
	case errors.Is(err, syscall.EINVAL):
		// EINVAL is also what mlx5 and hns answer when the query of one object fails, which
		// aborts the whole dump.
		return fmt.Sprintf("the driver of %s provides no raw %s contexts, or could not read one of them (the kernel answered EINVAL)", dev, what)
	case errors.Is(err, syscall.EOPNOTSUPP):
		return fmt.Sprintf("the firmware of %s does not offer the resource dump raw %s contexts come from (EOPNOTSUPP)", dev, what)
	case errors.Is(err, host.ErrNotRecorded):
		return "the snapshot was recorded without --raw-contexts"
	}
	return fmt.Sprintf("raw %s dump of %s: %v", what, dev, err)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
