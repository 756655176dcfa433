package port

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// portRef is one port of one device with its sysfs directory.
type portRef struct {
	dev  *inventory.Device
	port *inventory.Port
	dir  string
}

func (p portRef) name() string { return fmt.Sprintf("%s/%d", p.dev.Name, p.port.Num) }

func (p portRef) subject() report.Subject {
	s := report.Subject{Kind: "port", Name: p.name(), Device: p.dev.Name}
	if p.dev.PCI != nil {
		s.PCI = p.dev.PCI.BDF
	}
	return s
}

func (p portRef) file(f string) string { return path.Join(p.dir, f) }

func (p portRef) ib() bool { return p.port.LinkLayer == "InfiniBand" }

// allPorts lists every port of every device, in inventory order.
func allPorts(inv *inventory.Inventory) []portRef {
	var out []portRef
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			out = append(out, portRef{dev: d, port: p, dir: fmt.Sprintf("%s/%s/ports/%d", inventory.ClassDir, d.Name, p.Num)})
		}
	}
	return out
}

// noPorts is the single finding a port check returns when there is nothing to check; the
// driver layer explains why there are no devices.
func noPorts(inv *inventory.Inventory) []engine.Finding {
	why := "no RDMA device is registered"
	if inv.Absent != nil {
		why = "no RDMA device is visible (" + inventory.ClassDir + " is missing)"
	} else if len(inv.Devices) > 0 {
		why = "the RDMA devices have no ports"
	}
	return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host"}, Severity: report.Skipped,
		Summary: "no port to check: " + why + " (see the driver layer)"}}}
}

// states reads state and phys_state now, through the inventory's parser; errors name the file.
func states(h *host.Host, p portRef) (st, phys inventory.PortState, err error) {
	if st, err = p.port.ReadState(h, p.dev.Name); err != nil {
		return st, phys, err
	}
	phys, err = p.port.ReadPhysState(h, p.dev.Name)
	return st, phys, err
}

// Port state numbers (enum ib_port_state) and physical state numbers (IBTA PortPhysicalState).
const (
	stateDown   = 1
	stateInit   = 2
	stateArmed  = 3
	stateActive = 4

	physSleep    = 1
	physPolling  = 2
	physDisabled = 3
	physLinkUp   = 5
)

// netdevInfo is what the port checks need of a bound netdev.
type netdevInfo struct {
	name      string
	operstate string
	mtu       int
	speedMbps int // -1 when the driver does not know (virtio, link down)
	// adminUp is IFF_UP from the flags file: whether someone brought the interface up. Nil when
	// the flags are unreadable. It tells "ip link set down" apart from a dead link, which
	// operstate alone does not (both read "down").
	adminUp *bool
	errs    []error
}

// iffUp is IFF_UP in include/uapi/linux/if.h; /sys/class/net/<dev>/flags prints the flags as
// "0x%x" (net/core/net-sysfs.c). Lab port-down: "ip link set eth0 down" left 0x1002.
const iffUp = 0x1

// netdevReads holds each netdev's attributes for the run: five checks show them for every RoCE
// port, and reading them once keeps the run close to what it must read.
type netdevReads struct {
	h  *host.Host
	mu sync.Mutex
	m  map[string]func() netdevInfo
}

var netdevFact = checks.NewFact("netdev attributes", func(env *checks.Env) *netdevReads {
	return &netdevReads{h: env.Host, m: map[string]func() netdevInfo{}}
})

// netdev returns a netdev's attributes as read once in this run.
func netdev(env *checks.Env, name string) netdevInfo {
	r := netdevFact.Get(env)
	r.mu.Lock()
	f := r.m[name]
	if f == nil {
		f = sync.OnceValue(func() netdevInfo { return readNetdev(r.h, name) })
		r.m[name] = f
	}
	r.mu.Unlock()
	return f()
}

func readNetdev(h *host.Host, name string) netdevInfo {
	n := netdevInfo{name: name, speedMbps: -1}
	dir := "/sys/class/net/" + name
	if s, err := h.ReadString(dir + "/operstate"); err == nil {
		n.operstate = s
	} else {
		n.errs = append(n.errs, err)
	}
	if s, err := h.ReadString(dir + "/mtu"); err == nil {
		if v, err := strconv.Atoi(s); err == nil && v > 0 && v < 1<<20 {
			n.mtu = v
		} else {
			n.errs = append(n.errs, fmt.Errorf("%s/mtu: %q is not an MTU", dir, s))
		}
	} else {
		n.errs = append(n.errs, err)
	}
	if s, err := h.ReadString(dir + "/flags"); err == nil {
		if v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32); err == nil && strings.HasPrefix(s, "0x") {
			up := v&iffUp != 0
			n.adminUp = &up
		}
	}
	// speed reads EINVAL while the link is down; that is "unknown", not an error.
	if s, err := h.ReadString(dir + "/speed"); err == nil {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			n.speedMbps = v
		}
	}
	return n
}

// gids returns the non-zero GID table entries with their type and netdev, as the run's
// inventory read them once for every check.
func gids(_ *host.Host, p portRef) ([]GID, error) {
	if p.port.GIDErr != nil {
		return nil, p.port.GIDErr
	}
	out := make([]GID, 0, len(p.port.GIDs))
	for _, g := range p.port.GIDs {
		out = append(out, GID{Index: g.Index, Addr: g.Addr, Type: g.Type, Netdev: g.Netdev})
	}
	return out, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func joinOr(ss []string, none string) string {
	if len(ss) == 0 {
		return none
	}
	return strings.Join(ss, ", ")
}
