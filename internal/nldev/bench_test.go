package nldev_test

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// synthQPs is a storage host's mix: mostly user RC QPs of a few hundred processes, a quarter
// owned by kernel ULPs.
func synthQPs(n int) []nldev.QP {
	kern := []string{"nvme_rdma", "ib_core", "rdma_cm", "rpcrdma"}
	qps := make([]nldev.QP, n)
	for i := range qps {
		q := &qps[i]
		q.Port, q.LQPN, q.SQPSN, q.Type, q.State = 1, uint32(i+2), uint32(i*7), nldev.QPTypeRC, nldev.QPStateRTS
		q.HasRQPN, q.RQPN, q.HasRQPSN, q.RQPSN, q.HasPathMig = true, uint32(i+100000), true, uint32(i*3), true
		if i%4 == 0 {
			q.KernName = kern[i%len(kern)]
		} else {
			q.PID, q.PDN, q.HasPDN = uint32(1000+i%300), uint32(i%300), true
		}
	}
	return qps
}

func synthCQs(n int) []nldev.CQ {
	cqs := make([]nldev.CQ, n)
	for i := range cqs {
		c := &cqs[i]
		c.CQN, c.CQE, c.Users, c.HasDIM = uint32(i), 4095, 1, true
		if i%4 == 0 {
			c.KernName, c.PollCtx, c.HasPollCtx = "nvme_rdma", 1, true
		} else {
			c.PID, c.CtxN, c.HasCtxN = uint32(1000+i%300), uint32(i%300), true
		}
	}
	return cqs
}

func BenchmarkDecodeQPs(b *testing.B) {
	reply := nltest.QPDump(0, "mlx5_0", synthQPs(100000))
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		qps, err := nldev.DecodeQPs(reply)
		if err != nil || len(qps) != 100000 {
			b.Fatal(len(qps), err)
		}
	}
}

func BenchmarkDecodeCQs(b *testing.B) {
	reply := nltest.CQDump(0, "mlx5_0", synthCQs(50000))
	b.SetBytes(int64(len(reply)))
	b.ReportAllocs()
	for b.Loop() {
		cqs, err := nldev.DecodeCQs(reply)
		if err != nil || len(cqs) != 50000 {
			b.Fatal(len(cqs), err)
		}
	}
}

func TestLargeDumpSharesStrings(t *testing.T) {
	reply := nltest.QPDump(0, "mlx5_0", synthQPs(100000))
	if n := countMessages(t, reply); n < 100 {
		t.Fatalf("100k QPs fit in %d messages; the multi-part path is not exercised", n)
	}
	allocs := testing.AllocsPerRun(3, func() {
		if _, err := nldev.DecodeQPs(reply); err != nil {
			t.Fatal(err)
		}
	})
	// One slice, the intern map and its few strings: anything per QP would be 100k.
	if allocs > 50 {
		t.Errorf("decoding 100k QPs made %.0f allocations", allocs)
	}
	qps, _ := nldev.DecodeQPs(reply)
	if want := synthQPs(100000)[4]; qps[4].KernName != want.KernName || qps[4].LQPN != want.LQPN {
		t.Errorf("QP 4: %+v", qps[4])
	}
}
