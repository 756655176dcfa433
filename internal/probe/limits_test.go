package probe

import (
	"math"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

func TestQueueBytes(t *testing.T) {
	// rxe's limits (drivers/infiniband/sw/rxe/rxe_param.h: RXE_MAX_QP_WR 1<<20 ... RXE_MAX_SGE 32):
	// both at once need over a gigabyte even at 16 bytes per SGE.
	c := verbs.QPCap{MaxSendWR: 1 << 20, MaxRecvWR: 1 << 20, MaxSendSGE: 32, MaxRecvSGE: 32}
	if got, want := QueueBytes(c), uint64(1<<20)*16*33+uint64(1<<20)*16*32; got != want {
		t.Errorf("QueueBytes(rxe limits) = %d, want %d", got, want)
	}
	if got := QueueBytes(verbs.QPCap{MaxSendWR: 1<<32 - 1, MaxRecvWR: 1<<32 - 1, MaxSendSGE: 1<<32 - 1, MaxRecvSGE: 1<<32 - 1}); got != math.MaxUint64 {
		t.Errorf("QueueBytes of the largest limits = %d, want saturation", got)
	}
}

// rxe's queues are powers of two of slots one more than asked: at its max_qp_wr even one SGE
// needs 512 MiB for the send queue (what the lab measured: 528 MB of RSS).
func TestRXEQueueBytes(t *testing.T) {
	one := verbs.QPCap{MaxSendWR: 1 << 20, MaxRecvWR: 1 << 20, MaxSendSGE: 1, MaxRecvSGE: 1}
	if got, want := RXEQueueBytes(one), uint64(2<<20)*256+uint64(2<<20)*64; got != want {
		t.Errorf("RXEQueueBytes(max_qp_wr, one SGE) = %d MiB, want %d MiB", got>>20, want>>20)
	}
	small := verbs.QPCap{MaxSendWR: 1, MaxRecvWR: 1, MaxSendSGE: 32, MaxRecvSGE: 32}
	if got := RXEQueueBytes(small); got != 2*1024+2*1024 {
		t.Errorf("RXEQueueBytes(one WR, max_sge) = %d", got)
	}
	if as := planLimits(1<<20, 32, 198<<20, "a quarter of MemAvailable", RXEQueueBytes); as[0].Tried() || as[1].Tried() || !as[2].Tried() ||
		!strings.HasSuffix(as[0].NotTried, "over the probe's budget of 198 MiB (a quarter of MemAvailable)") {
		t.Errorf("rxe under 198 MiB: %+v", as)
	}
	if got := RXEQueueBytes(verbs.QPCap{MaxSendWR: 1<<32 - 1, MaxRecvWR: 1<<32 - 1, MaxSendSGE: 1<<32 - 1, MaxRecvSGE: 1<<32 - 1}); got != math.MaxUint64 {
		t.Errorf("RXEQueueBytes of the largest limits = %d, want saturation", got)
	}
}

func TestPlanLimits(t *testing.T) {
	tried := func(as []LimitAttempt) string {
		var s []string
		for _, a := range as {
			if a.Tried() {
				s = append(s, "try")
			} else {
				s = append(s, "skip")
			}
		}
		return strings.Join(s, ",")
	}
	for _, c := range []struct {
		name    string
		wr, sge uint32
		budget  uint64
		want    string
	}{
		{"no budget", 1 << 20, 32, 0, "try,try,try"},
		// A ConnectX (max_qp_wr 32768, max_sge 30): about 32 MiB, inside any budget worth having.
		{"ConnectX under 256 MiB", 32768, 30, 256 << 20, "try,try,try"},
		// rxe in a 1 GiB guest (MemAvailable ~800 MiB, a quarter is 200 MiB): each limit alone.
		{"rxe under 200 MiB", 1 << 20, 32, 200 << 20, "skip,try,try"},
		{"rxe under 16 MiB", 1 << 20, 32, 16 << 20, "skip,skip,try"},
		{"nothing fits", 1 << 20, 32, 1 << 10, "skip,skip,skip"},
	} {
		as := planLimits(c.wr, c.sge, c.budget, "", QueueBytes)
		if got := tried(as); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
		for _, a := range as {
			if !a.Tried() && !strings.Contains(a.NotTried, "MiB of queue memory, over the probe's budget") {
				t.Errorf("%s: %s: NotTried %q does not say why", c.name, a.What, a.NotTried)
			}
		}
	}
}
