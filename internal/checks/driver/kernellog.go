package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/checks"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/internal/relit"
	"github.com/rdmadiag/rdmadiag/report"
)

func init() {
	checks.Register(checks.Check{
		ID:          "driver.kernel_log",
		Description: "Kernel log signatures: mlx5 health and command timeouts, CQ/EQ errors, page allocation, module load and probe errors, IRQ allocation, AER (counted)",
		Fault:       "driver-module",
		Run:         runKernelLog,
		KernelLog:   true,
	})
}

// signature is one documented kernel message and what it means. Message texts come from the
// kernel's drivers/net/ethernet/mellanox/mlx5/core/{health.c,cmd.c,eq.c,events.c,pagealloc.c},
// drivers/infiniband/hw/mlx5/cq.c, drivers/infiniband/sw/rxe and drivers/pci/pcie/aer.c unless a
// comment names another source. Matching is on the message text, never on mlx5_core_err's
// "func:line:(pid N):" prefix (mlx5_core.h), which changes between kernels.
type signature struct {
	id    string
	re    *relit.Regexp
	fault string
	sev   report.Severity
	what  string
	fix   string
	// detail, when set, extracts from a match what splits one signature into separate findings
	// (the command and status of a failed firmware command).
	detail func(m []string) string
	// netdev, when set, is the submatch naming the interface the line is about, which ties it
	// to an RDMA device through the port's netdevs when the line has no PCI address.
	netdev int
	// rdmaOnly drops a match that cannot be tied to an RDMA device: the message is generic
	// (the transmit watchdog) and only matters on an RDMA netdev.
	rdmaOnly bool
	// family groups the lines of several signatures that one event prints (a firmware that
	// never initialised, then the failed load, then the failed probe) into one finding, led by
	// the gravest of them.
	family string
	// laterRegistered is the severity when the device the line is about is registered now: a
	// probe or firmware start-up that failed and then succeeded is history.
	laterRegistered report.Severity
}

var signatures = []signature{
	// print_health_info() in health.c dumps the firmware health buffer after the poll finds a
	// fault: assert_var[N], assert_exit_ptr, assert_callra, fw_ver, time, hw_id, rfr, severity,
	// irisc_index, ext_synd and raw fw_ver, one line each (the "synd" line is
	// mlx5-health-syndrome). The dump is part of the health event it follows, never a fault by
	// itself; anchored on the mlx5_core prefix because "fw_ver" and "time" are common words.
	{id: "mlx5-health-dump", re: relit.MustCompile(`(?:^mlx5_core [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]: (?:print_health_info:\d+:\(pid \d+\): )?|^mlx5_core: INFO: )(assert_var\[\d+\] 0x|assert_exit_ptr 0x|assert_callra 0x|fw_ver \d+\.\d+\.\d+$|time \d+$|hw_id 0x|rfr \d+$|crr \d+$|severity \d+ \(|irisc_index \d+$|ext_synd 0x|raw fw_ver 0x)`),
		fault: "firmware-health", sev: report.Info, what: "firmware health buffer dump"},
	// hsynd_str() in health.c: MLX5_INITIAL_SEG_HEALTH_SYNDROME_HW_UNRECOVERABLE_ERR, printed in
	// the "synd 0x8: unrecoverable hardware error" and "Health issue observed, unrecoverable
	// hardware error" lines; NVIDIA NVSentinel (NIC Health Monitor: Syslog Detection, §5.1,
	// unrecoverable_err) treats it as fatal.
	{id: "mlx5-hw-unrecoverable", re: relit.MustCompile(`unrecoverable hardware error`), fault: "firmware-health", sev: report.Critical,
		what: "the firmware reported an unrecoverable hardware error",
		fix:  "The adapter hardware failed: power-cycle the host (a cold reset); if the syndrome comes back, replace the card."},
	// wait_fw_init() in drivers/net/ethernet/mellanox/mlx5/core/main.c: "Firmware over %d MS in
	// pre-initializing state, aborting" ends the probe (the load then fails with -EBUSY);
	// "Waiting for FW initialization, timeout abort in %ds (0x%x)" is printed while it waits.
	{id: "mlx5-fw-preinit", family: "probe", re: relit.MustCompile(`Firmware over (\d+) MS in pre-initializing state`), fault: "firmware-health", sev: report.Critical,
		laterRegistered: report.Info,
		what:            "the firmware never left pre-initialisation and the driver gave up on the device",
		fix:             "The firmware did not boot: power-cycle the host; if it stays stuck, reflash the firmware (flint/mstflint burn, or mlxfwreset) or replace the card."},
	{id: "mlx5-fw-preinit-wait", family: "probe", re: relit.MustCompile(`Waiting for FW initialization, timeout abort in \d+s`), fault: "firmware-health", sev: report.Info,
		what: "the driver waited for the firmware to initialise"},
	// dev_watchdog() in net/sched/sch_generic.c: "NETDEV WATCHDOG: %s (%s): transmit queue %u
	// timed out %u ms" (before Linux 6.9, through WARN_ONCE) and netdev_crit "NETDEV WATCHDOG:
	// CPU: %d: transmit queue %u timed out %u ms" (since); mlx5e answers with "TX timeout
	// detected" (en_main.c mlx5e_tx_timeout), "TX timeout on queue: %d, SQ: 0x%x, CQ: 0x%x, SQ
	// Cons: 0x%x SQ Prod: 0x%x, usecs since last trans: %u" (en/reporter_tx.c
	// mlx5e_reporter_tx_timeout) and the EQ it polls, "EQ 0x%x: Cons = 0x%x, irqn = 0x%x" and
	// "Recovered %d eqes on EQ 0x%x" (en/health.c mlx5e_health_channel_eq_recover). One family:
	// a stalled send queue and the driver's recovery. Only RDMA netdevs count.
	{id: "tx-timeout", family: "tx-timeout", re: relit.MustCompile(`NETDEV WATCHDOG: (?:(\S+) \([^)]*\)|CPU: \d+): transmit queue (\d+) timed out|(?:^|\s)([^\s:]+): (?:TX timeout detected|TX timeout on queue: \d+|EQ 0x[0-9a-f]+: Cons = 0x[0-9a-f]+, irqn|Recovered \d+ eqes on EQ)`),
		netdev: 1, rdmaOnly: true, fault: "netdev-tx", sev: report.Warning,
		what: "a transmit queue stopped completing (TX timeout)",
		fix:  "A send queue stopped completing: when the driver logged its EQ state, completions were lost (missed interrupts: check IRQ affinity and driver.interrupts); repeated stalls need a firmware and driver update, and the health lines around them."},
	// mlx5e_cq_error_event() in en_main.c: netdev_err(..., "%s: cqn=0x%.6x event=0x%.2x", __func__, ...):
	// the firmware reported an error on one of the netdev's completion queues.
	{id: "mlx5e-cq-error", re: relit.MustCompile(`(?:^|\s)([^\s:]+): mlx5e_cq_error_event: cqn=(0x[0-9a-f]+) event=(0x[0-9a-f]+)`),
		netdev: 1, fault: "cq-eq", sev: report.Warning, what: "a netdev completion queue reported an error event",
		detail: func(m []string) string { return "event " + m[3] },
		fix:    "The queue is reset by the driver; repeated events point at a firmware or driver bug: update both, and read the health lines around them."},
	// nv_get_p2p_free_callback() in NVIDIA open-gpu-kernel-modules
	// kernel-open/nvidia-peermem/nvidia-peermem.c: peer_err("detected invalid context, skipping
	// further processing"): the GPU driver freed memory that an RDMA registration still maps
	// (GPUd components/accelerator/nvidia/peermem matches it as a peer-memory fault).
	{id: "peermem-invalid-context", re: relit.MustCompile(`nvidia-peermem .*detected invalid context`), fault: "user-verbs", sev: report.Warning,
		what: "nvidia-peermem found an invalid context while GPU memory registered for RDMA was freed",
		fix:  "GPUDirect RDMA memory was freed under a live registration: update nvidia-peermem with the GPU driver (or move to the dma-buf path) and check the application deregisters GPU memory before freeing it."},
	// irdma_process_aeq() in drivers/infiniband/hw/irdma/hw.c: ibdev_err "abnormal ae_id = 0x%x
	// bool qp=%d qp_id = %d, ae_src=%d": an asynchronous error the hardware raised on a QP or CQ.
	{id: "irdma-abnormal-ae", re: relit.MustCompile(`abnormal ae_id = (0x[0-9a-f]+) bool qp=`), fault: "qp-context", sev: report.Warning,
		what: "irdma: the hardware raised an abnormal asynchronous event", detail: func(m []string) string { return "ae_id " + m[1] },
		fix: "The QP or CQ named went to error; ae_id names the cause (irdma's defs.h IRDMA_AE_*). Repeats point at the peer, the fabric or a firmware/driver mismatch."},
	// __send_message_basic()/__wait_for_resp() in drivers/infiniband/hw/bnxt_re/qplib_rcfw.c:
	// dev_err "cmdq[%#x]=%#x timedout (%d)msec" (older kernels prefix "QPLIB: "): the firmware
	// did not answer an RDMA command.
	{id: "bnxt-re-cmd-timeout", re: relit.MustCompile(`cmdq\[0x[0-9a-f]+\]=0x[0-9a-f]+ timedout \(\d+\)\s?msec`), fault: "firmware-health", sev: report.Critical,
		what: "bnxt_re: a firmware command timed out",
		fix:  "The NIC firmware stopped answering RDMA commands: reload bnxt_re/bnxt_en or reboot; update the firmware (bnxtnvm / niccli) if it repeats."},
	// efa_com_cmd_exec() in drivers/infiniband/hw/efa/efa_com.c: "Failed to process command %s
	// (opcode %u) comp_status %d err %d" (newer: "... (opcode %u) err %d").
	{id: "efa-cmd-failed", re: relit.MustCompile(`Failed to process command (\S+) \(opcode \d+\)`), fault: "firmware-health", sev: report.Warning,
		what: "efa: the device failed an admin command", detail: func(m []string) string { return m[1] },
		fix: "An admin command the EFA device rejected or did not complete: err -110 is a timeout (the device stopped answering); check the instance's EFA health and update the efa driver."},
	// v2_wait_mbox_complete() in drivers/infiniband/hw/hns/hns_roce_hw_v2.c: "failed to wait
	// mbox status 0x%x": the RoCE engine did not complete a mailbox command.
	{id: "hns-mbox-timeout", re: relit.MustCompile(`failed to wait mbox status 0x[0-9a-f]+`), fault: "firmware-health", sev: report.Critical,
		what: "hns_roce: a mailbox command to the RoCE engine timed out",
		fix:  "The RoCE engine stopped answering: reset the device (reload hns_roce_hw_v2 / hns3 or reboot) and update the firmware if it repeats."},
	// port_module() in drivers/net/ethernet/mellanox/mlx5/core/events.c: mlx5_pme_error
	// "High Temperature": the module (transceiver) overheated; GPUd and NVSentinel match it
	// (leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher.go,
	// regexPortModuleHighTemperature).
	{id: "module-high-temperature", re: relit.MustCompile(`Port module event\[error\]: module (\d+), [^,]+, High Temperature`), fault: "port-link", sev: report.Warning,
		what: "a cable module overheated", detail: func(m []string) string { return "module " + m[1] },
		fix: "Check the airflow at the module cage and that the module is rated for this port's power class; replace the module if it keeps overheating."},
	{id: "mlx5-fatal", re: relit.MustCompile(`Fatal error (\d+) detected`), fault: "firmware-health", sev: report.Critical,
		what: "firmware fatal error", detail: func(m []string) string { return "sensor " + m[1] + " " + fatalSensor(m[1]) },
		fix: "The device stopped working; read `devlink health show` and the health dump below it in the log. If recovery did not succeed, reload the driver or reboot; a repeat needs a firmware update or an RMA."},
	{id: "mlx5-health-compromised", re: relit.MustCompile(`health compromised`), fault: "firmware-health", sev: report.Critical,
		what: "firmware stopped answering the health poll (miss counter reached)",
		fix:  "The firmware hung: reboot (a PCI reset); if it repeats, update the firmware or replace the card."},
	{id: "mlx5-recovery-failed", re: relit.MustCompile(`health recovery failed|health recovery flow aborted|Cold reset is required|Driver is in error state|PCI slot is unavailable`),
		fault: "firmware-health", sev: report.Critical, what: "firmware recovery failed: the device is unusable until reset",
		fix: "Cold-reset the device (power cycle the host); replace the card if it repeats."},
	{id: "mlx5-recovered", re: relit.MustCompile(`health recovery succeeded`), fault: "firmware-health", sev: report.Warning,
		what: "the device recovered from a firmware error (it was reset while running)",
		fix:  "Running jobs on the device failed at that moment; find the cause in the health lines before it and watch for a repeat."},
	{id: "mlx5-health-syndrome", re: relit.MustCompile(`Health issue observed, ([^,]+), severity|synd 0x[0-9a-f]+: (.+)$`), fault: "firmware-health", sev: report.Warning,
		what: "firmware health buffer reported a syndrome", detail: func(m []string) string { return strings.TrimSpace(m[1] + m[2]) },
		fix: "Read the full health dump (dmesg) and `devlink health show`; a syndrome that repeats needs a firmware update or NVIDIA support."},
	{id: "mlx5-cmd-timeout", re: relit.MustCompile(`No done completion|timeout\. Will cause a leak of a command resource|timed out while waiting for a slot|canceled on out of queue timeout|timeout while waiting for command semaphore|All CMD slots are stalled`),
		fault: "firmware-health", sev: report.Critical, what: "firmware command timed out: the firmware stopped executing commands",
		fix: "A hung firmware command interface needs a driver reload or a reboot; check the health lines and update the firmware if it repeats."},
	{id: "mlx5-cmd-recovered", re: relit.MustCompile(`recovered after timeout|Command completion arrived after timeout`), fault: "firmware-health", sev: report.Warning,
		what: "a firmware command completed only after a timeout (a missed interrupt)",
		fix:  "Watch for a repeat; frequent ones point at interrupt delivery (MSI-X, IRQ affinity) or a slow firmware."},
	// ACCESS_REG(0x805) failures come from register reads on restricted functions (DGX/GB200) by
	// monitoring agents: leptonai/gpud components/accelerator/nvidia/infiniband/kmsg_matcher.go
	// attributes them to counter reads on firmware-restricted PFs, citing prometheus/node_exporter#3434.
	{id: "mlx5-access-reg", re: relit.MustCompile(`ACCESS_REG\(0x805\) op_mod\(0x[0-9a-f]+\) failed`), fault: "firmware-health", sev: report.Info,
		what: "ACCESS_REG failures: known benign noise from register reads on a restricted function, not a fault"},
	{id: "mlx5-cmd-failed", re: relit.MustCompile(`([A-Z0-9_]+)\(0x[0-9a-f]+\) op_mod\(0x[0-9a-f]+\) failed, status ([^(]+)\(0x[0-9a-f]+\)`),
		fault: "firmware", sev: report.Warning, what: "firmware rejected a driver command",
		detail: func(m []string) string { return m[1] + ": " + strings.TrimSpace(m[2]) },
		fix:    "A command the driver needs failing (status bad parameter / bad operation) usually means firmware and driver do not match: update the firmware to the version the driver release supports."},
	// "Driver cmdif rev(%d) differs from firmware's(%d)": mlx5_cmd_init() in
	// drivers/net/ethernet/mellanox/mlx5/core/cmd.c refuses to drive a firmware with another
	// command interface revision.
	{id: "mlx5-cmdif-mismatch", re: relit.MustCompile(`cmdif rev\(\d+\) differs from firmware's`), fault: "firmware", sev: report.Critical,
		what: "driver and firmware command interface revisions differ: the driver cannot talk to this firmware",
		fix:  "Install the firmware that matches this driver release (mlxfwmanager --online -u, or the firmware bundled with the OFED/DOCA release)."},
	{id: "cq-error", re: relit.MustCompile(`CQ error on CQN (0x[0-9a-f]+), syndrome (0x[0-9a-f]+)`), fault: "cq-eq", sev: report.Warning,
		what: "a CQ died (syndrome 0x1 = overrun, 0x2 = access violation)", detail: func(m []string) string { return "syndrome " + m[2] },
		fix: "Overruns mean an application posted more work than its CQ holds: size CQs for all outstanding work requests; access violations point at a driver or memory-registration bug."},
	{id: "bogus-cq", re: relit.MustCompile(`Async event for bogus CQ`), fault: "cq-eq", sev: report.Warning,
		what: "an event arrived for a CQ the driver does not know"},
	{id: "cmd-eq-recovered", re: relit.MustCompile(`Recovered \d+ EQEs on cmd_eq`), fault: "cq-eq", sev: report.Warning,
		what: "command EQ events were recovered after a missed interrupt",
		fix:  "Missed interrupts go with command timeouts: check the device's MSI-X vectors (driver.interrupts) and IRQ affinity."},
	{id: "mlx5-pages", re: relit.MustCompile(`failed to allocate page|failed dma mapping page|page notify failed|failed reclaiming pages|=> corruption|failed to allocate pages request`),
		fault: "dma-engine", sev: report.Warning, what: "firmware page allocation or DMA mapping failed",
		fix: "The host could not give the firmware memory: check memory pressure and IOMMU mapping errors; the firmware may stall without its pages."},
	// mm/page_alloc.c __alloc_pages_slowpath() -> warn_alloc("page allocation failure: order:%u"):
	// the allocating task's call trace follows; it is ours when it shows RDMA frames.
	{id: "page-alloc", re: relit.MustCompile(`page allocation failure: order:(\d+)`), fault: "dma-engine", sev: report.Info,
		what: "kernel page allocation failure", detail: func(m []string) string { return "order " + m[1] },
		fix: "High-order allocations fail on a fragmented host: drop caches or compact memory (echo 1 > /proc/sys/vm/compact_memory), reserve memory earlier, or reboot."},
	// PCIe AER is judged by the PCIe layer from the aer_dev_* counters and its own log reading;
	// here it is only counted, as Info, so one AER event never yields two critical findings. Only
	// error reports match: "AER: enabled with IRQ N" at boot is not an event (lab kmsg).
	{id: "aer", re: relit.MustCompile(`AER: .*error message received|AER: (Corrected|Uncorrected)|Bus Error: severity=`), fault: "pcie-interface", sev: report.Info,
		what: "PCIe AER messages (counted here; judged by the pcie layer)"},
	// kernel/module/main.c: "%s: Unknown symbol %s (err %d)" and (kernel/module/version.c
	// check_version) "%s: disagrees about version of symbol %s": a module built for another
	// kernel or another driver stack (MLNX_OFED mlx5_ib against an in-box mlx5_core, or the
	// reverse). One family: a failed load prints both for each symbol. How grave it is depends
	// on the module (moduleLoadFailure): the RDMA stack's own are critical, a consumer's warn.
	{id: "module-unknown-symbol", family: "module-load", re: relit.MustCompile(`^(\S+): Unknown symbol (\S+)`), fault: "driver-module", sev: report.Critical,
		what: "module could not load: unknown symbol", detail: func(m []string) string { return m[1] },
		fix: "The module was built for another kernel or against another driver stack: reinstall MLNX_OFED/DOCA-OFED for this kernel (or remove it to use the in-box drivers), then depmod -a and reload."},
	{id: "module-symbol-version", family: "module-load", re: relit.MustCompile(`^(\S+): disagrees about version of symbol (\S+)`), fault: "driver-module", sev: report.Critical,
		what: "module could not load: symbol version mismatch", detail: func(m []string) string { return m[1] },
		fix: "In-box and OFED modules are mixed: reinstall one driver stack for this kernel, depmod -a, reload (or reboot)."},
	// drivers/base/dd.c: "probe with driver %s failed with error %d" (older kernels: "%s: probe
	// of %s failed with error %d"); mlx5 main.c probe_one: "mlx5_init_one failed with error code %d".
	// mlx5_load_one failures are printed by probe_one() / mlx5_init_one() in main.c.
	{id: "probe-failed", family: "probe", re: relit.MustCompile(`probe with driver (\S+) failed with error (-?\d+)|probe of (\S+) failed with error (-?\d+)|mlx5_(?:init|load)_one failed with error code (-?\d+)|init_one failed`),
		laterRegistered: report.Info,
		fault:           "driver-module", sev: report.Critical, what: "driver probe failed: the function has no working driver",
		fix: "Read the lines before the failure for the cause (firmware command errors, timeouts); a firmware/driver mismatch needs the matching firmware."},
	// mlx5 main.c mlx5_load(): "Failed to alloc IRQs", "Failed to create EQs"; pci_irq.c:
	// "Failed to request irq. err = %d".
	{id: "irq-alloc", re: relit.MustCompile(`Failed to alloc IRQs|Failed to create EQs|Failed to request irq|failed to allocate MSI-X|Failed to enable MSI-X`),
		fault: "cq-eq", sev: report.Critical, what: "interrupt vector (MSI-X) or EQ allocation failed",
		fix: "The device got no interrupt vectors: check the kernel command line (pci=nomsi), the IRQ vector budget (many VFs), and the BIOS MSI-X setting."},
	{id: "port-module-error", re: relit.MustCompile(`Port module event\[error\]: module (\d+), ([^,]+), (.+)$`), fault: "port-link", sev: report.Warning,
		what: "cable/module error", detail: func(m []string) string { return "module " + m[1] + ": " + strings.TrimSpace(m[3]) },
		fix: "Reseat or replace the cable or transceiver named here; check it is a supported part (mlxlink -d <pci> -m)."},
	{id: "port-module-event", re: relit.MustCompile(`Port module event: module (\d+), (.+)$`), fault: "port-link", sev: report.Info,
		what: "cable/module event", detail: func(m []string) string { return "module " + m[1] + ": " + strings.TrimSpace(m[2]) }},
	{id: "slot-power", re: relit.MustCompile(`Detected insufficient power on the PCIe slot`), fault: "pcie-interface", sev: report.Warning,
		what: "the PCIe slot does not supply the card's power budget",
		fix:  "Move the card to a slot that supplies its power, or check the BIOS slot power settings."},
	{id: "high-temperature", re: relit.MustCompile(`High temperature on sensors`), fault: "firmware-health", sev: report.Warning,
		what: "the NIC reported high temperature", fix: "Check the airflow and fans around the card."},
	{id: "rxe-queue-full", re: relit.MustCompile(`rxe.*queue full|queue full.*rxe`), fault: "cq-eq", sev: report.Warning,
		what: "a Soft-RoCE CQ overflowed (IB_EVENT_CQ_ERR raised)", fix: "Size CQs for all outstanding work requests."},
	{id: "wc-error", re: relit.MustCompile(`WC error: (\d+), Message: (.+)$`), fault: "qp-context", sev: report.Warning,
		what: "a kernel consumer's work request completed in error", detail: func(m []string) string { return strings.TrimSpace(m[2]) }},
}

// matchLine yields the signatures a line matches, first match first; the caller takes the
// first it keeps. Signatures are ordered most specific first. present, when not nil, rules out
// the signatures that match no record of the log (presentIn).
func matchLine(text string, present []bool) func(yield func(*signature, []string) bool) {
	return func(yield func(*signature, []string) bool) {
		for si := range signatures {
			if present != nil && !present[si] {
				continue
			}
			s := &signatures[si]
			if m := s.re.FindStringSubmatch(text); m != nil && !yield(s, m) {
				return
			}
		}
	}
}

// presentIn tells which signatures may match some record of recs (relit.Present).
func presentIn(recs []kmsg.Record) []bool {
	res := make([]*relit.Regexp, len(signatures))
	for i := range signatures {
		res[i] = signatures[i].re
	}
	return relit.Present(res, kmsg.Texts(recs))
}

// fatalSensor names enum mlx5_sensor (health.c).
func fatalSensor(n string) string {
	switch n {
	case "1":
		return "(PCI communication error: reads return all-ones)"
	case "2":
		return "(PCI channel offline)"
	case "3":
		return "(NIC disabled)"
	case "4":
		return "(NIC software reset)"
	case "5":
		return "(firmware syndrome, recovery flow required)"
	}
	return ""
}

// bdfInText finds a PCI address anywhere in a line: netdev_printk's "driver BDF netdev: "
// prefix and "probe of BDF failed" name the function without dev_printk's "BDF: " form.
var bdfInText = relit.MustCompile(`\b[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b`)

// netdevDevice ties a line to the RDMA device whose port has the netdev the line names (the
// submatch idx of m), or, failing that, keeps the PCI address it had.
func netdevDevice(inv *inventory.Inventory, m []string, idx int, bdf string) (string, string) {
	for _, name := range m[idx:] {
		if name == "" {
			continue
		}
		for _, d := range inv.Devices {
			for _, p := range d.Ports {
				if slices.Contains(p.Netdevs, name) {
					if d.PCI != nil {
						bdf = d.PCI.BDF
					}
					return d.Name, bdf
				}
			}
		}
	}
	return "", bdf
}

// inInventory reports whether a device name or PCI function is one of this host's RDMA devices.
func inInventory(inv *inventory.Inventory, dev, bdf string) bool {
	for _, d := range inv.Devices {
		if (dev != "" && d.Name == dev) || (bdf != "" && d.PCI != nil && d.PCI.BDF == bdf) {
			return true
		}
	}
	return false
}

// recordDevice ties a record to an RDMA device and PCI function: by the dictionary
// (DEVICE=+pci:BDF, DEVICE=+infiniband:mlx5_0), by a "driver BDF: " prefix, or by an
// "infiniband mlx5_0: " prefix.
func recordDevice(r kmsg.Record, inv *inventory.Inventory) (dev, bdf string) {
	bdf = r.BDF()
	if bdf == "" {
		bdf = bdfInText.FindString(r.Text)
	}
	if d, ok := strings.CutPrefix(r.Device, "+infiniband:"); ok {
		dev = d
	} else if rest, ok := strings.CutPrefix(r.Text, "infiniband "); ok {
		if name, _, ok := strings.Cut(rest, ":"); ok && !strings.Contains(name, " ") {
			dev = name
		}
	}
	for _, d := range inv.Devices {
		if d.PCI != nil && bdf != "" && d.PCI.BDF == bdf {
			return d.Name, bdf
		}
		if d.Name == dev && d.PCI != nil && bdf == "" {
			bdf = d.PCI.BDF
		}
	}
	return dev, bdf
}

type logGroup struct {
	sig         *signature
	detail      string
	dev, bdf    string
	module      string
	recs        []kmsg.Record
	mlx5Frames  bool
	recoveredAt *kmsg.Record
	folded      map[string]bool // the groups a folded group stands for
}

// maxGroupsPerKind bounds the findings one kind of line can make: a log with thousands of
// distinct lines of one kind (failing work requests, each with its own text, or a hostile file)
// gets its first groups one by one and the rest in one folded finding.
const maxGroupsPerKind = 12

func runKernelLog(_ context.Context, env *checks.Env) ([]report.Finding, error) {
	klog, err := env.KernelLog()
	if err != nil {
		return []report.Finding{checks.KernelLogFinding(err, "RDMA fault signatures")}, nil
	}
	recs, skipped := klog.Records, klog.Skipped
	subj := checks.KernelLogSubject
	inv := env.Inventory()
	var matches []logMatch
	var recovered []kmsg.Record
	present := presentIn(recs)
	for i, r := range recs {
		for s, m := range matchLine(r.Text, present) {
			if s.id == "mlx5-recovered" {
				recovered = append(recovered, r)
			}
			lm := logMatch{idx: i, sig: s, sub: m}
			lm.dev, lm.bdf = recordDevice(r, inv)
			if lm.dev == "" && s.netdev > 0 {
				lm.dev, lm.bdf = netdevDevice(inv, m, s.netdev, lm.bdf)
			}
			if s.rdmaOnly && !inInventory(inv, lm.dev, lm.bdf) {
				break // a generic message about an interface that is not an RDMA port
			}
			matches = append(matches, lm)
			break
		}
	}
	if len(matches) == 0 {
		return []report.Finding{{Subject: subj, Severity: report.OK,
			Summary:  fmt.Sprintf("kernel log: %d record(s) read, no RDMA fault signature", len(recs)),
			Evidence: []report.Evidence{report.Ev("records", fmt.Sprint(len(recs)), klog.Cite), report.Ev("unparsed records", fmt.Sprint(skipped), klog.Cite)}}}, nil
	}
	events, merged := healthEvents(recs, matches)
	var out []report.Finding
	for _, ev := range events {
		out = append(out, eventFinding(ev, klog))
	}
	groups := map[string]*logGroup{}
	opened := map[string]int{} // groups opened per kind of line
	var order []string
	for mi, lm := range matches {
		if merged[mi] {
			continue
		}
		s, r := lm.sig, recs[lm.idx]
		g := logGroup{sig: s, dev: lm.dev, bdf: lm.bdf}
		if s.detail != nil {
			g.detail = s.detail(lm.sub)
		}
		if s.fault == "driver-module" && g.bdf == "" && g.dev == "" && (s.id == "module-unknown-symbol" || s.id == "module-symbol-version") {
			g.module = lm.sub[1]
		}
		fam := s.id
		if s.family != "" {
			fam = s.family
		}
		key := strings.Join([]string{fam, g.detail, g.dev, g.bdf, g.module}, "|")
		// A family's lines belong to one event; after a silence as long as a health event's,
		// the same family starts a new one.
		for n := 2; s.family != "" && groups[key] != nil; n++ {
			prev := groups[key].recs[len(groups[key].recs)-1]
			if r.Usec >= prev.Usec && r.Usec-prev.Usec <= healthEventGap {
				break
			}
			key = strings.Join([]string{fam, g.detail, g.dev, g.bdf, g.module, fmt.Sprint(n)}, "|")
		}
		gp := groups[key]
		if gp == nil && opened[fam] >= maxGroupsPerKind {
			// Folded per RDMA device of this host (so a later line still links to its device's
			// findings), the rest host-wide: either way a bounded number of groups.
			fk, fold := fam+"|folded", logGroup{sig: s, folded: map[string]bool{}}
			if inInventory(inv, g.dev, g.bdf) {
				fk, fold.dev, fold.bdf = fk+"|"+g.dev+"|"+g.bdf, g.dev, g.bdf
			}
			if gp = groups[fk]; gp == nil {
				gp = &fold
				groups[fk] = gp
				order = append(order, fk)
			}
			gp.folded[key] = true
		}
		if gp == nil {
			gp = &g
			groups[key] = gp
			order = append(order, key)
			opened[fam]++
		} else if s.sev > gp.sig.sev {
			gp.sig = s
		}
		gp.recs = append(gp.recs, r)
		if s.id == "page-alloc" && rdmaFramesFollow(recs, lm.idx) {
			gp.mlx5Frames = true
		}
	}
	for _, key := range order {
		g := groups[key]
		if g.folded != nil {
			g.detail = fmt.Sprintf("%d more groups of these lines, not listed one by one", len(g.folded))
		}
		f := groupFinding(g, recovered, klog, inv)
		if g.sig.family == "module-load" && g.module != "" {
			f = moduleLoadFailure(env, f, g)
		}
		out = append(out, f)
	}
	return out, nil
}

// logMatch is one kernel log record that matched a signature.
type logMatch struct {
	idx      int // index into the records
	sig      *signature
	sub      []string
	dev, bdf string
}

// healthFlow lists the signatures one mlx5 firmware-health event prints, in the order health.c
// and cmd.c print them: the poll detects the fatal sensor or misses, the health buffer is dumped,
// commands in flight time out, and the recovery flow fails or succeeds. They are one fault, so
// they make one finding; short names them in its summary.
var healthFlow = map[string]string{
	"mlx5-fatal":              "fatal error",
	"mlx5-health-dump":        "health buffer dump",
	"mlx5-hw-unrecoverable":   "unrecoverable hardware error",
	"mlx5-health-compromised": "health poll missed (miss counter reached)",
	"mlx5-health-syndrome":    "health syndrome",
	"mlx5-cmd-timeout":        "command timeout",
	"mlx5-recovery-failed":    "recovery failed",
	"mlx5-recovered":          "recovery succeeded",
}

// healthEventGap is the longest silence between two lines of one firmware-health event. The
// slowest steps of the mlx5 flow are a command timeout (MLX5_TO_CMD_MS, 60 s) and waiting for
// the firmware to come back during recovery (MLX5_TO_FW_PRE_INIT_TIMEOUT_MS, 120 s; both in
// drivers/net/ethernet/mellanox/mlx5/core/lib/tout.c); five minutes covers either with margin,
// while a new fault after five quiet minutes is a separate event.
const healthEventGap = 300 * 1000 * 1000 // microseconds

// healthEvent is the firmware-health lines of one device that belong to one event.
type healthEvent struct {
	dev, bdf string
	members  []logMatch
	recs     []kmsg.Record
}

// healthEvents groups the firmware-health lines of each device into events. Only events that
// span two or more signatures are returned (one signature alone is reported as before, counted);
// merged marks the matches they consumed.
func healthEvents(recs []kmsg.Record, matches []logMatch) ([]*healthEvent, map[int]bool) {
	open := map[string]*healthEvent{}
	var all []*healthEvent
	idxOf := map[*healthEvent][]int{}
	for mi, lm := range matches {
		if _, ok := healthFlow[lm.sig.id]; !ok || (lm.dev == "" && lm.bdf == "") {
			continue
		}
		key := lm.dev + "|" + lm.bdf
		r := recs[lm.idx]
		ev := open[key]
		if ev != nil {
			last := ev.recs[len(ev.recs)-1]
			if r.Usec < last.Usec || r.Usec-last.Usec > healthEventGap {
				ev = nil
			}
		}
		if ev == nil {
			ev = &healthEvent{dev: lm.dev, bdf: lm.bdf}
			open[key] = ev
			all = append(all, ev)
		}
		ev.members = append(ev.members, lm)
		ev.recs = append(ev.recs, r)
		idxOf[ev] = append(idxOf[ev], mi)
	}
	merged := map[int]bool{}
	var out []*healthEvent
	for _, ev := range all {
		sigs := map[string]bool{}
		for _, m := range ev.members {
			sigs[m.sig.id] = true
		}
		if len(sigs) < 2 {
			continue
		}
		out = append(out, ev)
		for _, mi := range idxOf[ev] {
			merged[mi] = true
		}
	}
	return out, merged
}

// maxEventLines bounds the log lines one event finding carries; a recovery loop can print
// hundreds, and the first ones say what happened.
const maxEventLines = 12

// eventFinding turns one firmware-health event into one finding: the worst of its lines decides
// the severity, except that a recovery that succeeded after the last critical line makes the
// event history (a warning), as the kernel reset the device and it runs again.
func eventFinding(ev *healthEvent, klog *kmsg.Log) report.Finding {
	cite := klog.Cite
	first, last := ev.recs[0], ev.recs[len(ev.recs)-1]
	sev := report.Info
	var outcome *logMatch
	// A line count per step would mislead: one syndrome or one timeout prints two lines.
	type part struct{ label, detail string }
	var parts []*part
	byLabel := map[string]*part{}
	for i := range ev.members {
		m := &ev.members[i]
		if m.sig.id == "mlx5-recovered" {
			sev = report.Warning
			outcome = m
		} else {
			if m.sig.id == "mlx5-recovery-failed" {
				outcome = m
			}
			if m.sig.sev > sev {
				sev = m.sig.sev
			}
		}
		label := healthFlow[m.sig.id]
		detail := ""
		if m.sig.detail != nil {
			detail = m.sig.detail(m.sub)
		}
		k := label + "|" + detail
		if byLabel[k] != nil {
			continue
		}
		p := &part{label: label, detail: detail}
		byLabel[k] = p
		parts = append(parts, p)
	}
	var texts []string
	for _, p := range parts {
		t := p.label
		if p.detail != "" {
			t += " (" + p.detail + ")"
		}
		texts = append(texts, t)
	}
	headline := "firmware failed, no recovery logged"
	fix := ""
	switch {
	case outcome != nil && outcome.sig.id == "mlx5-recovered":
		headline = "firmware failed, then the kernel reset the device and it recovered"
		fix = outcome.sig.fix
	case outcome != nil:
		headline = "firmware failed and its recovery failed: unusable until reset"
		fix = outcome.sig.fix
	default:
		for _, m := range ev.members {
			if m.sig.sev == sev && m.sig.fix != "" {
				fix = m.sig.fix
				break
			}
		}
	}
	f := report.Finding{Severity: sev, Fault: "firmware-health", Remediation: fix}
	if ev.dev != "" {
		f.Subject = report.Subject{Kind: "device", Name: ev.dev, Device: ev.dev, PCI: ev.bdf}
	} else {
		f.Subject = report.Subject{Kind: "pci", Name: ev.bdf, PCI: ev.bdf}
	}
	f.Key = f.Subject.Name + "/mlx5-health-event"
	f.Summary = fmt.Sprintf("%s: %s (%d log lines %s): %s",
		f.Subject.Name, headline, len(ev.recs), klog.Between(first, last), strings.Join(texts, "; "))
	f.LogSpan = &report.LogSpan{First: first.Since(), Last: last.Since()}
	var ids []string
	seen := map[string]bool{}
	for _, m := range ev.members {
		if !seen[m.sig.id] {
			seen[m.sig.id] = true
			ids = append(ids, m.sig.id)
		}
	}
	f.Evidence = []report.Evidence{
		report.Ev("signature", "mlx5-health-event", cite),
		report.Ev("signatures", strings.Join(ids, ", "), cite),
		report.Ev("count", fmt.Sprint(len(ev.recs)), cite),
	}
	for i, r := range ev.recs {
		if i == maxEventLines {
			f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more line(s) up to %s", len(ev.recs)-i, klog.Quote(last)), cite))
			break
		}
		f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("log %d", i+1), klog.Quote(r), cite))
	}
	return f
}

// rdmaFramesFollow reports whether the call trace printed after an allocation failure runs
// through an RDMA driver: the allocation was the NIC's.
func rdmaFramesFollow(recs []kmsg.Record, i int) bool {
	for j := i + 1; j < len(recs) && j <= i+40; j++ {
		t := recs[j].Text
		if strings.Contains(t, "page allocation failure") {
			return false
		}
		if strings.Contains(t, "[mlx5_") || strings.Contains(t, "[ib_") || strings.Contains(t, "[rdma_") || strings.Contains(t, "[irdma") || strings.Contains(t, "[bnxt_re") {
			return true
		}
	}
	return false
}

func groupFinding(g *logGroup, recovered []kmsg.Record, klog *kmsg.Log, inv *inventory.Inventory) report.Finding {
	cite := klog.Cite
	s := g.sig
	first, last := g.recs[0], g.recs[len(g.recs)-1]
	f := report.Finding{Severity: s.sev, Fault: s.fault, Remediation: s.fix}
	switch {
	case g.dev != "":
		f.Subject = report.Subject{Kind: "device", Name: g.dev, Device: g.dev, PCI: g.bdf}
	case g.bdf != "":
		f.Subject = report.Subject{Kind: "pci", Name: g.bdf, PCI: g.bdf}
	case g.module != "":
		f.Subject = report.Subject{Kind: "module", Name: g.module}
	default:
		f.Subject = report.Subject{Kind: "host", Name: "kernel log"}
	}
	what := s.what
	if g.detail != "" {
		what += " (" + g.detail + ")"
	}
	if s.id == "page-alloc" && g.mlx5Frames {
		f.Severity = report.Warning
		what += ", in an RDMA driver's allocation"
	}
	// A fatal error the driver later recovered from is history, not the present state.
	if s.fault == "firmware-health" && f.Severity == report.Critical && (s.id == "mlx5-fatal" || s.id == "mlx5-health-compromised") {
		for _, r := range recovered {
			if r.Seq > last.Seq && (r.BDF() == g.bdf || g.bdf == "") {
				f.Severity = report.Warning
				what += ", then health recovery succeeded " + klog.At(r)
				rr := r
				g.recoveredAt = &rr
				break
			}
		}
	}
	// A probe or firmware start-up that failed before the device registered is history: the
	// device works now, but whatever made it fail may come back at the next reset.
	if s.laterRegistered != 0 && f.Severity > s.laterRegistered && g.bdf != "" && inInventory(inv, "", g.bdf) {
		f.Severity = s.laterRegistered
		what += "; the device registered afterwards and is present now"
	}
	// The message family, not the order of the groups, tells apart a subject's findings.
	f.Key = f.Subject.Name + "/" + s.id
	if d := slug(g.detail); d != "" && d != f.Subject.Name {
		f.Key += "/" + d
	}
	where := f.Subject.Name
	switch {
	case len(g.recs) == 1:
		f.Summary = fmt.Sprintf("%s: %s, once, %s", where, what, klog.At(first))
	case s.family != "":
		// The lines of a family are one event's, not repeats.
		f.Summary = fmt.Sprintf("%s: %s (%d log lines, %s)", where, what, len(g.recs), klog.Between(first, last))
	default:
		f.Summary = fmt.Sprintf("%s: %s, %d times %s", where, what, len(g.recs), klog.Between(first, last))
	}
	f.LogSpan = &report.LogSpan{First: first.Since(), Last: last.Since()}
	f.Evidence = []report.Evidence{
		report.Ev("signature", s.id, cite),
		report.Ev("count", fmt.Sprint(len(g.recs)), cite),
		report.Ev("first", klog.Quote(first), cite),
	}
	switch {
	case s.family != "" && len(g.recs) > 1:
		// A family's lines say together what happened (the queue, then the EQ the driver
		// polled): quote them, bounded as a health event's are.
		for i, r := range g.recs[1:] {
			if i+1 == maxEventLines {
				f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more line(s) up to %s", len(g.recs)-i-1, klog.Quote(last)), cite))
				break
			}
			f.Evidence = append(f.Evidence, report.Ev(fmt.Sprintf("log %d", i+2), klog.Quote(r), cite))
		}
	case len(g.recs) > 1:
		f.Evidence = append(f.Evidence, report.Ev("last", klog.Quote(last), cite))
	}
	if g.recoveredAt != nil {
		f.Evidence = append(f.Evidence, report.Ev("recovered", klog.Quote(*g.recoveredAt), cite))
	}
	return f
}

// slug turns a signature's detail ("sensor 1 (PCI communication error...)", "ACCESS_REG: bad
// parameter") into a short ref component: lower case, words joined by '-', at most 32 bytes.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(c)
		default:
			dash = true
		}
		if b.Len() >= 32 {
			break
		}
	}
	return b.String()
}
