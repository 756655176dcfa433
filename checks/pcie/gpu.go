package pcie

import (
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// gpu is one NVIDIA GPU function: PCI vendor 0x10de (NVIDIA Corporation in pci.ids) with class
// 0x0300 (VGA compatible controller) or 0x0302 (3D controller, how data-centre GPUs such as the
// H100 present themselves), as /sys/bus/pci/devices/<bdf>/{vendor,class} show them.
type gpu struct {
	BDF  string
	Dir  string // resolved /sys/devices/... directory
	NUMA int    // -1 when the platform does not say
}

type gpuList struct {
	gpus []gpu
	err  error // the PCI device list could not be read
}

const pciDevices = "/sys/bus/pci/devices"

var gpusFact = checks.NewFact("NVIDIA GPUs", func(env *checks.Env) gpuList { return findGPUs(env.Host) })

// IsNVIDIAGPU says whether vendor and class files name an NVIDIA display or 3D controller.
func IsNVIDIAGPU(vendor, class string) bool {
	c := strings.ToLower(strings.TrimSpace(class))
	return strings.EqualFold(strings.TrimSpace(vendor), "0x10de") && (strings.HasPrefix(c, "0x0300") || strings.HasPrefix(c, "0x0302"))
}

func findGPUs(h *host.Host) gpuList {
	names, err := h.ReadDir(pciDevices)
	if err != nil {
		return gpuList{err: err}
	}
	var out gpuList
	for _, n := range names {
		dir := path.Join(pciDevices, n)
		v, err1 := h.ReadString(path.Join(dir, "vendor"))
		c, err2 := h.ReadString(path.Join(dir, "class"))
		if err1 != nil || err2 != nil || !IsNVIDIAGPU(v, c) {
			continue
		}
		real, err := h.Realpath(dir)
		if err != nil {
			continue
		}
		g := gpu{BDF: n, Dir: real, NUMA: -1}
		if s, err := h.ReadString(path.Join(dir, "numa_node")); err == nil {
			if v, err := strconv.Atoi(s); err == nil {
				g.NUMA = v
			}
		}
		out.gpus = append(out.gpus, g)
	}
	sort.Slice(out.gpus, func(i, j int) bool { return out.gpus[i].BDF < out.gpus[j].BDF })
	return out
}

// noGPU is the finding of a GPUDirect check on a host without an NVIDIA GPU, or without an RDMA
// device to pair with one: there is nothing to judge.
func noGPU(env *checks.Env, l gpuList) []engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "gpudirect"}, Severity: report.Skipped}}
	switch {
	case l.err != nil:
		f.Summary = "skipped: the PCI device list is unreadable, NVIDIA GPUs not looked for: " + l.err.Error()
	case len(l.gpus) == 0:
		f.Summary = "not applicable: no NVIDIA GPU (PCI vendor 0x10de, class 0x0300 or 0x0302) on this host"
		f.Evidence = []report.Evidence{report.Ev("NVIDIA GPUs", "none", pciDevices+"/*/{vendor,class}")}
	case len(hardwareDevices(env.Inventory())) == 0:
		f.Summary = "not applicable: no hardware RDMA device to pair with the NVIDIA GPUs"
	default:
		return nil
	}
	return []engine.Finding{f}
}

func hardwareDevices(inv *inventory.Inventory) []*inventory.Device {
	var out []*inventory.Device
	for _, d := range inv.Devices {
		if d.PCI != nil {
			out = append(out, d)
		}
	}
	return out
}

func gpuNames(gs []gpu) string {
	var s []string
	for _, g := range gs {
		s = append(s, g.BDF)
	}
	return strings.Join(s, ", ")
}

// commonAncestor returns the deepest PCI directory two functions share ("" when they sit under
// different root ports or host bridges) and the bridges of each below it, nearest first.
func commonAncestor(a, b string) (string, []string, []string) {
	ua, ub := bridges(a), bridges(b)
	for i, x := range ua {
		for j, y := range ub {
			if x == y {
				return x, ua[:i], ub[:j]
			}
		}
	}
	return "", ua, ub
}

// bridges lists the PCI directories above a function's directory, nearest first.
func bridges(dir string) []string {
	var out []string
	for d := path.Dir(dir); inventory.BDFPattern.MatchString(path.Base(d)); d = path.Dir(d) {
		out = append(out, d)
	}
	return out
}

// hostBridge is the /sys/devices/pciDDDD:BB directory a function hangs under.
func hostBridge(dir string) string {
	for d := dir; d != "/" && d != "."; d = path.Dir(d) {
		if strings.HasPrefix(path.Base(d), "pci") {
			return d
		}
	}
	return ""
}
