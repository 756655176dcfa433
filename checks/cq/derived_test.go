package cq

import (
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/internal/rawctx"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
	"github.com/rdmadiag/rdmadiag/report"
)

// rawModel is one mlx5 device with a user CQ shared by two QPs and the raw contexts that go
// with them; the test cases break one thing each.
type rawModel struct {
	qps    []nldev.QP
	cqs    []nldev.CQ
	rawQPs []rawctx.QP
	rawCQs []rawctx.CQ
}

func goodModel() rawModel {
	q := func(n uint32) nldev.QP {
		return nldev.QP{Port: 1, LQPN: n, Type: nldev.QPTypeRC, State: nldev.QPStateRTS, PID: 7}
	}
	return rawModel{
		qps: []nldev.QP{q(0x100), q(0x101), q(0x103), {Port: 1, LQPN: 0x102, Type: nldev.QPTypeRC, State: nldev.QPStateReset, PID: 7}},
		cqs: []nldev.CQ{{CQN: 5, CQE: 255, PID: 7}, {CQN: 6, CQE: 63, PID: 7}},
		rawQPs: []rawctx.QP{
			{State: 3, QPN: 0x100, HasQPN: true, SendCQ: 0x401, RecvCQ: 0x401, SQ: 256, SQBlocks: true, RQ: 128},
			{State: 3, QPN: 0x101, HasQPN: true, SendCQ: 0x401, RecvCQ: 0x402, SQ: 64, SQBlocks: true, RQ: 32},
			{State: 3, QPN: 0x103, HasQPN: true, SendCQ: 0x402, RecvCQ: 0x401, SQ: 0, SRQ: true},
			// RESET: its queues are not counted even though the context names a CQ.
			{State: 0, Reset: true, QPN: 0x102, HasQPN: true, SendCQ: 0x402, RecvCQ: 0x402, SQ: 1024, SQBlocks: true, RQ: 1024},
		},
		rawCQs: []rawctx.CQ{{CQN: 0x401, HasCQN: true, Depth: 256}, {CQN: 0x402, HasCQN: true, Depth: 64}},
	}
}

func (m rawModel) conn(t *testing.T, l rawctx.Layout) *nltest.Conn {
	t.Helper()
	dev := nldev.Device{Index: 0, Name: "mlx5_0", NumPorts: 1}
	c := nltest.Model{Devices: []nldev.Device{dev}, QPs: m.qps, CQs: m.cqs}.Conn()
	var qps, cqs []nldev.Raw
	for _, q := range m.rawQPs {
		q.Format = rawctx.FormatMLX5
		b, err := rawctx.EncodeQP(rawctx.MLX5, l, q)
		if err != nil {
			t.Fatal(err)
		}
		qps = append(qps, nldev.Raw{Data: b})
	}
	for _, cq := range m.rawCQs {
		cq.Format = rawctx.FormatMLX5
		b, err := rawctx.EncodeCQ(rawctx.MLX5, l, cq)
		if err != nil {
			t.Fatal(err)
		}
		cqs = append(cqs, nldev.Raw{Data: b})
	}
	c.Reply(nldev.QPsRawRequest(0), nltest.QPRawDump(0, dev.Name, qps))
	c.Reply(nldev.CQsRawRequest(0), nltest.CQRawDump(0, dev.Name, cqs))
	return c
}

func runDerive(t *testing.T, c *nltest.Conn, driver string, software bool) *Derived {
	t.Helper()
	cl := nldev.NewClient(c)
	devs, err := cl.Devices()
	if err != nil {
		t.Fatal(err)
	}
	return derive(cl, devs[0], driver, software)
}

func TestDeriveCapacities(t *testing.T) {
	for _, l := range rawctx.Layouts(rawctx.MLX5) {
		t.Run(l.String(), func(t *testing.T) {
			d := runDerive(t, goodModel().conn(t, l), "mlx5_core", false)
			if d.Reason != "" {
				t.Fatalf("not derived: %s", d.Reason)
			}
			if d.Layout != l.String() {
				t.Errorf("layout %q, want %q: the check must settle on the layout the blobs were written in", d.Layout, l)
			}
			// CQ 0x401 (restrack 5): QP 0x100 send 256 + recv 128, QP 0x101 send 64.
			// CQ 0x402 (restrack 6): QP 0x101 recv 32; the RESET QP adds nothing.
			// QP 0x103 has no send queue and receives from an SRQ into CQ 0x401: counted as
			// an SRQ user, adding no work requests.
			want := map[uint32]Capacity{5: {WRs: 448, Exact: 128, QPs: 3, SRQ: 1}, 6: {WRs: 32, Exact: 32, QPs: 1}}
			for cqn, w := range want {
				if got := d.ByCQN[cqn]; got != w {
					t.Errorf("CQ %d: %+v, want %+v", cqn, got, w)
				}
			}
		})
	}
}

func TestDeriveRefusesWhatDoesNotAgree(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *rawModel)
		want   string
	}{
		{"raw depth differs from cqe+1", func(m *rawModel) { m.rawCQs[1].Depth = 128 }, "do not agree"},
		{"raw state differs", func(m *rawModel) { m.rawQPs[0].State = 6 }, "do not agree"},
		{"raw QP number differs", func(m *rawModel) { m.rawQPs[1].QPN = 0x999 }, "do not agree"},
		{"a CQ created between the dumps", func(m *rawModel) {
			m.cqs = append(m.cqs, nldev.CQ{CQN: 9, CQE: 15, PID: 7})
		}, "changed while it was read"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := goodModel()
			tc.change(&m)
			d := runDerive(t, m.conn(t, rawctx.LayoutQueryOut), "mlx5_core", false)
			if d.ByCQN != nil || !strings.Contains(d.Reason, tc.want) {
				t.Errorf("derived %+v, reason %q; want no capacities and a reason with %q", d.ByCQN, d.Reason, tc.want)
			}
		})
	}
}

// seqConn answers a request with the next of several replies (then the last again): a table
// that changes between two dumps.
type seqConn struct {
	*nltest.Conn
	seq map[string][][]byte
}

func (c *seqConn) Exchange(req host.Request) ([]byte, error) {
	if r := c.seq[req.Key()]; len(r) > 0 {
		b := r[0]
		if len(r) > 1 {
			c.seq[req.Key()] = r[1:]
		}
		return b, nil
	}
	return c.Conn.Exchange(req)
}

// One CQ destroyed and another created while the raw dump ran: the count and every depth still
// match, but by position the raw contexts would land on the wrong CQs. The plain dumps around
// the raw one differ, and that must stop the derivation.
func TestDeriveSeesATableThatChanged(t *testing.T) {
	m := goodModel()
	m.cqs = []nldev.CQ{{CQN: 5, CQE: 255, PID: 7}, {CQN: 6, CQE: 255, PID: 7}}
	m.rawCQs[1].Depth = 256
	base := m.conn(t, rawctx.LayoutQueryOut)
	later := nltest.CQDump(0, "mlx5_0", []nldev.CQ{{CQN: 5, CQE: 255, PID: 7}, {CQN: 7, CQE: 255, PID: 8}})
	before, _ := base.Exchange(nldev.CQsRequest(0))
	c := &seqConn{Conn: base, seq: map[string][][]byte{nldev.CQsRequest(0).Key(): {before, later}}}
	cl := nldev.NewClient(c)
	devs, err := cl.Devices()
	if err != nil {
		t.Fatal(err)
	}
	d := derive(cl, devs[0], "mlx5_core", false)
	if d.ByCQN != nil || !strings.Contains(d.Reason, "changed while it was read") {
		t.Errorf("derived %+v, reason %q", d.ByCQN, d.Reason)
	}
}

// A kernel-owned QP whose raw context does not match (mlx5 emulates the GSI QP) is left out
// instead of costing every application CQ its verdict; an application QP that does not match
// still rejects the layout.
func TestDeriveToleratesOddKernelQPs(t *testing.T) {
	m := goodModel()
	m.qps = append([]nldev.QP{{Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}}, m.qps...)
	m.rawQPs = append([]rawctx.QP{{State: 3, QPN: 0x9999, HasQPN: true, SendCQ: 0x401, RecvCQ: 0x401, SQ: 64, SQBlocks: true, RQ: 64}}, m.rawQPs...)
	d := runDerive(t, m.conn(t, rawctx.LayoutQueryOut), "mlx5_core", false)
	if d.Reason != "" || d.Skipped != 1 {
		t.Fatalf("reason %q, skipped %d; want derived with one kernel QP skipped", d.Reason, d.Skipped)
	}
	if got := d.ByCQN[5]; got.WRs != 448 {
		t.Errorf("CQ 5: %+v: the skipped QP's queues must not count", got)
	}
	// A CQ nobody uses is in the map with capacity 0 (judged, fine), unlike an unknown one.
	m = goodModel()
	m.cqs = append(m.cqs, nldev.CQ{CQN: 8, CQE: 15, PID: 7})
	m.rawCQs = append(m.rawCQs, rawctx.CQ{CQN: 0x408, HasCQN: true, Depth: 16})
	d = runDerive(t, m.conn(t, rawctx.LayoutQueryOut), "mlx5_core", false)
	if c, ok := d.ByCQN[8]; !ok || c != (Capacity{}) {
		t.Errorf("idle CQ: %+v %v", c, ok)
	}
}

// The derived judgement compares with the ring's cqe+1 entries, and an upper bound alone is
// only info.
func TestJudgeDerivedBoundaries(t *testing.T) {
	der := &Derived{Layout: "test", ByCQN: map[uint32]Capacity{
		1: {WRs: 2048, Exact: 2048, QPs: 2}, // one QP of 1024+1024 on a 2048-entry CQ: fits exactly
		2: {WRs: 2049, Exact: 2049, QPs: 2}, // one more: warning
		3: {WRs: 4096, Exact: 1024, QPs: 2}, // only the block-counted send queue exceeds: info
	}}
	cqs := []nldev.CQ{{CQN: 1, CQE: 2047, PID: 7}, {CQN: 2, CQE: 2047, PID: 7}, {CQN: 3, CQE: 2047, PID: 7}, {CQN: 4, CQE: 2047, PID: 7}}
	r := JudgeDepth(cqs, func(uint32) string { return "app" }, 0, nil, der)
	if r.Judged != 3 || r.Unjudged != 1 {
		t.Errorf("judged %d, unjudged %d; want 3 and 1 (CQ 4 appeared after the dumps)", r.Judged, r.Unjudged)
	}
	got := map[uint32]report.Severity{}
	for _, g := range r.Under {
		for _, n := range g.CQNs {
			got[n] = g.Severity
		}
	}
	want := map[uint32]report.Severity{2: report.Warning, 3: report.Info}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("severities %v, want %v", got, want)
	}
}

func TestDeriveKernelRefusals(t *testing.T) {
	tests := []struct {
		name     string
		errno    syscall.Errno
		driver   string
		software bool
		want     string
	}{
		{"not admin", syscall.EPERM, "mlx5_core", false, "CAP_NET_ADMIN"},
		{"rxe has no raw contexts", syscall.EINVAL, "rdma_rxe", true, "provides no raw QP contexts"},
		{"firmware without resource dump", syscall.EOPNOTSUPP, "mlx5_core", false, "resource dump"},
		// Not even asked: a firmware command per object for blobs nobody can read.
		{"undecodable hardware driver", 0, "bnxt_en", false, "no raw contexts this version decodes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := goodModel().conn(t, rawctx.LayoutQueryOut)
			if tc.errno != 0 {
				c.Fail(nldev.QPsRawRequest(0), tc.errno)
			}
			d := runDerive(t, c, tc.driver, tc.software)
			if d.ByCQN != nil || !strings.Contains(d.Reason, tc.want) {
				t.Errorf("reason %q, want %q", d.Reason, tc.want)
			}
		})
	}
}

// hns kernels before 6.6 put no CQ number in the raw CQ, so nothing can be attributed.
func TestDeriveHNS61HasNoCQNumbers(t *testing.T) {
	dev := nldev.Device{Index: 0, Name: "hns_0", NumPorts: 1}
	c := nltest.Model{Devices: []nldev.Device{dev}, QPs: []nldev.QP{{Port: 1, LQPN: 8, State: nldev.QPStateRTS, PID: 7}},
		CQs: []nldev.CQ{{CQN: 1, CQE: 255, PID: 7}}}.Conn()
	qp, err := rawctx.EncodeHNSQP(rawctx.QP{Format: rawctx.FormatHNS61, State: 3, SendCQ: 3, RecvCQ: 3, SQ: 64, RQ: 64}, 136)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := rawctx.EncodeHNSCQ(rawctx.CQ{Format: rawctx.FormatHNS61, Depth: 256}, 60)
	if err != nil {
		t.Fatal(err)
	}
	c.Reply(nldev.QPsRawRequest(0), nltest.QPRawDump(0, dev.Name, []nldev.Raw{{Data: qp}}))
	c.Reply(nldev.CQsRawRequest(0), nltest.CQRawDump(0, dev.Name, []nldev.Raw{{Data: cq}}))
	d := runDerive(t, c, "hns3", false)
	if d.ByCQN != nil || !strings.Contains(d.Reason, "carries no CQ number") {
		t.Errorf("reason %q", d.Reason)
	}
}
