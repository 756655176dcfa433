package rawctx

import (
	"testing"
)

// Each fuzz target decodes arbitrary bytes (no panic, whatever the input), and whatever
// decodes must survive encode and decode again unchanged: the decoded struct is always
// representable, and the encoder writes what the decoder reads.

func FuzzDecodeHNSQP(f *testing.F) {
	for _, size := range []int{HNSQP61Size, HNSQPCSize, HNSQPCSCCSize} {
		format := FormatHNSQPC
		if size == HNSQP61Size {
			format = FormatHNS61
		}
		for _, q := range hnsQPs(format) {
			b, err := EncodeHNSQP(q, size)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add(u32s(34, map[int]uint32{0: 8}))
	f.Add(blob(HNSQPCSize, set{0, []byte("\xff\xff\xff\xff")}, set{56, []byte("\xff\xff\xff\xff")}))
	f.Add([]byte{})
	f.Add(make([]byte, 135))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := DecodeQP(HNS, LayoutByLength, b)
		if err != nil {
			return
		}
		checkQPInvariants(t, q)
		b2, err := EncodeHNSQP(q, len(b))
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", q, err)
		}
		q2, err := DecodeQP(HNS, LayoutByLength, b2)
		if err != nil || q2 != q {
			t.Fatalf("re-decode: %+v, %v; want %+v", q2, err, q)
		}
	})
}

func FuzzDecodeHNSCQ(f *testing.F) {
	for _, c := range []struct {
		cq   CQ
		size int
	}{{CQ{Depth: 1024}, HNSCQ61Size}, {CQ{CQN: 5, HasCQN: true, Depth: 64}, HNSCQCSize}} {
		b, err := EncodeHNSCQ(c.cq, c.size)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(u32s(15, map[int]uint32{1: 0xffffffff}))
	f.Add(make([]byte, 63))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCQ(HNS, LayoutByLength, b)
		if err != nil {
			return
		}
		if c.Depth == 0 || c.Depth&(c.Depth-1) != 0 || c.HasCQN != (c.Format == FormatHNSCQC) {
			t.Fatalf("decoded %+v", c)
		}
		b2, err := EncodeHNSCQ(c, len(b))
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		if c2, err := DecodeCQ(HNS, LayoutByLength, b2); err != nil || c2 != c {
			t.Fatalf("re-decode: %+v, %v; want %+v", c2, err, c)
		}
	})
}

func mlx5Seeds(f *testing.F, enc func(Layout) ([]byte, error)) {
	for _, l := range Layouts(MLX5) {
		b, err := enc(l)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 1})
	f.Add(cat(cmdSeg, []byte{0xff, 0xff, 0, 1}))
	f.Add(cat(infoSeg, seg(0xfffc, make([]byte, 8)), termSeg))
	f.Add(seg(0x0010, make([]byte, 8)))
}

func FuzzDecodeMLX5QP(f *testing.F) {
	for _, q := range mlx5QPs() {
		mlx5Seeds(f, func(l Layout) ([]byte, error) { return EncodeMLX5QP(q, l) })
	}
	f.Add(seg(0x0010, res(1, make([]byte, 180))))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range Layouts(MLX5) {
			q, err := DecodeQP(MLX5, l, b)
			if err != nil {
				continue
			}
			checkQPInvariants(t, q)
			b2, err := EncodeMLX5QP(q, l)
			if err != nil {
				t.Fatalf("%v: decoded %+v does not encode: %v", l, q, err)
			}
			if q2, err := DecodeQP(MLX5, l, b2); err != nil || q2 != q {
				t.Fatalf("%v: re-decode: %+v, %v; want %+v", l, q2, err, q)
			}
		}
	})
}

func FuzzDecodeMLX5CQ(f *testing.F) {
	for _, d := range []uint32{1, 4096, 1 << 31} {
		mlx5Seeds(f, func(l Layout) ([]byte, error) { return EncodeMLX5CQ(CQ{CQN: d, Depth: d}, l) })
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range Layouts(MLX5) {
			c, err := DecodeCQ(MLX5, l, b)
			if err != nil {
				continue
			}
			if c.Depth == 0 || c.Depth&(c.Depth-1) != 0 || !c.HasCQN || c.Format != FormatMLX5 {
				t.Fatalf("%v: decoded %+v", l, c)
			}
			b2, err := EncodeMLX5CQ(c, l)
			if err != nil {
				t.Fatalf("%v: decoded %+v does not encode: %v", l, c, err)
			}
			if c2, err := DecodeCQ(MLX5, l, b2); err != nil || c2 != c {
				t.Fatalf("%v: re-decode: %+v, %v; want %+v", l, c2, err, c)
			}
		}
	})
}

func checkQPInvariants(t *testing.T, q QP) {
	t.Helper()
	pow2 := func(n uint32) bool { return n&(n-1) == 0 }
	bad := !pow2(q.SQ) || !pow2(q.RQ) ||
		(q.SRQ || q.RQAmbiguous) && q.RQ != 0 ||
		q.SRQ && q.RQAmbiguous ||
		q.Reset != (q.State == 0) ||
		q.HasQPN != (q.Format == FormatMLX5) || q.SQBlocks != (q.Format == FormatMLX5)
	if q.Format != FormatMLX5 {
		// hns: a QP out of RESET always has an SQ; a RESET one has nothing else.
		bad = bad || q.Reset && q != QP{Format: q.Format, Reset: true} || !q.Reset && q.SQ == 0
	}
	if bad {
		t.Fatalf("decoded QP breaks an invariant: %+v", q)
	}
}
