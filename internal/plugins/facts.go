package plugins

import (
	"github.com/rdmadiag/rdmadiag/checks"
)

// FactsSchema is the version of the facts document a plugin reads on its standard input
// (RDMADIAG_FACTS_SCHEMA): a new optional field keeps it, a renamed or removed one bumps it.
const FactsSchema = 1

// Facts is what a plugin is told of the run, from what the run already read: where the host is
// and its RDMA devices and ports. Names follow the report's inventory (report.InventoryDevice).
type Facts struct {
	Schema int `json:"schema"`
	// Source is live, snapshot or root; Root is the directory standing for the host's / ("/"
	// live, the unpacked tree otherwise): a plugin reads the host's files under it.
	Source        string       `json:"source"`
	Root          string       `json:"root"`
	Hostname      string       `json:"hostname,omitempty"`
	KernelRelease string       `json:"kernel_release,omitempty"`
	Devices       []FactDevice `json:"devices"`
}

// FactDevice is one RDMA device the run judges (devices the operator excluded are left out).
type FactDevice struct {
	Name            string     `json:"name"`
	Driver          string     `json:"driver,omitempty"`
	PCI             string     `json:"pci,omitempty"`
	NodeGUID        string     `json:"node_guid,omitempty"`
	FirmwareVersion string     `json:"firmware_version,omitempty"`
	Ports           []FactPort `json:"ports"`
}

// FactPort is one port, its state and rate as the run first read them (the checks' reading).
type FactPort struct {
	Port      int      `json:"port"`
	LinkLayer string   `json:"link_layer,omitempty"`
	State     string   `json:"state,omitempty"`
	Rate      string   `json:"rate,omitempty"`
	Netdevs   []string `json:"netdevs"`
}

// factsOf builds the facts of a run.
func factsOf(env *checks.Env, source, root string) Facts {
	f := Facts{Schema: FactsSchema, Source: source, Root: root, Devices: []FactDevice{}}
	if hf, err := env.Host.Facts(); err == nil && hf != nil {
		f.Hostname, f.KernelRelease = hf.Hostname, hf.KernelRelease
	}
	for _, d := range env.Inventory().Devices {
		fd := FactDevice{Name: d.Name, Driver: d.Driver, NodeGUID: d.NodeGUID, FirmwareVersion: d.FWVer, Ports: []FactPort{}}
		if d.PCI != nil {
			fd.PCI = d.PCI.BDF
		}
		for _, shared := range d.Ports {
			p := *shared // a copy: the other checks read the shared port meanwhile
			p.ReadAttrs(env.Host, d.Name)
			fp := FactPort{Port: p.Num, LinkLayer: p.LinkLayer, State: p.State, Rate: p.Rate, Netdevs: p.Netdevs}
			if fp.Netdevs == nil {
				fp.Netdevs = []string{}
			}
			fd.Ports = append(fd.Ports, fp)
		}
		f.Devices = append(f.Devices, fd)
	}
	return f
}
