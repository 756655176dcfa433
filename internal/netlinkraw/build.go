package netlinkraw

// AttrWriter appends attributes as a kernel lays them out. The test encoders of the nldev and
// devlink clients (nltest, dltest) build replies with it; its options vary the layout in the
// ways kernels do, which the decoders must all accept.
type AttrWriter struct {
	B []byte
	// PadU64 puts an attribute of type PadType before every u64, as nla_put_u64_64bit does
	// where 64-bit values must be aligned.
	PadU64  bool
	PadType uint16
	// Nested sets NLA_F_NESTED on nests (nldev leaves it off on resource tables).
	Nested bool
}

// Put appends one attribute.
func (w *AttrWriter) Put(t uint16, v []byte) { w.B = AppendAttr(w.B, t, v) }

// Flag appends an attribute without a value.
func (w *AttrWriter) Flag(t uint16) { w.Put(t, nil) }

// U8 appends a u8 attribute.
func (w *AttrWriter) U8(t uint16, v uint8) { w.Put(t, []byte{v}) }

// U16 appends a u16 attribute.
func (w *AttrWriter) U16(t uint16, v uint16) { w.Put(t, ne.AppendUint16(nil, v)) }

// U32 appends a u32 attribute.
func (w *AttrWriter) U32(t uint16, v uint32) { w.Put(t, ne.AppendUint32(nil, v)) }

// U64 appends a u64 attribute, after a PAD attribute when PadU64 is set.
func (w *AttrWriter) U64(t uint16, v uint64) {
	if w.PadU64 {
		w.Put(w.PadType, nil)
	}
	w.Put(t, ne.AppendUint64(nil, v))
}

// Str appends a NUL-terminated string attribute.
func (w *AttrWriter) Str(t uint16, s string) { w.Put(t, append([]byte(s), 0)) }

// Nest wraps what fill appends in a nest attribute of type t.
func (w *AttrWriter) Nest(t uint16, fill func()) {
	start := len(w.B)
	if w.Nested {
		t |= AttrFNested
	}
	w.B = ne.AppendUint16(w.B, 0)
	w.B = ne.AppendUint16(w.B, t)
	fill()
	ne.PutUint16(w.B[start:], uint16(len(w.B)-start))
}

// AppendMessage appends one netlink message (header and payload, padded to 4 bytes).
func AppendMessage(out []byte, typ, flags uint16, seq, portID uint32, payload []byte) []byte {
	out = ne.AppendUint32(out, uint32(HdrLen+len(payload)))
	out = ne.AppendUint16(out, typ)
	out = ne.AppendUint16(out, flags)
	out = ne.AppendUint32(out, seq)
	out = ne.AppendUint32(out, portID)
	out = append(out, payload...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	return out
}
