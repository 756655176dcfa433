package main

import (
	"fmt"

	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/inventory"
	"github.com/rdmadiag/rdmadiag/report"
)

// reportInventory turns the run's shared inventory into the report's typed inventory section,
// reading the ports' error counters (which the inventory leaves to whoever asks) through h.
func reportInventory(h *host.Host, inv *inventory.Inventory) *report.Inventory {
	out := &report.Inventory{Devices: []report.InventoryDevice{}}
	for _, d := range inv.Devices {
		rd := report.InventoryDevice{Name: d.Name, NodeType: d.NodeType, HCAType: d.HCAType, FirmwareVersion: d.FWVer,
			BoardID: d.BoardID, Driver: d.Driver, DriverVersion: d.DriverVersion, NodeGUID: d.NodeGUID, Parent: d.Parent,
			Ports: []report.InventoryPort{}}
		if p := d.PCI; p != nil {
			rd.PCI, rd.PF = p.BDF, p.PF
			if p.Vendor != 0 {
				rd.VendorID = fmt.Sprintf("0x%04x", p.Vendor)
			}
			if p.DeviceID != 0 {
				rd.DeviceID = fmt.Sprintf("0x%04x", p.DeviceID)
			}
			n := p.NUMANode
			rd.NUMANode = &n
		}
		for _, p := range d.Ports {
			p.ReadAttrs(h, d.Name) // on the loop's copy: checks cut short may still read the shared one
			rp := report.InventoryPort{Port: p.Num, State: p.State, PhysState: p.PhysState, LinkLayer: p.LinkLayer,
				LID: p.LID, SMLID: p.SMLID, Netdevs: p.Netdevs, NetdevMTU: p.NetdevMTU,
				ErrorCounters: inventory.ErrorCounters(h, d, p)}
			if r, err := inventory.ParseRate(p.Rate); err == nil {
				g := r.Gbps
				rp.RateGbps, rp.Rate = &g, p.Rate
				if r.Width > 0 {
					rp.Width = fmt.Sprintf("%dX", r.Width)
				}
				rp.Speed = r.Speed
			} else if p.Rate != "" {
				rp.Rate = p.Rate // kept as printed; the port checks say what is wrong with it
			}
			rd.Ports = append(rd.Ports, rp)
		}
		out.Devices = append(out.Devices, rd)
	}
	return out
}
