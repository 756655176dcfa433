package port

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.congestion",
		Description: "Ethernet/RoCE congestion and drops in the netdev's driver statistics (ethtool -S): pause frames and pause time per priority, PFC storm events, discards for lack of buffers; since boot, or rates over --interval",
		Fault:       "port-link",
		Run:         runCongestion,
	})
}

// discardRateWarn is the discard rate over --interval from which dropped frames are a warning:
// the 100 a second NVSentinel applies to port_xmit_discards, "TX discards due to flow control
// breakdown" (NVIDIA/NVSentinel docs/configuration/nic-health-monitor.md, "Default Counter
// Configuration", congestion, non-fatal), the PMA counterpart of the Ethernet port's discards.
// Fewer are information: a lossy priority drops under any burst.
const discardRateWarn = 100.0

// liftEthtoolStats is how to have the driver statistics judged when the source lacks them.
const liftEthtoolStats = "record a snapshot with `rdmadiag record` on the host, which stores `ethtool -S` of every RDMA netdev"

// congKind is what a statistic counts.
type congKind int

const (
	congPause      congKind = iota // pause frames (802.3x or PFC)
	congPauseTime                  // microseconds paused
	congTransition                 // XOFF to XON transitions: shown, not judged
	congStormWarn                  // PFC storm prevention: paused for most of its timeout
	congStormErr                   // PFC storm prevention: timed out and stopped sending pauses
	congDiscard                    // frames dropped for lack of buffers
	congBufferFull                 // the receive buffer passed its almost-full threshold
)

// congStat is one `ethtool -S` statistic: its name, what it counts, which way (rx: pauses the
// partner sent, frames dropped on receive; tx: pauses this port sent) and the priority (-1: the
// link-level pause of 802.3x, or the port as a whole).
type congStat struct {
	name string
	kind congKind
	dir  string
	prio int
	why  string
}

// congStats are the statistics judged, by driver; names from the drivers' string tables in
// Linux 6.12.19 (the same in 5.15.178), meanings from their documentation:
//
//   - mlx5: pport_per_prio_pfc_stats_desc ("rx_%s_pause", ..., %s "prio{i}" for each priority
//     with PFC on, or "global" with link pause on), pport_pfc_stall_stats_desc,
//     pport_802_3_stats_desc (rx/tx_pause_ctrl_phy), pport_2863_stats_desc (rx/tx_discards_phy),
//     q_stats_desc (rx_out_of_buffer) and pport_eth_ext_stats_desc (rx_buffer_passed_thres_phy) in
//     drivers/net/ethernet/mellanox/mlx5/core/en_stats.c; meanings and durations in microseconds
//     from Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst.
//   - bnxt_en: bnxt_port_stats_arr and bnxt_port_stats_ext_arr in
//     drivers/net/ethernet/broadcom/bnxt/bnxt_ethtool.c (rx/tx_pfc_ena_frames_pri%d,
//     pfc_pri%d_rx/tx_duration_us, rx/tx_pause_frames, rx/tx_stat_discard, rx_discard_packets_cos%d).
//   - ice: ice_gstrings_pf_stats and the per-priority strings of ice_get_strings in
//     drivers/net/ethernet/intel/ice/ice_ethtool.c (rx/tx_priority_%u_xoff.nic,
//     link_xoff_rx/tx.nic, rx_dropped.nic: receive drops with the buffers full,
//     Documentation/networking/device_drivers/ethernet/intel/ice.rst, "Performance Optimization").
var congStats = buildCongStats()

func buildCongStats() []congStat {
	var s []congStat
	add := func(name string, k congKind, dir string, prio int, why string) {
		s = append(s, congStat{name: name, kind: k, dir: dir, prio: prio, why: why})
	}
	for p := 0; p < 8; p++ {
		add(fmt.Sprintf("rx_prio%d_pause", p), congPause, "rx", p, "")
		add(fmt.Sprintf("tx_prio%d_pause", p), congPause, "tx", p, "")
		add(fmt.Sprintf("rx_prio%d_pause_duration", p), congPauseTime, "rx", p, "")
		add(fmt.Sprintf("tx_prio%d_pause_duration", p), congPauseTime, "tx", p, "")
		add(fmt.Sprintf("rx_prio%d_pause_transition", p), congTransition, "rx", p, "")
		add(fmt.Sprintf("rx_pfc_ena_frames_pri%d", p), congPause, "rx", p, "")
		add(fmt.Sprintf("tx_pfc_ena_frames_pri%d", p), congPause, "tx", p, "")
		add(fmt.Sprintf("pfc_pri%d_rx_duration_us", p), congPauseTime, "rx", p, "")
		add(fmt.Sprintf("pfc_pri%d_tx_duration_us", p), congPauseTime, "tx", p, "")
		add(fmt.Sprintf("pfc_pri%d_rx_transitions", p), congTransition, "rx", p, "")
		add(fmt.Sprintf("rx_priority_%d_xoff.nic", p), congPause, "rx", p, "")
		add(fmt.Sprintf("tx_priority_%d_xoff.nic", p), congPause, "tx", p, "")
		add(fmt.Sprintf("rx_discard_packets_cos%d", p), congDiscard, "rx", p, "received frames of this class of service discarded")
	}
	for _, g := range []struct {
		rx, tx string
		k      congKind
	}{
		{"rx_global_pause", "tx_global_pause", congPause},
		{"rx_global_pause_duration", "tx_global_pause_duration", congPauseTime},
		{"rx_pause_ctrl_phy", "tx_pause_ctrl_phy", congPause},
		{"rx_pause_frames", "tx_pause_frames", congPause},
		{"link_xoff_rx.nic", "link_xoff_tx.nic", congPause},
	} {
		add(g.rx, g.k, "rx", -1, "")
		add(g.tx, g.k, "tx", -1, "")
	}
	add("rx_global_pause_transition", congTransition, "rx", -1, "")
	add("tx_pause_storm_warning_events", congStormWarn, "tx", -1,
		"the port sent pauses without a break for most of the PFC storm-prevention timeout")
	add("tx_pause_storm_error_events", congStormErr, "tx", -1,
		"the port sent pauses for the whole PFC storm-prevention timeout, then stopped pausing its partner: frames of the lossless priorities may have been dropped")
	add("rx_discards_phy", congDiscard, "rx", -1, "received frames dropped at the physical port for lack of buffers: the adapter could not absorb the traffic")
	add("tx_discards_phy", congDiscard, "tx", -1, "frames discarded on transmit (link down, head-of-line drop, pauses from the network)")
	add("rx_out_of_buffer", congDiscard, "rx", -1, "received frames dropped because a receive queue had no software buffer posted")
	add("rx_stat_discard", congDiscard, "rx", -1, "received frames the port discarded")
	add("tx_stat_discard", congDiscard, "tx", -1, "frames the port discarded on transmit")
	add("rx_dropped.nic", congDiscard, "rx", -1, "received frames dropped with the receive buffers full (no PCIe bandwidth or descriptors)")
	add("rx_buffer_passed_thres_phy", congBufferFull, "rx", -1, "times the port's receive buffer was over 85% full")
	return s
}

func runCongestion(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	type todo struct {
		p      portRef
		nd     string
		first  map[string]uint64
		second map[string]uint64
	}
	var out []engine.Finding
	var work []*todo
	for _, p := range ports {
		if ctx.Err() != nil {
			return nil, checks.CutShort(ctx)
		}
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		if p.ib() {
			f.Severity, f.Summary = report.Skipped, p.name()+" is InfiniBand: its congestion is port_xmit_wait and port_xmit_discards, judged by port.counters"
			out = append(out, f)
			continue
		}
		nd := p.port.Netdevs
		if len(nd) == 0 && p.dev.Parent != "" {
			nd = []string{p.dev.Parent}
		}
		if len(nd) == 0 {
			f.Severity, f.Summary = report.Skipped, p.name()+": no netdev is bound to the port, so its driver statistics cannot be read"
			out = append(out, f)
			continue
		}
		st, err := h.EthtoolStats(nd[0])
		switch {
		case errors.Is(err, host.ErrNotRecorded):
			f.Summary = fmt.Sprintf("%s (%s): driver statistics (ethtool -S) are not recorded in this source", nd[0], p.name())
			out = append(out, f.SkippedBy(report.LimitSource, liftEthtoolStats))
			continue
		case err != nil:
			f.Severity, f.Summary = report.Unknown, fmt.Sprintf("%s (%s): driver statistics unreadable, congestion not judged: %v", nd[0], p.name(), err)
			f.Evidence = []report.Evidence{report.Ev("ethtool -S", "unknown: "+err.Error(), statsSource(nd[0]))}
			out = append(out, f)
			continue
		}
		work = append(work, &todo{p: p, nd: nd[0], first: st})
	}
	out = append(out, checks.IntervalNotApplied(env, "pause and discard counters")...)
	if len(work) > 0 {
		again, err := env.SecondReading(ctx, "pause and discard counter")
		if err != nil {
			return nil, err
		}
		if again {
			for _, w := range work {
				st, err := h.EthtoolStats(w.nd)
				if err != nil {
					f := engine.Finding{Finding: report.Finding{Subject: w.p.subject(), Severity: report.Unknown,
						Summary: fmt.Sprintf("%s (%s): second reading of the driver statistics failed, growth not judged: %v", w.nd, w.p.name(), err)}}
					out = append(out, f)
					continue
				}
				w.second = st
			}
		}
	}
	for _, w := range work {
		out = append(out, judgeCongestion(w.p, w.nd, w.first, w.second, env.Opts.Interval))
	}
	return out, nil
}

// congJudgement collects one port's finding.
type congJudgement struct {
	f      engine.Finding
	alarms []string
	notes  []string
	read   int
}

func (j *congJudgement) raise(s report.Severity) {
	if s > j.f.Severity {
		j.f.Severity = s
	}
}

// pauseSide sums one priority's pause statistics in one direction.
type pauseSide struct {
	frames, micros uint64
	hasFrames      bool
	hasMicros      bool
}

// judgeCongestion judges one netdev's statistics since boot (b nil) or over iv (a to b).
func judgeCongestion(p portRef, nd string, a, b map[string]uint64, iv time.Duration) engine.Finding {
	src := statsSource(nd)
	j := &congJudgement{f: engine.Finding{Finding: report.Finding{Subject: p.subject(), Severity: report.OK}}}
	interval := b != nil
	span := "since boot"
	if interval {
		span = "over " + iv.String()
	}
	// value returns the statistic since boot or its growth; ok false when absent or reset.
	value := func(name string) (uint64, bool) {
		va, okA := a[name]
		if !interval {
			return va, okA
		}
		vb, okB := b[name]
		if !okA || !okB {
			return 0, false
		}
		d, ok := statDelta(va, vb)
		if !ok {
			// a driver reload or counter reset between the readings: read, but no growth to judge
			j.read++
			j.raise(report.Info)
			j.notes = append(j.notes, name+" reset between the readings, its growth unknown")
			j.f.Evidence = append(j.f.Evidence, report.Ev(name, fmt.Sprintf("%d -> %d: reset between the readings, growth unknown", va, vb), src))
		}
		return d, ok
	}
	pauses := map[int]map[string]*pauseSide{}
	for _, s := range congStats {
		v, ok := value(s.name)
		if !ok {
			continue
		}
		j.read++
		switch s.kind {
		case congPause, congPauseTime:
			if pauses[s.prio] == nil {
				pauses[s.prio] = map[string]*pauseSide{"rx": {}, "tx": {}}
			}
			ps := pauses[s.prio][s.dir]
			if s.kind == congPause {
				ps.frames, ps.hasFrames = ps.frames+v, true
			} else {
				ps.micros, ps.hasMicros = ps.micros+v, true
			}
		case congTransition:
			// shown through the pause counts; a transition count adds nothing to judge
		case congStormErr, congStormWarn:
			j.storm(s, v, interval, span, src)
		case congDiscard:
			j.discard(s, v, interval, iv, span, src)
		case congBufferFull:
			j.f.Evidence = append(j.f.Evidence, report.Ev(s.name, countText(v, interval, iv), src))
			if v > 0 {
				j.raise(report.Info)
				j.notes = append(j.notes, fmt.Sprintf("receive buffer over 85%% full %d times", v))
			}
		}
	}
	j.pauses(pauses, interval, iv, src)
	name := fmt.Sprintf("%s (%s)", nd, p.name())
	f := j.f
	switch {
	case j.read == 0:
		f.Severity = report.Skipped
		f.Summary = name + ": the driver's statistics have no pause, storm or discard counter this check knows (mlx5, bnxt_en and ice names)"
	case len(j.alarms) > 0:
		f.Summary = name + " " + span + ": " + strings.Join(j.alarms, "; ")
		if len(j.notes) > 0 {
			f.Summary += "; " + strings.Join(j.notes, ", ")
		}
		f.Action = report.ActionFixConfiguration
		f.Remediation = "Congestion the lossless settings do not absorb: check that PFC is on for the RoCE priority at both ends (port.roce_qos) and that ECN marking and congestion control (DCQCN) are enabled so that pauses stay rare; " +
			"a PFC storm means a receiver that stopped draining (a stalled host, PCIe back-pressure: see pcie.* and the kernel log), and its timeout is `ethtool --get-tunable " + nd + " pfc-prevention-tout`; " +
			"drops for lack of buffers ask for larger receive rings (`ethtool -G " + nd + "`) or receive queues posted deeper. Watch with rdmadiag check --interval 60s."
	case len(j.notes) > 0 && !interval:
		f.Summary = name + " " + span + " (not alarming on one reading): " + strings.Join(j.notes, "; ")
	case len(j.notes) > 0:
		f.Summary = name + " " + span + ": " + strings.Join(j.notes, "; ")
	default:
		f.Summary = fmt.Sprintf("%s %s: no pause, PFC storm or discard (%d counter(s) read)", name, span, j.read)
	}
	return f
}

func countText(v uint64, interval bool, iv time.Duration) string {
	if !interval {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("+%d in %s", v, iv)
}

// storm judges mlx5's PFC storm prevention events (device_stall_minor/critical_watermark_cnt):
// the device pauses its partner while it cannot drain its receive buffer, and after the
// pfc-prevention-tout (100 ms automatic, 80 to 8000 ms set: MLX5E_PFC_PREVEN_* in
// drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c) it stops sending pauses, so the lossless
// priorities drop frames; the warning event fires at 85% of it (MLX5E_PFC_PREVEN_MINOR_PRECENT).
// counters.rst types the error event "Error", the warning "Informative". An error event since
// boot broke the lossless contract once (warning); one while watched is a storm now (critical); a
// warning event while watched is a port pausing without a break now (warning).
func (j *congJudgement) storm(s congStat, v uint64, interval bool, span, src string) {
	j.f.Evidence = append(j.f.Evidence, report.EvExp(s.name, fmt.Sprint(v), "0", src))
	if v == 0 {
		return
	}
	sev := report.Info
	switch {
	case s.kind == congStormErr && interval:
		sev = report.Critical
	case s.kind == congStormErr, interval:
		sev = report.Warning
	}
	j.raise(sev)
	text := fmt.Sprintf("%s %d %s (%s)", s.name, v, span, s.why)
	if sev >= report.Warning {
		j.alarms = append(j.alarms, text)
	} else {
		j.notes = append(j.notes, fmt.Sprintf("%s %d", s.name, v))
	}
}

// discard judges frames dropped for lack of buffers: since boot information (a burst long past
// counts as much as one now), over --interval a warning from discardRateWarn a second.
func (j *congJudgement) discard(s congStat, v uint64, interval bool, iv time.Duration, span, src string) {
	if !interval {
		j.f.Evidence = append(j.f.Evidence, report.Ev(s.name, fmt.Sprint(v), src))
		if v > 0 {
			j.raise(report.Info)
			j.notes = append(j.notes, fmt.Sprintf("%s %d", s.name, v))
		}
		return
	}
	rate := float64(v) / iv.Seconds()
	j.f.Evidence = append(j.f.Evidence, report.EvExp(s.name, fmt.Sprintf("+%d in %s (%.1f/s)", v, iv, rate), fmt.Sprintf("below %g/s", discardRateWarn), src))
	switch {
	case rate >= discardRateWarn:
		j.raise(report.Warning)
		j.alarms = append(j.alarms, fmt.Sprintf("%s +%d %s, %.0f/s (%s)", s.name, v, span, rate, s.why))
	case v > 0:
		j.raise(report.Info)
		j.notes = append(j.notes, fmt.Sprintf("%s +%d", s.name, v))
	}
}

// pauses shows each priority's pause frames and pause time, which are information: a lossless
// priority pauses by design, and no public threshold says how much pausing is too much. Over
// --interval the pause time is also shown as a share of the interval (the time the port could
// not send on that priority, for pauses received).
func (j *congJudgement) pauses(pauses map[int]map[string]*pauseSide, interval bool, iv time.Duration, src string) {
	prios := make([]int, 0, len(pauses))
	for p := range pauses {
		prios = append(prios, p)
	}
	sort.Ints(prios)
	var paused []string
	for _, p := range prios {
		rx, tx := pauses[p]["rx"], pauses[p]["tx"]
		label := fmt.Sprintf("priority %d", p)
		if p < 0 {
			label = "link (global)"
		}
		var parts []string
		if rx.hasFrames || tx.hasFrames {
			parts = append(parts, fmt.Sprintf("pause frames received %d, sent %d", rx.frames, tx.frames))
		}
		if rx.hasMicros || tx.hasMicros {
			t := fmt.Sprintf("paused by the partner %s, pausing it %s", micros(rx.micros), micros(tx.micros))
			if interval && iv > 0 {
				t += fmt.Sprintf(" (%.1f%% / %.1f%% of %s)", 100*float64(rx.micros)/float64(iv.Microseconds()), 100*float64(tx.micros)/float64(iv.Microseconds()), iv)
			}
			parts = append(parts, t)
		}
		obs := strings.Join(parts, "; ")
		if interval {
			obs = "growth: " + obs
		}
		j.f.Evidence = append(j.f.Evidence, report.Ev(label+" pauses", obs, src))
		if rx.frames+tx.frames+rx.micros+tx.micros > 0 {
			paused = append(paused, fmt.Sprintf("%s %d received / %d sent", label, rx.frames, tx.frames))
		}
	}
	if len(paused) > 0 {
		j.raise(report.Info)
		j.notes = append(j.notes, "pause frames on "+strings.Join(paused, ", "))
	}
}

func micros(us uint64) string {
	return (time.Duration(us) * time.Microsecond).String()
}
