package qp_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/cq"
	"github.com/rdmadiag/rdmadiag/checks/internal/qptest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// scaleHost is a large host: 16 devices, 100k QPs and 50k CQs in all, a mix of
// kernel and user owners from 300 processes, 1 % of QPs in ERR, CQs of mixed depth.
func scaleHost(b testing.TB) (qptest.Host, int) {
	const devs, nQP, nCQ = 16, 100000, 50000
	m := &nltest.Model{}
	facts := &host.Facts{}
	files := map[string]string{}
	for d := range devs {
		name := fmt.Sprintf("rxe%d", d)
		m.Devices = append(m.Devices, nldev.Device{Index: uint32(d), Name: name, NumPorts: 1, NodeType: 1})
		facts.VerbsDevices = append(facts.VerbsDevices, host.VerbsDevice{Name: name, MaxQP: 262144, NumCompVectors: 8})
	}
	kern := []string{"ib_core", "rdma_cm", "nvme_rdma", "rpcrdma"}
	for i := range nQP {
		q := qptest.QP(uint32(i+2), nldev.QPStateRTS, uint32(1000+i%300), "")
		q.DevIndex = uint32(i % devs)
		q.HasRQPN, q.RQPN, q.HasRQPSN, q.HasPathMig = true, uint32(i+200000), true, true
		if i%4 == 0 {
			q.PID, q.KernName, q.HasPDN = 0, kern[i%len(kern)], false
		}
		if i%100 == 7 {
			q.State = nldev.QPStateErr
		}
		m.QPs = append(m.QPs, q)
	}
	for i := range nCQ {
		c := nldev.CQ{DevIndex: uint32(i % devs), CQN: uint32(i), CQE: uint32(64 << (i % 6)), Users: 2, HasDIM: true}
		if i%4 == 0 {
			c.KernName, c.PollCtx, c.HasPollCtx = "nvme_rdma", 1, true
		} else {
			c.PID, c.CtxN, c.HasCtxN = uint32(1000+i%300), uint32(i%300), true
		}
		m.CQs = append(m.CQs, c)
	}
	for p := range 300 {
		files[fmt.Sprintf("/proc/%d/comm", 1000+p)] = fmt.Sprintf("app%d\n", p%7)
	}
	c := m.Conn()
	dump := 0
	for d := range devs {
		for _, req := range []host.Request{nldev.QPsRequest(uint32(d)), nldev.CQsRequest(uint32(d))} {
			r, _ := c.Exchange(req)
			dump += len(r)
		}
	}
	// Device directories so that the inventory (and cq.errors, cq.vectors) see every device.
	names := make([]string, devs)
	for d := range devs {
		names[d] = fmt.Sprintf("rxe%d", d)
	}
	return qptest.Host{Conn: c, Facts: facts, Files: files, SoftDevices: names, Kmsg: "6,1,1,-;boot\n"}, dump
}

// BenchmarkQPCQChecks is the decode-and-judge path of `rdmadiag check --only qp,cq` on the
// scale host: every QP and CQ dump decoded once and judged by every qp and cq check.
func BenchmarkQPCQChecks(b *testing.B) {
	h, dump := scaleHost(b)
	cs, err := checks.Default.Select([]string{"qp", "cq"}, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	env := h.Env(b, checks.Options{WRConcurrency: 256})
	b.ReportAllocs()
	b.SetBytes(int64(dump))
	b.ResetTimer()
	for b.Loop() {
		fresh := checks.NewEnv(env.Host, env.Opts)
		fs := checks.Run(context.Background(), fresh, cs, runtime.NumCPU())
		if len(fs) < 16 {
			b.Fatalf("%d findings", len(fs))
		}
	}
	b.ReportMetric(float64(dump), "dump-bytes")
}

// The whole qp+cq run allocates in proportion to the dump: decoded objects, not copies of it.
func TestScaleMemoryProportional(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 150k-object dump")
	}
	h, dump := scaleHost(t)
	cs, err := checks.Default.Select([]string{"qp", "cq"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	env := h.Env(t, checks.Options{WRConcurrency: 256})
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			checks.Run(context.Background(), checks.NewEnv(env.Host, env.Opts), cs, 2)
		}
	})
	per := float64(res.AllocedBytesPerOp()) / float64(dump)
	t.Logf("dump %d bytes, %d B/op (%.2f x dump), %d allocs/op, %s/op", dump, res.AllocedBytesPerOp(), per, res.AllocsPerOp(), res.T/time.Duration(max(1, res.N)))
	// nldev.QP is about 1.5x its wire size; anything above 3x means a copy or a per-object map.
	if per > 3 {
		t.Errorf("qp+cq checks allocate %.2f x the dump", per)
	}
}
