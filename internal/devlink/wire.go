package devlink

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// ErrMalformed is wrapped by every decoding error caused by the bytes themselves (as opposed to
// a kernel error code), so that callers can tell a garbled snapshot from a refusing kernel.
var ErrMalformed = errors.New("malformed devlink reply")

// ne is the kernel's byte order for netlink headers and integer attributes: the host's.
var ne = binary.NativeEndian

// walkReply calls fn with the genlmsghdr command and the attributes of every message of a reply,
// whose framing netlinkraw.Walk checks; every data message must carry a genlmsghdr. A dump (and
// an fmsg reply) must end with NLMSG_DONE; a plain reply is one message, which needDone=false
// accepts.
func walkReply(b []byte, want uint16, needDone bool, fn func(cmd uint8, attrs []byte) error) error {
	return netlinkraw.Walk(b, want, needDone, ErrMalformed, func(payload []byte) error {
		if len(payload) < genlHdrLen {
			return fmt.Errorf("%d-byte payload, shorter than a genlmsghdr: %w", len(payload), ErrMalformed)
		}
		return fn(payload[0], payload[genlHdrLen:])
	})
}

// attrs iterates over a run of netlink attributes. The nesting and byte-order flags are masked
// off; a framing error stops the iteration and stays in err.
type attrs struct {
	b   []byte
	off int
	err error
}

func (a *attrs) next() (typ uint16, val []byte, ok bool) {
	if a.err != nil || a.off >= len(a.b) {
		return 0, nil, false
	}
	t, v, next, err := netlinkraw.NextAttr(a.b, a.off)
	if err != nil {
		a.err = fmt.Errorf("%v: %w", err, ErrMalformed)
		return 0, nil, false
	}
	a.off = next
	return t, v, true
}

// str reads a NUL-terminated string attribute; a missing terminator is tolerated.
func str(v []byte) string {
	for i, c := range v {
		if c == 0 {
			return string(v[:i])
		}
	}
	return string(v)
}

func u8(t uint16, v []byte) (uint8, error) {
	if len(v) != 1 {
		return 0, sizeErr(t, 1, v)
	}
	return v[0], nil
}

func u16(t uint16, v []byte) (uint16, error) {
	if len(v) != 2 {
		return 0, sizeErr(t, 2, v)
	}
	return ne.Uint16(v), nil
}

func u32(t uint16, v []byte) (uint32, error) {
	if len(v) != 4 {
		return 0, sizeErr(t, 4, v)
	}
	return ne.Uint32(v), nil
}

func u64(t uint16, v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, sizeErr(t, 8, v)
	}
	return ne.Uint64(v), nil
}

func sizeErr(t uint16, want int, v []byte) error {
	return fmt.Errorf("attribute %d: %d bytes, want %d: %w", t, len(v), want, ErrMalformed)
}

// Encoding of requests.

func putAttr(b []byte, t uint16, v []byte) []byte { return netlinkraw.AppendAttr(b, t, v) }

func putStr(b []byte, t uint16, s string) []byte { return putAttr(b, t, append([]byte(s), 0)) }

func genlHdr(cmd, version uint8) []byte { return []byte{cmd, version, 0, 0} }
