package netlinkraw

import (
	"errors"
	"fmt"
)

// ErrFraming is wrapped by errors about netlink framing (a header that does not fit, an error
// message too short to hold its errno).
var ErrFraming = errors.New("malformed netlink framing")

// Header is a decoded nlmsghdr.
type Header struct {
	Len    int
	Type   uint16
	Flags  uint16
	Seq    uint32
	PortID uint32
}

// ParseHeader reads the nlmsghdr at the start of b and checks that the message fits in b. It
// returns the header and the number of bytes the message occupies, alignment included.
func ParseHeader(b []byte) (Header, int, error) {
	if len(b) < HdrLen {
		return Header{}, 0, fmt.Errorf("%d bytes left, shorter than a netlink header: %w", len(b), ErrFraming)
	}
	h := Header{
		Len:    int(ne.Uint32(b)),
		Type:   ne.Uint16(b[4:]),
		Flags:  ne.Uint16(b[6:]),
		Seq:    ne.Uint32(b[8:]),
		PortID: ne.Uint32(b[12:]),
	}
	if h.Len < HdrLen || h.Len > len(b) {
		return Header{}, 0, fmt.Errorf("nlmsg_len %d outside [%d, %d]: %w", h.Len, HdrLen, len(b), ErrFraming)
	}
	return h, min((h.Len+3)&^3, len(b)), nil
}

// Errno reads the int at the start of an NLMSG_ERROR or NLMSG_DONE payload: 0 for success, a
// negative errno for a failure.
func Errno(h Header, payload []byte) (int32, error) {
	if len(payload) < 4 {
		if h.Type == MsgDone {
			// Kernels before 4.15 sent an empty NLMSG_DONE, and devlink's fmsg replies still do.
			return 0, nil
		}
		return 0, fmt.Errorf("NLMSG_ERROR with %d-byte payload: %w", len(payload), ErrFraming)
	}
	return int32(ne.Uint32(payload)), nil
}
