// Package cq holds the completion-queue layer checks: CQ depth against the work requests that
// can complete on it, CQ overruns and EQ errors the kernel already logged, and the completion
// vectors (event queues and their interrupts).
package cq

import (
	"math/bits"

	"github.com/rdmadiag/rdmadiag/internal/optfile"
)

// Recommended is the CQ depth to size for concurrency work requests: the next power of two at
// or above twice the concurrency. Twice, because a CQ that is exactly full overruns on the
// next completion while the consumer is descheduled (completions keep arriving while a
// poller drains a batch); a power of two, because that is what hardware allocates anyway (mlx5
// rounds every CQ up to one: roundup_pow_of_two(entries + 1) in mlx5_ib_create_cq,
// drivers/infiniband/hw/mlx5/cq.c; so asking for less buys nothing). README's worked example:
// concurrency 256 gives 512.
func Recommended(concurrency int64) int64 {
	if concurrency <= 0 {
		return 0
	}
	n := uint64(2 * concurrency)
	if n&(n-1) == 0 {
		return int64(n)
	}
	return int64(1) << bits.Len64(n)
}

// Overruns reports whether a CQ of depth cqe can overrun under concurrency outstanding work
// requests: each one produces a completion, and a CQ holds at most cqe of them (ibv_create_cq(3):
// "at least cqe entries"; the kernel reports the granted depth).
func Overruns(cqe, concurrency int64) bool { return cqe < concurrency }

// Profile maps applications to the work requests each can have outstanding on one CQ
// (--wr-profile, decoded before the run). Keys are command names as /proc/<pid>/comm and rdma
// res show print them ("ib_write_bw"), or "[module]" for kernel owners ("[nvme_rdma]").
type Profile = optfile.WRProfile
