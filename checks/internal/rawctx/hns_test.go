package rawctx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// set writes bytes at an offset: test blobs are built byte by byte from the documented
// positions, never through the encoder, so an encoder and decoder that agree on a wrong
// position still fail here.
type set struct {
	off int
	b   []byte
}

func blob(n int, sets ...set) []byte {
	b := make([]byte, n)
	for _, s := range sets {
		copy(b[s.off:], s.b)
	}
	return b
}

// hnsRTS is QPC_QP_ST (479,477) = 3: bits 31:29 of the LE u32 at byte 56 are bits 7:5 of
// byte 59.
var hnsRTS = set{59, []byte{3 << 5}}

func TestDecodeHNSQPCFieldPositions(t *testing.T) {
	for _, tc := range []struct {
		name string
		sets []set
		want QP
	}{
		{
			// QPC_SQ_SHIFT (139,136): LE u32 at byte 16, bits 11:8 = byte 17 bits 3:0.
			// QPC_RQ_SHIFT (143,140): bits 15:12 = byte 17 bits 7:4.
			name: "SQ_SHIFT 8 and RQ_SHIFT 4 in byte 17",
			sets: []set{hnsRTS, {17, []byte{0x48}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 256, RQ: 16},
		},
		{
			// Neighbours must not leak: QPC_RQWS (135,132) and SGE_SHIFT (7,3) set all ones,
			// byte 18 (bits 23:16) all ones.
			name: "neighbours of the shifts ignored",
			sets: []set{hnsRTS, {0, []byte{0xff}}, {16, []byte{0xf0, 0x00, 0xff, 0xff}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 1, RQ: 1},
		},
		{
			// QPC_QP_ST (479,477): byte 59 bits 7:5; bits 4:0 of byte 59 and bytes 56-58
			// belong to other fields.
			name: "QP_ST 6 (ERR) with noise below it",
			sets: []set{{56, []byte{0xff, 0xff, 0xff, 0xdf}}},
			want: QP{Format: FormatHNSQPC, State: 6, SQ: 1, RQ: 1},
		},
		{
			name: "QP_ST 7 (SQ_DRAINING)",
			sets: []set{{59, []byte{0xe0}}},
			want: QP{Format: FormatHNSQPC, State: 7, SQ: 1, RQ: 1},
		},
		{
			// QPC_RX_CQN (631,608): LE u32 at byte 76, bits 23:0 = bytes 76-78; byte 79 is
			// other fields.
			name: "RX_CQN at bytes 76-78",
			sets: []set{hnsRTS, {76, []byte{0x56, 0x34, 0x12, 0xff}}},
			want: QP{Format: FormatHNSQPC, State: 3, RecvCQ: 0x123456, SQ: 1, RQ: 1},
		},
		{
			// QPC_TX_CQN (2007,1984): LE u32 at byte 248, bits 23:0 = bytes 248-250.
			name: "TX_CQN at bytes 248-250",
			sets: []set{hnsRTS, {248, []byte{0xef, 0xcd, 0xab, 0xff}}},
			want: QP{Format: FormatHNSQPC, State: 3, SendCQ: 0xabcdef, SQ: 1, RQ: 1},
		},
		{
			// QPC_SRQ_EN (600,600): LE u32 at byte 72, bit 24 = byte 75 bit 0. SRQN
			// (599,576) fills bytes 72-74.
			name: "SRQ_EN at byte 75 bit 0 drops the RQ",
			sets: []set{hnsRTS, {17, []byte{0xf3}}, {72, []byte{0x11, 0x22, 0x33, 0x01}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 8, SRQ: true},
		},
		{
			name: "SRQN without SRQ_EN keeps the RQ",
			sets: []set{hnsRTS, {17, []byte{0x23}}, {72, []byte{0x11, 0x22, 0x33, 0xfe}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 8, RQ: 4},
		},
		{
			name: "RQ_SHIFT 15 is the no-RQ artifact",
			sets: []set{hnsRTS, {17, []byte{0xf5}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 32, RQAmbiguous: true},
		},
		{
			name: "SQ_SHIFT 15 is a 32768-entry SQ",
			sets: []set{hnsRTS, {17, []byte{0xef}}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 32768, RQ: 16384},
		},
		{
			name: "RESET: the rest is not read",
			sets: []set{{17, []byte{0x48}}, {76, []byte{1, 2, 3}}, {248, []byte{4, 5, 6}}, {75, []byte{1}}},
			want: QP{Format: FormatHNSQPC, State: 0, Reset: true},
		},
		{
			// HIP08 leaves bytes 256-511 unset and 6.6 does not zero them: garbage there
			// changes nothing.
			name: "garbage past byte 256",
			sets: []set{hnsRTS, {17, []byte{0x48}}, {256, []byte(strings.Repeat("\xff", 320))}},
			want: QP{Format: FormatHNSQPC, State: 3, SQ: 256, RQ: 16},
		},
	} {
		for _, size := range []int{HNSQPCSize, HNSQPCSCCSize} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, size), func(t *testing.T) {
				got, err := DecodeQP(HNS, LayoutByLength, blob(size, tc.sets...))
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("got  %+v\nwant %+v", got, tc.want)
				}
			})
		}
	}
}

// u32s builds a 6.1 compact blob: element i is a host-endian (LE on arm64) u32 at byte 4*i.
func u32s(n int, elems map[int]uint32) []byte {
	b := make([]byte, 4*n)
	for i, v := range elems {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func TestDecodeHNS61QP(t *testing.T) {
	// Every element set to a value that is wrong for the fields read, so a decoder reading
	// the wrong element notices; elements read are overridden per case.
	noise := func(over map[int]uint32) map[int]uint32 {
		m := map[int]uint32{}
		for i := 0; i < 34; i++ {
			m[i] = 0xffffffff
		}
		for i, v := range over {
			m[i] = v
		}
		return m
	}
	base := map[int]uint32{0: 3, 3: 0, 6: 0, 7: 0, 13: 0, 15: 0}
	with := func(kv ...uint32) map[int]uint32 {
		m := map[int]uint32{}
		for i, v := range base {
			m[i] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[int(kv[i])] = kv[i+1]
		}
		return noise(m)
	}
	for _, tc := range []struct {
		name    string
		elems   map[int]uint32
		want    QP
		wantErr string
	}{
		{"element 0 QP_ST, 6 TX_CQN, 7 RX_CQN, 13 SQ_SHIFT, 15 RQ_SHIFT",
			with(0, 2, 6, 0x10, 7, 0x20, 13, 9, 15, 6),
			QP{Format: FormatHNS61, State: 2, SendCQ: 0x10, RecvCQ: 0x20, SQ: 512, RQ: 64}, ""},
		{"element 3 SRQ_EN", with(3, 1, 13, 2, 15, 15),
			QP{Format: FormatHNS61, State: 3, SQ: 4, SRQ: true}, ""},
		{"RQ_SHIFT 15 artifact", with(13, 2, 15, 15),
			QP{Format: FormatHNS61, State: 3, SQ: 4, RQAmbiguous: true}, ""},
		{"RESET", with(0, 0, 6, 5, 13, 3),
			QP{Format: FormatHNS61, Reset: true}, ""},
		{"24-bit CQNs at their maximum", with(6, 0xffffff, 7, 0xffffff),
			QP{Format: FormatHNS61, State: 3, SendCQ: 0xffffff, RecvCQ: 0xffffff, SQ: 1, RQ: 1}, ""},
		{"QP_ST wider than 3 bits", with(0, 8), QP{}, "element 0 (QP_ST) is 8"},
		{"SRQ_EN wider than 1 bit", with(3, 2), QP{}, "element 3 (SRQ_EN) is 2"},
		{"TX_CQN wider than 24 bits", with(6, 1<<24), QP{}, "element 6 (TX_CQN)"},
		{"RX_CQN wider than 24 bits", with(7, 1<<24), QP{}, "element 7 (RX_CQN)"},
		{"SQ_SHIFT wider than 4 bits", with(13, 16), QP{}, "element 13 (SQ_SHIFT) is 16"},
		{"RQ_SHIFT wider than 4 bits", with(15, 16), QP{}, "element 15 (RQ_SHIFT) is 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeQP(HNS, LayoutByLength, u32s(34, tc.elems))
			decoded(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestDecodeHNSCQ(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       []byte
		want    CQ
		wantErr string
	}{
		{
			// CQC_SHIFT (12,8): LE u32 at byte 0 bits 12:8 = byte 1 bits 4:0; CQ_ST (1,0) in
			// byte 0 and bits 7:5 of byte 1 are other fields.
			name: "CQC SHIFT in byte 1, CQN in bytes 4-6",
			b:    blob(64, set{0, []byte{0x03, 0xea}}, set{4, []byte{0xef, 0xcd, 0xab, 0xff}}),
			want: CQ{Format: FormatHNSCQC, CQN: 0xabcdef, HasCQN: true, Depth: 1024},
		},
		{
			name: "CQC SHIFT 0, CQN 0",
			b:    blob(64, set{0, []byte{0xff, 0xe0, 0xff, 0xff}}, set{7, []byte{0xff}}, set{8, []byte(strings.Repeat("\xff", 56))}),
			want: CQ{Format: FormatHNSCQC, HasCQN: true, Depth: 1},
		},
		{
			name: "CQC SHIFT 31",
			b:    blob(64, set{1, []byte{0x1f}}),
			want: CQ{Format: FormatHNSCQC, HasCQN: true, Depth: 1 << 31},
		},
		{
			// 6.1: element 1 SHIFT; element 0 CQ_ST and the rest are other fields.
			name: "6.1 element 1 SHIFT",
			b:    u32s(15, map[int]uint32{0: 0xffffffff, 1: 12, 2: 0xffffffff, 14: 0xffffffff}),
			want: CQ{Format: FormatHNS61, Depth: 4096},
		},
		{
			name:    "6.1 SHIFT wider than 5 bits",
			b:       u32s(15, map[int]uint32{1: 32}),
			wantErr: "element 1 (SHIFT) is 32",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeCQ(HNS, LayoutByLength, tc.b)
			decoded(t, got, err, tc.want, tc.wantErr)
		})
	}
}

func TestDecodeHNSUnknownLengths(t *testing.T) {
	for _, n := range []int{0, 1, 4, 135, 137, 256, 511, 513, 575, 577, 1088} {
		_, err := DecodeQP(HNS, LayoutByLength, make([]byte, n))
		if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", n)) ||
			!strings.Contains(err.Error(), "136") || !strings.Contains(err.Error(), "576") {
			t.Errorf("QP length %d: err %v", n, err)
		}
	}
	for _, n := range []int{0, 3, 59, 61, 63, 65, 128, 192} {
		_, err := DecodeCQ(HNS, LayoutByLength, make([]byte, n))
		if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), fmt.Sprintf("%d bytes", n)) ||
			!strings.Contains(err.Error(), "60") || !strings.Contains(err.Error(), "64") {
			t.Errorf("CQ length %d: err %v", n, err)
		}
	}
}

// The encoder is checked against the documented bytes too, because fixtures are built with it.
func TestEncodeHNSBytes(t *testing.T) {
	q := QP{Format: FormatHNSQPC, State: 3, SendCQ: 0xabcdef, RecvCQ: 0x123456, SQ: 256, RQ: 16}
	got, err := EncodeHNSQP(q, HNSQPCSCCSize)
	if err != nil {
		t.Fatal(err)
	}
	want := blob(HNSQPCSCCSize, hnsRTS, set{17, []byte{0x48}}, set{76, []byte{0x56, 0x34, 0x12}}, set{248, []byte{0xef, 0xcd, 0xab}})
	if string(got) != string(want) {
		t.Errorf("QPC bytes differ at %v", diffs(got, want))
	}

	srq, err := EncodeHNSQP(QP{State: 3, SQ: 1, SRQ: true}, HNSQPCSize)
	if err != nil {
		t.Fatal(err)
	}
	if want := blob(HNSQPCSize, hnsRTS, set{17, []byte{0xf0}}, set{75, []byte{0x01}}); string(srq) != string(want) {
		t.Errorf("SRQ QPC bytes differ at %v", diffs(srq, want))
	}

	c61, err := EncodeHNSQP(QP{State: 2, SendCQ: 7, RecvCQ: 8, SQ: 4, RQ: 2}, HNSQP61Size)
	if err != nil {
		t.Fatal(err)
	}
	if want := u32s(34, map[int]uint32{0: 2, 6: 7, 7: 8, 13: 2, 15: 1}); string(c61) != string(want) {
		t.Errorf("6.1 QP bytes differ at %v", diffs(c61, want))
	}

	cq, err := EncodeHNSCQ(CQ{CQN: 0xabcdef, HasCQN: true, Depth: 1024}, HNSCQCSize)
	if err != nil {
		t.Fatal(err)
	}
	if want := blob(64, set{1, []byte{0x0a}}, set{4, []byte{0xef, 0xcd, 0xab}}); string(cq) != string(want) {
		t.Errorf("CQC bytes differ at %v", diffs(cq, want))
	}
	cq61, err := EncodeHNSCQ(CQ{Depth: 4096}, HNSCQ61Size)
	if err != nil {
		t.Fatal(err)
	}
	if want := u32s(15, map[int]uint32{1: 12}); string(cq61) != string(want) {
		t.Errorf("6.1 CQ bytes differ at %v", diffs(cq61, want))
	}
}

func diffs(a, b []byte) []int {
	var d []int
	for i := 0; i < len(a) || i < len(b); i++ {
		if i >= len(a) || i >= len(b) || a[i] != b[i] {
			d = append(d, i)
		}
	}
	return d
}

func TestEncodeHNSRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		q    QP
		size int
		want string
	}{
		{"size", QP{State: 3, SQ: 1}, 100, "size 100"},
		{"format vs size", QP{Format: FormatHNS61, State: 3, SQ: 1}, HNSQPCSize, "does not match size"},
		{"QPN", QP{State: 3, SQ: 1, QPN: 5, HasQPN: true}, HNSQPCSize, "no QPN"},
		{"state 8", QP{State: 8, SQ: 1}, HNSQPCSize, "state 8"},
		{"SQ 0", QP{State: 3}, HNSQPCSize, "SQ 0"},
		{"SQ 3", QP{State: 3, SQ: 3}, HNSQPCSize, "SQ 3"},
		{"SQ 65536", QP{State: 3, SQ: 65536}, HNSQPCSize, "SQ 65536"},
		{"RQ 32768", QP{State: 3, SQ: 1, RQ: 32768}, HNSQP61Size, "RQ 32768"},
		{"RQ with SRQ", QP{State: 3, SQ: 1, RQ: 4, SRQ: true}, HNSQPCSize, "with SRQ"},
		{"CQN 24 bits", QP{State: 3, SQ: 1, SendCQ: 1 << 24}, HNSQPCSize, "send CQN"},
	} {
		if _, err := EncodeHNSQP(tc.q, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		c    CQ
		size int
		want string
	}{
		{"size", CQ{Depth: 1}, 63, "size 63"},
		{"6.1 with CQN", CQ{CQN: 3, HasCQN: true, Depth: 1}, HNSCQ61Size, "no CQN"},
		{"depth 0", CQ{Depth: 0}, HNSCQCSize, "depth 0"},
		{"depth 100", CQ{Depth: 100}, HNSCQCSize, "depth 100"},
		{"CQN 24 bits", CQ{CQN: 1 << 24, Depth: 1}, HNSCQCSize, "24 bits"},
		{"format", CQ{Format: FormatMLX5, Depth: 1}, HNSCQCSize, "does not match"},
	} {
		if _, err := EncodeHNSCQ(tc.c, tc.size); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// decoded checks one decode: the wanted error (a substring) or, without one, the wanted value.
func decoded[T comparable](t *testing.T, got T, err error, want T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err %v, want %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}
