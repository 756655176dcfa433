package driver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.modules",
		Description: "RDMA module stack: ib_core, vendor core/RDMA pair, ib_uverbs, rdma_cm/rdma_ucm, ib_umad, states, taints",
		Fault:       "driver-module",
		Run:         runModules,
	})
}

// vendorPairs maps a core (PCI) driver to the module that registers its RDMA devices.
var vendorPairs = map[string]string{
	"mlx5_core": "mlx5_ib",
	"mlx4_core": "mlx4_ib",
	"bnxt_en":   "bnxt_re",
	"ice":       "irdma",
	"i40e":      "irdma",
	"qede":      "qedr",
	"qed":       "qedr",
}

func runModules(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	const src = procModules
	p := sharedPresence(env)
	mods := p.mods
	var out []engine.Finding
	if p.parseErr != nil {
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "file", Name: src}, Severity: report.Unknown,
			Summary: "part of /proc/modules could not be parsed: " + p.parseErr.Error()}})
	}
	inv := env.Inventory()
	// A module that is stuck or misses a dependency gets that finding instead of an OK "loaded":
	// the two side by side would contradict each other.
	deps := dependencyFindings(p, mods, src)
	broken := map[string]bool{}
	for _, f := range deps {
		broken[f.Subject.Name] = true
	}
	for name, m := range mods {
		if m.State != "Live" {
			broken[name] = true
		}
	}
	present := func(out []engine.Finding, name string) []engine.Finding {
		if broken[name] {
			return out
		}
		f, _ := p.presentFinding(name)
		return append(out, f)
	}
	out = append(out, p.listFindings()...)

	// The vendor pair: for every core driver bound to a PCI function, its RDMA module.
	cores := map[string]bool{}
	for name := range mods {
		if _, ok := vendorPairs[name]; ok {
			cores[name] = true
		}
	}
	for _, d := range inv.Devices {
		if d.PCI != nil && d.PCI.Driver != "" {
			if _, ok := vendorPairs[d.PCI.Driver]; ok {
				cores[d.PCI.Driver] = true
			}
		}
	}

	if !p.present("ib_core") {
		want := []string{"ib_core"}
		for _, core := range slices.Sorted(maps.Keys(cores)) {
			want = append(want, vendorPairs[core])
		}
		out = append(out, p.missing("ib_core", report.Critical,
			"no RDMA device can register, so every RDMA device is invisible (a driver problem, not a hardware fault)",
			p.loadFix(want, "modprobe ib_core, then the NIC's RDMA driver (modprobe mlx5_ib / irdma / bnxt_re / efa); if modprobe fails, "+
				"the modules are not installed for this kernel (Ubuntu: linux-modules-extra-$(uname -r)) or the kernel lacks CONFIG_INFINIBAND.")))
		return out, nil
	}
	out = present(out, "ib_core")

	for _, core := range slices.Sorted(maps.Keys(cores)) {
		ib := vendorPairs[core]
		if p.present(ib) {
			out = present(out, ib)
			continue
		}
		if core == "ice" || core == "i40e" || core == "qed" {
			// These Ethernet drivers are common on hosts that never use RDMA on them; without an
			// RDMA device expected there, a missing RDMA module is only worth a note.
			out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "module", Name: ib}, Severity: report.Info,
				Summary:  fmt.Sprintf("%s is %s without %s: its functions offer no RDMA (fine unless RDMA is expected on them)", core, p.state(core), ib),
				Evidence: p.checked(ib)}})
			continue
		}
		f := p.missing(ib, report.Critical, fmt.Sprintf("%s is %s, but its functions have no RDMA device", core, p.state(core)),
			p.loadFix([]string{ib}, fmt.Sprintf("modprobe %s; if it fails, read the kernel log (dmesg | grep %s): a firmware/driver mismatch or an 'Unknown symbol' (mixed in-box and OFED modules) keeps it from loading.", ib, ib)))
		if p.absent(ib) {
			f.Summary = fmt.Sprintf("%s is %s but %s is not: its functions have no RDMA device", core, p.state(core), ib)
		}
		f.Evidence = append(append(f.Evidence, report.Ev(core, p.state(core), src)), moduleLog(env, ib)...)
		out = append(out, f)
	}

	devs := len(inv.Devices) > 0
	if p.present("ib_uverbs") {
		out = present(out, "ib_uverbs")
	} else {
		sev := report.Warning
		why := "no user-space verbs once a device appears"
		if devs {
			sev, why = report.Critical, "the RDMA devices are visible to the kernel but no user-space program (libibverbs, NCCL, MPI, perftest) can open them"
		}
		f := p.missing("ib_uverbs", sev, why,
			p.loadFix([]string{"ib_uverbs"}, "modprobe ib_uverbs (rdma-core's udev rules and rdma-load-modules@.service load it at boot)."))
		f.Fault = "user-verbs"
		out = append(out, f)
	}
	// rdma_cm takes only devices with a port that has the IB or iWARP connection manager
	// (cma_supported in drivers/infiniband/core/cma.c, 6.12): InfiniBand, RoCE and iWARP ports,
	// whose link layer is InfiniBand or Ethernet. Where every device's ports are neither (EFA:
	// "Unknown", core_cap_flags 0), no librdmacm connection could use them anyway.
	cmUsable := !devs
	for _, d := range inv.Devices {
		for _, port := range d.Ports {
			cmUsable = cmUsable || port.LinkLayer == "InfiniBand" || port.LinkLayer == "Ethernet" || port.LinkLayer == ""
		}
	}
	for _, m := range []struct{ name, why string }{
		{"rdma_cm", "RDMA CM missing: librdmacm connections (RoCE, NVMe-oF, MPI/UCX over rdmacm) fail"},
		{"rdma_ucm", "user-space RDMA CM missing: /dev/infiniband/rdma_cm is absent, librdmacm programs fail"},
	} {
		if p.present(m.name) {
			out = present(out, m.name)
			continue
		}
		// A module like the others (driver-module row), but a missing connection manager breaks
		// connection setup only, which no check here observes: the fault table's observation
		// makes it explain nothing, so that it is never taken for the cause of device, uverbs or
		// port findings.
		sev, why := report.Warning, m.why
		if !cmUsable {
			sev, why = report.Info, "not needed by these devices: rdma_cm serves only InfiniBand, RoCE and iWARP ports, and none of their ports is one"
		}
		f := p.missing(m.name, sev, why, p.loadFix([]string{m.name}, "modprobe "+m.name))
		f.Observation = "connection-manager-missing"
		out = append(out, f)
	}
	ib := false
	for _, d := range inv.Devices {
		for _, port := range d.Ports {
			ib = ib || port.LinkLayer == "InfiniBand"
		}
	}
	if p.present("ib_umad") {
		out = present(out, "ib_umad")
	} else {
		sev, why := report.Info, "ibstat, perfquery and subnet tools cannot send MADs (not needed on RoCE-only hosts)"
		if ib {
			sev, why = report.Warning, "InfiniBand ports present but ibstat, perfquery, ibdiagnet and a local subnet manager cannot work"
		}
		out = append(out, p.missing("ib_umad", sev, why, p.loadFix([]string{"ib_umad"}, "modprobe ib_umad")))
	}

	// Stuck modules and taints, over the whole RDMA stack.
	mod := func(name string) report.Subject { return report.Subject{Kind: "module", Name: name} }
	for _, name := range slices.Sorted(maps.Keys(rdmaModules(mods))) {
		m := mods[name]
		if m.State != "Live" {
			// The state is "Loading" while the module's init runs and "Unloading" while its exit
			// runs (kernel/module/main.c); seen in a snapshot, the call has not returned, and
			// every later modprobe or rmmod of the stack waits behind it.
			why := "its init has not returned (often a firmware command that hangs during probe)"
			if m.State == "Unloading" {
				why = "its exit has not returned (a process still holding the device, or a firmware command that hangs during teardown)"
			}
			out = append(out, engine.Finding{Finding: report.Finding{Subject: mod(name), Severity: report.Critical,
				Summary:  fmt.Sprintf("%s is stuck in state %s: %s", name, m.State, why),
				Evidence: []report.Evidence{report.EvExp("state", m.State, "Live", src)},
				Remediation: "Look for hung-task and command-timeout messages in the kernel log and for processes holding the RDMA devices (lsof /dev/infiniband/*); " +
					"a module stuck this way cannot be reloaded, so the host needs a reboot.",
				Action: report.ActionRebootHost}})
		}
	}
	out = append(out, deps...)
	out = append(out, taintFindings(mods, src)...)
	if m, ok := mods["mlx5_core"]; ok {
		ver, verr := env.Host.ReadString("/sys/module/mlx5_core/version")
		ofed := mods.Has("mlx_compat") || (verr == nil && ver != "") || strings.Contains(m.Taints, "O")
		f := engine.Finding{Finding: report.Finding{Subject: mod("mlx5_core"), Severity: report.Info}}
		if ofed {
			f.Summary = fmt.Sprintf("mlx5 driver is MLNX_OFED/DOCA-OFED %s (out-of-tree)", orNone(ver))
		} else {
			rel := ""
			if facts, err := env.Host.Facts(); err == nil {
				rel = facts.KernelRelease
			}
			f.Summary = "mlx5 driver is the in-box kernel driver " + orNone(rel)
		}
		f.Evidence = []report.Evidence{report.Ev("version", orNone(ver), "/sys/module/mlx5_core/version"),
			report.Ev("taints", orNone(m.Taints), src), report.Ev("mlx_compat", fmt.Sprint(mods.Has("mlx_compat")), src)}
		out = append(out, f)
	}
	return out, nil
}

// rdmaModules picks the RDMA-related entries of /proc/modules.
func rdmaModules(mods kmod.Modules) map[string]bool {
	out := map[string]bool{}
	for name := range mods {
		for _, p := range []string{"ib_", "rdma_", "iw_cm", "mlx5", "mlx4", "irdma", "bnxt_re", "efa", "qedr", "hfi1", "siw", "mlx_compat"} {
			if strings.HasPrefix(name, p) {
				out[name] = true
			}
		}
	}
	return out
}

// needs lists what each RDMA module cannot work without (modules.dep of the in-box drivers:
// drivers/infiniband/*/Makefile and the lab guest's modules.dep, "rdma_rxe.ko: ib_uverbs.ko
// ib_core.ko ..."). The kernel refuses to load a module whose dependencies are missing, so seeing
// one loaded without them means a dependency is built in under another name, or modules from two
// driver stacks were loaded by hand (insmod).
var needs = map[string][]string{
	"ib_uverbs": {"ib_core"}, "ib_umad": {"ib_core"}, "ib_cm": {"ib_core"}, "iw_cm": {"ib_core"},
	"rdma_cm": {"ib_core", "ib_cm", "iw_cm"}, "rdma_ucm": {"rdma_cm", "ib_uverbs"},
	"mlx5_ib": {"mlx5_core", "ib_core"}, "mlx4_ib": {"mlx4_core", "ib_core"},
	"bnxt_re": {"bnxt_en", "ib_core"}, "irdma": {"ib_core"}, "efa": {"ib_core"}, "qedr": {"qed", "ib_core"},
	"rdma_rxe": {"ib_core"}, "siw": {"ib_core"},
}

func dependencyFindings(p *presence, mods kmod.Modules, src string) []engine.Finding {
	var out []engine.Finding
	for _, name := range slices.Sorted(maps.Keys(rdmaModules(mods))) {
		var missing []string
		for _, dep := range needs[name] {
			if !p.present(dep) {
				missing = append(missing, dep)
			}
		}
		if len(missing) == 0 {
			continue
		}
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "module", Name: name}, Severity: report.Critical,
			Summary: fmt.Sprintf("%s is loaded without %s, which it needs: the module stack is inconsistent", name, strings.Join(missing, ", ")),
			Evidence: []report.Evidence{report.Ev(name, "loaded", src),
				report.EvExp("missing dependencies", strings.Join(missing, ", "), "loaded", src)},
			Remediation: "Unload the RDMA modules and load them the normal way (modprobe -r " + name + "; modprobe " + name + "), so modprobe loads what they depend on; do not insmod modules from another driver stack."}})
	}
	return out
}

// taintFindings notes out-of-tree (O) and unsigned (E) RDMA modules, and warns when in-box and
// out-of-tree RDMA modules are loaded together: MLNX_OFED/DOCA-OFED replaces the whole stack (its
// mlnx-ofa_kernel package builds its own drivers/infiniband/core, i.e. ib_core, ib_uverbs and
// rdma_cm, next to mlx5_core and mlx5_ib), so a mixture means a half-installed or half-removed
// OFED, which is what makes "Unknown symbol" and "disagrees about version of symbol" load failures.
func taintFindings(mods kmod.Modules, src string) []engine.Finding {
	var oot, inbox []string
	for _, name := range slices.Sorted(maps.Keys(rdmaModules(mods))) {
		if strings.Contains(mods[name].Taints, "O") {
			oot = append(oot, name)
		} else {
			inbox = append(inbox, name)
		}
	}
	if len(oot) == 0 {
		return nil
	}
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "module", Name: "rdma stack"}, Severity: report.Info,
		Summary:  fmt.Sprintf("%d RDMA module(s) are out-of-tree (MLNX_OFED/DOCA-OFED): %s", len(oot), strings.Join(oot, ", ")),
		Evidence: []report.Evidence{report.Ev("out-of-tree", strings.Join(oot, ", "), src)}}}
	if len(inbox) > 0 {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("in-box and out-of-tree RDMA modules are mixed: %s in-box, %s out-of-tree: a half-installed driver stack", strings.Join(inbox, ", "), strings.Join(oot, ", "))
		f.Evidence = append(f.Evidence, report.EvExp("in-box", strings.Join(inbox, ", "), "none (one driver stack)", src))
		f.Remediation = "Reinstall MLNX_OFED/DOCA-OFED for the running kernel (or remove it completely to use the in-box stack), run depmod -a, and reboot."
		f.Action = report.ActionFixConfiguration // every module is loaded; the install is half done
	}
	return []engine.Finding{f}
}

// moduleLog returns the kernel log lines a module printed about itself ("mlx5_ib: ..."), at most
// five, so that a module that failed to load carries its reason.
func moduleLog(env *checks.Env, name string) []report.Evidence {
	klog, err := env.KernelLog()
	if err != nil {
		return []report.Evidence{checks.KernelLogNote(err)}
	}
	var out []report.Evidence
	for _, r := range klog.Records {
		if strings.HasPrefix(r.Text, name+": ") && len(out) < 5 {
			out = append(out, report.Ev(fmt.Sprintf("log %d", len(out)+1), klog.Quote(r), klog.Cite))
		}
	}
	if len(out) == 0 {
		out = append(out, report.Ev("kernel log", "no message from "+name+" (never tried to load)", klog.Cite))
	}
	return out
}
