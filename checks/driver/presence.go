package driver

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// A module is judged missing only when nothing it provides is present. /proc/modules lists
// loadable modules only; a built-in one shows in /sys/module/<name> (param_sysfs_builtin and
// version_sysfs_builtin, kernel/params.c, create it for built-ins with parameters or a
// MODULE_VERSION), as =y in the kernel config, or through what it registered: its classes,
// character devices and RDMA devices.

const procModules = observe.ModulesPath

// listState says what /proc/modules told.
type listState int

const (
	// listRead: the module list was read.
	listRead listState = iota
	// listNoModules: no /proc/modules, and the kernel config has no module support.
	listNoModules
	// listAbsent: no /proc/modules and no config to say why. kernel/module/procfs.c
	// (proc_modules_init) is built only with CONFIG_MODULES (kernel/Makefile), so the kernel most
	// likely has no loadable-module support; a capture that left the file out looks the same.
	listAbsent
	// listNotCaptured: no /proc/modules although the config has module support: the capture
	// left it out.
	listNotCaptured
	// listUnreadable: /proc/modules exists but could not be read.
	listUnreadable
)

// presence holds, for one run, what shows which RDMA modules are in the running kernel, and
// how a missing one can be added on this host as observed. It is shared by the driver checks
// (sharedPresence) and only read after it is built.
type presence struct {
	env  *checks.Env
	mods kmod.Modules
	list listState
	// listErr is why /proc/modules could not be read (listUnreadable).
	listErr error
	// parseErr reports lines of /proc/modules that did not parse; the good ones are in mods.
	parseErr error
	cfg      kmod.Config
	cfgSrc   string
	// cfgErr is why no kernel config could be used (nil when cfg is set).
	cfgErr    error
	container bool
}

func sharedPresence(env *checks.Env) *presence { return presenceFact.Get(env) }

var presenceFact = checks.NewFact("module presence", newPresence)

func newPresence(env *checks.Env) *presence {
	p := &presence{env: env, mods: kmod.Modules{}}
	kc := observe.KernelConfig.Get(env)
	p.cfg, p.cfgSrc, p.cfgErr = kc.Config, kc.Source, kc.Err
	if f, err := env.Host.Facts(); err == nil {
		p.container = f.InContainer
	}
	l := observe.Modules.Get(env)
	switch err := l.ReadErr; {
	case err == nil:
		p.list = listRead
		p.mods, p.parseErr = l.Mods, l.ParseErr
	case !errors.Is(err, fs.ErrNotExist):
		p.list, p.listErr = listUnreadable, err
	case p.cfg != nil && !configModular(p.cfg):
		p.list = listNoModules
	case env.Host.Lacks(host.PartModules) != nil:
		// A capture without the list (a copy of /sys and /proc) says nothing of module support.
		p.list = listNotCaptured
	case p.cfg == nil:
		p.list = listAbsent
	case !configModular(p.cfg):
		p.list = listNoModules
	default:
		p.list = listNotCaptured
	}
	return p
}

// noModules reports whether this kernel, as observed, cannot load modules at all.
func (p *presence) noModules() bool { return p.list == listNoModules || p.list == listAbsent }

// proofKind orders the ways a module can be shown present, the most direct first.
type proofKind int

const (
	byList      proofKind = iota // a line in /proc/modules
	bySysModule                  // /sys/module/<name> without a line in /proc/modules
	byConfig                     // =y in the kernel config
	byWork                       // something only the module registers is there
)

// proof is one observation that puts a module's code in the running kernel.
type proof struct {
	kind proofKind
	// what is a phrase for the summary ("/sys/class/infiniband lists 3 device(s): ...").
	what string
	ev   report.Evidence
}

// kconfigOf lists the kernel options that build a module; it is built in when all of them are
// y. drivers/infiniband/core/Makefile: obj-$(CONFIG_INFINIBAND) += ib_core.o ib_cm.o iw_cm.o and
// rdma_cm.o when CONFIG_INFINIBAND_ADDR_TRANS (a bool); obj-$(CONFIG_INFINIBAND_USER_MAD) +=
// ib_umad.o; obj-$(CONFIG_INFINIBAND_USER_ACCESS) += ib_uverbs.o, and rdma_ucm.o when
// CONFIG_INFINIBAND_ADDR_TRANS (symbols in drivers/infiniband/Kconfig). Providers:
// drivers/infiniband/{hw,sw}/*/Kconfig; PCI drivers: drivers/net/ethernet/*/*/Kconfig.
var kconfigOf = map[string][]string{
	"ib_core": {"CONFIG_INFINIBAND"}, "ib_cm": {"CONFIG_INFINIBAND"}, "iw_cm": {"CONFIG_INFINIBAND"},
	"rdma_cm":   {"CONFIG_INFINIBAND", "CONFIG_INFINIBAND_ADDR_TRANS"},
	"ib_uverbs": {"CONFIG_INFINIBAND_USER_ACCESS"},
	"rdma_ucm":  {"CONFIG_INFINIBAND_USER_ACCESS", "CONFIG_INFINIBAND_ADDR_TRANS"},
	"ib_umad":   {"CONFIG_INFINIBAND_USER_MAD"},
	"mlx5_ib":   {"CONFIG_MLX5_INFINIBAND"}, "mlx4_ib": {"CONFIG_MLX4_INFINIBAND"},
	"bnxt_re": {"CONFIG_INFINIBAND_BNXT_RE"}, "irdma": {"CONFIG_INFINIBAND_IRDMA"},
	"qedr": {"CONFIG_INFINIBAND_QEDR"}, "efa": {"CONFIG_INFINIBAND_EFA"},
	"rdma_rxe": {"CONFIG_RDMA_RXE"}, "siw": {"CONFIG_RDMA_SIW"},
	"mlx5_core": {"CONFIG_MLX5_CORE"}, "mlx4_core": {"CONFIG_MLX4_CORE"}, "bnxt_en": {"CONFIG_BNXT"},
	"ice": {"CONFIG_ICE"}, "i40e": {"CONFIG_I40E"}, "qede": {"CONFIG_QEDE"}, "qed": {"CONFIG_QED"},
}

// built returns how the kernel config builds a module: "y", "m", "n" (some option not set), or
// "" when there is no config or the module's options are not known.
func (p *presence) built(name string) string {
	syms := kconfigOf[name]
	if p.cfg == nil || len(syms) == 0 {
		return ""
	}
	out := "y"
	for _, s := range syms {
		switch p.cfg.State(s) {
		case "y":
		case "m":
			out = "m"
		default:
			return "n"
		}
	}
	return out
}

// proofs returns what shows the module is in the running kernel, the most direct first; none
// means nothing does.
func (p *presence) proofs(name string) []proof {
	var out []proof
	h := p.env.Host
	if m, ok := p.mods[name]; ok {
		// The list is the kernel's own word: nothing else needs asking.
		return []proof{{kind: byList, what: "listed in " + procModules, ev: report.Ev(name, listedState(m), procModules)}}
	}
	if sm := "/sys/module/" + name; h.Exists(sm) {
		out = append(out, proof{kind: bySysModule, what: sm + " exists",
			ev: report.Ev(sm, "present", sm+" (built-in modules: param_sysfs_builtin, kernel/params.c)")})
	}
	if p.built(name) == "y" {
		opts := strings.Join(kconfigOf[name], "=y, ") + "=y"
		out = append(out, proof{kind: byConfig, what: opts + " in " + p.cfgSrc, ev: report.Ev(strings.Join(kconfigOf[name], ", "), "y", p.cfgSrc)})
	}
	w, _ := p.work(name)
	return append(out, w...)
}

// present reports whether anything shows the module is in the running kernel.
func (p *presence) present(name string) bool { return len(p.proofs(name)) > 0 }

// absent reports whether the module is known to be missing: nothing shows it, and the module
// list was read or the kernel cannot load modules. A module list missing from a capture of a
// kernel that loads modules leaves it neither present nor absent.
func (p *presence) absent(name string) bool {
	return (p.list == listRead || p.noModules()) && !p.present(name)
}

func listedState(m kmod.Module) string {
	obs := m.State
	if len(m.UsedBy) > 0 {
		obs += ", used by " + strings.Join(m.UsedBy, ",")
	}
	if m.Taints != "" {
		obs += ", taints " + m.Taints
	}
	return obs
}

// Where a module's work shows, with the kernel code that puts it there.
const (
	srcIBClass     = inventory.ClassDir + " (class registered by ib_core_init, drivers/infiniband/core/device.c; devices by ib_register_device)"
	srcNetlink     = "netlink:RDMA_NLDEV_CMD_GET (NETLINK_RDMA socket created by rdma_nl_net_init, drivers/infiniband/core/netlink.c)"
	srcVerbsClass  = "/sys/class/infiniband_verbs (class registered by ib_uverbs_init, drivers/infiniband/core/uverbs_main.c)"
	srcVerbsNodes  = "/dev/infiniband/uverbs* (ib_uverbs_add_one, drivers/infiniband/core/uverbs_main.c)"
	srcVerbsDevs   = "<pci function>/infiniband_verbs/uverbsN (ib_uverbs_add_one, drivers/infiniband/core/uverbs_main.c: a child of the RDMA device's parent)"
	srcMadClass    = "/sys/class/infiniband_mad (class registered by ib_umad_init, drivers/infiniband/core/user_mad.c)"
	srcMadDevs     = "<pci function>/infiniband_mad/umadN (ib_umad_init_port, drivers/infiniband/core/user_mad.c: a child of the RDMA device's parent)"
	srcMadNodes    = "/dev/infiniband/umad*, issm* (ib_umad_add_one, drivers/infiniband/core/user_mad.c)"
	srcUcmNode     = "/dev/infiniband/rdma_cm (misc device ucma_misc registered by ucma_init, drivers/infiniband/core/ucma.c)"
	srcUcmMisc     = "/sys/class/misc/rdma_cm (ucma_init, drivers/infiniband/core/ucma.c)"
	srcPCIDrivers  = "/sys/bus/pci/drivers (pci_register_driver, drivers/pci/pci-driver.c)"
	srcProviderDev = inventory.ClassDir + "/<dev>/device/driver"
)

// work returns the proofs that the module's work is visibly done, and what was looked at
// without finding any.
func (p *presence) work(name string) ([]proof, []report.Evidence) {
	h, inv := p.env.Host, p.env.Inventory()
	var out []proof
	var checked []report.Evidence
	switch name {
	case "ib_core":
		if inv.Absent == nil {
			obs, what := "present, no device registered", inventory.ClassDir+" exists (ib_core registers that class when it starts)"
			if n := len(inv.Devices); n > 0 {
				names := strings.Join(inv.Names(), ", ")
				obs = fmt.Sprintf("%d device(s): %s", n, names)
				what = fmt.Sprintf("%s lists %d device(s) (%s)", inventory.ClassDir, n, names)
			}
			out = append(out, proof{kind: byWork, what: what, ev: report.Ev(inventory.ClassDir, obs, srcIBClass)})
		} else {
			checked = append(checked, report.EvExp(inventory.ClassDir, absence(inv.Absent), "present", srcIBClass))
		}
		if np, ev, asked := p.netlinkProof(); np != nil {
			out = append(out, *np)
		} else if asked {
			checked = append(checked, ev)
		}
	case "ib_uverbs":
		out, checked = p.classWork("/sys/class/infiniband_verbs", "uverbs", srcVerbsClass)
		if len(out) == 0 {
			out = p.deviceWork("infiniband_verbs", "uverbs", srcVerbsDevs)
		}
		out, checked = p.nodeWork(out, checked, "/dev/infiniband/uverbs*", srcVerbsNodes, "uverbs")
	case "ib_umad":
		out, checked = p.classWork("/sys/class/infiniband_mad", "umad", srcMadClass)
		if len(out) == 0 {
			out = p.deviceWork("infiniband_mad", "umad", srcMadDevs)
		}
		out, checked = p.nodeWork(out, checked, "/dev/infiniband/umad*", srcMadNodes, "umad", "issm")
	case "rdma_ucm":
		out, checked = p.nodeWork(nil, nil, "/dev/infiniband/rdma_cm", srcUcmNode, "rdma_cm")
		// Snapshots do not record /sys/class/misc, so only its presence says anything.
		if h.Exists("/sys/class/misc/rdma_cm") {
			out = append(out, proof{kind: byWork, what: "/sys/class/misc/rdma_cm exists", ev: report.Ev("/sys/class/misc/rdma_cm", "present", srcUcmMisc)})
		}
	case "rdma_cm":
		// rdma_cm registers nothing of its own outside configfs, but rdma_ucm calls into it
		// (ucma.c uses rdma_create_user_id and the other rdma_cm exports), so what rdma_ucm
		// registered shows rdma_cm is there too.
		ucm, ucmChecked := p.work("rdma_ucm")
		for _, u := range ucm {
			u.what = "rdma_ucm, which cannot run without it, is there (" + u.what + ")"
			out = append(out, u)
		}
		checked = ucmChecked
	}
	if prov := p.providerWork(name); len(prov) > 0 {
		out = append(out, prov...)
	} else if isProvider(name) {
		checked = append(checked, report.EvExp("RDMA devices of "+name, "none", "one per function it drives", srcProviderDev))
	}
	if bound := p.boundWork(name); len(bound) > 0 {
		out = append(out, bound...)
	}
	return out, checked
}

// classWork looks at a class directory a module registers at init: present (even empty), it
// proves the module; its entries named prefix* are the devices it added.
func (p *presence) classWork(dir, prefix, src string) ([]proof, []report.Evidence) {
	names, err := p.env.Host.ReadDir(dir)
	if err != nil {
		return nil, []report.Evidence{report.EvExp(dir, absence(err), "present", src)}
	}
	var devs []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			devs = append(devs, n)
		}
	}
	sort.Strings(devs)
	if len(devs) == 0 {
		return []proof{{kind: byWork, what: dir + " exists", ev: report.Ev(dir, "present, no device", src)}}, nil
	}
	return []proof{{kind: byWork, what: fmt.Sprintf("%s lists %s", dir, strings.Join(devs, ", ")), ev: report.Ev(dir, strings.Join(devs, ", "), src)}}, nil
}

// deviceWork looks for the devices a module registered under each RDMA device's PCI function
// (<function>/<class>/<prefix>N): a registered device proves the module that registers it, also
// in a capture that holds the function's directory but not the class's (evidence beats
// inference).
func (p *presence) deviceWork(class, prefix, src string) []proof {
	var found []string
	for _, d := range p.env.Inventory().Devices {
		if d.PCI == nil || d.PCI.SysPath == "" {
			continue
		}
		dir := path.Join(d.PCI.SysPath, class)
		names, err := p.env.Host.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, n := range names {
			if strings.HasPrefix(n, prefix) {
				found = append(found, path.Join(dir, n))
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	list := strings.Join(found, ", ")
	return []proof{{kind: byWork, what: "registered " + list, ev: report.Ev("registered devices", list, src)}}
}

// nodeWork looks for the /dev/infiniband nodes a module creates (names starting with one of the
// prefixes), as the process facts list them.
func (p *presence) nodeWork(out []proof, checked []report.Evidence, name, src string, prefixes ...string) ([]proof, []report.Evidence) {
	f, err := p.env.Host.Facts()
	if err != nil {
		return out, append(checked, report.Ev(name, "not known: "+err.Error(), src))
	}
	var nodes []string
	for _, cd := range f.CharDevs {
		n := path.Base(cd.Path)
		for _, pre := range prefixes {
			if strings.HasPrefix(n, pre) {
				nodes = append(nodes, n)
				break
			}
		}
	}
	if len(nodes) == 0 {
		if nh := p.env.Host.Lacks(host.PartDev); nh != nil {
			return out, append(checked, report.Ev(name, "not in the source: "+nh.Reason, src))
		}
		return out, append(checked, report.EvExp(name, "none", "present", src))
	}
	sort.Strings(nodes)
	list := strings.Join(nodes, ", ")
	return append(out, proof{kind: byWork, what: "/dev/infiniband has " + list, ev: report.Ev(name, list, src)}), checked
}

// netlinkProof asks RDMA netlink for its device list when sysfs and the module list cannot
// settle whether ib_core is there: only ib_core creates the NETLINK_RDMA socket. It is not asked
// on a live kernel that can load modules: there, opening the socket makes the kernel load
// ib_core (MODULE_ALIAS_NET_PF_PROTO in netlink.c), which would change the host it observes.
func (p *presence) netlinkProof() (*proof, report.Evidence, bool) {
	if p.list == listRead || (p.env.Host.AskingMayLoadModules() && !p.noModules()) {
		return nil, report.Evidence{}, false
	}
	devs, err := rdmares.Devices(p.env)
	if err != nil {
		obs := "no answer: " + err.Error()
		if rdmares.NotRecorded(err) {
			obs = "not recorded in this host view"
		}
		return nil, report.EvExp("RDMA netlink", obs, "an answer", srcNetlink), true
	}
	obs := fmt.Sprintf("answered, %d device(s)", len(devs))
	return &proof{kind: byWork, what: "RDMA netlink " + obs, ev: report.Ev("RDMA netlink", obs, srcNetlink)}, report.Evidence{}, true
}

// providerOf names the module that registers the RDMA devices of a PCI driver's functions; a
// driver that registers them itself (efa) or a software device's module (rdma_rxe, siw) maps to
// itself in the inventory's Driver.
func providerOf(pciDriver string) string {
	if ib, ok := vendorPairs[pciDriver]; ok {
		return ib
	}
	return pciDriver
}

func isProvider(name string) bool {
	for _, ib := range vendorPairs {
		if ib == name {
			return true
		}
	}
	return name == "efa" || name == "rdma_rxe" || name == "siw"
}

// providerWork: an RDMA device registered on a function that only this module registers
// devices for (mlx5_ib on mlx5_core functions, ib_register_device called from the provider).
func (p *presence) providerWork(name string) []proof {
	var devs, drivers []string
	seen := map[string]bool{}
	for _, d := range p.env.Inventory().Devices {
		drv := d.Driver
		if d.PCI != nil {
			drv = d.PCI.Driver
		}
		if drv == "" || providerOf(drv) != name {
			continue
		}
		devs = append(devs, d.Name)
		if !seen[drv] {
			seen[drv] = true
			drivers = append(drivers, drv)
		}
	}
	if len(devs) == 0 {
		return nil
	}
	on := "registered by " + name
	if drivers[0] != name {
		on = fmt.Sprintf("registered on %s functions (only %s registers RDMA devices there)", strings.Join(drivers, ", "), name)
	}
	list := strings.Join(devs, ", ")
	return []proof{{kind: byWork, what: list + " " + on, ev: report.Ev("RDMA devices", list+" "+on, srcProviderDev)}}
}

// boundWork: a PCI driver is there when a function is bound to it or it registered itself on
// the PCI bus.
func (p *presence) boundWork(name string) []proof {
	var out []proof
	var bdfs []string
	for _, d := range p.env.Inventory().Devices {
		if d.PCI != nil && d.PCI.Driver == name {
			bdfs = append(bdfs, d.PCI.BDF)
		}
	}
	if len(bdfs) > 0 {
		out = append(out, proof{kind: byWork, what: strings.Join(bdfs, ", ") + " bound to it",
			ev: report.Ev("bound functions", strings.Join(bdfs, ", "), "/sys/bus/pci/devices/<bdf>/driver")})
	}
	if len(bdfs) == 0 && p.env.Host.Exists("/sys/bus/pci/drivers/"+name) {
		out = append(out, proof{kind: byWork, what: "/sys/bus/pci/drivers/" + name + " exists",
			ev: report.Ev("/sys/bus/pci/drivers/"+name, "present", srcPCIDrivers)})
	}
	return out
}

func absence(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "absent"
	}
	return "unreadable: " + err.Error()
}

// presentFinding is the finding for a module shown present: ok when listed, built in by
// /sys/module or the config; info when only its work shows it, naming that work. ok is false
// when nothing shows the module.
func (p *presence) presentFinding(name string) (engine.Finding, bool) {
	ps := p.proofs(name)
	if len(ps) == 0 {
		return engine.Finding{}, false
	}
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "module", Name: name}, Severity: report.OK}}
	for _, pr := range ps {
		f.Evidence = append(f.Evidence, pr.ev)
	}
	if ps[0].kind == byList {
		f.Summary = name + " loaded"
		return f, true
	}
	var whats []string
	for _, pr := range ps {
		whats = append(whats, pr.what)
	}
	how := "built in"
	if p.list == listNotCaptured || p.list == listUnreadable {
		how = "present" // it may as well be a loaded module the list would show
	}
	f.Summary = fmt.Sprintf("%s is %s: %s", name, how, strings.Join(whats, "; "))
	if ps[0].kind == byWork {
		f.Severity = report.Info
		f.Evidence = append(f.Evidence, p.listEvidence(name))
	}
	return f, true
}

// state names how a present module is there, for summaries ("mlx5_core is loaded but ...").
func (p *presence) state(name string) string {
	ps := p.proofs(name)
	switch {
	case len(ps) == 0:
		return "absent"
	case ps[0].kind == byList:
		return "loaded"
	case p.list == listRead || p.noModules() || ps[0].kind == byConfig:
		return "built in"
	}
	return "present"
}

// listEvidence says what the module list showed for a module.
func (p *presence) listEvidence(name string) report.Evidence {
	switch p.list {
	case listRead:
		return report.EvExp(name, "absent", "loaded", procModules)
	case listUnreadable:
		return report.Ev(procModules, "unreadable: "+p.listErr.Error(), procModules)
	case listNoModules:
		return report.Ev(procModules, "absent: CONFIG_MODULES is not set in "+p.cfgSrc, procModules+" (proc_modules_init, kernel/module/procfs.c)")
	}
	return report.Ev(procModules, "absent", procModules+" (proc_modules_init, kernel/module/procfs.c)")
}

// missing is the finding for a module nothing shows present. sev and why are what its absence
// means; fix is how to get it on a kernel that can load it (see loadFix). When the module list
// could not be had on a kernel that loads modules, the finding says what was and was not
// checked instead of calling the module absent.
func (p *presence) missing(name string, sev report.Severity, why, fix string) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "module", Name: name}, Severity: sev, Remediation: fix}}
	f.Evidence = p.checked(name)
	switch p.list {
	case listRead:
		f.Summary = name + " is not loaded: " + why
	case listNoModules:
		f.Summary = name + " is not built into this kernel, which cannot load modules: " + why
		f.Action = report.ActionFixConfiguration // nothing to load: another kernel is needed
	case listAbsent:
		f.Summary = name + " is not in this kernel (no " + procModules + ", so no loadable-module support, and nothing " + name + " registers is present): " + why
		f.Action = report.ActionFixConfiguration
	case listNotCaptured:
		f.Summary = "whether " + name + " is loaded cannot be told: " + procModules + " is not in this capture and nothing " + name + " registers is in it either"
		f.Remediation = ""
		f = f.SkippedBy(report.LimitSource, "record the host with rdmadiag record, which captures "+procModules)
	case listUnreadable:
		f.Severity = report.Unknown
		f.Summary = "whether " + name + " is loaded is unknown: " + procModules + " could not be read and nothing " + name + " registers is present"
		f.Remediation = "Make " + procModules + " readable (it is world-readable on a normal kernel) and run again."
	}
	return f
}

// checked lists every source looked at for a module, for a finding that calls it missing.
func (p *presence) checked(name string) []report.Evidence {
	out := []report.Evidence{p.listEvidence(name)}
	sm := "/sys/module/" + name
	out = append(out, report.EvExp(sm, "absent", "present", sm+" (built-in modules: param_sysfs_builtin, kernel/params.c)"))
	if syms := kconfigOf[name]; len(syms) > 0 {
		if p.cfg == nil {
			out = append(out, report.Ev("kernel config", "not available: "+strings.TrimPrefix(p.cfgErr.Error(), fs.ErrNotExist.Error()+": "), "/proc/config.gz, /boot/config-<release>"))
		} else {
			for _, s := range syms {
				out = append(out, report.EvExp(s, orNotSet(p.cfg.State(s)), "y or m", p.cfgSrc))
			}
		}
	}
	_, looked := p.work(name)
	return append(out, looked...)
}

func orNotSet(v string) string {
	if v == "" {
		return "not set"
	}
	return v
}

// kconfigFor lists the options that build the given modules, in order, without repeats.
func kconfigFor(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		for _, s := range kconfigOf[n] {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// loadFix is how modules get into the running kernel on this host as observed. modprobe (the
// given text) is the fix only where it can work: a kernel with module support whose config, when
// known, builds them as modules, run outside a container.
func (p *presence) loadFix(names []string, modprobe string) string {
	syms := kconfigFor(names)
	if p.noModules() {
		return p.buildFix(syms, strings.Join(names, ", "))
	}
	var unset []string
	for _, n := range names {
		if p.built(n) == "n" {
			for _, s := range kconfigOf[n] {
				if p.cfg.State(s) == "" {
					unset = append(unset, s)
				}
			}
		}
	}
	if len(unset) > 0 {
		return fmt.Sprintf("This kernel was built without %s (%s), so there is no module to load: boot a kernel built with %s.",
			strings.Join(unset, ", "), p.cfgSrc, withValue(unset, "m"))
	}
	if p.container {
		return "On the host, not in this container (a container cannot load kernel modules): " + modprobe
	}
	return modprobe
}

// buildFix is the fix on a kernel without loadable-module support: only another kernel helps.
func (p *presence) buildFix(syms []string, what string) string {
	why := "no " + procModules
	if p.list == listNoModules {
		why = "CONFIG_MODULES is not set in " + p.cfgSrc
	}
	want := "a kernel that has " + what + " built in"
	if len(syms) > 0 {
		want = "a kernel built with " + withValue(syms, "y")
	}
	as := "it as a module"
	if strings.Contains(what, ",") {
		as = "them as modules"
	}
	fix := fmt.Sprintf("This kernel cannot load modules (%s), so %s cannot be added to it while it runs: boot %s, or a kernel with loadable-module support (CONFIG_MODULES=y) that builds %s.", why, what, want, as)
	if p.list == listAbsent {
		fix += " If the host does have " + procModules + " and this capture left it out, record it again with rdmadiag record."
	}
	return fix
}

// boolOptions cannot be m (drivers/infiniband/Kconfig: INFINIBAND_ADDR_TRANS is a bool).
var boolOptions = map[string]bool{"CONFIG_INFINIBAND_ADDR_TRANS": true}

// withValue writes options set to v ("m" or "y"); a bool option is always y.
func withValue(syms []string, v string) string {
	parts := make([]string, len(syms))
	for i, s := range syms {
		val := v
		if boolOptions[s] {
			val = "y"
		}
		parts[i] = s + "=" + val
	}
	return strings.Join(parts, " and ")
}

// listFindings says what the module list is worth on this host: nothing when it was read;
// otherwise whether the kernel cannot load modules at all or the list is only missing here, and
// what the module findings rest on instead.
func (p *presence) listFindings() []engine.Finding {
	subj := report.Subject{Kind: "file", Name: procModules}
	const instead = "modules are judged by /sys/module, the kernel config and what they registered"
	srcProc := procModules + " (proc_modules_init, kernel/module/procfs.c)"
	switch p.list {
	case listNoModules:
		return []engine.Finding{{Finding: report.Finding{Subject: subj, Severity: report.Info,
			Summary: "the kernel has no loadable-module support (CONFIG_MODULES is not set): only built-in drivers exist; " + instead,
			Evidence: []report.Evidence{report.Ev(procModules, "absent", srcProc),
				report.EvExp("CONFIG_MODULES", "not set", "y on a kernel that loads modules", p.cfgSrc)}}}}
	case listAbsent:
		return []engine.Finding{{Finding: report.Finding{Subject: subj, Severity: report.Info,
			Summary: "the kernel has no loadable-module support (no /proc/modules, which every kernel built with CONFIG_MODULES has): only built-in drivers exist; " + instead,
			Evidence: []report.Evidence{report.Ev(procModules, "absent", srcProc),
				report.Ev("kernel config", "not available: "+strings.TrimPrefix(p.cfgErr.Error(), fs.ErrNotExist.Error()+": "), "/proc/config.gz, /boot/config-<release>")}}}}
	case listNotCaptured:
		f := engine.Finding{Finding: report.Finding{Subject: subj,
			Summary:  "/proc/modules is not in this capture: " + instead + " only",
			Evidence: []report.Evidence{report.Ev(procModules, "not in the source", srcProc)}}}
		if p.cfg != nil {
			f.Summary = "/proc/modules is not in this capture although the kernel config has module support: " + instead + " only"
			f.Evidence = append(f.Evidence, report.Ev("module support", modularWhy(p.cfg), p.cfgSrc))
		}
		return []engine.Finding{f.SkippedBy(report.LimitSource, "record the host with rdmadiag record, which captures "+procModules)}
	case listUnreadable:
		return []engine.Finding{{Finding: report.Finding{Subject: subj, Severity: report.Unknown,
			Summary:  "/proc/modules could not be read: " + p.listErr.Error() + "; " + instead + " only",
			Evidence: []report.Evidence{report.Ev(procModules, "unreadable: "+p.listErr.Error(), procModules)}}}}
	}
	return nil
}

// modularWhy says what in a config shows module support.
func modularWhy(cfg kmod.Config) string {
	if v := cfg.State("CONFIG_MODULES"); v != "" {
		return "CONFIG_MODULES=" + v
	}
	return "options set to m, which need CONFIG_MODULES"
}
