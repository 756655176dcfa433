package devlink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// ErrMalformed is wrapped by every decoding error caused by the bytes themselves (as opposed to
// a kernel error code), so that callers can tell a garbled snapshot from a refusing kernel.
var ErrMalformed = errors.New("malformed devlink reply")

// ne is the kernel's byte order for netlink headers and integer attributes: the host's.
var ne = binary.NativeEndian

// walkReply calls fn with the genlmsghdr command and the attributes of every message of a reply
// and checks the framing: every data message must be of type want and carry a genlmsghdr. A
// negative errno in NLMSG_ERROR or NLMSG_DONE is returned as a syscall.Errno. A dump (and an
// fmsg reply) must end with NLMSG_DONE; a plain reply is one message, which done=false accepts.
func walkReply(b []byte, want uint16, needDone bool, fn func(cmd uint8, attrs []byte) error) error {
	n := 0
	for off := 0; ; n++ {
		if off >= len(b) {
			if needDone || n == 0 {
				return fmt.Errorf("reply of %d bytes ends without NLMSG_DONE after %d messages: %w", len(b), n, ErrMalformed)
			}
			return nil
		}
		h, size, err := netlinkraw.ParseHeader(b[off:])
		if err != nil {
			return fmt.Errorf("message %d at byte %d: %v: %w", n, off, err, ErrMalformed)
		}
		payload := b[off+netlinkraw.HdrLen : off+h.Len]
		switch h.Type {
		case netlinkraw.MsgNoop:
		case netlinkraw.MsgOverrun:
			return fmt.Errorf("message %d at byte %d: NLMSG_OVERRUN: %w", n, off, ErrMalformed)
		case netlinkraw.MsgError, netlinkraw.MsgDone:
			e, err := netlinkraw.Errno(h, payload)
			if err != nil {
				return fmt.Errorf("message %d at byte %d: %v: %w", n, off, err, ErrMalformed)
			}
			if e < 0 {
				return syscall.Errno(-e)
			}
			if h.Type == netlinkraw.MsgDone {
				if rest := len(b) - off - size; rest > 0 {
					return fmt.Errorf("%d bytes after NLMSG_DONE: %w", rest, ErrMalformed)
				}
				return nil
			}
			// A zero NLMSG_ERROR is an acknowledgement, which carries nothing.
		default:
			if h.Type != want {
				return fmt.Errorf("message %d at byte %d: type %#x, want %#x: %w", n, off, h.Type, want, ErrMalformed)
			}
			if len(payload) < genlHdrLen {
				return fmt.Errorf("message %d at byte %d: %d-byte payload, shorter than a genlmsghdr: %w", n, off, len(payload), ErrMalformed)
			}
			if err := fn(payload[0], payload[genlHdrLen:]); err != nil {
				return fmt.Errorf("message %d at byte %d: %w", n, off, err)
			}
		}
		off += size
	}
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
