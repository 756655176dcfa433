package nldev_test

import (
	"encoding/binary"
	"errors"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/nldev"
)

// Hand-built wire bytes, independent of nltest, so the decoder is not only checked against
// the encoder that shares its author's assumptions.

var ne = binary.NativeEndian

func attr(t uint16, v []byte) []byte {
	b := ne.AppendUint16(nil, uint16(4+len(v)))
	b = ne.AppendUint16(b, t)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u8(v uint8) []byte   { return []byte{v} }
func u32(v uint32) []byte { return ne.AppendUint32(nil, v) }
func u64(v uint64) []byte { return ne.AppendUint64(nil, v) }
func cstr(s string) []byte {
	return append([]byte(s), 0)
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func msg(typ, flags uint16, payload ...[]byte) []byte {
	p := cat(payload...)
	b := ne.AppendUint32(nil, uint32(16+len(p)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, 7)
	b = ne.AppendUint32(b, 1234)
	b = append(b, p...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func done(errno int32) []byte { return msg(3, 2, u32(uint32(errno))) }

func qpMsg(entries ...[]byte) []byte {
	return msg(nldev.MsgType(nldev.CmdResQPGet), 2,
		attr(nldev.AttrDevIndex, u32(2)), attr(nldev.AttrDevName, cstr("mlx5_1")),
		attr(nldev.AttrResQP, cat(entries...)))
}

func qpEntry(attrs ...[]byte) []byte { return attr(nldev.AttrResQPEntry, cat(attrs...)) }

// countMessages walks nlmsghdrs and reports how many there are and how many PAD attributes
// appear anywhere (found by scanning for a zero-length type-0 attribute header).
func countMessages(t *testing.T, b []byte) int {
	t.Helper()
	n := 0
	for off := 0; off < len(b); n++ {
		l := int(ne.Uint32(b[off:]))
		if l < 16 || off+l > len(b) {
			t.Fatalf("bad message length %d at %d", l, off)
		}
		off += (l + 3) &^ 3
	}
	return n
}

// wellFormedError reports whether err is one of the two kinds decoders may return.
func wellFormedError(err error) bool {
	var errno syscall.Errno
	return errors.Is(err, nldev.ErrMalformed) || errors.As(err, &errno)
}
