package sigscan

import (
	"regexp"
	"strings"
)

// SourceDriver is a driver as its sources are laid out: the table's driver name, the module its
// files build (KBUILD_MODNAME), the directories that hold them, and how its lines start for each
// kind of print (what the table's prefixes see).
type SourceDriver struct {
	Name   string
	Module string
	// Dirs are path prefixes of the tree; Files, when set, narrows a directory to the files
	// whose base name matches (mlx4_en's en_*.c beside mlx4_core in mlx4/).
	Dirs  []string
	Files *regexp.Regexp
	// Lead is how a line starts, by Print.Kind: dev_printk names the driver and the device,
	// netdev_printk the driver, bus id and netdev, ibdev_printk "infiniband <ibdev>: ".
	Lead map[string]string
}

const (
	pciLead = "0000:3b:00.0: "
	netLead = "0000:3b:00.0 ens1f0np0: "
)

// SourceDrivers are the drivers the scanner reads, in the order their paths are tried (a
// narrower one first).
var SourceDrivers = []*SourceDriver{
	{Name: "mlx5_core", Module: "mlx5_core", Dirs: []string{"drivers/net/ethernet/mellanox/mlx5/core/"},
		Lead: map[string]string{"dev": "mlx5_core " + pciLead, "net": "mlx5_core " + netLead, "ib": "infiniband mlx5_0: "}},
	{Name: "mlx5_ib", Module: "mlx5_ib", Dirs: []string{"drivers/infiniband/hw/mlx5/"},
		// mlx5_ib_err() prints on the ib_device: "infiniband mlx5_0: ".
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},
	{Name: "mlx4_en", Module: "mlx4_en", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"}, Files: regexp.MustCompile(`^(en_.*|mlx4_en\.h)$`),
		// en_print(): "mlx4_en: <netdev>: "; mlx4_err() in mlx4_en.h prints on the PCI function,
		// whose driver is mlx4_core.
		Lead: map[string]string{"en": "mlx4_en: eth2: ", "dev": "mlx4_core " + pciLead, "net": "mlx4_en " + netLead}},
	{Name: "mlx4_core", Module: "mlx4_core", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"},
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "net": "mlx4_core " + netLead}},
	{Name: "mlx4_ib", Module: "mlx4_ib", Dirs: []string{"drivers/infiniband/hw/mlx4/"},
		// mlx4_ib_warn() prints on the ib_device's parent, the PCI function.
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "ib": "infiniband mlx4_0: "}},
	{Name: "rdma_rxe", Module: "rdma_rxe", Dirs: []string{"drivers/infiniband/sw/rxe/"},
		Lead: map[string]string{"dev": "infiniband rxe0: ", "ib": "infiniband rxe0: "}},
	{Name: "ib_ipoib", Module: "ib_ipoib", Dirs: []string{"drivers/infiniband/ulp/ipoib/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "ib0: "}},
	// drivers/infiniband/core builds ib_core, ib_cm, iw_cm, rdma_cm, ib_umad and ib_uverbs; the
	// table keeps them under one driver.
	{Name: "ib_core", Module: "ib_core", Dirs: []string{"drivers/infiniband/core/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},
}

// DriverOf is the driver a file of the tree belongs to, nil for none.
func DriverOf(p string) *SourceDriver {
	base := p[strings.LastIndexByte(p, '/')+1:]
	for _, d := range SourceDrivers {
		for _, dir := range d.Dirs {
			if strings.HasPrefix(p, dir) && (d.Files == nil || d.Files.MatchString(base)) {
				return d
			}
		}
	}
	return nil
}

// A Rule gives a message the fault row it belongs to (the row fixes the layer). The first rule
// that matches wins; every field set must match: the driver, the file's path in the tree, the
// function, the format's text. Severity, when set, overrides the one the print's level gives.
type Rule struct {
	Why      string
	Drivers  []string
	Path     *regexp.Regexp
	Func     *regexp.Regexp
	Text     *regexp.Regexp
	Unless   *regexp.Regexp // the text must not match
	Fault    string
	Severity string
}

func (r *Rule) matches(driver, file, fn, text string) bool {
	return (len(r.Drivers) == 0 || contains(r.Drivers, driver)) &&
		(r.Path == nil || r.Path.MatchString(file)) &&
		(r.Func == nil || r.Func.MatchString(fn)) &&
		(r.Text == nil || r.Text.MatchString(text)) &&
		(r.Unless == nil || !r.Unless.MatchString(text))
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

var re = regexp.MustCompile

// verbsDrivers serve applications' verbs requests: what they refuse is the application's.
var verbsDrivers = []string{"mlx5_ib", "mlx4_ib", "rdma_rxe", "ib_core"}

// refusal is a message that refuses a request or reports a setting the device or kernel does
// not support, without a failure of its own: configuration, reported as information.
var refusal = re(`(?i)\bnot supported\b|\bunsupported\b|isn't supported|is not allowed|not allowed|\binvalid\b|out of range|too (large|big|small|many|long)|\bexceeds?\b|\bmust be\b|\bonly\b.*\bsupported\b|doesn't support|does not support|not possible|not enabled|\bis disabled\b|\bnot permitted\b|\bcan't be\b|\bcannot be\b`)

// failure words keep a message a fault even when it also refuses something.
var failure = re(`(?i)fail|error|\berr\b|timeout|timed out|unable|couldn't|could not|can't (create|alloc|get|set|query|find|register)`)

// Rules, in the order they are tried. The mlx5 split follows the driver's layout
// (drivers/net/ethernet/mellanox/mlx5/core): health.c, fw_reset.c and the command interface are
// the firmware's health, en_*.c and en/ the Ethernet data path, steering, eswitch, tc, IPsec,
// MACsec, kTLS, FPGA and SF the driver's offload functions; pci_irq.c is the driver's use of
// interrupt vectors, pagealloc.c the pages the firmware asks for.
var Rules = []Rule{
	// The PCIe path: the function's config space and link, as mlx5's health poll and probe
	// read them (health.c "PCI reads still not working", "PCI slot is unavailable").
	{Why: "PCIe link, slot or config space", Text: re(`(?i)PCI reads still not working|PCI slot is unavailable|\bPCIe\b|PCI Express|pcie_|\bPCI (capabilit|power|error|channel|link|bus)|pci_(enable|request|set_master|save|restore|reset|iomap|find_capability)|\bBARs?\b|\bDMA mask\b|dma_set_mask|consistent DMA|No usable DMA|Missing DCS|\bAER\b|bus master|config space`), Fault: "pcie-interface"},
	{Why: "DMA mapping between the adapter and host memory", Text: re(`(?i)dma[_ ]?map|DMA mapping|dma_alloc|\bIOMMU\b|mapping error|map_sg`), Fault: "dma-engine"},
	// The driver's use of host resources: interrupt vectors. The pages the firmware asks for
	// (pagealloc.c) are the firmware's: a failed give or reclaim is a MANAGE_PAGES command that
	// failed or timed out ("give fail -110"), as the hand-written pagealloc entries have it.
	{Why: "mlx5 interrupt vectors", Drivers: []string{"mlx5_core"}, Path: re(`/(pci_irq|irq_affinity)\.c$`), Fault: "driver-module"},
	{Why: "mlx5 pages given to the firmware", Drivers: []string{"mlx5_core"}, Path: re(`/pagealloc\.c$`), Unless: re(`(?i)dma`), Fault: "firmware"},
	// The firmware's health: the health poll, firmware reset and crash dump, the command
	// interface's timeouts and the catastrophic error flow.
	{Why: "mlx5 health, firmware reset, crash dump", Drivers: []string{"mlx5_core"}, Path: re(`/(health|fw_reset|diag/crdump|lib/tout)\.c$`), Fault: "firmware-health"},
	{Why: "mlx4 catastrophic error, reset and crash dump", Drivers: []string{"mlx4_core"}, Path: re(`/(catas|reset|crdump)\.c$`), Fault: "firmware-health"},
	{Why: "command interface timeouts and recovery", Path: re(`/cmd\.c$`), Text: re(`(?i)time ?out|timed out|health|syndrome|recover|polling|fatal|internal error|stuck`), Fault: "firmware-health"},
	{Why: "firmware commands, queries and versions", Drivers: []string{"mlx5_core"}, Path: re(`/(cmd|fw|diag/fw_tracer|diag/rsc_dump|diag/reporter_vnic|lib/pci_vsc|uar)\.c$`), Fault: "firmware"},
	{Why: "firmware commands, queries and versions", Drivers: []string{"mlx4_core"}, Path: re(`/(cmd|fw|fw_qos|port)\.c$`), Fault: "firmware"},
	{Why: "the firmware named by the message", Text: re(`(?i)\bfirmware\b|\bFW\b|\bfw[ _](ver|version|reset|tracer|dump|command)|\bISSI\b|\bINIT_HCA\b|\bQUERY_(FW|ADAPTER|HCA|DEV_CAP)\b|\bMAP_FA\b|\bRUN_FW\b|\bHCA cap`), Fault: "firmware"},
	// The port: cable and module, then the link.
	{Why: "cable or transceiver", Text: re(`(?i)\bcable\b|transceiver|EEPROM|\bSFP|\bQSFP|module (temperature|eeprom|info|type)|\bplugged\b`), Fault: "port-module"},
	{Why: "link state, speed, FEC", Text: re(`(?i)\blink (is )?(up|down)\b|link state|\bcarrier\b|\bautoneg|link speed|link mode|\bFEC\b|\bPHY\b|port type`), Fault: "port-link"},
	{Why: "mlx4 port type sensing", Drivers: []string{"mlx4_core"}, Path: re(`/sense\.c$`), Fault: "port-link"},
	// The subnet's services: SA queries, multicast joins, path records, the SM.
	{Why: "subnet administration and multicast", Drivers: []string{"ib_core", "ib_ipoib", "mlx4_ib"}, Text: re(`(?i)\bSM\b|subnet manager|multicast|\bmcast|\bMCG\b|path record|\bpath rec|SA query|sa_query|\bLID\b|\bP_?Key\b|\bGUID\b`), Fault: "node-topology"},
	{Why: "subnet administration and multicast", Drivers: []string{"ib_core", "ib_ipoib"}, Path: re(`/(sa_query|multicast|ipoib_multicast)\.c$`), Fault: "node-topology"},
	// Transmit watchdog and stalled queues.
	{Why: "transmit timeout", Text: re(`(?i)TX timeout|tx_timeout|\btxq?\b.*(stuck|timeout|timed out)|watchdog|transmit queue`), Fault: "netdev-tx"},
	// Requests refused as unsupported or invalid: configuration, not a fault.
	{Why: "a verbs request refused", Drivers: verbsDrivers, Text: refusal, Fault: "user-verbs", Severity: "info"},
	{Why: "a setting refused", Text: refusal, Fault: "kernel-config", Severity: "info"},
	// The paths that apply what a user asks through ethtool, DCB netlink and tc: what they
	// print without a failure of their own refuses the request ("Can't set CQE compression
	// with HW-GRO, disable it first").
	{Why: "an ethtool, DCB or tc request refused", Drivers: []string{"mlx5_core", "mlx4_en"}, Path: re(`/(en_ethtool|en_dcbnl|en_dcb_nl|en_fs_ethtool|en_tc|en/tc_.*|en/tc/.*|en/port_buffer|en/qos|en/htb|esw/qos)\.c$`), Unless: re(`(?i)fail|error|\berr\b|timeout|timed out|unable|couldn't|could not`), Fault: "kernel-config", Severity: "info"},
	// Completion and event queues.
	{Why: "completion and event queues", Text: re(`(?i)\bEQs?\b|\bCQs?\b|\bCQN\b|completion queue|event queue|\bEQE|cq overrun|overrun`), Fault: "cq-eq"},
	{Why: "completion and event queues", Path: re(`/(eq|cq|rxe_cq)\.c$`), Fault: "cq-eq"},
	// Queue pairs, their send and receive queues and error completions (mlx5e's error CQE
	// reporter: en/reporter_tx.c, en/reporter_rx.c).
	{Why: "queues and error completions", Text: re(`(?i)\bCQEs?\b|err_cqe|error cqe|\bSQs?\b|\bRQs?\b|ICOSQ|XDPSQ|\bWQEs?\b|\bQPN?s?\b|\bqpn\b|queue pair|\bSRQs?\b|\bWQs?\b|\bqp#`), Fault: "qp-context"},
	{Why: "queues and error completions", Path: re(`/(qp|srq|wq|transobj|en_rx|en_tx|en_txrx|en/reporter_(tx|rx)|en/xsk/.*|rxe_(qp|req|resp|comp|srq|recv|icrc)|cm|iwcm|rw|ipoib_cm|ipoib_ib)\.c$`), Fault: "qp-context"},
	// The RDMA device and the verbs applications use.
	{Why: "verbs requests of applications", Drivers: []string{"ib_core"}, Path: re(`/(uverbs.*|umem.*|rdma_core|ucma|user_mad|ib_core_uverbs)\.c$`), Fault: "user-verbs"},
	{Why: "verbs requests of applications", Drivers: []string{"mlx5_ib", "mlx4_ib"}, Path: re(`/(mr|odp|umr|devx|wr|mem|dm|mw|doorbell|fs|qos|std_types|restrack)\.c$`), Fault: "user-verbs"},
	{Why: "verbs requests of applications", Drivers: []string{"rdma_rxe"}, Path: re(`/rxe_(verbs|mr|mw|mmap|pool|queue)\.[ch]$`), Fault: "user-verbs"},
	{Why: "the RDMA device's registration and core services", Drivers: []string{"ib_core", "mlx5_ib", "mlx4_ib"}, Fault: "rdma-device"},
	{Why: "the Ethernet data path", Drivers: []string{"mlx5_core"}, Path: re(`/(en_(main|tx|rx|txrx)|en/(health|txrx|ptp|params))\.[ch]$`), Fault: "netdev-tx"},
	{Why: "the Ethernet data path", Drivers: []string{"mlx4_en"}, Path: re(`/en_(tx|rx|netdev|cq|port)\.c$`), Fault: "netdev-tx"},
	{Why: "the rest of the driver", Fault: "driver-module"},
}

// Texts are what an entry says, once per fault row, and, for a refusal, once per row it can
// take (stated here, not per line: the line itself is quoted with the finding).
var Texts = map[string]struct{ What, Fix string }{
	"pcie-interface":  {"The PCIe link, slot or configuration space of the adapter's function failed, as the driver reports it", "Check the function's link and errors (`lspci -vvv -s <BDF>`: LnkSta against LnkCap, the AER status), reseat the card or move it to another slot, and update the system firmware if it repeats."},
	"dma-engine":      {"A DMA mapping or transfer between the adapter and host memory failed", "Check the IOMMU mode (passthrough for RDMA), IOMMU faults at the same time in the kernel log, and memory pressure; update driver and firmware if it repeats."},
	"firmware":        {"A firmware command or query failed, or the firmware reported something the driver cannot use", "Compare the firmware with the driver's supported versions (`devlink dev info`, `ethtool -i`) and update it; if it persists after a reset, collect `devlink health` dumps for the vendor."},
	"firmware-health": {"The adapter's firmware health, command interface or recovery flow reported a fault", "Read the health lines around it and `devlink health show`; if the device did not recover, reset it (devlink reload or a reboot) and update the firmware."},
	"driver-module":   {"Part of the driver failed to initialise or to apply a setting, and the device runs without that function", "Read the lines around it for the step that failed; check that driver and firmware versions match and update them together if it repeats."},
	"rdma-device":     {"The RDMA device's registration or one of its core services (GID table, MAD agents, port attributes) failed", "Check `rdma dev` and `ibv_devinfo`; reload the RDMA driver and update driver and firmware if the device stays missing or degraded."},
	"user-verbs":      {"A verbs request of an application (memory registration, object creation, a user mapping) failed in the kernel", "Check the application's resource use and its locked-memory limit (`ulimit -l`); the request that failed is in the line."},
	"netdev-tx":       {"The adapter's Ethernet send or receive path reported an error on one of its queues", "Check `ethtool -S <netdev>` for queue errors and `devlink health show` for the tx and rx reporters; update driver and firmware if it repeats."},
	"port-link":       {"The port's link reported a problem", "Check the link (`ethtool <netdev>`, `ibstat`), the cable and the switch port."},
	"port-module":     {"The cable or transceiver in the port reported a problem", "Read the module (`ethtool -m <netdev>`); reseat or replace the cable or transceiver."},
	"node-topology":   {"A subnet service (SA query, multicast join, path record, the subnet manager) failed", "Check that the subnet manager runs and is reachable (`sminfo`, the SM lid in `ibstat`), the port's P_Key membership and the fabric's multicast groups."},
	"qp-context":      {"A queue pair, one of its send or receive queues, or their completions reported an error", "The line names the queue; an application's error completion usually comes with it: check the peer and the application, and the device's health if the queues of every application fail."},
	"cq-eq":           {"A completion queue, an event queue or its interrupt reported an error", "Check for a CQ overrun in the application, the interrupt vectors (`/proc/interrupts`) and the device's health lines around it."},
	"kernel-config":   {"The driver refused a setting or a feature the device or kernel does not support (configuration, not a fault)", "Check the requested configuration against what the device, its firmware and the kernel support."},
}

// The texts of the two kinds of information, whatever the row: a refused request or
// unsupported setting (the verbs drivers' are an application's), and a notice without a
// failure.
var (
	refusalWhat     = struct{ What, Fix string }{"The kernel refused an application's verbs request as invalid or unsupported (the application's, not a fault of the device)", "Check the request the application makes against the device's capabilities (`ibv_devinfo -v`)."}
	unsupportedWhat = struct{ What, Fix string }{"The driver reports a feature or setting the device, its firmware or the kernel does not support, or a request it refused (configuration, not a fault)", "Check the requested configuration against what the device, its firmware and the kernel support."}
	noticeWhat      = struct{ What, Fix string }{"A notice the driver prints at warning level without a failure: a state it reports or a setting it chose", ""}
)

// Classify gives a message its rule.
func Classify(driver, file, fn, text string) *Rule {
	for i := range Rules {
		if r := &Rules[i]; r.matches(driver, file, fn, text) {
			// An information rule without words of its own to exclude yields to a failure.
			if r.Severity == "info" && r.Unless == nil && failure.MatchString(text) {
				continue
			}
			return r
		}
	}
	return nil
}

// notice is a warning-level print that reports a state or a choice ("Using %d RX rings",
// "Setting num_txqs %d", "Running in master mode"): information when no problem word is in it.
var notice = re(`(?i)^(using|setting|initializing|enabling|running in|detected|skipping|sending|trying again|consider|expected slowdown|reload performed|hca operating)\b|obsolete module param|falling back|deferring probe`)

// problem words keep a notice a warning.
var problem = re(`(?i)fail|error|\berr|timeout|timed out|unable|couldn't|could not|can't|cannot|\binvalid|\bbad\b|wrong|unexpected|unknown|illegal|mismatch|\bnot\b|\bno\b|missing|lost|exceed|overflow|stuck|abort|corrupt|\bbug\b|warn|refus|reject|declin|denied|busy|\bfull\b|leak|drop|violat|fatal|crash|hang|\btoo\b|\bonly\b|retry|disabl|doesn't|isn't|won't|unsupported|out of|exhaust|insufficient|degrad|limit|!`)

// severityOf is what a print's level says: crit and graver the device or function stops
// working, err and warn a fault the driver reports.
func severityOf(level, text string) string {
	switch {
	case level == "emerg" || level == "alert" || level == "crit":
		return "critical"
	case level == "warn" && notice.MatchString(text) && !problem.MatchString(text):
		return "info"
	}
	return "warning"
}
