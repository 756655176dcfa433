package nldev

import (
	"time"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// DefaultTimeout bounds each receive on a live socket (see netlinkraw.DefaultTimeout).
const DefaultTimeout = netlinkraw.DefaultTimeout

// SocketConn is a live NETLINK_RDMA socket: a netlinkraw.Conn, whose raw replies the Client
// decodes and a Recorder stores.
type SocketConn = netlinkraw.Conn

// Dial opens a NETLINK_RDMA socket with DefaultTimeout. On a kernel without RDMA support the
// error wraps EPROTONOSUPPORT.
func Dial() (*SocketConn, error) { return DialTimeout(DefaultTimeout) }

// DialTimeout is Dial with a per-receive timeout.
func DialTimeout(timeout time.Duration) (*SocketConn, error) {
	return netlinkraw.Dial(NetlinkRDMA, "NETLINK_RDMA", "nldev", timeout)
}
