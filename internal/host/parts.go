package host

import "strings"

// Part is a part of a machine that a capture may leave out. A copy of a host's /sys and /proc
// (a sosreport, a tarball taken for a support case) often holds no /usr, /etc, /dev or
// /proc/modules: what the capture does not hold says nothing about the host.
type Part string

// The parts checks ask about.
const (
	// PartUsr is the library directories where libibverbs and its providers live (/usr/lib*,
	// /lib*; see libDirs).
	PartUsr Part = "/usr"
	// PartEtc holds /etc/libibverbs.d, the providers' driver files.
	PartEtc Part = "/etc"
	// PartDev holds /dev/infiniband, the character device nodes.
	PartDev Part = "/dev"
	// PartModules is the kernel's module list.
	PartModules Part = "/proc/modules"
	// PartInterrupts is the interrupt table the vector checks count.
	PartInterrupts Part = "/proc/interrupts"
	// PartOSRelease is the running kernel's release, which names the in-box driver.
	PartOSRelease Part = "/proc/sys/kernel/osrelease"
	// PartUverbs is the uverbs class ib_uverbs registers a character device in per RDMA device.
	PartUverbs Part = "/sys/class/infiniband_verbs"
	// PartPCIeLink is the PCIe link attributes (current_link_speed and the others of
	// drivers/pci/pci-sysfs.c): a tree made of ibstat output holds none for any function.
	PartPCIeLink Part = "PCIe link attributes"
	// PartGIDs is the RoCE ports' GID tables (ports/N/gids): an excerpt of /sys may hold the
	// ports' state without them.
	PartGIDs Part = "GID tables"
	// PartNetdevs is /sys/class/net, where a RoCE port's netdev and its state are.
	PartNetdevs Part = "/sys/class/net"
	// PartPortRate is the ports' rate files: ibv_devinfo without -v prints no rate, so a tree
	// made of it has none, where the kernel always creates one (drivers/infiniband/core/sysfs.c).
	PartPortRate Part = "port rates"
)

// NotHeld says that a host's source does not hold a part: a limit of the source (report's
// LimitSource, "not in the source"), to be reported as a skip with Lift, never as a finding.
type NotHeld struct {
	Part Part
	// Reason says in one line what the source lacks; Lift how to have it judged.
	Reason, Lift string
}

func (e *NotHeld) Error() string { return e.Reason }

// Lacks says whether the host's source leaves out a part: nil when it holds it, or when its
// absence is the host's own (a live machine is all there is: a file it lacks is a fact about it,
// and so is one a recording of it lacked). A --root tree lacks what it has no directory or file
// for; a snapshot recorded from such a tree remembers what the tree lacked (Facts.SourceLacks).
func (h *Host) Lacks(p Part) *NotHeld {
	var lacks []Part
	switch h.kind {
	case KindRoot:
		lacks = h.treeLacks()
	case KindSnapshot:
		f, err := h.facts()
		if err != nil || f == nil {
			return nil
		}
		lacks = f.SourceLacks
	default:
		return nil
	}
	for _, l := range lacks {
		if l == p {
			return notHeld(p)
		}
	}
	return nil
}

// partReasons says what each part's absence keeps from being judged.
var partReasons = map[Part]string{
	PartUsr:        "the source holds no /usr or /lib (a copy of /sys and /proc): the verbs libraries cannot be looked for",
	PartEtc:        "the source holds no /etc: the verbs providers' driver files (/etc/libibverbs.d) cannot be looked for",
	PartDev:        "the source holds no /dev: the character device nodes cannot be looked for",
	PartModules:    "the source holds no /proc/modules: which modules are loaded cannot be read",
	PartInterrupts: "the source holds no /proc/interrupts: the interrupt vectors cannot be counted",
	PartOSRelease:  "the source holds no /proc/sys/kernel/osrelease: the running kernel, and so its in-box driver, is unknown",
	PartUverbs:     "the source holds no /sys/class/infiniband_verbs and no /proc/modules: whether ib_uverbs registered the devices cannot be told",
	PartPCIeLink:   "the source holds no PCIe link attributes (current_link_speed, current_link_width) for any PCI function",
	PartGIDs:       "the source holds no GID table for any RoCE port (ports/N/gids)",
	PartPortRate:   "the source holds no rate file for any port (ports/N/rate)",
	PartNetdevs:    "the source holds no /sys/class/net, so a RoCE port's netdev and its state are unknown",
}

func notHeld(p Part) *NotHeld {
	reason, ok := partReasons[p]
	if !ok {
		reason = "the source holds no " + string(p)
	}
	return &NotHeld{Part: p, Reason: reason,
		Lift: "judge the host itself, or record it with rdmadiag record, which keeps what the checks read"}
}

// treeLacks lists the parts a --root tree has nothing of. A library directory is looked for
// under every prefix libDirs uses, so a tree with only /lib64 holds the libraries' part.
func (h *Host) treeLacks() []Part {
	var out []Part
	libs := false
	for _, d := range libDirs {
		top := "/" + strings.SplitN(strings.TrimPrefix(d, "/"), "/", 2)[0]
		if h.Exists(top) {
			libs = true
			break
		}
	}
	if !libs {
		out = append(out, PartUsr)
	}
	for _, p := range []Part{PartEtc, PartDev, PartModules, PartInterrupts, PartOSRelease, PartNetdevs} {
		if !h.Exists(string(p)) {
			out = append(out, p)
		}
	}
	// Without the module list nothing else says whether ib_uverbs was loaded, so a tree
	// without the uverbs class is a tree that does not hold it.
	if !h.Exists(string(PartUverbs)) && !h.Exists(string(PartModules)) {
		out = append(out, PartUverbs)
	}
	if !h.treeHoldsAny("/sys/bus/pci/devices", "current_link_speed") {
		out = append(out, PartPCIeLink)
	}
	if !h.treeHoldsPortFile("gids") {
		out = append(out, PartGIDs)
	}
	if !h.treeHoldsPortFile("rate") {
		out = append(out, PartPortRate)
	}
	return out
}

// treeHoldsAny says whether some entry of dir holds the named file.
func (h *Host) treeHoldsAny(dir, name string) bool {
	ents, err := h.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if h.Exists(dir + "/" + e + "/" + name) {
			return true
		}
	}
	return false
}

// treeHoldsPortFile says whether some port of some RDMA device has the named entry; a tree
// without any RDMA device port holds nothing to miss.
func (h *Host) treeHoldsPortFile(name string) bool {
	devs, err := h.ReadDir("/sys/class/infiniband")
	if err != nil {
		return true
	}
	for _, d := range devs {
		ports, _ := h.ReadDir("/sys/class/infiniband/" + d + "/ports")
		for _, p := range ports {
			if h.Exists("/sys/class/infiniband/" + d + "/ports/" + p + "/" + name) {
				return true
			}
		}
	}
	return false
}
