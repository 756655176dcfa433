package observe

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// NetClassDir is where the kernel lists the netdevs (net/core/net-sysfs.c).
const NetClassDir = "/sys/class/net"

// NetdevAttrs is what the checks read of a netdev, as first read in the run. A field the file
// could not give is zero with its error (naming the path) beside it.
type NetdevAttrs struct {
	Name string
	// Dir is /sys/class/net/<name>, for evidence.
	Dir string
	// Operstate is the RFC 2863 state ("up", "down", "unknown", ...).
	Operstate    string
	OperstateErr error
	// MTU is 0 when unreadable or not an MTU.
	MTU    int
	MTUErr error
	// AdminUp is IFF_UP of the flags file: whether someone brought the interface up; nil when
	// the flags are unreadable. It tells "ip link set down" apart from a dead link, which
	// operstate alone does not (both read "down").
	AdminUp  *bool
	FlagsErr error
	// SpeedMbps is the speed file's number, -1 when the driver does not know (virtio, or a
	// negative value) or the file could not be read. The kernel refuses the read with EINVAL
	// while the link is down (speed_show, net/core/net-sysfs.c): SpeedErr then holds it, and
	// SpeedText is what the file said when it said something.
	SpeedMbps int
	SpeedText string
	SpeedErr  error
}

// iffUp is IFF_UP in include/uapi/linux/if.h; the flags file prints the flags as "0x%x"
// (net/core/net-sysfs.c). Lab port-down: "ip link set eth0 down" left 0x1002.
const iffUp = 0x1

type netdevReads struct {
	h  *host.Host
	mu sync.Mutex
	m  map[string]func() NetdevAttrs
}

var netdevFact = checks.NewFact("netdev attributes", func(env *checks.Env) *netdevReads {
	return &netdevReads{h: env.Host, m: map[string]func() NetdevAttrs{}}
})

// Netdev returns a netdev's attributes as read once in this run: the port, PCIe and driver
// checks and the report's inventory show the same reading.
func Netdev(env *checks.Env, name string) NetdevAttrs {
	r := netdevFact.Get(env)
	r.mu.Lock()
	f := r.m[name]
	if f == nil {
		f = sync.OnceValue(func() NetdevAttrs { return readNetdev(r.h, name) })
		r.m[name] = f
	}
	r.mu.Unlock()
	return f()
}

func readNetdev(h *host.Host, name string) NetdevAttrs {
	dir := NetClassDir + "/" + name
	n := NetdevAttrs{Name: name, Dir: dir, SpeedMbps: -1}
	n.Operstate, n.OperstateErr = h.ReadString(dir + "/operstate")
	if s, err := h.ReadString(dir + "/mtu"); err != nil {
		n.MTUErr = err
	} else if v, err := strconv.Atoi(s); err == nil && v > 0 && v < 1<<20 {
		n.MTU = v
	} else {
		n.MTUErr = fmt.Errorf("%s/mtu: %q is not an MTU", dir, s)
	}
	if s, err := h.ReadString(dir + "/flags"); err != nil {
		n.FlagsErr = err
	} else if v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32); err == nil && strings.HasPrefix(s, "0x") {
		up := v&iffUp != 0
		n.AdminUp = &up
	} else {
		n.FlagsErr = fmt.Errorf("%s/flags: %q is not \"0x<hex>\"", dir, s)
	}
	if s, err := h.ReadString(dir + "/speed"); err != nil {
		n.SpeedErr = err
	} else {
		n.SpeedText = s
		if v, err := strconv.Atoi(s); err != nil {
			n.SpeedErr = fmt.Errorf("%s/speed: %q is not a speed", dir, s)
		} else if v > 0 {
			n.SpeedMbps = v
		}
	}
	return n
}

// Operational reports whether the netdev carries traffic: operstate "up", or "unknown" on an
// interface that is administratively up. A driver that never reports carrier changes (dummy,
// tun, netdevsim) leaves operstate at IF_OPER_UNKNOWN, which Documentation/networking/operstates.rst
// says "must be considered for user data".
func (n NetdevAttrs) Operational() bool {
	return n.Operstate == "up" || n.Operstate == "unknown" && n.AdminUp != nil && *n.AdminUp
}
