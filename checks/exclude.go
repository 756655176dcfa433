package checks

import (
	"github.com/rdmadiag/rdmadiag/internal/devsel"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// apply leaves the excluded devices out of the inventory every check reads, so that no check
// judges them and no comparison (identical cards, topology counts) counts them; each is kept
// in Excluded with the rule that matched, for the report.
func applySelection(s *devsel.Selector, inv *inventory.Inventory) *inventory.Inventory {
	if s.Empty() || inv == nil {
		return inv
	}
	out := *inv
	out.Devices = nil
	for _, d := range inv.Devices {
		if r, ok := s.Excluded(deviceNames(d)...); ok {
			ex := inventory.Excluded{Name: d.Name, By: r.String()}
			if d.PCI != nil {
				ex.PCI = d.PCI.BDF
			}
			out.Excluded = append(out.Excluded, ex)
			continue
		}
		out.Devices = append(out.Devices, d)
	}
	return &out
}

// deviceNames are the names a rule may give a device by: its own, its PCI function's address,
// the netdev a software device sits on and its ports' netdevs.
func deviceNames(d *inventory.Device) []string {
	names := []string{d.Name, d.Parent}
	if d.PCI != nil {
		names = append(names, d.PCI.BDF)
	}
	for _, p := range d.Ports {
		names = append(names, p.Netdevs...)
	}
	return names
}

// dropExcluded removes the findings about an excluded device that checks reading other sources
// than the inventory (the kernel log, PCI functions, netlink dumps) still made: a finding whose
// subject is the device or its PCI function.
func (e *Env) dropExcluded(fs []engine.Finding) []engine.Finding {
	if e.Opts.Select.Empty() {
		return fs
	}
	ex := e.Inventory().Excluded
	if len(ex) == 0 {
		return fs
	}
	names := map[string]bool{}
	for _, x := range ex {
		names[x.Name] = true
		if x.PCI != "" {
			names[x.PCI] = true
		}
	}
	out := fs[:0:0]
	for _, f := range fs {
		if names[f.Subject.Device] || names[f.Subject.PCI] {
			continue
		}
		out = append(out, f)
	}
	return out
}
