package nldev

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// The socket itself is tested in internal/netlinkraw against NETLINK_ROUTE.

// TestDialRDMA runs against whatever kernel the tests run on. Without RDMA (as on the build
// host, where socket(AF_NETLINK, SOCK_RAW, NETLINK_RDMA) fails with EPROTONOSUPPORT) Dial must
// fail cleanly with the errno; with RDMA the device dump must work.
func TestDialRDMA(t *testing.T) {
	c, err := Dial()
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) || !strings.Contains(err.Error(), "NETLINK_RDMA") {
			t.Fatalf("Dial: %v, want an errno naming NETLINK_RDMA", err)
		}
		if errors.Is(err, syscall.EPROTONOSUPPORT) {
			t.Logf("kernel has no RDMA netlink: %v", err)
		}
		return
	}
	defer c.Close()
	devs, err := NewClient(c).Devices()
	if err != nil {
		t.Fatalf("live device dump: %v", err)
	}
	t.Logf("live RDMA devices: %+v", devs)
}

func TestDialRejectsNonPositiveTimeout(t *testing.T) {
	if _, err := DialTimeout(0); err == nil {
		t.Error("DialTimeout(0) succeeded")
	}
}
