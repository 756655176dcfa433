package ethtoolnl

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// Dial opens a NETLINK_GENERIC socket for ethtool queries with netlinkraw.DefaultTimeout.
func Dial() (*netlinkraw.Conn, error) {
	return netlinkraw.Dial(unix.NETLINK_GENERIC, "NETLINK_GENERIC", "ethtool", netlinkraw.DefaultTimeout)
}

// LazyConn opens its socket on the first exchange, so that a run whose checks ask no ethtool
// question opens none. A socket that cannot be opened fails every exchange with the reason.
type LazyConn struct {
	dial func() (*netlinkraw.Conn, error)

	once sync.Once
	conn *netlinkraw.Conn
	err  error
}

var _ host.NetlinkConn = (*LazyConn)(nil)

// NewLazyConn returns a LazyConn that opens a socket with Dial.
func NewLazyConn() *LazyConn { return &LazyConn{dial: Dial} }

// NewLazyConnTimeout is NewLazyConn with a per-receive timeout.
func NewLazyConnTimeout(timeout time.Duration) *LazyConn {
	return &LazyConn{dial: func() (*netlinkraw.Conn, error) {
		return netlinkraw.Dial(unix.NETLINK_GENERIC, "NETLINK_GENERIC", "ethtool", timeout)
	}}
}

// Exchange opens the socket if needed and exchanges req.
func (l *LazyConn) Exchange(req host.Request) ([]byte, error) {
	l.once.Do(func() { l.conn, l.err = l.dial() })
	if l.err != nil {
		return nil, fmt.Errorf("ethtool netlink socket: %w", l.err)
	}
	return l.conn.Exchange(req)
}

// Close closes the socket if it was opened.
func (l *LazyConn) Close() error {
	l.once.Do(func() { l.err = fmt.Errorf("closed before first use") })
	if l.conn != nil {
		return l.conn.Close()
	}
	return nil
}
