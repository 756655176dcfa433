package rawctx

import (
	"errors"
	"strings"
	"testing"
)

// seg frames body as one stream segment by hand: BE16 length_dw counting the 4-byte header,
// BE16 type.
func seg(typ uint16, body []byte) []byte {
	n := (4 + len(body)) / 4
	return append([]byte{byte(n >> 8), byte(n), byte(typ >> 8), byte(typ)}, body...)
}

// res is a resource segment body: reserved dword, index1, index2, payload.
func res(index1 uint32, payload []byte) []byte {
	b := []byte{0x80, 0, 0, 0, // reserved dword, MFT's "aggregate" bit set: ignored
		byte(index1 >> 24), byte(index1 >> 16), byte(index1 >> 8), byte(index1),
		0xde, 0xad, 0xbe, 0xef} // index2: not used
	return append(b, payload...)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var (
	infoSeg = seg(0xfffe, make([]byte, 12))
	cmdSeg  = seg(0xfffa, []byte{0, 0x10, 0, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0, 0, 0, 0, 1})
	termSeg = seg(0xfffb, nil)
)

// payloadAt puts a context built from sets at the layout's offset of a payload: a
// query_*_out header of the given size for LayoutQueryOut, nothing for LayoutContext.
func payloadAt(l Layout, hdr, size int, sets ...set) []byte {
	off := 0
	if l == LayoutQueryOut {
		off = hdr
	}
	p := make([]byte, off+size)
	for _, s := range sets {
		copy(p[off+s.off:], s.b)
	}
	return p
}

func TestDecodeMLX5QPFieldPositions(t *testing.T) {
	rts := set{0, []byte{0x3f}} // qpc.state bits 31:28 of BE dword 0 = high nibble of byte 0
	for _, tc := range []struct {
		name    string
		sets    []set
		want    QP
		wantErr string
	}{
		{
			// log_rq_size 0x49 w4: dword 2 BE bits 22:19 = byte 9 bits 6:3; log_rq_stride
			// (bits 2:0 of byte 9) and bit 7 set as noise.
			name: "log_rq_size in byte 9 bits 6:3",
			sets: []set{rts, {9, []byte{0x80 | 5<<3 | 7}}},
			want: QP{State: 3, SQ: 1, RQ: 32},
		},
		{
			// log_sq_size 0x51 w4: BE bits 14:11 = byte 10 bits 6:3; no_sq 0x50 = byte 10 bit 7.
			name: "log_sq_size in byte 10 bits 6:3",
			sets: []set{rts, {10, []byte{7<<3 | 7}}, {11, []byte{0xff}}},
			want: QP{State: 3, SQ: 128, RQ: 1},
		},
		{
			name: "no_sq at byte 10 bit 7",
			sets: []set{rts, {10, []byte{0x80 | 7<<3}}},
			want: QP{State: 3, RQ: 1},
		},
		{
			// cqn_snd 0x3e8 w24: dword 31, bytes 125-127; byte 124 is other fields.
			name: "cqn_snd at bytes 125-127",
			sets: []set{rts, {124, []byte{0xff, 0x12, 0x34, 0x56}}},
			want: QP{State: 3, SendCQ: 0x123456, SQ: 1, RQ: 1},
		},
		{
			// cqn_rcv 0x4e8 w24: dword 39, bytes 157-159.
			name: "cqn_rcv at bytes 157-159",
			sets: []set{rts, {156, []byte{0xff, 0xab, 0xcd, 0xef}}},
			want: QP{State: 3, RecvCQ: 0xabcdef, SQ: 1, RQ: 1},
		},
		{
			// rq_type 0x565 w3: dword 43 BE bits 26:24 = byte 172 bits 2:0; srqn in 173-175.
			name: "rq_type 1 (SRQ) at byte 172 bits 2:0",
			sets: []set{rts, {9, []byte{5 << 3}}, {172, []byte{0xf9, 0xff, 0xff, 0xff}}},
			want: QP{State: 3, SQ: 1, SRQ: true},
		},
		{
			name: "rq_type 3 (zero-length RQ)",
			sets: []set{rts, {9, []byte{5 << 3}}, {172, []byte{0x03}}},
			want: QP{State: 3, SQ: 1},
		},
		{
			name:    "rq_type 2 is not one mlx5_ib sets",
			sets:    []set{rts, {172, []byte{0x02}}},
			wantErr: "rq_type 2",
		},
		{
			name: "state 7 in the high nibble of byte 0",
			sets: []set{{0, []byte{0x70}}},
			want: QP{State: 7, SQ: 1, RQ: 1},
		},
		{
			name: "state RST still decodes the rest",
			sets: []set{{0, []byte{0x0f}}, {10, []byte{2 << 3}}, {127, []byte{9}}},
			want: QP{State: 0, Reset: true, SendCQ: 9, SQ: 4, RQ: 1},
		},
	} {
		for _, l := range Layouts(MLX5) {
			t.Run(tc.name+"/"+l.String(), func(t *testing.T) {
				b := cat(infoSeg, cmdSeg, seg(0x0123, res(0x00abcd, payloadAt(l, 24, 232, tc.sets...))), termSeg)
				got, err := DecodeQP(MLX5, l, b)
				want := tc.want
				want.Format, want.QPN, want.HasQPN, want.SQBlocks = FormatMLX5, 0x00abcd, true, true
				decoded(t, got, err, want, tc.wantErr)
			})
		}
	}
}

func TestDecodeMLX5CQFieldPositions(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []set
		want uint32
	}{
		// log_cq_size 0x63 w5: dword 3 BE bits 28:24 = byte 12 bits 4:0; uar_page in 13-15.
		{"log_cq_size 12 in byte 12", []set{{12, []byte{0xe0 | 12, 0xff, 0xff, 0xff}}, {8, []byte{0xff, 0xff, 0xff, 0xff}}}, 4096},
		{"log_cq_size 0", []set{{12, []byte{0xe0}}}, 1},
		{"log_cq_size 31", []set{{12, []byte{0x1f}}}, 1 << 31},
	} {
		for _, l := range Layouts(MLX5) {
			t.Run(tc.name+"/"+l.String(), func(t *testing.T) {
				b := cat(cmdSeg, seg(0x0042, res(0x77, payloadAt(l, 16, 64, tc.sets...))), termSeg)
				got, err := DecodeCQ(MLX5, l, b)
				if err != nil {
					t.Fatal(err)
				}
				if want := (CQ{Format: FormatMLX5, CQN: 0x77, HasCQN: true, Depth: tc.want}); got != want {
					t.Errorf("got %+v, want %+v", got, want)
				}
			})
		}
	}
}

// The two candidate layouts must read different bytes, or validating them against the
// kernel's dump could not tell them apart.
func TestMLX5LayoutsReadDifferentBytes(t *testing.T) {
	// Context at 0 says depth 2^3; the same bytes read as query_cq_out put the CQC at 16.
	p := make([]byte, 16+64)
	p[12] = 3
	p[16+12] = 10
	b := cat(seg(0x0001, res(5, p)))
	ctx, err := DecodeCQ(MLX5, LayoutContext, b)
	if err != nil {
		t.Fatal(err)
	}
	qo, err := DecodeCQ(MLX5, LayoutQueryOut, b)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Depth != 8 || qo.Depth != 1024 {
		t.Errorf("context layout depth %d (want 8), query-out layout depth %d (want 1024)", ctx.Depth, qo.Depth)
	}
}

func TestMLX5Stream(t *testing.T) {
	qpc := payloadAt(LayoutContext, 0, 232, set{0, []byte{0x30}})
	good := seg(0x0010, res(9, qpc))
	for _, tc := range []struct {
		name    string
		b       []byte
		wantQPN uint32
		wantErr string
		unknown bool // wraps ErrUnknownFormat
	}{
		{name: "resource alone", b: good, wantQPN: 9},
		{name: "control segments first, unknown control type skipped",
			b: cat(infoSeg, cmdSeg, seg(0xff00, []byte{1, 2, 3, 4}), seg(0xfff9, nil), good, termSeg), wantQPN: 9},
		{name: "first of two resources", b: cat(cmdSeg, good, seg(0x0010, res(10, qpc)), termSeg), wantQPN: 9},
		{name: "resource type 0xfeff is still a resource", b: cat(seg(0xfeff, res(11, qpc))), wantQPN: 11},
		{name: "cut off after the resource (1024-byte cap)", b: cat(cmdSeg, good, seg(0xfffb, make([]byte, 40))[:20]), wantQPN: 9},
		{name: "empty", b: nil, wantErr: "no resource segment in the 0-byte stream (segments: none)", unknown: true},
		{name: "only control", b: cat(infoSeg, cmdSeg, termSeg), wantErr: "segments: info, command, terminate", unknown: true},
		{name: "terminate ends the stream", b: cat(cmdSeg, termSeg, good), wantErr: "segments: command, terminate", unknown: true},
		{name: "firmware error segment", b: cat(cmdSeg, seg(0xfffc, make([]byte, 40)), termSeg), wantErr: "error segment", unknown: true},
		{name: "zero length_dw", b: cat(cmdSeg, []byte{0, 0, 0xff, 0xfe}, good), wantErr: "segment at byte 20 (type 0xfffe) has length_dw 0"},
		{name: "zero length_dw resource", b: []byte{0, 0, 0, 1, 0, 0, 0, 0}, wantErr: "length_dw 0"},
		{name: "segment past the end", b: cat(cmdSeg, good[:100]), wantErr: "segment at byte 20 (type 0x0010) is 248 bytes, only 100 left"},
		{name: "stray bytes", b: cat(cmdSeg, []byte{0, 1}), wantErr: "2 stray bytes at byte 20"},
		{name: "resource shorter than its framing", b: cat(seg(0x0010, make([]byte, 8))), wantErr: "is 12 bytes, less than its 16-byte framing"},
		{name: "payload too short for the qpc fields", b: seg(0x0010, res(9, qpc[:172])),
			wantErr: "resource payload is 172 bytes; layout mlx5-context needs 176"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := DecodeQP(MLX5, LayoutContext, tc.b)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if errors.Is(err, ErrUnknownFormat) != tc.unknown {
					t.Errorf("errors.Is(ErrUnknownFormat) = %v, want %v", !tc.unknown, tc.unknown)
				}
				if !strings.Contains(err.Error(), "mlx5 raw QP") {
					t.Errorf("error %q does not say what was read", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.QPN != tc.wantQPN || q.State != 3 {
				t.Errorf("QPN %d state %d, want QPN %d state 3", q.QPN, q.State, tc.wantQPN)
			}
		})
	}
}

func TestMLX5PayloadTooShortNamesLayout(t *testing.T) {
	// 180 bytes hold the qpc fields at offset 0 but not at query_qp_out's 24.
	b := seg(0x0010, res(1, make([]byte, 180)))
	if _, err := DecodeQP(MLX5, LayoutContext, b); err != nil {
		t.Errorf("context layout: %v", err)
	}
	_, err := DecodeQP(MLX5, LayoutQueryOut, b)
	if err == nil || !strings.Contains(err.Error(), "layout mlx5-query-out needs 200 (context at payload byte 24") {
		t.Errorf("query-out layout: err %v", err)
	}
	cq := seg(0x0011, res(1, make([]byte, 20)))
	if _, err := DecodeCQ(MLX5, LayoutContext, cq); err != nil {
		t.Errorf("CQ context layout: %v", err)
	}
	_, err = DecodeCQ(MLX5, LayoutQueryOut, cq)
	if err == nil || !strings.Contains(err.Error(), "mlx5 raw CQ: resource payload is 20 bytes; layout mlx5-query-out needs 32") {
		t.Errorf("CQ query-out layout: err %v", err)
	}
}

// The encoder is checked against hand-framed bytes, because fixtures are built with it.
func TestEncodeMLX5Bytes(t *testing.T) {
	q := QP{State: 3, QPN: 0x1234, SendCQ: 0x123456, RecvCQ: 0xabcdef, SQ: 128, RQ: 32}
	for _, l := range Layouts(MLX5) {
		got, err := EncodeMLX5QP(q, l)
		if err != nil {
			t.Fatal(err)
		}
		p := payloadAt(l, 24, 232, set{0, []byte{0x30}}, set{9, []byte{5 << 3}}, set{10, []byte{7 << 3}},
			set{125, []byte{0x12, 0x34, 0x56}}, set{157, []byte{0xab, 0xcd, 0xef}})
		want := cat(seg(0xfffa, make([]byte, 12)), []byte{0, byte((16 + len(p)) / 4), 0x01, 0x00, 0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0}, p, termSeg)
		if string(got) != string(want) {
			t.Errorf("%v: QP stream differs at %v", l, diffs(got, want))
		}
	}
	for _, l := range Layouts(MLX5) {
		got, err := EncodeMLX5CQ(CQ{CQN: 0x99, Depth: 256}, l)
		if err != nil {
			t.Fatal(err)
		}
		p := payloadAt(l, 16, 64, set{12, []byte{8}})
		want := cat(seg(0xfffa, make([]byte, 12)), []byte{0, byte((16 + len(p)) / 4), 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x99, 0, 0, 0, 0}, p, termSeg)
		if string(got) != string(want) {
			t.Errorf("%v: CQ stream differs at %v", l, diffs(got, want))
		}
	}
	srq, err := EncodeMLX5QP(QP{State: 6, SRQ: true}, LayoutContext)
	if err != nil {
		t.Fatal(err)
	}
	// no_sq at byte 10 bit 7, rq_type 1 at byte 172 bits 2:0, behind 16 + 16 framing bytes.
	if ctx := srq[32:]; ctx[0] != 0x60 || ctx[10] != 0x80 || ctx[172] != 0x01 {
		t.Errorf("SRQ/no-SQ context bytes 0, 10, 172 = %#x %#x %#x", ctx[0], ctx[10], ctx[172])
	}
}

func TestEncodeMLX5Refuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    QP
		want string
	}{
		{"format", QP{Format: FormatHNSQPC, State: 3}, "format"},
		{"state 16", QP{State: 16}, "state 16"},
		{"CQN", QP{State: 3, RecvCQ: 1 << 24}, "24 bits"},
		{"SQ 5", QP{State: 3, SQ: 5}, "SQ 5"},
		{"RQ 65536", QP{State: 3, RQ: 65536}, "RQ 65536"},
		{"RQ with SRQ", QP{State: 3, RQ: 2, SRQ: true}, "with SRQ"},
	} {
		if _, err := EncodeMLX5QP(tc.q, LayoutContext); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := EncodeMLX5CQ(CQ{Depth: 12}, LayoutContext); err == nil {
		t.Error("depth 12 accepted")
	}
	if _, err := EncodeMLX5CQ(CQ{Format: FormatHNSCQC, Depth: 1}, LayoutContext); err == nil {
		t.Error("hns format accepted")
	}
	if _, err := EncodeMLX5CQ(CQ{Depth: 1}, LayoutByLength); err == nil {
		t.Error("hns layout accepted")
	}
}
