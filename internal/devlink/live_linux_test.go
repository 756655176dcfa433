package devlink_test

import (
	"errors"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
)

// TestLive runs against the kernel the tests run on. nlctrl exists on every kernel with generic
// netlink and always has id 0x10, which proves the socket, request and decoder path. devlink may
// be absent (the build host's 6.18 kernel has none: CTRL_CMD_GETFAMILY answers ENOENT), which
// must come out as ErrNoDevlink; where it exists, the device and reporter dumps must decode.
func TestLive(t *testing.T) {
	conn, err := devlink.Dial()
	if err != nil {
		t.Fatalf("NETLINK_GENERIC socket: %v", err)
	}
	defer conn.Close()
	c := devlink.NewClient(conn)
	id, err := c.Resolve("nlctrl")
	if err != nil || id != devlink.CtrlType {
		t.Fatalf("nlctrl resolves to %#x, %v", id, err)
	}
	devs, err := c.Devices()
	if errors.Is(err, devlink.ErrNoDevlink) {
		t.Logf("no devlink in this kernel: %v", err)
		if _, err := c.Reporters(); !errors.Is(err, devlink.ErrNoDevlink) {
			t.Errorf("reporters without devlink: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatalf("devlink dev: %v", err)
	}
	rs, err := c.Reporters()
	if err != nil {
		t.Fatalf("devlink health show: %v", err)
	}
	t.Logf("devlink instances %v, reporters %+v", devs, rs)
}
