package driver

import (
	"context"
	"fmt"
	"path"
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
		ID:          "driver.user_verbs",
		Description: "User-space verbs: /dev/infiniband/uverbsN present and openable, libibverbs and the driver's provider, RLIMIT_MEMLOCK",
		Fault:       "user-verbs",
		Run:         runUserVerbs,
	})
}

// providers maps the driver behind an RDMA device to its rdma-core provider: the name in
// /etc/libibverbs.d/<name>.driver and lib<name>-rdmav<ABI>.so (rdma-core providers/*/CMakeLists.txt).
var providers = map[string]string{
	"mlx5_core": "mlx5", "mlx4_core": "mlx4",
	"ice": "irdma", "i40e": "irdma", "irdma": "irdma",
	"bnxt_en": "bnxt_re", "efa": "efa", "qede": "qedr", "qed": "qedr",
	"hfi1": "hfi1verbs", "mana": "mana", "erdma": "erdma", "hns3": "hns",
	"vmw_pvrdma": "vmw_pvrdma", "cxgb4": "cxgb4", "be2net": "ocrdma",
	"rdma_rxe": "rxe", "siw": "siw",
}

// memlockMin is the locked-memory limit below which registering buffers fails for processes
// without CAP_IPC_LOCK: ib_umem_get() (drivers/infiniband/core/umem.c) refuses pinning beyond
// RLIMIT_MEMLOCK. 64 MiB is far below what NCCL or MPI register; rdma-core and NVIDIA recommend
// "unlimited" (rdma-core's /etc/security/limits.d/rdma.conf).
const memlockMin = 64 << 20

func runUserVerbs(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	if len(inv.Devices) == 0 {
		return []engine.Finding{{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "user verbs"}, Severity: report.Skipped,
			Summary: "no RDMA device, so no user-space verbs to check (see driver.devices)"}}}, nil
	}
	h := env.Host
	facts, ferr := h.Facts()
	var out []engine.Finding
	if ferr != nil {
		out = append(out, engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "user verbs"}, Severity: report.Unknown,
			Summary: "process facts (character devices, libraries, memlock) unavailable: " + ferr.Error()}})
	}
	p := sharedPresence(env)
	for _, d := range inv.Devices {
		out = append(out, charDevFinding(env, d, facts, p))
	}
	if facts != nil {
		out = append(out, libibverbsFinding(facts, h.Lacks(host.PartUsr)))
	}
	out = append(out, providerFindings(h, inv, facts)...)
	if facts != nil {
		out = append(out, memlockFinding(facts))
	}
	return out, nil
}

func charDevFinding(env *checks.Env, d *inventory.Device, facts *host.Facts, p *presence) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "chardev", Name: d.Name + " uverbs", Device: d.Name}}}
	if d.PCI != nil {
		f.Subject.PCI = d.PCI.BDF
	}
	uverbs, classDir := d.UverbsDev, "/sys/class/infiniband_verbs/"
	if uverbs == "" {
		// A capture may hold the device's own directory without the class's links: the uverbs
		// device ib_uverbs registered is a child of the RDMA device's parent (ib_uverbs_add_one).
		if n, dir := registeredUverbs(env, d); n != "" {
			uverbs, classDir = n, dir
		}
	}
	if uverbs == "" {
		if p.absent("ib_uverbs") {
			// driver.modules reports the missing module; this is its consequence.
			f.Severity = report.Skipped
			f.Summary = d.Name + ": no uverbs device because ib_uverbs is not loaded (see driver.modules)"
			return f
		}
		if nh := env.Host.Lacks(host.PartUverbs); nh != nil {
			f.Summary = d.Name + ": uverbs registration not judged: " + nh.Reason
			return f.SkippedBy(report.LimitSource, nh.Lift)
		}
		f.Severity = report.Critical
		f.Summary = d.Name + " has no uverbs character device registered (/sys/class/infiniband_verbs): user-space verbs cannot open it"
		f.Evidence = []report.Evidence{report.EvExp("uverbs", "none", "uverbsN with ibdev "+d.Name, "/sys/class/infiniband_verbs")}
		f.Remediation = p.loadFix([]string{"ib_uverbs"}, "Reload ib_uverbs (modprobe -r ib_uverbs; modprobe ib_uverbs) and read the kernel log for its errors.")
		if p.state("ib_uverbs") == "built in" {
			// A built-in module cannot be removed and loaded again.
			f.Remediation = "ib_uverbs is built into this kernel, so it cannot be reloaded: read the kernel log for its errors (dmesg | grep -i uverbs); " +
				"it adds a uverbs device each time an RDMA device registers (ib_uverbs_add_one, drivers/infiniband/core/uverbs_main.c), so registering " + d.Name + " again (unbinding and binding its driver, or a reboot) retries."
		}
		return f
	}
	node := "/dev/infiniband/" + uverbs
	sysdev := classDir + uverbs + "/dev"
	want, _ := env.Host.ReadString(sysdev)
	f.Evidence = []report.Evidence{report.Ev("uverbs", uverbs, classDir+uverbs+"/ibdev")}
	if facts == nil {
		f.Severity = report.Unknown
		f.Summary = node + ": whether it exists and opens is unknown (no process facts)"
		return f
	}
	var cd *host.CharDev
	for i := range facts.CharDevs {
		if facts.CharDevs[i].Path == node {
			cd = &facts.CharDevs[i]
		}
	}
	if cd == nil {
		if nh := env.Host.Lacks(host.PartDev); nh != nil {
			f.Summary = fmt.Sprintf("%s: whether %s exists and opens is not judged: %s; the kernel registered %s", d.Name, node, nh.Reason, uverbs)
			f.Evidence = append(f.Evidence, report.Ev(node, "not in the source", "/dev/infiniband"))
			return f.SkippedBy(report.LimitSource, nh.Lift)
		}
		f.Severity = report.Critical
		f.Evidence = append(f.Evidence, report.EvExp(node, "absent", "character device "+orNone(want), "/dev/infiniband"))
		if facts.InContainer {
			f.Summary = fmt.Sprintf("%s: %s is absent in this container although the host kernel registered %s: the container was started without the RDMA devices", d.Name, node, uverbs)
			f.Remediation = "This is what a container restriction looks like: pass the devices in (docker run --device=/dev/infiniband/" + uverbs +
				", or the Kubernetes RDMA shared device plugin / SR-IOV network operator resource)."
		} else {
			f.Summary = fmt.Sprintf("%s: %s is absent although the kernel registered %s: no user-space program can open the device", d.Name, node, uverbs)
			f.Remediation = "udev did not create the node or it was removed: run udevadm trigger --subsystem-match=infiniband_verbs (rdma-core's udev rules), or mknod " +
				node + " c " + strings.Replace(orNone(want), ":", " ", 1) + " and chmod 666."
		}
		return f
	}
	got := fmt.Sprintf("%d:%d", cd.Major, cd.Minor)
	f.Evidence = append(f.Evidence, report.EvExp(node, fmt.Sprintf("char %s, mode %s", got, cd.Mode), "char "+orNone(want), sysdev))
	switch {
	case want != "" && want != got:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: %s is device %s but the kernel's %s is %s: the node points at another device", d.Name, node, got, uverbs, want)
		f.Remediation = "Recreate the node: udevadm trigger --subsystem-match=infiniband_verbs (or in a container, pass the host's node again)."
	case cd.OpenError != "":
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s: %s cannot be opened read-write by uid %d: %s", d.Name, node, facts.EUID, cd.OpenError)
		f.Evidence = append(f.Evidence, report.EvExp("open", cd.OpenError, "ok", node))
		f.Remediation = "Fix the node's permissions (rdma-core installs it 0666) or the container's device cgroup rule (c 231:* rwm)."
	default:
		f.Severity = report.OK
		f.Summary = fmt.Sprintf("%s: %s present and opens read-write", d.Name, node)
	}
	return f
}

// registeredUverbs finds the uverbs device ib_uverbs registered for an RDMA device in the
// device's own directory: ib_uverbs_add_one (drivers/infiniband/core/uverbs_main.c) makes it a
// child of the RDMA device's parent, so it shows as <pci function>/infiniband_verbs/uverbsN even
// where a capture left /sys/class/infiniband_verbs out. It returns the name and the directory
// holding it ("" when there is none).
func registeredUverbs(env *checks.Env, d *inventory.Device) (string, string) {
	if d.PCI == nil || d.PCI.SysPath == "" {
		return "", ""
	}
	dir := path.Join(d.PCI.SysPath, "infiniband_verbs")
	names, err := env.Host.ReadDir(dir)
	if err != nil {
		return "", ""
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "uverbs") {
			continue
		}
		if ib, err := env.Host.ReadString(path.Join(dir, n, "ibdev")); err == nil && ib == d.Name {
			return n, dir + "/"
		}
	}
	return "", ""
}

func libibverbsFinding(facts *host.Facts, lack *host.NotHeld) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "library", Name: "libibverbs.so.1"}}}
	for _, l := range facts.Libraries {
		if l.Name == "libibverbs.so.1" && l.Path != "" {
			f.Severity = report.OK
			f.Summary = "libibverbs.so.1 found at " + l.Path
			f.Evidence = []report.Evidence{report.Ev("libibverbs.so.1", l.Path, "facts")}
			return f
		}
	}
	if lack != nil {
		f.Summary = "libibverbs.so.1 not looked for: " + lack.Reason
		f.Evidence = []report.Evidence{report.Ev("libibverbs.so.1", "not in the source", "the loader's library directories")}
		return f.SkippedBy(report.LimitSource, lack.Lift)
	}
	f.Severity = report.Critical
	f.Summary = "libibverbs.so.1 not found: no verbs program (NCCL, MPI, perftest, ibv_devinfo) can run"
	f.Evidence = []report.Evidence{report.EvExp("libibverbs.so.1", "not found", "in the loader's library directories", "facts")}
	f.Remediation = "Install rdma-core's libibverbs (Debian/Ubuntu: libibverbs1 ibverbs-providers; RHEL: libibverbs) or MLNX_OFED/DOCA user space."
	return f
}

func providerFindings(h *host.Host, inv *inventory.Inventory, facts *host.Facts) []engine.Finding {
	users := map[string][]string{}
	for _, d := range inv.Devices {
		if p, ok := providers[d.Driver]; ok {
			users[p] = append(users[p], d.Name)
		}
	}
	names := make([]string, 0, len(users))
	for p := range users {
		names = append(names, p)
	}
	sort.Strings(names)
	var out []engine.Finding
	for _, p := range names {
		f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "library", Name: "provider " + p}}}
		if len(users[p]) == 1 {
			f.Subject.Device = users[p][0]
		}
		cfg := "/etc/libibverbs.d/" + p + ".driver"
		cfgText, cfgErr := h.ReadString(cfg)
		lib := ""
		if facts != nil {
			for _, l := range facts.Libraries {
				if strings.HasPrefix(l.Name, "lib"+p+"-rdmav") && l.Path != "" {
					lib = l.Path
				}
			}
		}
		f.Evidence = []report.Evidence{
			report.EvExp(path.Base(cfg), orNone(cfgText), "driver "+p, cfg),
			report.EvExp("lib"+p+"-rdmav*.so", orNone(lib), "found", "facts"),
		}
		devs := strings.Join(users[p], ", ")
		// What the source does not hold is not judged: a copy of /sys and /proc has neither
		// the driver file nor the library, and says nothing about whether they are installed.
		var noCfg, noLib *host.NotHeld
		if cfgErr != nil {
			noCfg = h.Lacks(host.PartEtc)
		}
		if lib == "" {
			noLib = h.Lacks(host.PartUsr)
		}
		if (noCfg != nil || cfgErr == nil) && (noLib != nil || lib != "") && (noCfg != nil || noLib != nil) {
			var why []string
			lift := ""
			for _, nh := range []*host.NotHeld{noCfg, noLib} {
				if nh != nil {
					why = append(why, nh.Reason)
					lift = nh.Lift
				}
			}
			if noCfg != nil {
				f.Evidence[0] = report.Ev(path.Base(cfg), "not in the source", cfg)
			}
			if noLib != nil {
				f.Evidence[1] = report.Ev("lib"+p+"-rdmav*.so", "not in the source", "facts")
			}
			f.Summary = fmt.Sprintf("whether the %s verbs provider for %s is installed is not judged: %s", p, devs, strings.Join(why, "; "))
			out = append(out, f.SkippedBy(report.LimitSource, lift))
			continue
		}
		switch {
		case cfgErr != nil && lib == "" && facts != nil:
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("the %s verbs provider is not installed: libibverbs finds no device for %s", p, devs)
		case cfgErr != nil:
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("%s is missing: libibverbs does not load the %s provider, so %s stay invisible to verbs programs", cfg, p, devs)
		case facts == nil:
			f.Severity = report.Unknown
			f.Summary = fmt.Sprintf("%s present; whether lib%s-rdmav*.so is installed is unknown (no process facts)", cfg, p)
		case lib == "":
			f.Severity = report.Critical
			f.Summary = fmt.Sprintf("lib%s-rdmav*.so is missing: libibverbs cannot load the %s provider, so ibv_get_device_list() does not list %s", p, p, devs)
		default:
			f.Severity = report.OK
			f.Summary = fmt.Sprintf("verbs provider %s installed (%s) for %s", p, lib, devs)
		}
		if f.Severity == report.Critical {
			f.Remediation = "Install the providers (Debian/Ubuntu: ibverbs-providers; RHEL: libibverbs; or MLNX_OFED/DOCA user space) matching libibverbs' version."
		}
		out = append(out, f)
	}
	return out
}

func memlockFinding(facts *host.Facts) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "RLIMIT_MEMLOCK"}}}
	show := func(v uint64) string {
		if v == ^uint64(0) {
			return "unlimited"
		}
		return fmt.Sprintf("%d KiB", v>>10)
	}
	f.Evidence = []report.Evidence{report.EvExp("memlock soft", show(facts.MemlockSoft), "unlimited or at least 64 MiB", "facts"),
		report.Ev("memlock hard", show(facts.MemlockHard), "facts")}
	switch {
	case facts.MemlockSoft == ^uint64(0):
		f.Severity = report.OK
		f.Summary = "locked-memory limit is unlimited: memory registration is not limited"
	case facts.MemlockSoft >= memlockMin:
		f.Severity = report.OK
		f.Summary = "locked-memory limit is " + show(facts.MemlockSoft)
	default:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("locked-memory limit is %s: non-root verbs programs fail to register more than that (ibv_reg_mr ENOMEM)", show(facts.MemlockSoft))
		if facts.EUID == 0 {
			f.Summary += "; root is exempt (CAP_IPC_LOCK), jobs run as users are not"
		}
		f.Remediation = "Raise it for the job's processes: '* - memlock unlimited' in /etc/security/limits.d/, LimitMEMLOCK=infinity for systemd services, --ulimit memlock=-1 for containers."
	}
	return f
}
