package pcie

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/internal/relit"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID: "pcie.gpudirect",
		Description: "GPUDirect RDMA readiness when NVIDIA GPUs are present: a way to register GPU memory with the NIC " +
			"(nvidia-peermem, or dma-buf: kernel, open GPU driver and rdma-core new enough) and the IOMMU mode",
		Fault: "gpudirect",
		Run:   runGPUDirect,
	})
}

// Sources of the GPUDirect judgement, cited in evidence.
const (
	srcPeermem = "NVIDIA GPUDirect RDMA documentation, \"Using nvidia-peermem\" (CUDA Toolkit docs, gpudirect-rdma)"
	srcDmabuf  = "NVIDIA GPU Operator, \"GPUDirect RDMA and GPUDirect Storage\" (DMA-BUF recommended where supported); " +
		"kernel commit \"RDMA/umem: Support importing dma-buf as user memory region\" (Linux 5.12); rdma-core v34 " +
		"\"verbs: Support dma-buf based memory region\" (ibv_reg_dmabuf_mr, provider ABI rdmav34); NVIDIA driver " +
		"installation guide, \"Kernel Modules\" (open flavour from the 515 series)"
	srcIOMMU = "CUDA C++ Programming Guide, \"IOMMU on Linux\": peer-to-peer over PCIe is not supported with the IOMMU " +
		"translating; set iommu=pt or disable it"
)

func runGPUDirect(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	l := gpusFact.Get(env)
	if f := noGPU(env, l); f != nil {
		return f, nil
	}
	return []engine.Finding{registrationPath(env, l.gpus), iommuMode(env, l.gpus)}, nil
}

// cond is one requirement of the dma-buf path: met, not met, or unknown, with what was seen.
type cond struct {
	name, observed, want, source string
	met, known                   bool
}

func (c cond) state() string {
	switch {
	case !c.known:
		return "unknown"
	case c.met:
		return "met"
	}
	return "not met"
}

var (
	// nvidiaVersionRe reads /proc/driver/nvidia/version's first line: "NVRM version: NVIDIA UNIX
	// Open Kernel Module for x86_64  535.104.05  Release Build ..." for the open flavour,
	// "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  ..." for the proprietary one.
	nvidiaVersionRe = relit.MustCompile(`NVRM version: NVIDIA UNIX (Open Kernel Module for )?\S+(?: Kernel Module)?\s+(\d+)\.(\d+)`)
	releaseRe       = relit.MustCompile(`^(\d+)\.(\d+)`)
	providerRe      = relit.MustCompile(`-rdmav(\d+)\.so$`)
)

// nvidiaDriver is what the host says of the NVIDIA kernel module.
type nvidiaDriver struct {
	loaded bool
	major  int    // 535; 0 when unknown
	flavor string // "open", "proprietary" or ""
	ev     []report.Evidence
}

func readNVIDIADriver(h *host.Host, mods kmod.Modules) nvidiaDriver {
	d := nvidiaDriver{loaded: mods.Has("nvidia")}
	const procVersion = "/proc/driver/nvidia/version"
	if s, err := h.ReadString(procVersion); err == nil {
		if m := nvidiaVersionRe.FindStringSubmatch(s); m != nil {
			d.major, _ = strconv.Atoi(m[2])
			d.flavor = "proprietary"
			if m[1] != "" {
				d.flavor = "open"
			}
		}
		d.ev = append(d.ev, report.Ev("NVIDIA driver", firstLine(s), procVersion))
	}
	if d.major == 0 {
		if s, err := h.ReadString("/sys/module/nvidia/version"); err == nil {
			if m := releaseRe.FindStringSubmatch(s); m != nil {
				d.major, _ = strconv.Atoi(m[1])
			}
			d.ev = append(d.ev, report.Ev("nvidia module version", s, "/sys/module/nvidia/version"))
		}
	}
	if m, ok := mods["nvidia"]; ok && d.flavor == "" && m.Taints != "" {
		// The same taint letters, as /proc/modules lists them ("(POE)"): P is
		// TAINT_PROPRIETARY_MODULE (module_flags_taint, kernel/module/main.c), set for a module
		// whose licence is not GPL-compatible, as the proprietary driver's "NVIDIA" is; the open
		// modules ("Dual MIT/GPL") are out of tree (O) but never P.
		d.flavor = "open"
		if strings.Contains(m.Taints, "P") {
			d.flavor = "proprietary"
		}
		d.ev = append(d.ev, report.Ev("nvidia module taint", m.Taints, "/proc/modules (P = proprietary licence)"))
	}
	if d.flavor == "" {
		// A proprietary module taints the kernel with P (TAINT_PROPRIETARY_MODULE; the module's
		// taint file, kernel/module/main.c); the open modules are MIT/GPL and do not.
		if s, err := h.ReadString("/sys/module/nvidia/taint"); err == nil {
			d.flavor = "open"
			if strings.Contains(s, "P") {
				d.flavor = "proprietary"
			}
			d.ev = append(d.ev, report.Ev("nvidia module taint", orNone(s), "/sys/module/nvidia/taint (P = proprietary licence)"))
		}
	}
	return d
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

func registrationPath(env *checks.Env, gpus []gpu) engine.Finding {
	h := env.Host
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "gpudirect"}}}
	f.Evidence = append(f.Evidence, report.Ev("NVIDIA GPUs", gpuNames(gpus), pciDevices))
	mods, ok := loadedModules(env, &f)
	if !ok {
		return f
	}
	peer := ""
	for _, m := range []string{"nvidia_peermem", "nv_peer_mem"} {
		if mods.Has(m) {
			peer = m
			break
		}
	}
	f.Evidence = append(f.Evidence, report.EvExp("peer-memory module", orNone(peer), "nvidia_peermem (or the legacy nv_peer_mem) loaded, or the dma-buf path", "/proc/modules"))
	drv := readNVIDIADriver(h, mods)
	f.Evidence = append(f.Evidence, drv.ev...)
	conds := dmabufConds(h, drv)
	allMet, anyUnknown := true, false
	var missing []string
	for _, c := range conds {
		f.Evidence = append(f.Evidence, report.EvExp("dma-buf: "+c.name, c.observed+" ("+c.state()+")", c.want, c.source))
		allMet = allMet && c.met && c.known
		anyUnknown = anyUnknown || !c.known
		if c.known && !c.met {
			missing = append(missing, fmt.Sprintf("%s %s (found %s)", c.name, c.want, c.observed))
		}
	}
	switch {
	case !drv.loaded:
		f.Severity = report.Warning
		f.Summary = "GPUDirect RDMA: the NVIDIA GPU driver (nvidia) is not loaded, so no GPU memory can be registered with the NIC; " +
			"transfers from GPU memory are staged through host memory (NCCL falls back to copies, lower bandwidth and more latency)"
		f.Remediation = "Load the NVIDIA driver (modprobe nvidia, or the GPU Operator's driver container) and then nvidia-peermem, or use the dma-buf path (open kernel modules)."
	case peer != "":
		f.Severity = report.OK
		f.Summary = "GPUDirect RDMA: " + peer + " is loaded, so the NIC can register GPU memory (" + srcPeermem + ")"
	case allMet:
		f.Severity = report.OK
		f.Summary = "GPUDirect RDMA: no peer-memory module, but the dma-buf path is available (kernel, open NVIDIA driver and rdma-core new enough): " +
			"NCCL and UCX register GPU memory with ibv_reg_dmabuf_mr"
	case len(missing) == 0 && anyUnknown:
		f.Severity = report.Unknown
		f.Summary = "GPUDirect RDMA: no peer-memory module loaded, and whether the dma-buf path works cannot be told (a requirement is unknown)"
		f.Remediation = "Load nvidia-peermem (modprobe nvidia-peermem), or check the kernel, the NVIDIA driver flavour and rdma-core against the dma-buf requirements listed."
	default:
		f.Severity = report.Warning
		f.Summary = "GPUDirect RDMA: no way to register GPU memory with the NIC: nvidia_peermem is not loaded and the dma-buf path needs " +
			strings.Join(missing, ", ") + "; GPU buffers are staged through host memory (NCCL falls back to copies: lower bandwidth, more latency and CPU load)"
		f.Remediation = "Load the peer-memory module: modprobe nvidia-peermem (shipped with the NVIDIA driver since R470; with the GPU Operator, driver.rdma.enabled=true), " +
			"and make it load at boot; or meet the dma-buf requirements (Linux 5.12 or newer, the NVIDIA open kernel modules 515 or newer, rdma-core 34 or newer)."
	}
	f.Evidence = append(f.Evidence, report.Ev("sources", srcPeermem+"; "+srcDmabuf, ""))
	return f
}

// loadedModules takes the run's module list (observe.Modules). A list whose lines partly do not
// parse keeps its good lines and says so in the evidence; when a line that did not parse is one
// of the modules the judgement turns on, the finding is unknown instead: its absence from the
// parsed lines proves nothing. Where the source holds no /proc/modules (a copy of /sys and
// /proc), /sys/module/<name> shows each loaded module the judgement needs (module_add_kobject,
// kernel/module/sysfs.c; the nvidia modules are never built in). ok is false when f is the
// finding already (unknown).
func loadedModules(env *checks.Env, f *engine.Finding) (kmod.Modules, bool) {
	h := env.Host
	l := observe.Modules.Get(env)
	if err := l.ReadErr; err != nil && errors.Is(err, fs.ErrNotExist) && h.Lacks(host.PartModules) != nil {
		mods := kmod.Modules{}
		for _, m := range gpudirectModules {
			if h.Exists("/sys/module/" + m) {
				mods[m] = kmod.Module{Name: m, State: "Live"}
			}
		}
		f.Evidence = append(f.Evidence, report.Ev(observe.ModulesPath, "not in the source: modules read from /sys/module", "/sys/module/<name>"))
		return mods, true
	}
	if l.ReadErr != nil {
		f.Severity = report.Unknown
		f.Summary = "GPUDirect RDMA: the loaded modules cannot be read: " + l.ReadErr.Error()
		return nil, false
	}
	if l.ParseErr != nil {
		f.Evidence = append(f.Evidence, report.Ev(observe.ModulesPath, "partly unparsed: "+l.ParseErr.Error(), observe.ModulesPath))
		if names := l.Unparsed(gpudirectModules...); len(names) > 0 {
			f.Severity = report.Unknown
			f.Summary = "GPUDirect RDMA: whether " + strings.Join(names, ", ") + " is loaded cannot be told: its line in " +
				observe.ModulesPath + " is not in the kernel's format"
			return nil, false
		}
	}
	return l.Mods, true
}

// gpudirectModules are the modules whose presence the judgement turns on.
var gpudirectModules = []string{"nvidia", "nvidia_peermem", "nv_peer_mem"}

// dmabufConds lists the dma-buf path's requirements as this host meets them.
func dmabufConds(h *host.Host, drv nvidiaDriver) []cond {
	var out []cond
	// The kernel: ib_umem_dmabuf (drivers/infiniband/core/umem_dmabuf.c) came with Linux 5.12.
	kc := cond{name: "kernel", want: "5.12 or newer (ib_umem_dmabuf)", source: "/proc/sys/kernel/osrelease"}
	rel, err := h.ReadString("/proc/sys/kernel/osrelease")
	if err != nil {
		if facts, ferr := h.Facts(); ferr == nil && facts.KernelRelease != "" {
			rel, err = facts.KernelRelease, nil
		}
	}
	if err == nil {
		kc.observed = rel
		if m := releaseRe.FindStringSubmatch(rel); m != nil {
			maj, _ := strconv.Atoi(m[1])
			minor, _ := strconv.Atoi(m[2])
			kc.known, kc.met = true, maj > 5 || (maj == 5 && minor >= 12)
		}
	} else {
		kc.observed = "unreadable"
	}
	out = append(out, kc)
	// The GPU driver: only the open kernel modules export GPU memory as dma-buf (515 and later).
	gc := cond{name: "NVIDIA driver", want: "open kernel modules, 515 or newer", source: "/proc/driver/nvidia/version, /sys/module/nvidia/{version,taint}"}
	switch {
	case drv.flavor == "" && drv.major == 0:
		gc.observed = "version and flavour unknown"
	case drv.flavor == "":
		gc.observed = fmt.Sprintf("%d, flavour unknown", drv.major)
		gc.known, gc.met = drv.major < 515, false
	default:
		gc.observed = drv.flavor
		if drv.major > 0 {
			gc.observed = fmt.Sprintf("%d %s", drv.major, drv.flavor)
		}
		gc.known = drv.flavor == "proprietary" || drv.major > 0
		gc.met = drv.flavor == "open" && drv.major >= 515
	}
	out = append(out, gc)
	// rdma-core: ibv_reg_dmabuf_mr came with v34, which raised the provider ABI to 34; the ABI
	// number in the providers' file names (lib<name>-rdmav<N>.so) only grows, so N >= 34 means
	// rdma-core 34 or newer.
	rc := cond{name: "rdma-core", want: "34 or newer (ibv_reg_dmabuf_mr; providers lib*-rdmav34.so or later)", source: "facts: verbs provider libraries"}
	if facts, ferr := h.Facts(); ferr == nil {
		best := 0
		for _, l := range facts.Libraries {
			if m := providerRe.FindStringSubmatch(l.Name); m != nil && l.Path != "" {
				if n, err := strconv.Atoi(m[1]); err == nil && n > best {
					best = n
					rc.observed = l.Name
				}
			}
		}
		if best > 0 {
			rc.known, rc.met = true, best >= 34
		} else {
			rc.observed = "no verbs provider library found"
		}
	} else {
		rc.observed = "unknown"
	}
	out = append(out, rc)
	return out
}

// iommuMode judges the IOMMU on the path of GPU peer traffic. With the IOMMU translating, a
// NIC's peer writes to GPU memory go through translation (and, where ACS is enabled for
// isolation, up to the root complex); NVIDIA asks for passthrough or no IOMMU.
func iommuMode(env *checks.Env, gpus []gpu) engine.Finding {
	h := env.Host
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "iommu"}}}
	units, err := h.ReadDir("/sys/class/iommu")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.Severity = report.Unknown
		f.Summary = "IOMMU mode unknown: " + err.Error()
		return f
	}
	cmdline, _ := h.ReadString("/proc/cmdline")
	f.Evidence = append(f.Evidence, report.Ev("IOMMU units", joinNames(units), "/sys/class/iommu"),
		report.Ev("kernel command line", orNone(cmdline), "/proc/cmdline"))
	// The default domain type of each GPU's and NIC's IOMMU group says what the kernel did:
	// "identity" is passthrough, "DMA" and "DMA-FQ" translate (iommu_group type attribute,
	// drivers/iommu/iommu.c iommu_group_show_type).
	var translated, identity []string
	fns := map[string]string{}
	for _, g := range gpus {
		fns[g.BDF] = g.Dir
	}
	for _, d := range hardwareDevices(env.Inventory()) {
		fns[d.PCI.BDF] = d.PCI.SysPath
	}
	for _, bdf := range slices.Sorted(maps.Keys(fns)) {
		grp, err := h.Realpath(path.Join(fns[bdf], "iommu_group"))
		if err != nil {
			continue
		}
		t, err := h.ReadString(path.Join(grp, "type"))
		if err != nil {
			continue
		}
		f.Evidence = append(f.Evidence, report.Ev("IOMMU domain of "+bdf, t, path.Join(grp, "type")))
		if t == "identity" {
			identity = append(identity, bdf)
		} else {
			translated = append(translated, bdf+" ("+t+")")
		}
	}
	pt := cmdlineHas(cmdline, "iommu=pt") || cmdlineHas(cmdline, "iommu.passthrough=1")
	off := cmdlineHas(cmdline, "intel_iommu=off") || cmdlineHas(cmdline, "amd_iommu=off") || cmdlineHas(cmdline, "iommu=off")
	switch {
	case len(translated) > 0:
		f.Severity = report.Warning
		f.Summary = "the IOMMU translates DMA of " + strings.Join(translated, ", ") + ": GPUDirect RDMA peer traffic is translated " +
			"(and redirected to the root complex where ACS is on): lower bandwidth, or peer-to-peer not working at all"
	case len(identity) > 0:
		f.Severity = report.OK
		f.Summary = "the IOMMU is in passthrough (identity domains) for the GPUs and NICs: peer-to-peer DMA is not translated"
		return f
	case len(units) == 0 || off:
		f.Severity = report.OK
		f.Summary = "no IOMMU is active: peer-to-peer DMA is not translated"
		return f
	case pt:
		f.Severity = report.OK
		f.Summary = "the IOMMU is in passthrough (iommu=pt on the kernel command line)"
		return f
	default:
		f.Severity = report.Warning
		f.Summary = "an IOMMU is active (" + joinNames(units) + ") and the kernel command line does not ask for passthrough: " +
			"GPUDirect RDMA peer traffic may be translated or blocked (lower bandwidth, or peer-to-peer not working)"
	}
	f.Evidence = append(f.Evidence, report.Ev("source", srcIOMMU, ""))
	f.Remediation = "Put the IOMMU in passthrough: add iommu=pt to the kernel command line (GRUB_CMDLINE_LINUX), regenerate the boot configuration and reboot; " +
		"or disable it (intel_iommu=off / amd_iommu=off) where no VM needs device assignment."
	return f
}

func cmdlineHas(cmdline, arg string) bool {
	for _, a := range strings.Fields(cmdline) {
		if a == arg {
			return true
		}
	}
	return false
}

func joinNames(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
