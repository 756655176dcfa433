package dcbnl_test

import (
	"errors"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
)

// The running kernel answers RTM_GETDCB: a netdev without dcbnl operations (lo) is refused with
// EOPNOTSUPP (dcb_doit in net/dcb/dcbnl.c), as is every netdev on a kernel without CONFIG_DCB
// (rtnetlink has no handler for the message). Either way the request reaches the kernel and
// the refusal is decoded, which is what rdmadiag sees on rxe's and virtio's netdevs.
func TestLive(t *testing.T) {
	conn := dcbnl.NewLazyConn()
	defer conn.Close()
	_, err := dcbnl.NewClient(conn).IEEE("lo")
	if errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EPERM) {
		t.Skipf("no NETLINK_ROUTE socket here: %v", err)
	}
	if !errors.Is(err, syscall.EOPNOTSUPP) && !errors.Is(err, syscall.ENODEV) {
		t.Fatalf("IEEE_GET lo: %v, want EOPNOTSUPP", err)
	}
	if errors.Is(err, syscall.EOPNOTSUPP) {
		if _, err := dcbnl.NewClient(conn).IEEE("rdmadiag-none0"); !errors.Is(err, syscall.ENODEV) && !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("IEEE_GET of a missing netdev: %v, want ENODEV", err)
		}
	}
}
