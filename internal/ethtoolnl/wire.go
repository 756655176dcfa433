package ethtoolnl

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// ne is the kernel's byte order for netlink headers and integer attributes: the host's.
var ne = binary.NativeEndian

// walkReply calls fn with the attributes of the one data message of a plain (non-dump) reply
// and checks the framing: the message must be of type want, carry a genlmsghdr with command
// cmd, and be the only one. A negative errno in NLMSG_ERROR is returned as a syscall.Errno.
func walkReply(b []byte, want uint16, cmd uint8, fn func(attrs []byte) error) error {
	n := 0
	for off := 0; off < len(b); {
		h, size, err := netlinkraw.ParseHeader(b[off:])
		if err != nil {
			return fmt.Errorf("message at byte %d: %v: %w", off, err, ErrMalformed)
		}
		payload := b[off+netlinkraw.HdrLen : off+h.Len]
		switch h.Type {
		case netlinkraw.MsgNoop:
		case netlinkraw.MsgOverrun:
			return fmt.Errorf("message at byte %d: NLMSG_OVERRUN: %w", off, ErrMalformed)
		case netlinkraw.MsgError, netlinkraw.MsgDone:
			e, err := netlinkraw.Errno(h, payload)
			if err != nil {
				return fmt.Errorf("message at byte %d: %v: %w", off, err, ErrMalformed)
			}
			if e < 0 {
				return syscall.Errno(-e)
			}
		default:
			if h.Type != want {
				return fmt.Errorf("message at byte %d: type %#x, want %#x: %w", off, h.Type, want, ErrMalformed)
			}
			if len(payload) < genlHdrLen {
				return fmt.Errorf("message at byte %d: %d-byte payload, shorter than a genlmsghdr: %w", off, len(payload), ErrMalformed)
			}
			if payload[0] != cmd {
				return fmt.Errorf("message at byte %d: command %d, want %d: %w", off, payload[0], cmd, ErrMalformed)
			}
			if n++; n > 1 {
				return fmt.Errorf("message at byte %d: a second reply message: %w", off, ErrMalformed)
			}
			if err := fn(payload[genlHdrLen:]); err != nil {
				return fmt.Errorf("message at byte %d: %w", off, err)
			}
		}
		off += size
	}
	if n == 0 {
		return fmt.Errorf("reply of %d bytes holds no message: %w", len(b), ErrMalformed)
	}
	return nil
}

// eachAttr calls fn for every attribute of a run (type with the nesting and byte-order flags
// masked off).
func eachAttr(b []byte, fn func(t uint16, v []byte) error) error {
	for off := 0; off < len(b); {
		t, v, next, err := netlinkraw.NextAttr(b, off)
		if err != nil {
			return fmt.Errorf("%v: %w", err, ErrMalformed)
		}
		if err := fn(t, v); err != nil {
			return err
		}
		off = next
	}
	return nil
}

func sizeErr(what string, t uint16, want int, v []byte) error {
	return fmt.Errorf("%s attribute %d: %d bytes, want %d: %w", what, t, len(v), want, ErrMalformed)
}

func u8(what string, t uint16, v []byte) (uint8, error) {
	if len(v) != 1 {
		return 0, sizeErr(what, t, 1, v)
	}
	return v[0], nil
}

func u32(what string, t uint16, v []byte) (uint32, error) {
	if len(v) != 4 {
		return 0, sizeErr(what, t, 4, v)
	}
	return ne.Uint32(v), nil
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

// header is the reply header nest (ETHTOOL_A_HEADER_*): the netdev the reply is about.
type header struct {
	ifindex uint32
	ifname  string
}

func decodeHeader(v []byte) (header, error) {
	var h header
	err := eachAttr(v, func(t uint16, v []byte) error {
		switch t {
		case AttrHeaderDevIndex:
			x, err := u32("header", t, v)
			h.ifindex = x
			return err
		case AttrHeaderDevName:
			h.ifname = str(v)
		}
		return nil
	})
	return h, err
}

// Encoding of requests.

// requestHeader is the ETHTOOL_A_*_HEADER nest naming the netdev; NLA_F_NESTED is set because
// the family validates strictly (genetlink without GENL_DONT_VALIDATE_STRICT).
func requestHeader(ifname string, flags uint32) []byte {
	var in []byte
	in = netlinkraw.AppendAttr(in, AttrHeaderDevName, append([]byte(ifname), 0))
	if flags != 0 {
		in = netlinkraw.AppendAttr(in, AttrHeaderFlags, ne.AppendUint32(nil, flags))
	}
	return netlinkraw.AppendAttr(nil, AttrHeader|attrNestedFlag, in)
}

func genlHdr(cmd uint8) []byte { return []byte{cmd, genlVersion, 0, 0} }
