package netlinkraw

import (
	"bytes"
	"testing"
)

// The writer's bytes are checked by hand here, independently of the decoders that read them.
func TestAttrWriterAndMessage(t *testing.T) {
	w := AttrWriter{PadU64: true, PadType: 0, Nested: true}
	w.Nest(7, func() { w.U8(1, 0xaa) })
	w.U64(2, 1)
	le := ne.AppendUint16(nil, 1)[0] == 1 // the writer uses host order, as the kernel does
	var want []byte
	u16 := func(v uint16) []byte { return ne.AppendUint16(nil, v) }
	want = append(want, u16(12)...)            // nest length: header 4 + U8 attribute 8
	want = append(want, u16(7|AttrFNested)...) // NLA_F_NESTED set
	want = append(want, u16(5)...)
	want = append(want, u16(1)...)
	want = append(want, 0xaa, 0, 0, 0) // value and padding to 4
	want = append(want, u16(4)...)     // PAD before the u64
	want = append(want, u16(0)...)
	want = append(want, u16(12)...)
	want = append(want, u16(2)...)
	want = append(want, ne.AppendUint64(nil, 1)...)
	if !bytes.Equal(w.B, want) {
		t.Errorf("attributes (little-endian host %v):\n got %x\nwant %x", le, w.B, want)
	}
	m := AppendMessage(nil, 0x1413, 2, 9, 0, []byte{1, 2, 3, 4, 5})
	if len(m) != 24 || ne.Uint32(m) != 21 || ne.Uint16(m[4:]) != 0x1413 || ne.Uint16(m[6:]) != 2 || ne.Uint32(m[8:]) != 9 {
		t.Errorf("message %x: want nlmsg_len 21, type 0x1413, flags 2, seq 9, padded to 24 bytes", m)
	}
	h, size, err := ParseHeader(m)
	if err != nil || size != 24 || h.Len != 21 {
		t.Errorf("ParseHeader: %+v %d %v", h, size, err)
	}
}
