package port

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/observe"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.link_quality",
		Description: "Ethernet/RoCE link quality: active FEC, corrected and uncorrectable FEC blocks, raw (pre-FEC) and effective bit error ratio from the PHY counters; since boot, or over --interval",
		Fault:       "port-phy",
		Run:         runLinkQuality,
	})
}

// effectiveBERMax is the bit error ratio a link must stay below after error correction: the
// IBTA's 1e-12, which NVIDIA's ibdiagnet applies by default (ibdiagnet User Manual v2.11, "Bit
// Error Rate (BER)": default threshold 10^-12) and from which NVSentinel derives its symbol-error
// line (docs/configuration/nic-health-monitor.md). No public document gives a raw (pre-FEC) BER
// limit for NVIDIA adapters, so the raw BER is reported, not judged.
const effectiveBERMax = 1e-12

// liftEthtool is how to have the FEC statistics judged when the source does not hold them.
const liftEthtool = "record a snapshot with `rdmadiag record` on the host, which captures the ethtool netlink answers"

// mlx5 PHY counters in `ethtool -S` (pport_phy_statistical_stats_desc and
// pport_phy_statistical_err_lanes_stats_desc in drivers/net/ethernet/mellanox/mlx5/core/en_stats.c;
// meanings in Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst:
// rx_corrected_bits_phy / rx_bits_phy is the corrected (raw) bit error rate,
// rx_pcs_symbol_err_phy / rx_bits_phy the error rate after FEC). rx_bits_phy is documented but
// upstream mlx5 exposes it only from 2025; without it the bits are estimated from the speed.
const (
	statBits          = "rx_bits_phy"
	statCorrectedBits = "rx_corrected_bits_phy"
	statSymbolErrors  = "rx_pcs_symbol_err_phy"
)

// lqSample is one reading of a netdev's link quality sources.
type lqSample struct {
	fec      *ethtoolnl.FEC
	fecErr   error
	stats    map[string]uint64
	statsErr error
	at       time.Time
}

func readLinkQuality(h *host.Host, c *ethtoolnl.Client, nd string, now func() time.Time) lqSample {
	s := lqSample{at: now()}
	s.fec, s.fecErr = c.FEC(nd)
	s.stats, s.statsErr = h.EthtoolStats(nd)
	return s
}

type lqPort struct {
	p      portRef
	netdev observe.NetdevAttrs
	lanes  uint32
	first  lqSample
}

// ethtoolClient is the host's ethtool netlink client, nil when the source has none (a tree, or a
// snapshot recorded without ethtool answers); the checks judge a nil client as such.
func ethtoolClient(h *host.Host) *ethtoolnl.Client {
	if conn := h.Ethtool(); conn != nil {
		return ethtoolnl.NewClient(conn)
	}
	return nil
}

func runLinkQuality(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	c := ethtoolClient(h)
	var out []engine.Finding
	var todo []*lqPort
	for _, p := range ports {
		f := engine.Finding{Finding: report.Finding{Subject: p.subject()}}
		if p.ib() {
			f.Severity, f.Summary = report.Skipped, p.name()+" is InfiniBand: its link errors are judged by port.counters (symbol_error, link_error_recovery)"
			out = append(out, f)
			continue
		}
		st, _, err := states(h, p)
		if err != nil {
			f.Severity, f.Summary = report.Unknown, p.name()+": port state unreadable, link quality not judged: "+err.Error()
			out = append(out, f)
			continue
		}
		if st.Num != stateActive {
			f.Severity, f.Summary = report.Skipped, fmt.Sprintf("%s is %s: link quality is judged on active ports only (see port.state)", p.name(), st.Name)
			out = append(out, f)
			continue
		}
		nd := p.port.Netdevs
		if len(nd) == 0 && p.dev.Parent != "" {
			nd = []string{p.dev.Parent}
		}
		if len(nd) == 0 {
			f.Severity, f.Summary = report.Skipped, p.name()+": no netdev is bound to the port, so FEC and PHY counters cannot be asked for"
			out = append(out, f)
			continue
		}
		lp := &lqPort{p: p, netdev: netdev(env, nd[0])}
		if c == nil {
			lp.first = lqSample{fecErr: fmt.Errorf("ethtool netlink answers: %w", host.ErrNotRecorded), at: env.Now()}
			lp.first.stats, lp.first.statsErr = h.EthtoolStats(nd[0])
		} else {
			lp.first = readLinkQuality(h, c, nd[0], env.Now)
			if lm, err := c.LinkModes(nd[0]); err == nil {
				lp.lanes = lm.Lanes
			}
		}
		todo = append(todo, lp)
	}
	out = append(out, checks.IntervalNotApplied(env, "FEC and PHY counters")...)
	var second []lqSample
	if c != nil && len(todo) > 0 {
		again, err := env.SecondReading(ctx, "link quality")
		if err != nil {
			return nil, err
		}
		for _, lp := range todo {
			if again {
				second = append(second, readLinkQuality(h, c, lp.netdev.Name, env.Now))
			}
		}
	}
	uptime := readUptime(h)
	for i, lp := range todo {
		var f engine.Finding
		if second != nil {
			f = judgeLinkQualityDelta(lp, lp.first, second[i])
		} else {
			f = judgeLinkQualityBoot(lp, uptime)
		}
		out = append(out, f)
	}
	return out, nil
}

// lqJudgement collects the parts of one port's finding.
type lqJudgement struct {
	f        engine.Finding
	alarms   []string
	unknowns []string
	notes    []string
	judged   bool
	limit    bool
	// uncorrJudged: an uncorrectable FEC block count was judged; berJudged: an effective BER
	// was. The summary of a clean port claims only what was judged.
	uncorrJudged, berJudged bool
}

func (j *lqJudgement) raise(s report.Severity) {
	if s > j.f.Severity {
		j.f.Severity = s
	}
}

func (j *lqJudgement) ev(name, obs, exp, src string) {
	j.f.Evidence = append(j.f.Evidence, report.EvExp(name, obs, exp, src))
}

// fecSource names where FEC answers come from, as `ethtool -I --show-fec` shows them.
func fecSource(nd string) string {
	return "ethtool netlink FEC_GET " + nd + " (ethtool -I --show-fec " + nd + ")"
}

func statsSource(nd string) string { return "ethtool -S " + nd }

// fecUnavailable says why the FEC part is missing.
func (j *lqJudgement) fecUnavailable(nd string, err error) {
	src := fecSource(nd)
	en, kernel := ethtoolnl.Errno(err)
	switch {
	case errors.Is(err, host.ErrNotRecorded):
		j.limit = true
		j.ev("FEC", "not in this source", "", src)
		j.notes = append(j.notes, "FEC statistics not recorded in this source")
	case errors.Is(err, ethtoolnl.ErrNoEthtool):
		j.judged = true
		j.raise(report.Info)
		j.ev("FEC", "kernel has no ethtool netlink family (before 5.6)", "", src)
		j.notes = append(j.notes, "the kernel has no ethtool netlink, so FEC statistics cannot be read")
	case kernel && en == syscall.EOPNOTSUPP:
		j.judged = true
		j.raise(report.Info)
		j.ev("FEC", "EOPNOTSUPP: the driver has no FEC operation, or the kernel predates FEC_GET (5.14)", "", src)
		j.notes = append(j.notes, "driver does not report FEC")
	default:
		j.raise(report.Unknown)
		j.ev("FEC", "unknown: "+err.Error(), "", src)
		j.unknowns = append(j.unknowns, "FEC unreadable ("+err.Error()+")")
	}
}

func lanesText(s *ethtoolnl.FECStat) string {
	if s == nil || len(s.Lanes) == 0 {
		return ""
	}
	parts := make([]string, len(s.Lanes))
	for i, v := range s.Lanes {
		parts[i] = strconv.FormatUint(v, 10)
	}
	return " (per lane " + strings.Join(parts, ", ") + ")"
}

func ber(v float64) string { return strconv.FormatFloat(v, 'e', 1, 64) }

// bitsSince returns the bits the port received over a span: rx_bits_phy when the driver has it,
// else the link speed times the span, which counts every bit time the link was up (the PHY
// receives idles between frames); estimated says which.
func bitsSince(nd observe.NetdevAttrs, stats map[string]uint64, seconds float64) (bits float64, estimated bool) {
	if v, ok := stats[statBits]; ok && v > 0 {
		return float64(v), false
	}
	if nd.SpeedMbps > 0 && seconds > 0 {
		return float64(nd.SpeedMbps) * 1e6 * seconds, true
	}
	return 0, false
}

func judgeLinkQualityBoot(lp *lqPort, uptime float64) engine.Finding {
	nd := lp.netdev.Name
	j := &lqJudgement{f: engine.Finding{Finding: report.Finding{Subject: lp.p.subject(), Severity: report.OK}}}
	s := lp.first
	if s.fecErr != nil {
		j.fecUnavailable(nd, s.fecErr)
	} else {
		j.judged = true
		j.fecBoot(nd, s.fec)
	}
	j.berBoot(lp, s, uptime)
	return j.finish(lp, "since boot")
}

func (j *lqJudgement) fecBoot(nd string, fec *ethtoolnl.FEC) {
	src := fecSource(nd)
	j.ev("FEC active", fec.Active.String(), "", src)
	if !fec.HasStats() {
		j.raise(report.Info)
		j.notes = append(j.notes, fecActiveText(fec.Active)+", driver does not report FEC statistics")
		j.ev("FEC statistics", "none reported by the driver", "", src)
		return
	}
	if c := fec.Corrected; c != nil {
		j.ev("FEC corrected blocks", strconv.FormatUint(c.Total, 10)+lanesText(c), "", src)
		if c.Total > 0 {
			j.notes = append(j.notes, fmt.Sprintf("%d corrected FEC blocks", c.Total))
		}
	}
	if cb := fec.CorrectedBits; cb != nil {
		j.ev("FEC corrected bits", strconv.FormatUint(cb.Total, 10)+lanesText(cb), "", src)
	}
	if u := fec.Uncorrectable; u != nil {
		j.ev("FEC uncorrectable blocks", strconv.FormatUint(u.Total, 10)+lanesText(u), "0", src)
		j.uncorrJudged = true
		if u.Total > 0 {
			j.raise(report.Warning)
			j.alarms = append(j.alarms, fmt.Sprintf("%d uncorrectable FEC blocks (bit errors the FEC could not correct: the frames in them were dropped)", u.Total))
		}
	}
}

// berBoot computes raw and effective BER from the PHY counters read once.
func (j *lqJudgement) berBoot(lp *lqPort, s lqSample, uptime float64) {
	nd := lp.netdev.Name
	if s.statsErr != nil {
		if errors.Is(s.statsErr, host.ErrNotRecorded) {
			j.limit = true
		}
		j.ev("PHY counters", "unavailable: "+s.statsErr.Error(), "", statsSource(nd))
		return
	}
	corrected, hasCorr := s.stats[statCorrectedBits]
	if !hasCorr && s.fec != nil && s.fec.CorrectedBits != nil {
		corrected, hasCorr = s.fec.CorrectedBits.Total, true
	}
	symErr, hasSym := s.stats[statSymbolErrors]
	if !hasCorr && !hasSym {
		j.ev("PHY counters", "the driver exposes no PHY bit counters ("+statCorrectedBits+", "+statSymbolErrors+": mlx5 only)", "", statsSource(nd))
		return
	}
	bits, estimated := bitsSince(lp.netdev, s.stats, uptime)
	j.judgeBER(lp, corrected, hasCorr, symErr, hasSym, bits, estimated, "since boot",
		fmt.Sprintf("estimated as %d Mb/s x %.0f s of uptime, so a lower bound of the BER if the link was down part of that time", lp.netdev.SpeedMbps, uptime))
}

// judgeBER turns error and bit counts into raw and effective BER and judges the effective one.
func (j *lqJudgement) judgeBER(lp *lqPort, corrected uint64, hasCorr bool, symErr uint64, hasSym bool, bits float64, estimated bool, span, estimate string) {
	nd := lp.netdev.Name
	src := statsSource(nd)
	if bits <= 0 {
		j.ev("bits received", "unknown (no "+statBits+" and no link speed)", "", src)
		if hasSym && symErr > 0 {
			j.raise(report.Info)
			j.notes = append(j.notes, fmt.Sprintf("%s %d %s", statSymbolErrors, symErr, span))
		}
		return
	}
	j.judged = true
	bitsText := fmt.Sprintf("%.3g", bits)
	if estimated {
		bitsText += " (" + estimate + ")"
	} else {
		bitsText += " (" + statBits + ")"
	}
	j.ev("bits received "+span, bitsText, "", src)
	if hasCorr {
		raw := float64(corrected) / bits
		text := fmt.Sprintf("%s (%d corrected bits)", ber(raw), corrected)
		if lp.lanes > 1 {
			text += fmt.Sprintf(", over %d lanes", lp.lanes)
		}
		j.ev("raw BER "+span, text, "", src+": "+statCorrectedBits+" / bits")
		j.notes = append(j.notes, "raw BER "+ber(raw))
	}
	if hasSym {
		eff := float64(symErr) / bits
		j.ev("effective BER "+span, fmt.Sprintf("%s (%d %s)", ber(eff), symErr, statSymbolErrors), "at most "+ber(effectiveBERMax), src+": "+statSymbolErrors+" / bits")
		j.berJudged = true
		if eff > effectiveBERMax {
			j.raise(report.Warning)
			j.alarms = append(j.alarms, fmt.Sprintf("effective BER %s, above the %s the IBTA and NVIDIA's ibdiagnet allow (errors the FEC did not correct)", ber(eff), ber(effectiveBERMax)))
		}
	}
}

// statDelta is b-a for a 64-bit counter; ok is false when it went backwards (a driver reload or
// counter reset between the readings).
func statDelta(a, b uint64) (uint64, bool) {
	if b < a {
		return 0, false
	}
	return b - a, true
}

func judgeLinkQualityDelta(lp *lqPort, a, b lqSample) engine.Finding {
	nd := lp.netdev.Name
	iv := b.at.Sub(a.at)
	span := "over " + iv.Round(time.Millisecond).String()
	j := &lqJudgement{f: engine.Finding{Finding: report.Finding{Subject: lp.p.subject(), Severity: report.OK}}}
	switch {
	case a.fecErr != nil:
		j.fecUnavailable(nd, a.fecErr)
	case b.fecErr != nil:
		j.fecUnavailable(nd, b.fecErr)
	default:
		j.judged = true
		src := fecSource(nd)
		j.ev("FEC active", b.fec.Active.String(), "", src)
		if !b.fec.HasStats() {
			j.raise(report.Info)
			j.notes = append(j.notes, fecActiveText(b.fec.Active)+", driver does not report FEC statistics")
			j.ev("FEC statistics", "none reported by the driver", "", src)
			break
		}
		if ca, cb := a.fec.Corrected, b.fec.Corrected; ca != nil && cb != nil {
			if d, ok := statDelta(ca.Total, cb.Total); ok {
				j.ev("FEC corrected blocks "+span, fmt.Sprintf("+%d (%d -> %d)", d, ca.Total, cb.Total), "", src)
			}
		}
		if ua, ub := a.fec.Uncorrectable, b.fec.Uncorrectable; ua != nil && ub != nil {
			d, ok := statDelta(ua.Total, ub.Total)
			switch {
			case !ok:
				j.ev("FEC uncorrectable blocks "+span, fmt.Sprintf("%d -> %d: reset, increase unknown", ua.Total, ub.Total), "+0", src)
			default:
				j.ev("FEC uncorrectable blocks "+span, fmt.Sprintf("+%d (%d -> %d)", d, ua.Total, ub.Total), "+0", src)
				j.uncorrJudged = true
				if d > 0 {
					j.raise(report.Warning)
					j.alarms = append(j.alarms, fmt.Sprintf("%d new uncorrectable FEC blocks (frames dropped while watched)", d))
				}
			}
		}
	}
	if a.statsErr != nil || b.statsErr != nil {
		err := a.statsErr
		if err == nil {
			err = b.statsErr
		}
		j.ev("PHY counters", "unavailable: "+err.Error(), "", statsSource(nd))
		return j.finish(lp, span)
	}
	corr, okC := counterDelta(a.stats, b.stats, statCorrectedBits)
	sym, okS := counterDelta(a.stats, b.stats, statSymbolErrors)
	if !okC && !okS {
		j.ev("PHY counters", "no PHY bit counters in "+statsSource(nd)+" (mlx5 only), or a reset between readings", "", statsSource(nd))
		return j.finish(lp, span)
	}
	bits, estimated := 0.0, false
	if d, ok := counterDelta(a.stats, b.stats, statBits); ok && d > 0 {
		bits = float64(d)
	} else if lp.netdev.SpeedMbps > 0 {
		bits, estimated = float64(lp.netdev.SpeedMbps)*1e6*iv.Seconds(), true
	}
	j.judgeBER(lp, corr, okC, sym, okS, bits, estimated, span, fmt.Sprintf("%d Mb/s x %s", lp.netdev.SpeedMbps, iv.Round(time.Millisecond)))
	return j.finish(lp, span)
}

func counterDelta(a, b map[string]uint64, name string) (uint64, bool) {
	va, okA := a[name]
	vb, okB := b[name]
	if !okA || !okB {
		return 0, false
	}
	return statDelta(va, vb)
}

// finish writes the summary and fix, and turns a finding nothing could be judged for into a
// skip held back by the source.
func (j *lqJudgement) finish(lp *lqPort, span string) engine.Finding {
	name := fmt.Sprintf("%s (%s)", lp.netdev.Name, lp.p.name())
	f := j.f
	switch {
	case len(j.alarms) > 0:
		f.Summary = name + " " + span + ": " + strings.Join(j.alarms, "; ")
		if len(j.notes) > 0 {
			f.Summary += "; " + strings.Join(j.notes, ", ")
		}
		f.Remediation = "Bit errors the FEC cannot correct come from the cable, the transceiver or the port at either end: " +
			"reseat or clean the optics, read the module's diagnostics (ethtool -m " + lp.netdev.Name + ") and the switch port's FEC counters, " +
			"replace the cable or transceiver if they keep growing (rdmadiag check --interval 60s), and mlxlink -d <pci> -c -m shows the same BER per lane."
	case len(j.unknowns) > 0:
		f.Summary = name + " " + span + ": " + strings.Join(append(j.unknowns, j.notes...), "; ")
	case !j.judged && j.limit:
		f.Summary = name + ": FEC statistics and PHY counters are not recorded in this source"
		return f.SkippedBy(report.LimitSource, liftEthtool)
	case !j.judged:
		f.Severity = report.Skipped
		f.Summary = name + ": no FEC statistics or PHY bit counters to judge"
	default:
		var clean []string
		if j.uncorrJudged {
			clean = append(clean, "no uncorrectable FEC block")
		}
		if j.berJudged {
			clean = append(clean, "effective BER within "+ber(effectiveBERMax))
		}
		if len(clean) == 0 {
			// Nothing counts the errors that reach the frames: say so rather than pass the port as clean.
			clean = append(clean, "no uncorrectable-block or symbol-error counter, so link errors are not judged")
			f.Severity = max(f.Severity, report.Info)
		}
		f.Summary = name + " " + span + ": "
		if len(j.notes) > 0 {
			f.Summary += strings.Join(j.notes, ", ") + "; "
		}
		f.Summary += strings.Join(clean, ", ")
	}
	return f
}

// fecActiveText names the FEC in use for a summary, as FEC_GET's ETHTOOL_A_FEC_ACTIVE gives it
// (none when the driver sets no mode: fec_prepare_data in net/ethtool/fec.c leaves it out).
func fecActiveText(m ethtoolnl.FECMode) string {
	switch m {
	case 0:
		return "no active FEC reported"
	case ethtoolnl.FECOff:
		return "FEC off"
	}
	return "FEC " + m.String() + " active"
}
