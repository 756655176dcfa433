package cq

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/cq/rawctx"
	"github.com/rdmadiag/rdmadiag/host"
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
	WRs int64
	// QPs is the number of QP queues counted.
	QPs int
	// Upper is set when a send queue was counted in 64-byte WQE blocks (mlx5), an upper bound
	// on the work requests it holds.
	Upper bool
	// SRQ counts QPs that receive from a shared receive queue into this CQ: the SRQ's depth is
	// not in the QP context, so those receives are not in WRs (an understatement, never a
	// false alarm).
	SRQ int
}

// Derived is one device's capacities by restrack CQ number (nldev's CQN), or why there are none.
type Derived struct {
	ByCQN map[uint32]Capacity
	// Layout names the raw format the contexts were read with.
	Layout string
	// Reason says why capacities could not be derived; empty when ByCQN is usable.
	Reason string
}

// deriveAll computes capacities for every device, once per run.
func deriveAll(env *checks.Env) map[uint32]*Derived {
	return env.Memo("cq.derived", func() any {
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
	}).(map[uint32]*Derived)
}

// derive reads one device's raw QP and CQ contexts and turns them into capacities. Raw entries
// carry no object number, so they are tied to the plain dumps by position (both walk the
// kernel's resource table in the same order), and every CQ's raw depth must equal the plain
// dump's cqe+1 and every QP's raw state its plain state: a layout guessed wrong, or a table
// that changed between the dumps, then fails loudly instead of producing numbers.
func derive(c *nldev.Client, d nldev.Device, driver string, software bool) *Derived {
	drv, ok := rawctx.ForPCIDriver(driver)
	if !ok && !software {
		// Not asked: on hardware a raw dump costs a firmware command per object (bnxt_re), and
		// the answer could not be read anyway.
		return &Derived{Reason: fmt.Sprintf("%s (driver %s) has no raw contexts this version decodes (mlx5_core, hns3)", d.Name, orUnknown(driver))}
	}
	// A software device (rxe, siw) is asked anyway: its refusal costs nothing and is the
	// kernel's own word on it.
	rawQPs, err := c.QPsRaw(d.Index)
	if err != nil {
		return &Derived{Reason: rawRefusal("QP", d.Name, err)}
	}
	if !ok && len(rawQPs) == 0 {
		return &Derived{Reason: fmt.Sprintf("%s has no QPs, so the kernel had no raw context to refuse or give", d.Name)}
	}
	if !ok {
		return &Derived{Reason: fmt.Sprintf("%s (driver %s) returned raw contexts this version does not decode", d.Name, orUnknown(driver))}
	}
	qps, err := c.QPs(d.Index)
	if err != nil {
		return &Derived{Reason: fmt.Sprintf("QP dump: %v", err)}
	}
	rawCQs, err := c.CQsRaw(d.Index)
	if err != nil {
		return &Derived{Reason: rawRefusal("CQ", d.Name, err)}
	}
	cqs, err := c.CQs(d.Index)
	if err != nil {
		return &Derived{Reason: fmt.Sprintf("CQ dump: %v", err)}
	}
	if len(rawCQs) != len(cqs) || len(rawQPs) != len(qps) {
		return &Derived{Reason: fmt.Sprintf("the resource tables changed between the dumps (%d raw vs %d CQs, %d raw vs %d QPs); "+
			"run again on a quieter moment", len(rawCQs), len(cqs), len(rawQPs), len(qps))}
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

func deriveWith(drv rawctx.Driver, l rawctx.Layout, rawQPs []nldev.Raw, qps []nldev.QP, rawCQs []nldev.Raw, cqs []nldev.CQ) (*Derived, string) {
	hwToRestrack := make(map[uint32]uint32, len(cqs))
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
	}
	caps := make(map[uint32]Capacity, len(cqs))
	add := func(hw uint32, n uint32, upper bool) {
		if n == 0 {
			return
		}
		if rt, ok := hwToRestrack[hw]; ok {
			c := caps[rt]
			c.WRs += int64(n)
			c.QPs++
			c.Upper = c.Upper || upper
			caps[rt] = c
		}
	}
	for i := range rawQPs {
		q, err := rawctx.DecodeQP(drv, l, rawQPs[i].Data)
		if err != nil {
			return nil, fmt.Sprintf("QP %d: %v", qps[i].LQPN, err)
		}
		if q.HasQPN && q.QPN != qps[i].LQPN {
			return nil, fmt.Sprintf("raw QP %d is QP %d in the kernel's dump", q.QPN, qps[i].LQPN)
		}
		if st, ok := rawctx.IBState(q); ok && st != qps[i].State {
			return nil, fmt.Sprintf("QP %d: raw state %s, kernel state %s", qps[i].LQPN, nldev.QPStateName(st), nldev.QPStateName(qps[i].State))
		}
		if q.Reset {
			continue // never written: its queues are not in the context yet
		}
		add(q.SendCQ, q.SQ, q.SQBlocks)
		add(q.RecvCQ, q.RQ, false)
		if q.SRQ {
			if rt, ok := hwToRestrack[q.RecvCQ]; ok {
				c := caps[rt]
				c.SRQ++
				caps[rt] = c
			}
		}
	}
	return &Derived{ByCQN: caps, Layout: fmt.Sprint(l)}, ""
}

// rawRefusal explains why the kernel would not give raw contexts.
func rawRefusal(what, dev string, err error) string {
	switch {
	case errors.Is(err, syscall.EPERM):
		return fmt.Sprintf("raw %s contexts of %s need CAP_NET_ADMIN (run as root)", what, dev)
	case errors.Is(err, syscall.EINVAL):
		return fmt.Sprintf("the driver of %s provides no raw %s contexts (the kernel answered EINVAL)", dev, what)
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
