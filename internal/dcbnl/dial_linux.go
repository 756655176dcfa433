package dcbnl

import (
	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// NewLazyConn returns a NETLINK_ROUTE connection for DCB queries that opens its socket on the
// first question. RTM_GETDCB needs no privilege (dcb_doit refuses only RTM_SETDCB without
// CAP_NET_ADMIN, net/dcb/dcbnl.c).
func NewLazyConn() *netlinkraw.Lazy {
	return netlinkraw.NewLazy("DCB netlink", func() (*netlinkraw.Conn, error) {
		return netlinkraw.Dial(unix.NETLINK_ROUTE, "NETLINK_ROUTE", "dcb", netlinkraw.DefaultTimeout)
	})
}
