package netlinkraw

import "fmt"

// Attribute framing shared by the RDMA netlink and devlink decoders and by the encoders their
// tests use: one place decides how an nlattr is bounded, aligned and typed.

const (
	// AttrHdrLen is sizeof(struct nlattr).
	AttrHdrLen = 4
	// AttrTypeMask drops NLA_F_NESTED and NLA_F_NET_BYTEORDER: some kernels set the nested flag on
	// a nest, others do not, and the decoders must not care.
	AttrTypeMask = 0x3fff
	// AttrFNested is NLA_F_NESTED.
	AttrFNested = 0x8000
)

// AttrError is a malformed attribute: Stray bytes too few for a header, or a length outside the
// bytes that are left. Decoders turn it into their own error, naming the attribute.
type AttrError struct {
	Off   int    // offset of the attribute in the run
	Stray bool   // fewer than AttrHdrLen bytes left
	Left  int    // bytes left at Off
	Type  uint16 // masked type (when not Stray)
	Len   int    // nla_len (when not Stray)
}

func (e *AttrError) Error() string {
	if e.Stray {
		return fmt.Sprintf("%d stray bytes at attribute offset %d", e.Left, e.Off)
	}
	return fmt.Sprintf("attribute %d at offset %d: nla_len %d outside [%d, %d]", e.Type, e.Off, e.Len, AttrHdrLen, e.Left)
}

// NextAttr reads the attribute at b[off:] and returns its masked type, its value and the offset
// of the next attribute (alignment included, never past len(b)).
func NextAttr(b []byte, off int) (typ uint16, val []byte, next int, err error) {
	rest := b[off:]
	if len(rest) < AttrHdrLen {
		return 0, nil, off, &AttrError{Off: off, Stray: true, Left: len(rest)}
	}
	l := int(ne.Uint16(rest))
	t := ne.Uint16(rest[2:]) & AttrTypeMask
	if l < AttrHdrLen || l > len(rest) {
		return 0, nil, off, &AttrError{Off: off, Left: len(rest), Type: t, Len: l}
	}
	return t, rest[AttrHdrLen:l], off + min((l+3)&^3, len(rest)), nil
}

// AppendAttr appends one attribute (header, value, zero padding to 4 bytes) to b.
func AppendAttr(b []byte, typ uint16, val []byte) []byte {
	b = ne.AppendUint16(b, uint16(AttrHdrLen+len(val)))
	b = ne.AppendUint16(b, typ)
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}
