package driver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
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

// builtin reports whether a module is built into the kernel: /sys/module/<name> exists but
// /proc/modules does not list it.
func builtin(h *host.Host, name string) bool {
	return h.Exists("/sys/module/" + name)
}

type modState struct {
	mods    kmod.Modules
	h       *host.Host
	builtin map[string]bool
}

func (m *modState) loaded(name string) bool {
	if m.mods.Has(name) {
		return true
	}
	if b, ok := m.builtin[name]; ok {
		return b
	}
	b := builtin(m.h, name) && !m.mods.Has(name)
	m.builtin[name] = b
	return b
}

func runModules(_ context.Context, env *checks.Env) ([]report.Finding, error) {
	const src = "/proc/modules"
	b, err := env.Host.ReadFile(src)
	noModules := errors.Is(err, fs.ErrNotExist)
	if err != nil && !noModules {
		return nil, err
	}
	// Without /proc/modules the kernel was built without loadable modules: everything it has is
	// built in and shows up under /sys/module only.
	mods, perr := kmod.ParseModules(b)
	st := &modState{mods: mods, h: env.Host, builtin: map[string]bool{}}
	var out []report.Finding
	if perr != nil {
		out = append(out, report.Finding{Subject: report.Subject{Kind: "file", Name: src}, Severity: report.Unknown,
			Summary: "part of /proc/modules could not be parsed: " + perr.Error()})
	}
	mod := func(name string) report.Subject { return report.Subject{Kind: "module", Name: name} }
	inv := env.Inventory()
	// A module that is stuck or misses a dependency gets that finding instead of an OK "loaded":
	// the two side by side would contradict each other.
	deps := dependencyFindings(st, mods, src)
	broken := map[string]bool{}
	for _, f := range deps {
		broken[f.Subject.Name] = true
	}
	for name, m := range mods {
		if m.State != "Live" {
			broken[name] = true
		}
	}
	present := func(out []report.Finding, name string, mods kmod.Modules, src string) []report.Finding {
		if broken[name] {
			return out
		}
		return append(out, okModule(name, mods, src))
	}
	if noModules {
		out = append(out, report.Finding{Subject: report.Subject{Kind: "file", Name: src}, Severity: report.Info,
			Summary:  "the kernel has no loadable-module support (no /proc/modules): only built-in drivers exist",
			Evidence: []report.Evidence{report.Ev(src, "absent", src)}})
	}

	if !st.loaded("ib_core") {
		out = append(out, report.Finding{
			Subject:  mod("ib_core"),
			Severity: report.Critical,
			Summary:  "ib_core is not loaded: no RDMA device can register, so every RDMA device is invisible (a driver problem, not a hardware fault)",
			Evidence: []report.Evidence{report.EvExp("ib_core", "absent", "loaded", src), report.EvExp("/sys/module/ib_core", "absent", "present", "/sys/module/ib_core")},
			Remediation: "modprobe ib_core, then the NIC's RDMA driver (modprobe mlx5_ib / irdma / bnxt_re / efa); if modprobe fails, " +
				"the modules are not installed for this kernel (Ubuntu: linux-modules-extra-$(uname -r)) or the kernel lacks CONFIG_INFINIBAND.",
		})
		return out, nil
	}
	out = present(out, "ib_core", mods, src)

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
	for _, core := range sortedKeys(cores) {
		ib := vendorPairs[core]
		if st.loaded(ib) {
			out = present(out, ib, mods, src)
			continue
		}
		if core == "ice" || core == "i40e" || core == "qed" {
			// These Ethernet drivers are common on hosts that never use RDMA on them; without an
			// RDMA device expected there, a missing RDMA module is only worth a note.
			out = append(out, report.Finding{Subject: mod(ib), Severity: report.Info,
				Summary:  fmt.Sprintf("%s is loaded without %s: its functions offer no RDMA (fine unless RDMA is expected on them)", core, ib),
				Evidence: []report.Evidence{report.EvExp(ib, "absent", "loaded if RDMA is used", src)}})
			continue
		}
		out = append(out, report.Finding{
			Subject:     mod(ib),
			Severity:    report.Critical,
			Summary:     fmt.Sprintf("%s is loaded but %s is not: its functions have no RDMA device", core, ib),
			Evidence:    append([]report.Evidence{report.EvExp(ib, "absent", "loaded", src), report.Ev(core, "loaded", src)}, moduleLog(env, ib)...),
			Remediation: fmt.Sprintf("modprobe %s; if it fails, read the kernel log (dmesg | grep %s): a firmware/driver mismatch or an 'Unknown symbol' (mixed in-box and OFED modules) keeps it from loading.", ib, ib),
		})
	}

	devs := len(inv.Devices) > 0
	if st.loaded("ib_uverbs") {
		out = present(out, "ib_uverbs", mods, src)
	} else {
		sev := report.Warning
		why := "no user-space verbs once a device appears"
		if devs {
			sev, why = report.Critical, "the RDMA devices are visible to the kernel but no user-space program (libibverbs, NCCL, MPI, perftest) can open them"
		}
		out = append(out, report.Finding{Subject: mod("ib_uverbs"), Severity: sev, Fault: "user-verbs",
			Summary:     "ib_uverbs is not loaded: " + why,
			Evidence:    []report.Evidence{report.EvExp("ib_uverbs", "absent", "loaded", src)},
			Remediation: "modprobe ib_uverbs (rdma-core's udev rules and rdma-load-modules@.service load it at boot)."})
	}
	for _, m := range []struct{ name, why string }{
		{"rdma_cm", "RDMA CM missing: librdmacm connections (RoCE, NVMe-oF, MPI/UCX over rdmacm) fail"},
		{"rdma_ucm", "user-space RDMA CM missing: /dev/infiniband/rdma_cm is absent, librdmacm programs fail"},
	} {
		if st.loaded(m.name) {
			out = present(out, m.name, mods, src)
			continue
		}
		// Filed under user-verbs: a missing connection manager breaks connection setup only; under
		// driver-module it would be taken for the cause of unrelated device and port findings
		// (lab no-uverbs: rdma_ucm missing was linked as the cause of the absent uverbs0).
		out = append(out, report.Finding{Subject: mod(m.name), Severity: report.Warning, Fault: "user-verbs",
			Summary:     m.name + " is not loaded: " + m.why,
			Evidence:    []report.Evidence{report.EvExp(m.name, "absent", "loaded", src)},
			Remediation: "modprobe " + m.name})
	}
	ib := false
	for _, d := range inv.Devices {
		for _, p := range d.Ports {
			ib = ib || p.LinkLayer == "InfiniBand"
		}
	}
	if st.loaded("ib_umad") {
		out = present(out, "ib_umad", mods, src)
	} else {
		sev, why := report.Info, "ibstat, perfquery and subnet tools cannot send MADs (not needed on RoCE-only hosts)"
		if ib {
			sev, why = report.Warning, "InfiniBand ports present but ibstat, perfquery, ibdiagnet and a local subnet manager cannot work"
		}
		out = append(out, report.Finding{Subject: mod("ib_umad"), Severity: sev,
			Summary: "ib_umad is not loaded: " + why, Evidence: []report.Evidence{report.EvExp("ib_umad", "absent", "loaded", src)},
			Remediation: "modprobe ib_umad"})
	}

	// Stuck modules and taints, over the whole RDMA stack.
	for _, name := range sortedKeys(rdmaModules(mods)) {
		m := mods[name]
		if m.State != "Live" {
			// The state is "Loading" while the module's init runs and "Unloading" while its exit
			// runs (kernel/module/main.c); seen in a snapshot, the call has not returned, and
			// every later modprobe or rmmod of the stack waits behind it.
			why := "its init has not returned (often a firmware command that hangs during probe)"
			if m.State == "Unloading" {
				why = "its exit has not returned (a process still holding the device, or a firmware command that hangs during teardown)"
			}
			out = append(out, report.Finding{Subject: mod(name), Severity: report.Critical,
				Summary:  fmt.Sprintf("%s is stuck in state %s: %s", name, m.State, why),
				Evidence: []report.Evidence{report.EvExp("state", m.State, "Live", src)},
				Remediation: "Look for hung-task and command-timeout messages in the kernel log and for processes holding the RDMA devices (lsof /dev/infiniband/*); " +
					"a module stuck this way cannot be reloaded, so the host needs a reboot."})
		}
	}
	out = append(out, deps...)
	out = append(out, taintFindings(mods, src)...)
	if m, ok := mods["mlx5_core"]; ok {
		ver, verr := env.Host.ReadString("/sys/module/mlx5_core/version")
		ofed := mods.Has("mlx_compat") || (verr == nil && ver != "") || strings.Contains(m.Taints, "O")
		f := report.Finding{Subject: mod("mlx5_core"), Severity: report.Info}
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

func okModule(name string, mods kmod.Modules, src string) report.Finding {
	m, listed := mods[name]
	obs := "built in"
	if listed {
		obs = m.State
		if len(m.UsedBy) > 0 {
			obs += ", used by " + strings.Join(m.UsedBy, ",")
		}
		if m.Taints != "" {
			obs += ", taints " + m.Taints
		}
	}
	return report.Finding{Subject: report.Subject{Kind: "module", Name: name}, Severity: report.OK,
		Summary: name + " loaded", Evidence: []report.Evidence{report.Ev(name, obs, src)}}
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

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
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

func dependencyFindings(st *modState, mods kmod.Modules, src string) []report.Finding {
	var out []report.Finding
	for _, name := range sortedKeys(rdmaModules(mods)) {
		var missing []string
		for _, dep := range needs[name] {
			if !st.loaded(dep) {
				missing = append(missing, dep)
			}
		}
		if len(missing) == 0 {
			continue
		}
		out = append(out, report.Finding{Subject: report.Subject{Kind: "module", Name: name}, Severity: report.Critical,
			Summary: fmt.Sprintf("%s is loaded without %s, which it needs: the module stack is inconsistent", name, strings.Join(missing, ", ")),
			Evidence: []report.Evidence{report.Ev(name, "loaded", src),
				report.EvExp("missing dependencies", strings.Join(missing, ", "), "loaded", src)},
			Remediation: "Unload the RDMA modules and load them the normal way (modprobe -r " + name + "; modprobe " + name + "), so modprobe loads what they depend on; do not insmod modules from another driver stack."})
	}
	return out
}

// taintFindings notes out-of-tree (O) and unsigned (E) RDMA modules, and warns when in-box and
// out-of-tree RDMA modules are loaded together: MLNX_OFED/DOCA-OFED replaces the whole stack
// (kernel-interfaces §5.3), so a mixture means a half-installed or half-removed OFED, which is
// what makes "Unknown symbol" and "disagrees about version of symbol" load failures.
func taintFindings(mods kmod.Modules, src string) []report.Finding {
	var oot, inbox []string
	for _, name := range sortedKeys(rdmaModules(mods)) {
		if strings.Contains(mods[name].Taints, "O") {
			oot = append(oot, name)
		} else {
			inbox = append(inbox, name)
		}
	}
	if len(oot) == 0 {
		return nil
	}
	f := report.Finding{Subject: report.Subject{Kind: "module", Name: "rdma stack"}, Severity: report.Info,
		Summary:  fmt.Sprintf("%d RDMA module(s) are out-of-tree (MLNX_OFED/DOCA-OFED): %s", len(oot), strings.Join(oot, ", ")),
		Evidence: []report.Evidence{report.Ev("out-of-tree", strings.Join(oot, ", "), src)}}
	if len(inbox) > 0 {
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("in-box and out-of-tree RDMA modules are mixed: %s in-box, %s out-of-tree: a half-installed driver stack", strings.Join(inbox, ", "), strings.Join(oot, ", "))
		f.Evidence = append(f.Evidence, report.EvExp("in-box", strings.Join(inbox, ", "), "none (one driver stack)", src))
		f.Remediation = "Reinstall MLNX_OFED/DOCA-OFED for the running kernel (or remove it completely to use the in-box stack), run depmod -a, and reboot."
	}
	return []report.Finding{f}
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
			out = append(out, report.Ev(fmt.Sprintf("log %d", len(out)+1), logLine(r), klog.Cite))
		}
	}
	if len(out) == 0 {
		out = append(out, report.Ev("kernel log", "no message from "+name+" (never tried to load)", klog.Cite))
	}
	return out
}
