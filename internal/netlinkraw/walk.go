package netlinkraw

import (
	"fmt"
	"syscall"
)

// Walk checks the framing of a reply and calls fn with the payload of every data message: each
// must be of type want; NLMSG_NOOP is passed over and a zero NLMSG_ERROR is an acknowledgement,
// which carries nothing. A negative errno in NLMSG_ERROR or NLMSG_DONE is returned as a
// syscall.Errno: a refused dump (6.1 answering RES_QP_GET without DEV_INDEX) comes as NLMSG_DONE
// carrying -EINVAL, not as NLMSG_ERROR. The reply ends at NLMSG_DONE, with nothing after it; a
// reply without one is whole only when needDone is false (a plain reply, not a dump) and it
// holds a message. Errors about the bytes wrap malformed, the caller's own sentinel, so that its
// callers tell a garbled reply from a kernel errno with one errors.Is.
func Walk(b []byte, want uint16, needDone bool, malformed error, fn func(payload []byte) error) error {
	for off, n := 0, 0; ; n++ {
		if off >= len(b) {
			if needDone || n == 0 {
				return fmt.Errorf("reply of %d bytes ends without NLMSG_DONE after %d messages: %w", len(b), n, malformed)
			}
			return nil
		}
		h, size, err := ParseHeader(b[off:])
		if err != nil {
			return fmt.Errorf("message %d at byte %d: %v: %w", n, off, err, malformed)
		}
		payload := b[off+HdrLen : off+h.Len]
		switch h.Type {
		case MsgNoop:
		case MsgOverrun:
			return fmt.Errorf("message %d at byte %d: NLMSG_OVERRUN: %w", n, off, malformed)
		case MsgError, MsgDone:
			e, err := Errno(h, payload)
			if err != nil {
				return fmt.Errorf("message %d at byte %d: %v: %w", n, off, err, malformed)
			}
			if e < 0 {
				return syscall.Errno(-e)
			}
			if h.Type == MsgDone {
				if rest := len(b) - off - size; rest > 0 {
					return fmt.Errorf("%d bytes after NLMSG_DONE: %w", rest, malformed)
				}
				return nil
			}
		default:
			if h.Type != want {
				return fmt.Errorf("message %d at byte %d: type %#x, want %#x: %w", n, off, h.Type, want, malformed)
			}
			if err := fn(payload); err != nil {
				return fmt.Errorf("message %d at byte %d: %w", n, off, err)
			}
		}
		off += size
	}
}
