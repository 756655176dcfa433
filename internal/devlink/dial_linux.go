package devlink

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// Dial opens a NETLINK_GENERIC socket for devlink queries with netlinkraw.DefaultTimeout. The
// socket opens on any Linux kernel; whether devlink exists is known only when the family is
// resolved (Client.Family), so that a kernel without it is reported by the checks with the
// reason, like any other answer.
func Dial() (*netlinkraw.Conn, error) { return DialTimeout(netlinkraw.DefaultTimeout) }

// DialTimeout is Dial with a per-receive timeout.
func DialTimeout(timeout time.Duration) (*netlinkraw.Conn, error) {
	return netlinkraw.Dial(unix.NETLINK_GENERIC, "NETLINK_GENERIC", "devlink", timeout)
}
