package port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.counters",
		Description: "Port error and congestion counters (PMA counters/; driver hw_counters/ of mlx5, bnxt_re, irdma, efa, hns and rxe): since boot, or rates and flaps over --interval",
		Fault:       "port-link",
		Run:         runCounters,
	})
}

// counterDef says how one counter is read and judged.
type counterDef struct {
	name string
	dir  string // "counters" (PMA) or "hw_counters"
	// bits is the width of the hardware counter. PMA error counters are 4 to 16 bits wide and
	// saturate at all-ones (IBTA PortCounters; widths from the pma_table in
	// drivers/infiniband/core/sysfs.c); mlx5 Q counters are 32-bit and wrap
	// (mlx5_ib_query_q_counters() in drivers/infiniband/hw/mlx5/counters.c reads each as a
	// __be32); the rest are 64-bit.
	bits      int
	saturates bool
	// bootWarn is the since-boot count at or above which a single reading is a warning; 0 = a
	// single reading is only informative.
	bootWarn uint64
	// perHourWarn, when set, judges the count per hour of uptime instead of the absolute count.
	perHourWarn float64
	// deltaSev is the severity of any increase over --interval (Info = notable, not a fault).
	deltaSev report.Severity
	// congestion marks a counter of congestion rather than errors (port_xmit_wait): that it
	// saturated says the port waited long, not that errors went uncounted, so it is information.
	congestion bool
	// act is the action an alarm of this counter asks for when it is not the cable (the fault
	// row's): a receiver that posts no buffers is the application's configuration; fix says how.
	act report.Action
	fix string
	why string
}

// The thresholds: symbol errors at 120 per hour is NVSentinel's symbol_error_fatal line, which it
// derives from the IBTA bit-error-rate limit of 1e-12 (NVIDIA/NVSentinel
// docs/configuration/nic-health-monitor.md, "Default Counter Configuration"; description in
// health-monitors/nic-health-monitor/pkg/config/config.go). Any link_downed,
// local_link_integrity_errors or excessive_buffer_overrun_errors increase while watched is what
// NVSentinel treats as fatal (the same table: delta threshold 0); over a whole boot a few link
// downs come from switch maintenance, so a single reading warns from 3. link_error_recovery:
// NVSentinel flags more than 5 retrainings per minute as degradation (the same table, non-fatal);
// one reading has no rate, so warning from 10 since boot is this tool's own line, and any
// retraining while watched warns. roce_slow_restart: more than 10 a second is NVSentinel's
// degradation line (the same table, "victim flow oscillation"), 36,000 an hour here. Application-level
// counters (retries, CQE errors) count since boot what every job did, so one reading of them is
// information, never a fault. Congestion counters (port_xmit_wait, CNPs, ECN marks) have no
// public threshold: they are shown, and their growth is information.
//
// The meanings of mlx5's hw_counters are NVIDIA's ("Understanding mlx5 Linux Counters and Status
// Parameters", NVIDIA Enterprise Support knowledge base; the same text in the MLNX_OFED
// documentation, "Counters"); the PMA counters' are the IBTA PortCounters attribute's as NVIDIA's
// UFM Enterprise User Manual lists them ("Appendix - Supported Port Counters and Events").
// Other vendors' names are their drivers' rdma_stat_desc tables in Linux 6.12.19 (and 5.15.178
// where they differ), judged like mlx5's where the meaning is the same; a name more than one
// driver uses with the same meaning would be one entry.
var counterDefs = []counterDef{
	{name: "symbol_error", dir: "counters", bits: 16, saturates: true, perHourWarn: 120, deltaSev: report.Warning,
		why: "bit errors on the wire: a dirty or failing cable or transceiver"},
	{name: "link_downed", dir: "counters", bits: 8, saturates: true, bootWarn: 3, deltaSev: report.Critical,
		why: "the link went down and retrained: a flapping link"},
	{name: "link_error_recovery", dir: "counters", bits: 8, saturates: true, bootWarn: 10, deltaSev: report.Warning,
		why: "the link retrained to recover from errors"},
	{name: "port_rcv_errors", dir: "counters", bits: 16, saturates: true, deltaSev: report.Warning,
		why: "malformed or corrupted packets received"},
	// PortRcvRemotePhysicalErrors counts packets an upstream link already marked bad (EBP
	// delimiter): the fault is on another link of the path, so it is information here.
	// PortRcvSwitchRelayErrors is a switch port's (packets it could not forward); an adapter's
	// port counts none, so growth is shown, not judged. Widths: the pma_table of
	// drivers/infiniband/core/sysfs.c (6.12.19), 16 bits each.
	{name: "port_rcv_remote_physical_errors", dir: "counters", bits: 16, saturates: true, deltaSev: report.Info,
		why: "packets received already marked bad by an upstream link: another link of the path is faulty"},
	{name: "port_rcv_switch_relay_errors", dir: "counters", bits: 16, saturates: true, deltaSev: report.Info,
		why: "packets a switch could not forward"},
	{name: "port_xmit_discards", dir: "counters", bits: 16, saturates: true, deltaSev: report.Info,
		why: "packets dropped on transmit (congestion or a port going down)"},
	// PortXmitWait (32 bits, port_pma_attr_port_xmit_wait in drivers/infiniband/core/sysfs.c):
	// ticks during which the port had data to send but sent none, for lack of flow-control
	// credits from its partner: congestion downstream. NVSentinel allows it but sets no
	// threshold (docs/configuration/nic-health-monitor.md, "Allowed Counter Names").
	{name: "port_xmit_wait", dir: "counters", bits: 32, saturates: true, congestion: true, deltaSev: report.Info,
		why: "ticks the port had data to send but no credit to send it: congestion downstream"},
	{name: "excessive_buffer_overrun_errors", dir: "counters", bits: 4, saturates: true, bootWarn: 1, deltaSev: report.Warning,
		why: "receive buffer overruns: flow control between the port and its partner is broken"},
	{name: "local_link_integrity_errors", dir: "counters", bits: 4, saturates: true, bootWarn: 1, deltaSev: report.Warning,
		why: "the local physical errors threshold was exceeded: a marginal link"},
	// mlx5 hw_counters (basic_q_cnts, retrans_q_cnts, extended_err_cnts, roce_accl_cnts: 32-bit Q
	// counters; cong_cnts: 64-bit, read from the _high/_low pairs; drivers/infiniband/hw/mlx5/counters.c).
	{name: "out_of_buffer", dir: "hw_counters", bits: 32, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: "out_of_buffer: the receive queues had no posted WQE when packets arrived; the receiving application must post receive buffers sooner or deeper (a larger receive queue or SRQ), or spread the load over more queues and cores.",
		why: "packets dropped because no receive WQE was posted (the receive queue ran empty)"},
	{name: "out_of_sequence", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "packets arrived out of order: packet loss on the fabric"},
	{name: "duplicate_request", dir: "hw_counters", bits: 32, deltaSev: report.Info, why: "requests received again after they were executed: the requester retransmitted (an ACK lost or late)"},
	{name: "packet_seq_err", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "NAK sequence errors received: packet loss"},
	{name: "implied_nak_seq_err", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "implied NAK sequence errors: packet loss"},
	{name: "local_ack_timeout_err", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "ACK timeouts: retransmissions after loss or a dead peer"},
	// rnr_nak_retry_err counts RNR NAKs received while the QP's retry limit was not yet exceeded
	// (NVIDIA's definition); req_rnr_retries_exceeded the QPs whose limit was.
	{name: "rnr_nak_retry_err", dir: "hw_counters", bits: 32, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: rnrFix, why: "RNR NAKs received: a receiver without posted buffers"},
	{name: "req_rnr_retries_exceeded", dir: "hw_counters", bits: 32, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: rnrFix, why: "RNR retries exhausted: QPs went to error because the receiver posted no buffer"},
	{name: "req_transport_retries_exceeded", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "transport retries exhausted: QPs went to error"},
	{name: "req_cqe_error", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "requester completions with error"},
	{name: "resp_cqe_error", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "responder completions with error"},
	{name: "resp_local_length_error", dir: "hw_counters", bits: 32, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: "resp_local_length_error: incoming messages were longer than the receive buffer posted for them; the application's receive buffers must be as large as the largest message its peers send.",
		why: "messages longer than the posted receive buffer (an application's sizes disagree)"},
	{name: "roce_adp_retrans", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "adaptive retransmissions: RoCE packets lost and sent again"},
	{name: "roce_adp_retrans_to", dir: "hw_counters", bits: 32, deltaSev: report.Warning, why: "adaptive retransmission timeouts: RoCE packets lost"},
	{name: "roce_slow_restart", dir: "hw_counters", bits: 32, perHourWarn: 36000, deltaSev: report.Warning,
		why: "flows restarted slowly after loss: victim flows oscillating"},
	{name: "np_cnp_sent", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications sent: ECN marks seen, congestion control at work"},
	{name: "np_ecn_marked_roce_packets", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "ECN-marked RoCE packets received: the fabric signalled congestion"},
	{name: "rp_cnp_handled", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications handled: this port was slowed by congestion control"},
	// NVIDIA: rp_cnp_ignored "should not raise if RoCE congestion control was enabled ... verify
	// that ECN was enabled on the adapter".
	{name: "rp_cnp_ignored", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications ignored: congestion control is not enabled for their priority"},
	// rdma_rxe hw_counters (drivers/infiniband/sw/rxe/rxe_hw_counters.c): 64-bit atomics.
	{name: "link_downed", dir: "hw_counters", bits: 64, bootWarn: 3, deltaSev: report.Critical, why: "the netdev under the soft device went down"},
	{name: "rcvd_seq_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "sequence errors received: packet loss"},
	{name: "out_of_seq_request", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "out-of-sequence requests: packet loss"},
	{name: "retry_exceeded_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "transport retries exhausted"},
	{name: "retry_rnr_exceeded_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: rnrFix, why: "RNR retries exhausted"},
	// rxe counts a completer retry each time its retransmit timer fires with requests unacked,
	// and the timer also fires spuriously on a healthy link (rxe_completer() in
	// drivers/infiniband/sw/rxe/rxe_comp.c: "some timeouts are spurious"), so a retry while
	// watched is notable, not a fault; retries that fail are retry_exceeded_err.
	{name: "completer_retry_err", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "completer retries"},
	{name: "send_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "packets the soft device failed to send"},
	// Broadcom bnxt_re (bnxt_re_stat_descs in drivers/infiniband/hw/bnxt_re/hw_counters.c; the
	// firmware's 64-bit counters, le64_to_cpu in bnxt_re_ib_get_hw_stats). rx_roce_drops is 5.15's
	// (bnxt_re_stat_name[]); 6.12 has rx_roce_errors and the tx_ pair instead.
	{name: "to_retransmits", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "retransmissions after an ACK timeout: loss or a dead peer"},
	{name: "seq_err_naks_rcvd", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "sequence-error NAKs received: packet loss"},
	{name: "max_retry_exceeded", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "transport retries exhausted: QPs went to error"},
	{name: "rnr_naks_rcvd", dir: "hw_counters", bits: 64, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: rnrFix, why: "RNR NAKs received: a receiver without posted buffers"},
	{name: "oos_drop_count", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "out-of-sequence packets dropped: packet loss"},
	{name: "dup_req", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "duplicate requests received: the requester retransmitted"},
	{name: "rx_out_of_buffer", dir: "hw_counters", bits: 64, deltaSev: report.Warning, act: report.ActionFixConfiguration,
		fix: "rx_out_of_buffer: the receive queues had no posted buffer when packets arrived; the receiving application must post receive buffers sooner or deeper.",
		why: "packets dropped because no receive buffer was posted"},
	{name: "rx_roce_discards", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets discarded on receive"},
	{name: "tx_roce_discards", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets discarded on transmit"},
	{name: "rx_roce_errors", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets received with errors"},
	{name: "tx_roce_errors", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets that failed to send"},
	{name: "rx_roce_drops", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets dropped on receive"},
	{name: "tx_cnp_pkts", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications sent: ECN marks seen"},
	{name: "rx_cnp_pkts", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications received: this port was slowed by congestion control"},
	// Intel irdma (irdma_hw_stat_descs in drivers/infiniband/hw/irdma/verbs.c, the same names in
	// 5.15's irdma_hw_stat_names): the hardware's 48- and 56-bit counters accumulated into 64
	// bits across wraps (irdma_update_stats in drivers/infiniband/hw/irdma/ctrl.c).
	{name: "ip4InDiscards", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "IPv4 RDMA packets discarded on receive"},
	{name: "ip6InDiscards", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "IPv6 RDMA packets discarded on receive"},
	{name: "tcpRetransSegs", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "iWARP TCP segments retransmitted: packet loss"},
	{name: "cnpSent", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications sent: ECN marks seen"},
	{name: "cnpHandled", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications handled: this port was slowed by congestion control"},
	{name: "cnpIgnored", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications ignored: congestion control is not enabled for their priority"},
	{name: "RxECNMrkd", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "ECN-marked packets received: the fabric signalled congestion"},
	// AWS efa port counters (EFA_DEFINE_PORT_STATS in drivers/infiniband/hw/efa/efa_verbs.c,
	// 6.12.19 and 5.15): u64 from the device's basic and RDMA statistics. NVSentinel judges the
	// same three as non-fatal degradation (nic-health-monitor.md, EFADegradationCheck). The
	// device-wide admin-queue counters (no_completion_cmds) are the device's hw_counters, not a
	// port's, and are not read here.
	{name: "rx_drops", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "packets the adapter received and dropped"},
	{name: "rdma_read_wr_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RDMA read work requests that failed"},
	{name: "rdma_write_wr_err", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RDMA write work requests that failed"},
	// HiSilicon hns (hns_roce_port_stats_descs in drivers/infiniband/hw/hns/hns_roce_main.c,
	// 6.12.19; 5.15's hns has no hw_counters): 64-bit counters from the firmware.
	{name: "rx_err_pkt", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets received with errors"},
	{name: "tx_err_pkt", dir: "hw_counters", bits: 64, deltaSev: report.Warning, why: "RoCE packets that failed to send"},
	{name: "rx_cnp_pkt", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications received: this port was slowed by congestion control"},
	{name: "tx_cnp_pkt", dir: "hw_counters", bits: 64, deltaSev: report.Info, why: "congestion notifications sent: ECN marks seen"},
}

// rnrFix is what RNR NAKs ask for: the receiver, not the link.
const rnrFix = "RNR NAKs: a receiver had no receive buffer posted when a send arrived; the receiving application must post receive WQEs ahead of its peers' sends (or the QPs use a larger min_rnr_timer and rnr_retry)."

// reading is one port's counters at one moment.
type reading struct {
	vals   map[string]uint64 // key dir/name
	noPMA  []string
	failed map[string]error
}

func (d counterDef) key() string { return d.dir + "/" + d.name }

func readCounters(h *host.Host, p portRef, shared bool) reading {
	r := reading{vals: map[string]uint64{}, failed: map[string]error{}}
	// Each counter directory is listed once, and only the counters it has are read, relative to
	// it (Port.ReadFiles): a driver has one of the two directories or a few of its files only
	// (rxe has no PMA counters/ directory at all). The first reading is the run's, shared with
	// the report's inventory; the second of an interval is read anew.
	var dirs []string
	byDir := map[string][]counterDef{}
	for _, d := range counterDefs {
		if _, ok := byDir[d.dir]; !ok {
			dirs = append(dirs, d.dir)
		}
		byDir[d.dir] = append(byDir[d.dir], d)
	}
	for _, dir := range dirs {
		names, err := h.ReadDir(p.file(dir))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var has map[string]bool
		if err == nil {
			has = map[string]bool{}
			for _, n := range names {
				has[n] = true
			}
		}
		var defs []counterDef
		var files []string
		for _, d := range byDir[dir] {
			if has == nil || has[d.name] {
				defs = append(defs, d)
				files = append(files, d.name)
			}
		}
		read := p.port.ReadFilesNow
		if shared {
			read = p.port.ReadFiles
		}
		vals, errs := read(h, p.dev.Name, dir, files)
		for i, d := range defs {
			s, err := vals[i], errs[i]
			if errors.Is(err, fs.ErrNotExist) {
				continue // this driver does not have the counter
			}
			if err == nil {
				var v uint64
				v, err = ParseCounter(s)
				if errors.Is(err, ErrNoPMA) {
					r.noPMA = append(r.noPMA, d.name)
					continue
				}
				if err == nil {
					r.vals[d.key()] = v
					continue
				}
				err = fmt.Errorf("%s: %w", p.file(d.key()), err)
			}
			r.failed[d.key()] = err
		}
	}
	return r
}

func runCounters(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	first := make([]reading, len(ports))
	for i, p := range ports {
		if ctx.Err() != nil {
			return nil, checks.CutShort(ctx) // a tree of thousands of ports outlasts a deadline
		}
		first[i] = readCounters(h, p, true)
	}
	out := checks.IntervalNotApplied(env, "the port counters")
	iv := env.Opts.Interval
	var second []reading
	again, err := env.SecondReading(ctx, "counter")
	if err != nil {
		return nil, err
	}
	if again {
		second = make([]reading, len(ports))
		for i, p := range ports {
			if ctx.Err() != nil {
				return nil, checks.CutShort(ctx)
			}
			second[i] = readCounters(h, p, false)
		}
	}
	uptime := readUptime(h)
	for i, p := range ports {
		sp, last := span{uptime: uptime}, first[i]
		if second != nil {
			sp, last = span{interval: iv}, second[i]
		}
		fs := judge(p, sp, first[i], last)
		if len(first[i].noPMA) > 0 {
			notAvailable(inv, p, first[i].noPMA, &fs[0])
		}
		out = append(out, fs...)
	}
	return out, nil
}

// notAvailable says which counters the function does not provide ("N/A (no PMA)"): they are
// not available by design, not unreadable, so they make nothing unknown. A VF's link is its
// PF's link, so the PF port is named where those counters can be read.
func notAvailable(inv *inventory.Inventory, p portRef, names []string, f *engine.Finding) {
	where := "this function's driver answers no performance-management queries (no PMA)"
	if p.dev.PCI != nil && p.dev.PCI.IsVF() {
		where = "a virtual function has no PMA; its link is its PF's " + p.dev.PCI.PF
		for _, d := range inv.Devices {
			if d.PCI != nil && d.PCI.BDF == p.dev.PCI.PF {
				where = fmt.Sprintf("a virtual function has no PMA; its link is its PF's: read them on %s/%d", d.Name, p.port.Num)
			}
		}
	}
	f.Evidence = append(f.Evidence, report.Ev("not available", strings.Join(names, ", ")+": N/A (no PMA)", p.file("counters")))
	f.Summary += fmt.Sprintf("; %d link counter(s) not available (%s)", len(names), where)
}

// flapConsequence links a counters finding whose only alarm is link_downed to port.flaps: one
// flap is one root cause. The flap history is the cause an operator acts on (when and how often
// the link went down, from the kernel log and carrier counters, judged against the flap
// thresholds); link_downed is the same event counted by the port, so the counter finding is its
// consequence and the reverse would name a counter as the cause of the flapping it counts. A
// finding that also flags symbol or integrity errors stays a root cause of its own: those point
// at the cable or transceiver, which the flap history does not explain. port.flaps explains it
// only when it is itself a problem (a warning or critical finding on the same device).
// It returns the observation (report/engine/faults.json) that says so, "" when another counter alarmed.
func flapConsequence(alarmed []string) string {
	for _, n := range alarmed {
		if n != "link_downed" {
			return ""
		}
	}
	return "link-downed-only"
}

// counterAction is the action and fix of a finding whose alarms are all counters that are not
// the link's (a receiver without posted buffers): their own, rather than the fault row's cable
// action; otherwise none (the row's) and the cable fix, followed by the fixes of any such counters.
func counterAction(alarmed []counterDef, cableFix string) (report.Action, string) {
	var act report.Action
	var fixes []string
	own := len(alarmed) > 0
	for _, d := range alarmed {
		switch {
		case d.act == "":
			own = false
		case act == "":
			act = d.act
		case act != d.act:
			own = false
		}
		if d.fix != "" && !slices.Contains(fixes, d.fix) {
			fixes = append(fixes, d.fix)
		}
	}
	if own {
		return act, strings.Join(fixes, " ")
	}
	return "", strings.Join(append([]string{cableFix}, fixes...), " ")
}

// readUptime returns the seconds since boot from /proc/uptime, 0 when unknown.
func readUptime(h *host.Host) float64 {
	s, err := h.ReadString("/proc/uptime")
	if err != nil {
		return 0
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 {
		return 0
	}
	return v
}

func saturated(d counterDef, v uint64) bool {
	return d.saturates && d.bits < 64 && v == 1<<d.bits-1
}

// unreadable turns failed counters into one Unknown finding for the port: those counters are
// unknown, the others are still judged (node_exporter#3265: one EINVAL must not hide the rest).
func unreadable(p portRef, r reading) []engine.Finding {
	if len(r.failed) == 0 {
		return nil
	}
	f := engine.Finding{Finding: report.Finding{Subject: p.subject(), Severity: report.Unknown}}
	var names []string
	for k, err := range r.failed {
		names = append(names, k)
		f.Evidence = append(f.Evidence, report.Ev(k, "unknown: "+err.Error(), p.file(k)))
	}
	sort.Strings(names)
	sort.Slice(f.Evidence, func(i, j int) bool { return f.Evidence[i].Name < f.Evidence[j].Name })
	f.Summary = fmt.Sprintf("%s: %d counter(s) unreadable, so unknown: %s", p.name(), len(names), strings.Join(names, ", "))
	return []engine.Finding{f}
}

// span is the time one port.counters finding covers: since boot, one reading judged against
// the uptime, or --interval, the growth between two readings.
type span struct {
	interval time.Duration // 0: since boot
	uptime   float64       // since boot: seconds from /proc/uptime, 0 when unknown
}

// counterJudgement is one counter over a span: its evidence, its severity and its words in the
// summary (alarm at Warning or worse, note at Info); unknown when its increase cannot be known.
type counterJudgement struct {
	evidence    *report.Evidence
	sev         report.Severity
	alarm, note string
	unknown     bool
}

// judge judges one port's counters over a span, from a to b (the same reading since boot); the
// counters b could not read are one unknown finding next to it.
func judge(p portRef, s span, a, b reading) []engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: p.subject(), Severity: report.OK}}
	var alarms, alarmed, notes, unknown []string
	var alarmedDefs []counterDef
	for _, d := range counterDefs {
		var c counterJudgement
		if s.interval == 0 {
			c = judgeBoot(p, d, a, s.uptime)
		} else {
			c = judgeDelta(p, d, a, b, s.interval)
		}
		if c.unknown {
			unknown = append(unknown, d.name)
		}
		if c.evidence != nil {
			f.Evidence = append(f.Evidence, *c.evidence)
		}
		switch {
		case c.sev >= report.Warning:
			alarms = append(alarms, c.alarm)
			alarmed = append(alarmed, d.name)
			alarmedDefs = append(alarmedDefs, d)
		case c.sev == report.Info:
			notes = append(notes, c.note)
		}
		if c.sev > f.Severity {
			f.Severity = c.sev
		}
	}
	over := " since boot"
	if s.interval > 0 {
		over = " over " + s.interval.String()
	}
	switch {
	case len(a.vals) == 0:
		f.Severity = report.Skipped
		f.Summary = p.name() + ": no error counter available for this port"
	case len(alarms) > 0:
		f.Observation = flapConsequence(alarmed)
		f.Summary = p.name() + over + ": " + strings.Join(alarms, "; ")
		f.Remediation = "Watch whether they still grow: rdmadiag check --interval 60s. Symbol errors, link-integrity and buffer-overrun errors point at the cable or transceiver (reseat or replace it, then clear with perfquery -R); link_downed means flaps."
		if s.interval > 0 {
			f.Remediation = "Errors that grow while watched are a live fault: check and replace the cable or transceiver (mlxlink -d <pci> for BER and the module), and the switch port; link_downed growing means the link is flapping."
		}
		f.Action, f.Remediation = counterAction(alarmedDefs, f.Remediation)
	case len(notes) > 0 && s.interval == 0:
		f.Summary = p.name() + over + " (not alarming on one reading): " + strings.Join(notes, ", ")
	case len(notes) > 0:
		f.Summary = p.name() + over + ": " + strings.Join(notes, ", ")
	case s.interval == 0:
		f.Summary = fmt.Sprintf("%s: %d error counter(s) read, all zero since boot", p.name(), len(a.vals))
	default:
		f.Summary = fmt.Sprintf("%s: no error counter increased in %s (%d read)", p.name(), s.interval, len(a.vals))
	}
	if len(unknown) > 0 {
		f.Evidence = append(f.Evidence, report.Ev("unknown", strings.Join(unknown, ", "), ""))
	}
	return append([]engine.Finding{f}, unreadable(p, b)...)
}

// judgeBoot judges one reading of a counter: what it counted since boot, per hour of uptime
// where the counter has a rate line.
func judgeBoot(p portRef, d counterDef, r reading, uptime float64) counterJudgement {
	v, ok := r.vals[d.key()]
	if !ok {
		return counterJudgement{}
	}
	exp := "0"
	obs := strconv.FormatUint(v, 10)
	sev := report.OK
	switch {
	case saturated(d, v) && d.congestion:
		obs += " (saturated: the counter stopped counting)" // a long wait, not errors gone uncounted
	case saturated(d, v):
		sev = report.Warning
		obs += " (saturated: the counter stopped counting)"
	case d.perHourWarn > 0 && uptime > 0:
		rate := float64(v) / (uptime / 3600)
		obs += fmt.Sprintf(" (%.1f/h over %.1f h of uptime)", rate, uptime/3600)
		exp = fmt.Sprintf("below %g/h", d.perHourWarn)
		if rate >= d.perHourWarn && v > 0 {
			sev = report.Warning
		}
	case d.bootWarn > 0:
		exp = fmt.Sprintf("below %d since boot", d.bootWarn)
		if v >= d.bootWarn {
			sev = report.Warning
		}
	}
	if sev == report.OK && v > 0 {
		sev = report.Info
	}
	ev := report.EvExp(d.name, obs, exp, p.file(d.key()))
	return counterJudgement{evidence: &ev, sev: sev,
		alarm: fmt.Sprintf("%s %s (%s)", d.name, obs, d.why), note: fmt.Sprintf("%s %d", d.name, v)}
}

// delta returns b-a for a counter, handling 32-bit wrap; ok is false when the counter went
// backwards in a way a wrap cannot explain (reset with perfquery -R, driver reload) or was
// saturated at the first reading (no increase can be seen).
func delta(d counterDef, a, b uint64) (uint64, bool) {
	if saturated(d, a) {
		return 0, false
	}
	if b >= a {
		return b - a, true
	}
	if d.bits == 32 && !d.saturates && a <= 1<<32-1 {
		return b + 1<<32 - a, true
	}
	return 0, false
}

// judgeDelta judges a counter's growth between two readings iv apart.
func judgeDelta(p portRef, d counterDef, a, b reading, iv time.Duration) counterJudgement {
	k := d.key()
	va, okA := a.vals[k]
	vb, okB := b.vals[k]
	if !okA || !okB {
		return counterJudgement{unknown: okA != okB}
	}
	dv, ok := delta(d, va, vb)
	if !ok {
		ev := report.Ev(d.name, fmt.Sprintf("%d -> %d: reset or saturated, increase unknown", va, vb), p.file(k))
		return counterJudgement{evidence: &ev, unknown: true}
	}
	sev := report.OK
	if dv > 0 {
		sev = d.deltaSev
		if d.perHourWarn > 0 && float64(dv)/iv.Hours() < d.perHourWarn {
			sev = report.Info
		}
	}
	ev := report.EvExp(d.name, fmt.Sprintf("+%d in %s (%d -> %d)", dv, iv, va, vb), "+0", p.file(k))
	return counterJudgement{evidence: &ev, sev: sev,
		alarm: fmt.Sprintf("%s +%d in %s (%s)", d.name, dv, iv, d.why), note: fmt.Sprintf("%s +%d", d.name, dv)}
}
