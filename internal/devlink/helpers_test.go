package devlink_test

import (
	"encoding/binary"
	"errors"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
)

// Hand-built wire bytes, independent of dltest, so that the decoders are not only checked
// against the encoder that shares its author's assumptions.

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
func u16(v uint16) []byte { return ne.AppendUint16(nil, v) }
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

// msg is one netlink message with a genlmsghdr.
func msg(typ, flags uint16, cmd uint8, attrs ...[]byte) []byte {
	payload := cat(append([][]byte{{cmd, 1, 0, 0}}, attrs...)...)
	b := ne.AppendUint32(nil, uint32(16+len(payload)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, flags)
	b = ne.AppendUint32(b, 7)
	b = ne.AppendUint32(b, 1234)
	return append(b, payload...)
}

func rawMsg(typ uint16, payload []byte) []byte {
	b := ne.AppendUint32(nil, uint32(16+len(payload)))
	b = ne.AppendUint16(b, typ)
	b = ne.AppendUint16(b, 2)
	b = ne.AppendUint32(b, 7)
	b = ne.AppendUint32(b, 1234)
	return append(b, payload...)
}

func done(errno int32) []byte { return rawMsg(3, ne.AppendUint32(nil, uint32(errno))) }

func nlErr(errno int32) []byte {
	return rawMsg(2, append(ne.AppendUint32(nil, uint32(errno)), make([]byte, 16)...))
}

func wellFormedError(err error) bool {
	var errno syscall.Errno
	return errors.Is(err, devlink.ErrMalformed) || errors.As(err, &errno)
}
