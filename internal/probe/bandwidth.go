package probe

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// BandwidthResult is the pcie-layer (DMA path) probe's outcome.
type BandwidthResult struct {
	Result
	MsgSize    int           `json:"msg_size"`
	TxDepth    int           `json:"tx_depth"`
	Iters      int           `json:"iters"` // RDMA WRITEs completed in the timed run
	Bytes      int64         `json:"bytes"`
	Duration   time.Duration `json:"duration_ns"`
	MBps       float64       `json:"mb_per_s"`  // 10^6 bytes per second
	MiBps      float64       `json:"mib_per_s"` // 2^20 bytes per second, as perftest's MB/sec
	Gbps       float64       `json:"gbit_per_s"`
	Truncated  bool          `json:"truncated"` // stopped early to stay within the deadline
	CQMod      int           `json:"cq_mod"`    // one signaled write per CQMod
	LatSize    int           `json:"lat_size"`
	LatIters   int           `json:"lat_iters"`
	LatMin     time.Duration `json:"lat_min_ns"`
	LatMedian  time.Duration `json:"lat_median_ns"`
	LatP99     time.Duration `json:"lat_p99_ns"`
	LatMax     time.Duration `json:"lat_max_ns"`
	Completion *Completion   `json:"failed_completion,omitempty"`
}

// checkEvery is how often busy loops look at the deadline and cancellation.
const checkEvery = 5 * time.Millisecond

// Bandwidth is the DMA-path probe: RDMA WRITE bandwidth with large messages
// and TxDepth writes in flight from one RC QP into a second one on the same
// port (ib_write_bw's shape: every write signaled, time from the first post
// to the poll that returns the last completion), then the completion latency
// of small signaled writes, one at a time.
func Bandwidth(ctx context.Context, lib *verbs.Lib, dev string, port int, o Options) (r BandwidthResult) {
	// r is named: the deferred cleanup completes it after return.
	s, done, ok := begin(ctx, lib, "pcie", dev, port, o, &r.Result)
	if !ok {
		return r
	}
	defer done()
	if s.requireActive() != nil {
		return r
	}
	r.MsgSize = orDefault(o.MsgSize, 65536)
	r.TxDepth = min(orDefault(o.TxDepth, 128), int(s.dattr.MaxQPWR))
	iters := orDefault(o.Iters, 1000)
	r.LatSize = min(orDefault(o.LatSize, 64), r.MsgSize)
	latIters := orDefault(o.LatIters, 1000)

	pd, err := s.allocPD()
	if err != nil {
		return r
	}
	mem, mr, err := s.regMem(pd, 2*r.MsgSize)
	if err != nil {
		return r
	}
	cq, err := s.createCQ(r.TxDepth)
	if err != nil {
		return r
	}
	qp, _, err := s.createQP(pd, cq, verbs.QPCap{MaxSendWR: uint32(r.TxDepth), MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	if err != nil {
		return r
	}
	// The writes target a second QP, as ib_write_bw's client writes to its
	// server: the same topology as the tool it is compared with, and on
	// hardware the loopback path perftest is known to work on. (On rxe one
	// self-connected QP measured the same.)
	rcq, err := s.createCQ(1)
	if err != nil {
		return r
	}
	target, _, err := s.createQP(pd, rcq, verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 1, MaxRecvSGE: 1})
	if err != nil {
		return r
	}
	var trans []Transition
	if s.connectPair(qp, target, &trans) != nil {
		return r
	}
	a, err := s.arena(r.TxDepth*160 + 8192)
	if err != nil {
		return r
	}
	sges, err := verbs.NewSlice[verbs.SGE](a, r.TxDepth)
	if err != nil {
		s.failErr(StageBandwidth, err)
		return r
	}
	wrs, err := verbs.NewSlice[verbs.SendWR](a, r.TxDepth)
	if err != nil {
		s.failErr(StageBandwidth, err)
		return r
	}
	wcs, err := verbs.NewSlice[verbs.WC](a, 32)
	if err != nil {
		s.failErr(StageBandwidth, err)
		return r
	}
	base := uint64(mem.Addr())
	setup := func(size int) {
		for i := range wrs {
			sges[i] = verbs.SGE{Addr: base, Length: uint32(size), LKey: mr.LKey}
			wrs[i] = verbs.SendWR{WRID: uint64(i), SGList: sgeAddr(&sges[i]), NumSGE: 1, Opcode: verbs.WROpRDMAWrite,
				SendFlags: verbs.SendSignaled, RemoteAddr: base + uint64(r.MsgSize), RKey: mr.RKey}
		}
	}
	// Half of the time left goes to the bandwidth run, a quarter to latency,
	// the rest stays for teardown.
	budget := func() time.Duration {
		if d, ok := s.ctx.Deadline(); ok {
			return time.Until(d) / 2
		}
		return time.Hour
	}
	// The timed loops stay on one OS thread and never yield. On rxe nearly
	// all of a run is spent inside ibv_post_send (the kernel runs requester,
	// loopback responder and completer in the posting thread), and a yield
	// every few milliseconds let the Go scheduler move the goroutine between
	// threads and wake a second one: in the QEMU lab the probe then kept both
	// guest CPUs busy where ib_write_bw keeps one, and measured 20-50% less
	// than ib_write_bw on the same device (see lab/labtest).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var bad uintptr
	if s.step(StageBandwidth, func() error {
		setup(r.MsgSize)
		stop := time.Now().Add(budget())
		// Optionally (CQMod > 1) signal only every mod-th write and the last:
		// a send queue completes in order, so a completion for write i
		// retires every write up to i.
		mod := max(1, min(orDefault(o.CQMod, 1), r.TxDepth/2))
		r.CQMod = mod
		target := iters
		posted, completed := 0, 0
		start := time.Now()
		checked := start
		// tick looks at the clock, by time and not by iteration count: on rxe a post_send
		// runs the transfer in the kernel, so one iteration can take milliseconds, and a whole
		// queue of them (TxDepth writes) seconds when other probes share the CPU. So it is
		// called after every post as well as after every poll: eight rxe devices' probes at
		// once on two CPUs spent longer than their deadline filling the first queue.
		tick := func() error {
			now := time.Now()
			if now.Sub(checked) <= checkEvery {
				return nil
			}
			checked = now
			if err := s.expired(); err != nil {
				return fmt.Errorf("%d of %d writes completed before %w", completed, target, err)
			}
			if !r.Truncated && now.After(stop) {
				// Out of budget: post no more, finish at the next signaled write.
				r.Truncated = true
				target = min(target, max(posted, 1))
				if target%mod != 0 && target < iters {
					target = min(iters, (target/mod+1)*mod)
				}
				if posted > target {
					target = posted
				}
			}
			return nil
		}
		for completed < target {
			for posted < target && posted-completed < r.TxDepth {
				wr := &wrs[posted%r.TxDepth]
				wr.WRID = uint64(posted)
				wr.SendFlags = 0
				if (posted+1)%mod == 0 || posted == target-1 {
					wr.SendFlags = verbs.SendSignaled
				}
				if err := qp.PostSend(wr, &bad); err != nil {
					return err
				}
				posted++
				if err := tick(); err != nil {
					return err
				}
			}
			k, err := cq.Poll(wcs)
			if err != nil {
				return err
			}
			for _, w := range wcs[:k] {
				if w.Status != verbs.WCStatusSuccess {
					c := s.completion(&w)
					r.Completion = &c
					return fmt.Errorf("RDMA WRITE %d of %d completed with %s (%s)", w.WRID+1, target, c.Status, c.StatusText)
				}
				completed = max(completed, int(w.WRID)+1)
			}
			if err := tick(); err != nil {
				return err
			}
		}
		r.Duration = time.Since(start)
		r.Iters = completed
		r.Bytes = int64(completed) * int64(r.MsgSize)
		if completed == 0 || r.Duration <= 0 {
			return fmt.Errorf("no RDMA WRITE completed within the budget")
		}
		sec := r.Duration.Seconds()
		r.MBps = float64(r.Bytes) / sec / 1e6
		r.MiBps = float64(r.Bytes) / sec / (1 << 20)
		r.Gbps = float64(r.Bytes) * 8 / sec / 1e9
		return nil
	}) != nil {
		return r
	}
	s.step(StageLatency, func() error {
		setup(r.LatSize)
		stop := time.Now().Add(budget() / 2)
		lat := make([]time.Duration, 0, latIters)
		checked := time.Now()
		for i := 0; i < latIters; i++ {
			t0 := time.Now()
			if err := qp.PostSend(&wrs[0], &bad); err != nil {
				return err
			}
			for {
				k, err := cq.Poll(wcs[:1])
				if err != nil {
					return err
				}
				if k == 1 {
					if wcs[0].Status != verbs.WCStatusSuccess {
						c := s.completion(&wcs[0])
						r.Completion = &c
						return fmt.Errorf("latency write %d completed with %s", i+1, c.Status)
					}
					break
				}
				if now := time.Now(); now.Sub(checked) > checkEvery {
					checked = now
					if err := s.expired(); err != nil {
						return fmt.Errorf("latency write %d: %w", i+1, err)
					}
				}
			}
			now := time.Now()
			lat = append(lat, now.Sub(t0))
			if now.Sub(checked) > checkEvery {
				checked = now
				if err := s.expired(); err != nil {
					return fmt.Errorf("after %d latency writes: %w", i+1, err)
				}
				if now.After(stop) {
					break
				}
			}
		}
		slices.Sort(lat)
		r.LatIters = len(lat)
		r.LatMin, r.LatMax = lat[0], lat[len(lat)-1]
		r.LatMedian = lat[len(lat)/2]
		r.LatP99 = lat[min(len(lat)-1, len(lat)*99/100)]
		return nil
	})
	return r
}
