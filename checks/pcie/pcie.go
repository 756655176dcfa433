// Package pcie holds the PCIe-layer checks: link training along the path to the root port, the
// bandwidth budget of the trained link against the ports it feeds, AER error counters, and the
// DMA path (netdev errors, IOMMU faults, DMA error signatures in the kernel log).
//
// Each check judges the PCI function behind an RDMA device. A VF has no link of its own, so its
// PF is judged. A software device (rxe, siw) has no PCI function, but the NIC it sits on has one:
// the checks judge the parent netdev's PCI function when there is one, because Soft-RoCE traffic
// crosses exactly that link (and it makes the lab's virtio scenarios meaningful), and skip the
// device otherwise.
package pcie

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "pcie.link",
		Description: "PCIe link training (speed, width) of each RDMA function and every bridge up to the root port",
		Fault:       "pcie-interface",
		Run:         runLink,
		KernelLog:   true,
	})
	checks.Register(checks.Check{
		ID: "pcie.bandwidth",
		Description: "Usable bandwidth of the trained PCIe path against the rate of the device's active ports " +
			"(the verbs loopback probe measures RDMA WRITE bandwidth against this budget)",
		Fault: "pcie-interface",
		Run:   runBandwidth,
	})
	checks.Register(checks.Check{
		ID:          "pcie.aer",
		Description: "PCIe AER error counters of each RDMA function and its upstream ports, and AER kernel log lines",
		Fault:       "pcie-interface",
		Run:         runAER,
		KernelLog:   true,
	})
	checks.Register(checks.Check{
		ID:          "pcie.dma",
		Description: "DMA path: bound netdev tx/rx errors, driver PCIe/DMA error counters (ethtool -S), IOMMU faults and DMA errors in the kernel log",
		Fault:       "dma-engine",
		Run:         runDMA,
		KernelLog:   true,
	})
}

// node is one PCI function on the path: the judged function first, then its bridges up to the
// root port.
type node struct {
	BDF string
	Dir string // resolved /sys/devices/... directory
}

// target is one PCI function judged on behalf of one or more RDMA devices.
type target struct {
	BDF     string
	Nodes   []node // Nodes[0] is the function itself
	Devices []*inventory.Device
	// Via says why this function stands for the device when it is not the device's own:
	// "PF of VF 0000:3b:00.2", "parent netdev eth0 of software device rxe0".
	Via []string
	// Netdevs are the netdevs bound to the devices (port GID netdevs, or the parent).
	Netdevs []string
}

// Device is the RDMA device name findings are tied to (the first one judged on this function).
func (t *target) Device() string { return t.Devices[0].Name }

func (t *target) subject() report.Subject {
	return report.Subject{Kind: "pci", Name: t.BDF, Device: t.Device(), PCI: t.BDF}
}

func (t *target) deviceNames() string {
	var n []string
	for _, d := range t.Devices {
		n = append(n, d.Name)
	}
	return strings.Join(n, ",")
}

// resolveTargets maps the inventory's devices onto the PCI functions to judge. Devices with no
// function to judge become Skipped findings; a device whose function cannot be resolved becomes
// an Unknown finding.
func resolveTargets(h *host.Host, inv *inventory.Inventory) ([]*target, []engine.Finding) {
	byBDF := map[string]*target{}
	var order []string
	var out []engine.Finding
	add := func(d *inventory.Device, dir, via string, netdevs []string) {
		bdf := path.Base(dir)
		t, ok := byBDF[bdf]
		if !ok {
			t = &target{BDF: bdf, Nodes: []node{{BDF: bdf, Dir: dir}}}
			for up := path.Dir(dir); inventory.BDFPattern.MatchString(path.Base(up)); up = path.Dir(up) {
				t.Nodes = append(t.Nodes, node{BDF: path.Base(up), Dir: up})
			}
			byBDF[bdf] = t
			order = append(order, bdf)
		}
		t.Devices = append(t.Devices, d)
		if via != "" {
			t.Via = append(t.Via, via)
		}
		for _, n := range netdevs {
			if !slices.Contains(t.Netdevs, n) {
				t.Netdevs = append(t.Netdevs, n)
			}
		}
	}
	for _, d := range inv.Devices {
		nds := deviceNetdevs(d)
		switch {
		case d.PCI != nil && d.PCI.IsVF():
			pf, err := h.Realpath(path.Join(d.PCI.SysPath, "physfn"))
			if err != nil {
				out = append(out, engine.Finding{Finding: report.Finding{
					Subject:  report.Subject{Kind: "pci", Name: d.PCI.BDF, Device: d.Name, PCI: d.PCI.BDF},
					Severity: report.Unknown,
					Summary:  fmt.Sprintf("%s is a VF (no link of its own) and its PF cannot be resolved: %v", d.Name, err),
				}})
				continue
			}
			add(d, pf, fmt.Sprintf("PF of VF %s (%s)", d.PCI.BDF, d.Name), nds)
		case d.PCI != nil:
			add(d, d.PCI.SysPath, "", nds)
		default:
			dir := ""
			if d.Parent != "" {
				dir = netdevPCI(h, d.Parent)
			}
			if dir == "" {
				out = append(out, engine.Finding{Finding: report.Finding{
					Subject:  report.Subject{Kind: "device", Name: d.Name, Device: d.Name},
					Severity: report.Skipped,
					Summary:  fmt.Sprintf("skipped: software device on netdev %s, which has no PCI function", orNone(d.Parent)),
					Evidence: []report.Evidence{report.Ev("parent netdev", orNone(d.Parent), inventory.ClassDir+"/"+d.Name+"/parent")},
				}})
				continue
			}
			add(d, dir, fmt.Sprintf("PCI function of netdev %s under software device %s", d.Parent, d.Name), nds)
		}
	}
	sort.Strings(order)
	ts := make([]*target, len(order))
	for i, b := range order {
		ts[i] = byBDF[b]
	}
	return ts, out
}

// targetsFact resolves the PCI functions once per run for the PCIe checks: finding a software
// device's function walks its netdev's real path, which each of six checks repeated.
var targetsFact = checks.NewFact("PCIe targets", func(env *checks.Env) resolved {
	ts, out := resolveTargets(env.Host, env.Inventory())
	return resolved{ts, out}
})

type resolved struct {
	ts  []*target
	out []engine.Finding
}

// sharedTargets returns the run's targets (read only) and a copy of the findings about devices
// that have none, for the caller to append to.
func sharedTargets(env *checks.Env) ([]*target, []engine.Finding) {
	r := targetsFact.Get(env)
	return r.ts, slices.Clone(r.out)
}

// netdevPCI returns the sysfs directory of the PCI function a netdev belongs to: the nearest
// PCI-named ancestor of its real directory. The netdev's own "device" link is not enough: a
// virtio NIC's points at the virtio device (…/0000:01:00.0/virtio0), as the lab's eth0 shows.
func netdevPCI(h *host.Host, netdev string) string {
	r, err := h.Realpath("/sys/class/net/" + netdev)
	if err != nil {
		return ""
	}
	for d := path.Dir(r); d != "/" && d != "." && strings.HasPrefix(d, "/sys/devices/"); d = path.Dir(d) {
		if inventory.BDFPattern.MatchString(path.Base(d)) {
			return d
		}
	}
	return ""
}

func deviceNetdevs(d *inventory.Device) []string {
	var out []string
	for _, p := range d.Ports {
		for _, n := range p.Netdevs {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	if d.Parent != "" && !slices.Contains(out, d.Parent) {
		out = append(out, d.Parent)
	}
	return out
}

// noDevices is the finding every PCIe check gives when there is nothing to judge; the driver
// layer explains why.
func noDevices(inv *inventory.Inventory) []engine.Finding {
	if len(inv.Devices) > 0 {
		return nil
	}
	return []engine.Finding{{Finding: report.Finding{
		Subject:  report.Subject{Kind: "host"},
		Severity: report.Skipped,
		Summary:  "skipped: no RDMA device to check (see driver.devices)",
	}}}
}

func viaEvidence(t *target) []report.Evidence {
	var ev []report.Evidence
	for _, v := range t.Via {
		ev = append(ev, report.Ev("judged as", v, t.Nodes[0].Dir))
	}
	return ev
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
