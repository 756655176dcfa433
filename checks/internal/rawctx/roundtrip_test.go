package rawctx

import (
	"fmt"
	"testing"
)

// Canonical QPs: what a decoder returns, so decode(encode(q)) must give q back.
func hnsQPs(format string) []QP {
	return []QP{
		{Format: format, Reset: true},
		{Format: format, State: 1, SendCQ: 1, RecvCQ: 1, SQ: 1, RQ: 1},
		{Format: format, State: 3, SendCQ: 0xffffff, RecvCQ: 0x123, SQ: 32768, RQ: 16384},
		{Format: format, State: 3, SendCQ: 7, RecvCQ: 8, SQ: 1024, SRQ: true},
		{Format: format, State: 6, SendCQ: 7, RecvCQ: 7, SQ: 64, RQAmbiguous: true},
		{Format: format, State: 7, SendCQ: 2, RecvCQ: 3, SQ: 2, RQ: 2},
	}
}

func mlx5QPs() []QP {
	b := QP{Format: FormatMLX5, HasQPN: true, SQBlocks: true}
	qs := []QP{
		{Reset: true, QPN: 1, SQ: 256, RQ: 256, SendCQ: 1, RecvCQ: 1},
		{State: 3, QPN: 0xffffff, SQ: 32768, RQ: 32768, SendCQ: 0xffffff, RecvCQ: 0xabcdef},
		{State: 3, QPN: 0x10, SQ: 0, RQ: 64, SendCQ: 4, RecvCQ: 5}, // no_sq
		{State: 2, QPN: 0x11, SQ: 16, SRQ: true, SendCQ: 4, RecvCQ: 4},
		{State: 6, QPN: 0x12, SQ: 1, SendCQ: 4, RecvCQ: 0}, // zero-length RQ
		{State: 9, QPN: 0xffffffff, SQ: 2, RQ: 1},          // SUSPENDED, 32-bit index1
		{State: 15, QPN: 0},
	}
	for i := range qs {
		q := qs[i]
		q.Format, q.HasQPN, q.SQBlocks = b.Format, b.HasQPN, b.SQBlocks
		qs[i] = q
	}
	return qs
}

func TestRoundTripQP(t *testing.T) {
	type tc struct {
		d    Driver
		l    Layout
		size int // hns only
		q    QP
	}
	var cases []tc
	for _, size := range []int{HNSQP61Size, HNSQPCSize, HNSQPCSCCSize} {
		f := FormatHNSQPC
		if size == HNSQP61Size {
			f = FormatHNS61
		}
		for _, q := range hnsQPs(f) {
			cases = append(cases, tc{HNS, LayoutByLength, size, q})
		}
	}
	for _, l := range Layouts(MLX5) {
		for _, q := range mlx5QPs() {
			cases = append(cases, tc{MLX5, l, 0, q})
		}
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v/%d/%+v", c.l, c.size, c.q), func(t *testing.T) {
			var b []byte
			var err error
			if c.d == HNS {
				b, err = EncodeHNSQP(c.q, c.size)
			} else {
				b, err = EncodeMLX5QP(c.q, c.l)
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.d == HNS && len(b) != c.size {
				t.Fatalf("encoded %d bytes, want %d", len(b), c.size)
			}
			got, err := DecodeQP(c.d, c.l, b)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.q {
				t.Errorf("got  %+v\nwant %+v", got, c.q)
			}
			// The generic encoder agrees for the size it picks.
			if c.d == MLX5 || c.size != HNSQPCSize {
				g, err := EncodeQP(c.d, c.l, c.q)
				if err != nil || string(g) != string(b) {
					t.Errorf("EncodeQP differs from the driver encoder (err %v)", err)
				}
			}
		})
	}
}

func TestRoundTripCQ(t *testing.T) {
	for _, c := range []struct {
		d    Driver
		l    Layout
		size int
		cq   CQ
	}{
		{HNS, LayoutByLength, HNSCQ61Size, CQ{Format: FormatHNS61, Depth: 1}},
		{HNS, LayoutByLength, HNSCQ61Size, CQ{Format: FormatHNS61, Depth: 1 << 31}},
		{HNS, LayoutByLength, HNSCQCSize, CQ{Format: FormatHNSCQC, CQN: 0, HasCQN: true, Depth: 64}},
		{HNS, LayoutByLength, HNSCQCSize, CQ{Format: FormatHNSCQC, CQN: 0xffffff, HasCQN: true, Depth: 1 << 22}},
		{MLX5, LayoutQueryOut, 0, CQ{Format: FormatMLX5, CQN: 0x400, HasCQN: true, Depth: 256}},
		{MLX5, LayoutQueryOut, 0, CQ{Format: FormatMLX5, CQN: 0xffffffff, HasCQN: true, Depth: 1 << 31}},
		{MLX5, LayoutContext, 0, CQ{Format: FormatMLX5, CQN: 0x400, HasCQN: true, Depth: 256}},
		{MLX5, LayoutContext, 0, CQ{Format: FormatMLX5, CQN: 3, HasCQN: true, Depth: 1}},
	} {
		t.Run(fmt.Sprintf("%v/%d/%+v", c.l, c.size, c.cq), func(t *testing.T) {
			var b []byte
			var err error
			if c.d == HNS {
				b, err = EncodeHNSCQ(c.cq, c.size)
			} else {
				b, err = EncodeMLX5CQ(c.cq, c.l)
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeCQ(c.d, c.l, b)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.cq {
				t.Errorf("got  %+v\nwant %+v", got, c.cq)
			}
			g, err := EncodeCQ(c.d, c.l, c.cq)
			if err != nil || string(g) != string(b) {
				t.Errorf("EncodeCQ differs from the driver encoder (err %v)", err)
			}
		})
	}
}
