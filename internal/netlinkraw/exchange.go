package netlinkraw

import (
	"errors"
	"fmt"
)

// Request is one netlink request: the nlmsg type (RDMA_NL_GET_TYPE(client, op) for RDMA netlink,
// the family id for generic netlink), the header flags (NLM_F_REQUEST is implied) and the
// payload that follows the header.
type Request struct {
	Type    uint16
	Flags   uint16
	Payload []byte
}

// Key names a request deterministically; snapshots store each reply under its request's key.
func (r Request) Key() string {
	return fmt.Sprintf("%04x-%04x-%x", r.Type, r.Flags, r.Payload)
}

// Exchanger exchanges netlink requests (RDMA netlink, or generic netlink for devlink and
// ethtool) for raw replies. The reply is every message the kernel sent, concatenated as received
// (nlmsghdr included, NLMSG_DONE included), so that a recorded reply replays through exactly the
// decoder a live one goes through. A kernel error (NLMSG_ERROR with a negative errno) is
// returned as a syscall.Errno. A socket (Conn), a Recorder and a replay are Exchangers.
type Exchanger interface {
	Exchange(req Request) ([]byte, error)
}

// ErrNotRecorded means a recording holds no answer for a request (or, for the host, for a
// non-file source).
var ErrNotRecorded = errors.New("not recorded in this snapshot")

// ErrMalformedRecording marks a recorded answer that is not one a Recorder writes.
var ErrMalformedRecording = errors.New("malformed netlink recording")
