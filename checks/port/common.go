package port

import (
	"fmt"
	"path"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
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

// attr reads one of the port's files that the run shares with the report's inventory (lid,
// sm_lid): once per run, the error naming the file.
func (p portRef) attr(h *host.Host, f string) (string, error) {
	return p.port.ReadAttr(h, p.dev.Name, f)
}

func (p portRef) ib() bool { return p.port.LinkLayer == "InfiniBand" }

// eth is a RoCE port. A port may be neither: link_layer_show (drivers/infiniband/core/sysfs.c)
// prints "Unknown" for a driver whose get_link_layer says IB_LINK_LAYER_UNSPECIFIED (efa).
func (p portRef) eth() bool { return p.port.LinkLayer == "Ethernet" }

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

// netdev returns a netdev's attributes as read once in this run (observe.Netdev).
func netdev(env *checks.Env, name string) observe.NetdevAttrs { return observe.Netdev(env, name) }

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

// groupsOf splits items by key ("" leaves an item out) and returns the groups of two or more,
// in the order their first items came: the identical ports a node's settings are compared over.
func groupsOf[T any](items []T, key func(T) string) [][]T {
	byKey := map[string][]T{}
	var order []string
	for _, it := range items {
		k := key(it)
		if k == "" {
			continue
		}
		if byKey[k] == nil {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], it)
	}
	var out [][]T
	for _, k := range order {
		if len(byKey[k]) > 1 {
			out = append(out, byKey[k])
		}
	}
	return out
}

// differsFromPeers adds to a port's finding that its settings differ from its identical peers':
// the evidence, a warning at least (with the configuration action), the reason in the summary
// and the fix after any it has.
func differsFromPeers(f *engine.Finding, p portRef, evName, why, evSource, fix string) {
	f.Evidence = append(f.Evidence, report.Ev(evName, why, evSource))
	if f.Severity < report.Warning {
		f.Severity = report.Warning
		f.Action = report.ActionFixConfiguration
		f.Summary = p.name() + ": " + why
	} else {
		f.Summary += "; " + why
	}
	if f.Remediation == "" {
		f.Remediation = fix
	} else {
		f.Remediation += " " + fix
	}
}
