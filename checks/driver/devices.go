// Package driver holds the driver-layer checks: RDMA device registration, kernel configuration,
// the module stack, user-space verbs and the kernel log.
package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.devices",
		Description: "RDMA devices registered with ib_core (/sys/class/infiniband) and what backs each",
		Fault:       "rdma-device",
		Run:         runDevices,
	})
}

// builtInDrivers names the options of the common RDMA NIC drivers, for a kernel that must have
// them built in (drivers/infiniband/hw/*/Kconfig).
const builtInDrivers = "CONFIG_MLX5_INFINIBAND=y for ConnectX, CONFIG_INFINIBAND_IRDMA=y for Intel E810/X722, " +
	"CONFIG_INFINIBAND_BNXT_RE=y for Broadcom, CONFIG_INFINIBAND_EFA=y for AWS EFA"

func runDevices(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	p := sharedPresence(env)
	if inv.Absent != nil {
		reason := inv.Absent.Error()
		if errors.Is(inv.Absent, fs.ErrNotExist) {
			reason = inventory.ClassDir + " does not exist: ib_core is not loaded or the kernel has no RDMA support"
		}
		return []engine.Finding{{Finding: report.Finding{
			Subject:     report.Subject{Kind: "host"},
			Severity:    report.Critical,
			Summary:     "no RDMA device: " + reason,
			Evidence:    []report.Evidence{report.EvExp("rdma devices", "none", "at least one", inventory.ClassDir)},
			Remediation: absentClassFix(p),
		}}}, nil
	}
	if len(inv.Devices) == 0 {
		return []engine.Finding{{Finding: report.Finding{
			Subject:     report.Subject{Kind: "host"},
			Severity:    report.Critical,
			Summary:     "no RDMA device registered: " + inventory.ClassDir + " is empty",
			Evidence:    []report.Evidence{report.EvExp("rdma devices", "none", "at least one", inventory.ClassDir)},
			Remediation: noDeviceFix(p),
		}}}, nil
	}
	var out []engine.Finding
	for _, d := range inv.Devices {
		f := engine.Finding{Finding: report.Finding{
			Subject:  report.Subject{Kind: "device", Name: d.Name, Device: d.Name},
			Severity: report.OK,
			Summary:  describe(d),
		}}
		f.Evidence = append(f.Evidence, report.Ev("node_type", d.NodeType, inventory.ClassDir+"/"+d.Name+"/node_type"))
		if d.PCI != nil {
			f.Subject.PCI = d.PCI.BDF
			f.Evidence = append(f.Evidence,
				report.Ev("pci function", d.PCI.BDF, d.PCI.SysPath),
				report.Ev("pci id", fmt.Sprintf("%04x:%04x", d.PCI.Vendor, d.PCI.DeviceID), d.PCI.SysPath+"/{vendor,device}"),
				report.Ev("driver", orNone(d.PCI.Driver), d.PCI.SysPath+"/driver"),
				report.Ev("numa node", fmt.Sprint(d.PCI.NUMANode), d.PCI.SysPath+"/numa_node"),
				report.Ev("upstream path", orNone(strings.Join(d.PCI.Path, " -> ")), d.PCI.SysPath))
			if d.PCI.IsVF() {
				f.Evidence = append(f.Evidence, report.Ev("physical function", d.PCI.PF, d.PCI.SysPath+"/physfn"))
			}
		} else {
			f.Evidence = append(f.Evidence, report.Ev("parent netdev", orNone(d.Parent), inventory.ClassDir+"/"+d.Name+"/parent"))
		}
		for _, p := range d.Ports {
			f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("port %d", p.Num),
				fmt.Sprintf("%s, netdev %s", orNone(p.LinkLayer), orNone(strings.Join(p.Netdevs, ","))),
				fmt.Sprintf("%s/%s/ports/%d", inventory.ClassDir, d.Name, p.Num)))
		}
		f.Evidence = append(f.Evidence, report.Ev("uverbs", orNone(d.UverbsDev), "/sys/class/infiniband_verbs"))
		if len(d.Errors) > 0 {
			f.Severity = report.Unknown
			f.Summary = fmt.Sprintf("%s: %d file(s) could not be read: %v", d.Name, len(d.Errors), d.Errors[0])
			for _, e := range d.Errors {
				f.Evidence = append(f.Evidence, report.Ev("read error", e.Error(), ""))
			}
		}
		out = append(out, f)
	}
	return out, nil
}

func describe(d *inventory.Device) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", d.Name, orNone(d.NodeType))
	if d.PCI != nil {
		fmt.Fprintf(&b, " on PCI %s (%s", d.PCI.BDF, orNone(d.PCI.Driver))
		if d.PCI.IsVF() {
			fmt.Fprintf(&b, ", VF of %s", d.PCI.PF)
		}
		b.WriteString(")")
	} else {
		fmt.Fprintf(&b, ", software device (%s) on netdev %s", orNone(d.Driver), orNone(d.Parent))
	}
	fmt.Fprintf(&b, ", %d port(s)", len(d.Ports))
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// absentClassFix is the fix when ib_core never registered its class.
func absentClassFix(p *presence) string {
	fix := p.loadFix([]string{"ib_core"}, "Load the RDMA core and the NIC's RDMA driver (modprobe ib_core; modprobe mlx5_ib, irdma, bnxt_re, efa... for the hardware present); "+
		"see the driver.modules and driver.kernel_config findings for why they are missing.")
	if p.noModules() {
		fix += " The NIC's RDMA driver must be built in too (" + builtInDrivers + ")."
	}
	return fix
}

// noDeviceFix is the fix when ib_core is there but no driver registered a device.
func noDeviceFix(p *presence) string {
	const logs = "read the kernel log for its probe errors (dmesg | grep -i -e mlx5 -e infiniband)"
	switch {
	case p.noModules():
		return "ib_core is there but no RDMA driver registered a device, and this kernel cannot load modules: if the NIC's RDMA driver is built in, " + logs +
			"; if not, boot a kernel that has it built in (" + builtInDrivers + ")."
	case p.container:
		return "ib_core is there but no RDMA driver registered a device: on the host, not in this container (a container cannot load kernel modules), " +
			"load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, efa, ...) and " + logs + "."
	}
	return "ib_core is loaded but no RDMA driver registered a device: load the NIC's RDMA driver (mlx5_ib, irdma, bnxt_re, efa, ...) and " + logs + "."
}
