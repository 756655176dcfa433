package driver

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.registration",
		Description: "Every RDMA-capable PCI function is bound to its driver and registered an RDMA device (else: probe failure, with its log lines)",
		Fault:       "rdma-device",
		Run:         runRegistration,
		KernelLog:   true,
	})
}

// rdmaFunction describes a PCI id whose functions are RDMA devices as soon as their driver stack
// is loaded. Only families where every function registers an RDMA device are listed; Ethernet
// controllers where RDMA is optional (Intel E810 with irdma, Broadcom with bnxt_re, QLogic with
// qedr) would make every host that does not use RDMA on them look broken.
type rdmaFunction struct {
	name string
	core string // the PCI driver
	rdma string // the module that registers the RDMA device
	vf   bool
}

// rdmaIDs: mlx5_core_pci_table (drivers/net/ethernet/mellanox/mlx5/core/main.c), mlx4
// (drivers/net/ethernet/mellanox/mlx4/main.c), efa_pci_tbl (drivers/infiniband/hw/efa/efa_main.c).
var rdmaIDs = map[[2]uint16]rdmaFunction{
	{0x15b3, 0x1011}: {name: "Connect-IB", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1012}: {name: "Connect-IB VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x1013}: {name: "ConnectX-4", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1014}: {name: "ConnectX-4 VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x1015}: {name: "ConnectX-4 Lx", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1016}: {name: "ConnectX-4 Lx VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x1017}: {name: "ConnectX-5", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1018}: {name: "ConnectX-5 VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x1019}: {name: "ConnectX-5 Ex", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x101a}: {name: "ConnectX-5 Ex VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x101b}: {name: "ConnectX-6", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x101c}: {name: "ConnectX-6 VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x101d}: {name: "ConnectX-6 Dx", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x101e}: {name: "ConnectX family VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0x101f}: {name: "ConnectX-6 Lx", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1021}: {name: "ConnectX-7", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1023}: {name: "ConnectX-8", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0xa2d2}: {name: "BlueField", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0xa2d3}: {name: "BlueField VF", core: "mlx5_core", rdma: "mlx5_ib", vf: true},
	{0x15b3, 0xa2d6}: {name: "BlueField-2", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0xa2dc}: {name: "BlueField-3", core: "mlx5_core", rdma: "mlx5_ib"},
	{0x15b3, 0x1003}: {name: "ConnectX-3", core: "mlx4_core", rdma: "mlx4_ib"},
	{0x15b3, 0x1004}: {name: "ConnectX-3 VF", core: "mlx4_core", rdma: "mlx4_ib", vf: true},
	{0x15b3, 0x1007}: {name: "ConnectX-3 Pro", core: "mlx4_core", rdma: "mlx4_ib"},
	{0x1d0f, 0xefa0}: {name: "EFA", core: "efa", rdma: "efa"},
	{0x1d0f, 0xefa1}: {name: "EFA", core: "efa", rdma: "efa"},
	{0x1d0f, 0xefa2}: {name: "EFA", core: "efa", rdma: "efa"},
	{0x1d0f, 0xefa3}: {name: "EFA", core: "efa", rdma: "efa"},
}

func readHex16(env *checks.Env, p string) (uint16, error) {
	s, err := env.Host.ReadString(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 16)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a 16-bit hex id", p, s)
	}
	return uint16(v), nil
}

func runRegistration(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	const bus = "/sys/bus/pci/devices"
	h := env.Host
	bdfs, err := h.ReadDir(bus)
	if err != nil {
		return nil, err
	}
	inv := env.Inventory()
	registered := map[string][]string{}
	for _, d := range inv.Devices {
		if d.PCI != nil {
			registered[d.PCI.BDF] = append(registered[d.PCI.BDF], d.Name)
		}
	}
	ke, logErr := env.KernelEvents()
	p := sharedPresence(env)
	var out []engine.Finding
	for _, bdf := range bdfs {
		dir := path.Join(bus, bdf)
		ven, err1 := readHex16(env, dir+"/vendor")
		dev, err2 := readHex16(env, dir+"/device")
		if err1 != nil || err2 != nil {
			continue // not every listed function was recorded in full; only RDMA-capable ones are
		}
		fn, ok := rdmaIDs[[2]uint16{ven, dev}]
		if !ok {
			continue
		}
		subj := report.Subject{Kind: "pci", Name: bdf, PCI: bdf}
		drv := ""
		if t, err := h.Readlink(dir + "/driver"); err == nil {
			drv = path.Base(t)
		}
		names := registered[bdf]
		if len(names) == 0 {
			// The inventory may not resolve a device whose class link is odd; the function's
			// own infiniband/ directory is the kernel's answer too.
			names, _ = h.ReadDir(dir + "/infiniband")
		}
		ev := []report.Evidence{
			report.Ev("pci id", fmt.Sprintf("%04x:%04x (%s)", ven, dev, fn.name), dir+"/{vendor,device}"),
			report.EvExp("driver", orNone(drv), fn.core, dir+"/driver"),
			report.EvExp("rdma device", orNone(strings.Join(names, ",")), "one registered by "+fn.rdma, dir+"/infiniband"),
		}
		f := engine.Finding{Finding: report.Finding{Subject: subj, Evidence: ev}}
		isVF := fn.vf || h.Exists(dir+"/physfn")
		switch {
		case len(names) > 0:
			f.Severity = report.OK
			f.Subject.Device = names[0]
			f.Summary = fmt.Sprintf("%s %s is bound to %s and registered %s", fn.name, bdf, orNone(drv), strings.Join(names, ","))
		case drv == "vfio-pci" || drv == "pci-stub":
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s %s is bound to %s: passed through to a VM or user-space driver, no RDMA device here by design", fn.name, bdf, drv)
		case drv == "" && isVF:
			f.Severity = report.Info
			f.Summary = fmt.Sprintf("%s %s is a virtual function bound to no driver (unused, or autoprobe disabled)", fn.name, bdf)
		case drv == "":
			f.Severity = report.Critical
			f.Fault = "driver-module"
			const probeFix = "The kernel log lines below give the probe error; a firmware/driver mismatch (command failures, cmdif revision) needs the matching firmware, a hung firmware a cold reset."
			switch {
			case p.absent(fn.core):
				f.Summary = fmt.Sprintf("%s %s is bound to no driver: %s is not loaded", fn.name, bdf, fn.core)
				f.Remediation = p.loadFix(uniq(fn.core, fn.rdma), fmt.Sprintf("modprobe %s (and %s); if it fails, the kernel log says why.", fn.core, fn.rdma))
			case p.present(fn.core):
				f.Summary = fmt.Sprintf("%s %s is bound to no driver although %s is %s: the driver's probe failed", fn.name, bdf, fn.core, p.state(fn.core))
				f.Remediation = probeFix
			default:
				// No module list in this capture and nothing else shows the driver: either cause fits.
				f.Summary = fmt.Sprintf("%s %s is bound to no driver: %s is not loaded or its probe failed (this capture has no module list to tell which)", fn.name, bdf, fn.core)
				f.Remediation = "If " + fn.core + " is not loaded, load it (modprobe " + fn.core + "); otherwise " + strings.ToLower(probeFix[:1]) + probeFix[1:]
			}
		default:
			f.Severity = report.Critical
			why := fmt.Sprintf("%s did not register one", fn.rdma)
			if p.absent("ib_core") {
				why = "ib_core is not loaded"
			} else if fn.rdma != fn.core && p.absent(fn.rdma) {
				why = fn.rdma + " is not loaded"
			}
			f.Summary = fmt.Sprintf("%s %s is bound to %s but has no RDMA device: %s", fn.name, bdf, drv, why)
			const causes = "(Unknown symbol: mixed in-box/OFED modules; command failures: firmware older than the driver needs)."
			var load []string
			for _, m := range uniq("ib_core", fn.rdma, "ib_uverbs") {
				if !p.present(m) {
					load = append(load, m)
				}
			}
			if len(load) == 0 {
				// Everything is there already (built in, or loaded): reloading cannot help, the
				// driver's own messages say why it registered nothing.
				f.Remediation = fmt.Sprintf("%s is %s but registered no RDMA device for %s: the kernel log lines below say why %s", fn.rdma, p.state(fn.rdma), bdf, causes)
			} else {
				f.Remediation = p.loadFix(load, fmt.Sprintf("Load the RDMA stack (modprobe %s); if %s does not load or registers nothing, the kernel log lines below say why %s",
					strings.Join(load, " "), fn.rdma, causes))
			}
		}
		if f.Severity == report.Critical {
			f.Evidence = append(f.Evidence, bdfLogEvidence(ke, logErr, bdf, fn)...)
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "pci"}, Severity: report.Skipped,
			Summary: "no PCI function of a family that always registers an RDMA device (ConnectX, EFA); software devices and optional-RDMA Ethernet NICs are judged by driver.modules and driver.devices"}})
	}
	return out, nil
}

// bdfLogEvidence quotes the kernel log events about one function (and its RDMA module's
// loader lines), at most eight, benign ones left out, so a ticket carries the probe failure's
// cause.
func bdfLogEvidence(ke *checks.KernelEvents, logErr error, bdf string, fn rdmaFunction) []report.Evidence {
	if logErr != nil {
		return []report.Evidence{checks.KernelLogNote(logErr)}
	}
	klog := ke.Log
	var lines []string
	for _, e := range ke.Events {
		if len(lines) >= 8 {
			break
		}
		about := e.PCI == bdf || e.Module != "" && (e.Module == fn.rdma || e.Module == fn.core)
		if about && (e.Sig == nil || !e.Sig.Benign && e.Sig.Kind != kevent.KindDump) {
			lines = append(lines, klog.Quote(e.Record))
		}
	}
	if len(lines) == 0 {
		return []report.Evidence{report.Ev("kernel log", "no error or warning for "+bdf, klog.Cite)}
	}
	out := make([]report.Evidence, len(lines))
	for i, l := range lines {
		out[i] = report.Ev(fmt.Sprintf("log %d", i+1), l, klog.Cite)
	}
	return out
}

// uniq drops repeated names, keeping the order (efa is its own PCI and RDMA driver).
func uniq(names ...string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
