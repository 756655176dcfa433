package port

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "port.flaps",
		Description: "Link flap history without --interval: link down/up lines in the kernel log with their times, netdev carrier counters and link_downed, since boot and in the last 24 h",
		Fault:       "port-link",
		Run:         runFlaps,
		KernelLog:   true,
	})
}

// Flap thresholds. The peers count link-down events in a window and disagree on its size:
//   - GPUd (leptonai/gpud components/accelerator/nvidia/infiniband/store/scan_flaps.go,
//     defaultIbPortFlapBackToActiveThreshold): a port that came back to ACTIVE after being down
//     at least 3 times in the last 12 hours is flapping.
//   - NVIDIA NVSentinel (docs, "NIC Health Monitor: Link State Detection" §6.3, analyzer rule
//     RepeatedNICLinkFlap): 3 or more link_downed events within 10 minutes are fatal.
//   - Azure azurehpc-health-checks (customTests/azure_ib_link_flapping.nhc,
//     check_ib_link_flapping, TIME_INTERVAL_HOURS default 6): a second "ib... lost carrier" line
//     within 6 hours of the previous one fails the node.
//
// rdmadiag takes GPUd's and NVSentinel's count, 3, over the last 24 hours (a day's history covers
// GPUd's and Azure's windows; fewer are reported as information), and NVSentinel's 10-minute
// burst as critical: such a link drops traffic every few minutes.
const (
	flapWindowUsec    = 24 * 3600 * 1000 * 1000
	flapWarnCount     = 3
	flapBurstUsec     = 10 * 60 * 1000 * 1000
	flapBurstCritical = 3
)

// mlx5eLink is the signature of mlx5e_update_carrier()'s "Link up"/"Link down"
// (drivers/net/ethernet/mellanox/mlx5/core/en_main.c), whose repeated "Link up" is a flap (see
// logDowns).
const mlx5eLink = "mlx5e-link"

// linkEvent is one link transition logged by the kernel (a kernel log event of kind link,
// internal/kevent).
type linkEvent struct {
	rec kmsg.Record
	// netdev is the interface the line names; device the RDMA device when the line names it
	// and no netdev (rxe's "infiniband rxe0: set active").
	netdev, device string
	bdf            string
	down           bool
	sig            *kevent.Signature
}

// linkEvents are the run's link transitions, in log order.
func linkEvents(ke *checks.KernelEvents) []linkEvent {
	var out []linkEvent
	for _, e := range ke.For(checks.JudgeLink) {
		le := linkEvent{rec: e.Record, netdev: e.Netdev, bdf: e.Record.BDF(), down: e.State == "down", sig: e.Sig}
		if e.Netdev == "" {
			le.device = e.Device
		}
		out = append(out, le)
	}
	return out
}

// flapSource is one way of counting a port's link-down transitions.
type flapSource struct {
	what  string
	downs int // transitions down after the link had been up, since boot
	where string
}

func runFlaps(ctx context.Context, env *checks.Env) ([]engine.Finding, error) {
	inv := env.Inventory()
	ports := allPorts(inv)
	if len(ports) == 0 {
		return noPorts(inv), nil
	}
	h := env.Host
	uptime := readUptime(h)
	ke, logErr := env.KernelEvents()
	var events []linkEvent
	var klog *kmsg.Log
	cite := "kmsg"
	if logErr == nil {
		events, klog, cite = linkEvents(ke), ke.Log, ke.Log.Cite
	}
	var out []engine.Finding
	if logErr != nil {
		out = append(out, checks.KernelLogFinding(logErr, "link down/up lines and their times"))
	}
	for _, p := range ports {
		if ctx.Err() != nil {
			return out, checks.CutShort(ctx) // the ports judged so far stand
		}
		out = append(out, judgeFlaps(h, p, events, klog, cite, uptime))
	}
	return out, nil
}

// portEvents picks the events that belong to a port: lines naming one of its netdevs or its
// RDMA device, or, for a device with a single port, lines from its PCI function.
func portEvents(p portRef, events []linkEvent) []linkEvent {
	names := map[string]bool{}
	for _, n := range p.port.Netdevs {
		names[n] = true
	}
	bdf := ""
	if p.dev.PCI != nil && len(p.dev.Ports) == 1 {
		bdf = p.dev.PCI.BDF
	}
	var out []linkEvent
	for _, e := range events {
		switch {
		case e.device != "" && e.device == p.dev.Name && len(p.dev.Ports) == 1:
		case e.device == "" && names[e.netdev]:
		case e.device == "" && bdf != "" && e.bdf == bdf:
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}

// logDowns returns the times of the transitions to down that followed an up: a driver that
// logs "Link down" while the interface is first opened has not lost a link. mlx5e logs "Link
// up" again for a port change event that finds the link up while its carrier is on:
// mlx5e_update_carrier() (en_main.c) then calls netif_carrier_event(), which counts a down and
// an up the link went through unlogged, so a repeated "Link up" is a flap too, dated by it.
func logDowns(evs []linkEvent) []kmsg.Record {
	var downs []kmsg.Record
	wasUp := false
	for _, e := range evs {
		if !e.down {
			if wasUp && e.sig.ID == mlx5eLink {
				downs = append(downs, e.rec)
			}
			wasUp = true
			continue
		}
		if wasUp {
			downs = append(downs, e.rec)
		}
		wasUp = false
	}
	return downs
}

// maxBurst is the most downs within any flapBurstUsec span, and where it starts.
func maxBurst(downs []kmsg.Record) (n int, at kmsg.Record) {
	j := 0
	for i := range downs {
		for downs[i].Usec-downs[j].Usec > flapBurstUsec {
			j++
		}
		if i-j+1 > n {
			n, at = i-j+1, downs[j]
		}
	}
	return n, at
}

// carrierDowns counts a netdev's transitions down after its carrier first came up, from
// carrier_up_count and carrier_down_count (net/core/net-sysfs.c, since Linux 4.16) or, on older
// kernels, carrier_changes. Drivers switch the carrier off while probing (virtnet_probe,
// mlx5e_nic_enable), which the down count includes, so the ups tell the flaps: every up after
// the first followed a down, and a carrier down now adds the last one.
func carrierDowns(h *host.Host, netdev string) (flapSource, bool, error) {
	dir := "/sys/class/net/" + netdev
	src := flapSource{where: dir}
	carrier, cerr := readUint(h, dir+"/carrier")
	up, uerr := readUint(h, dir+"/carrier_up_count")
	down, derr := readUint(h, dir+"/carrier_down_count")
	if uerr == nil && derr == nil {
		n := int(up)
		if cerr == nil && carrier == 1 && n > 0 {
			n--
		}
		src.what = fmt.Sprintf("%s carrier_up_count %d, carrier_down_count %d", netdev, up, down)
		src.downs = n
		src.where = dir + "/carrier_up_count"
		return src, true, nil
	}
	changes, err := readUint(h, dir+"/carrier_changes")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return src, false, nil
		}
		return src, false, err
	}
	// carrier_changes counts ups and downs together: a probe's off and the first on are two.
	n := 0
	if changes > 2 {
		n = int(changes-2+1) / 2
	}
	src.what = fmt.Sprintf("%s carrier_changes %d (carrier_up_count not available: estimated)", netdev, changes)
	src.downs = n
	src.where = dir + "/carrier_changes"
	return src, true, nil
}

func readUint(h *host.Host, path string) (uint64, error) {
	s, err := h.ReadString(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a count", path, s)
	}
	return v, nil
}

// linkDowned reads the port's link_downed: the PMA counter on InfiniBand (IBTA
// LinkDownedCounter, 8 bits, saturating) or rxe's hw_counters/link_downed.
func linkDowned(h *host.Host, p portRef) (flapSource, bool, error) {
	for _, f := range []string{"counters/link_downed", "hw_counters/link_downed"} {
		s, err := h.ReadString(p.file(f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return flapSource{}, false, err
		}
		v, err := ParseCounter(s)
		if errors.Is(err, ErrNoPMA) {
			continue
		}
		if err != nil {
			return flapSource{}, false, fmt.Errorf("%s: %w", p.file(f), err)
		}
		return flapSource{what: fmt.Sprintf("%s link_downed %d", p.name(), v), downs: int(min(v, 1<<31)), where: p.file(f)}, true, nil
	}
	return flapSource{}, false, nil
}

// judgeFlaps judges one port; klog is nil when the run has no kernel log.
func judgeFlaps(h *host.Host, p portRef, events []linkEvent, klog *kmsg.Log, cite string, uptimeSec float64) engine.Finding {
	f := engine.Finding{Finding: report.Finding{Subject: p.subject(), Severity: report.OK}}
	haveLog := klog != nil
	var srcs []flapSource
	var unreadable []string
	for _, nd := range p.port.Netdevs {
		s, ok, err := carrierDowns(h, nd)
		if err != nil {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if ok {
			srcs = append(srcs, s)
		}
	}
	if s, ok, err := linkDowned(h, p); err != nil {
		unreadable = append(unreadable, err.Error())
	} else if ok {
		srcs = append(srcs, s)
	}
	evs := portEvents(p, events)
	downs := logDowns(evs)

	// Since boot: the largest count any source gives. The sources see the same transitions
	// (an rxe "set down" is also a link_downed increment), so they are not added up.
	sinceBoot := len(downs)
	for _, s := range srcs {
		sinceBoot = max(sinceBoot, s.downs)
		f.Evidence = append(f.Evidence, report.Ev("counter", s.what, s.where))
	}
	for _, u := range unreadable {
		f.Evidence = append(f.Evidence, report.Ev("unreadable", u, p.dir))
	}
	nowUsec := uint64(uptimeSec * 1e6)
	if uptimeSec > 0 {
		f.Evidence = append(f.Evidence, report.Ev("uptime", time.Duration(uptimeSec*float64(time.Second)).Round(time.Second).String(), "/proc/uptime"))
	}
	// A line's age: on its own clock when it carried one (a syslog time, against the log's
	// newest line), else its time since boot against the uptime. A line of unknown age counts
	// as recent.
	var inWindow []kmsg.Record
	agesKnown := true
	for _, d := range downs {
		age, ok := klog.Age(d)
		switch {
		case ok:
		case uptimeSec > 0 && !d.NoStamp && d.Usec <= nowUsec:
			age, ok = time.Duration(nowUsec-d.Usec)*time.Microsecond, true
		}
		agesKnown = agesKnown && ok
		if !ok || age <= flapWindowUsec*time.Microsecond {
			inWindow = append(inWindow, d)
		}
	}
	if haveLog {
		f.Events = kevent.RecordKeys(downs)
		f.Evidence = append(f.Evidence, report.Ev("log link-down lines", fmt.Sprint(len(downs)), cite))
		for i, d := range downs {
			if i == 6 {
				f.Evidence = append(f.Evidence, report.Ev("more", fmt.Sprintf("%d more, the last: %s", len(downs)-i, klog.Quote(downs[len(downs)-1])), cite))
				break
			}
			f.Evidence = append(f.Evidence, report.Ev("link down", klog.Quote(d), cite))
		}
	}
	if len(srcs) == 0 && !haveLog {
		f.Severity = report.Unknown
		if len(unreadable) == 0 {
			f.Severity = report.Skipped
			f.Summary = p.name() + ": no link-down count: no carrier counters, no link_downed and no kernel log"
			return f
		}
		f.Summary = p.name() + ": link flap counters unreadable: " + strings.Join(unreadable, "; ")
		return f
	}

	// Within the window: log lines have times. Counters have none, but when the host has been
	// up less than the window every transition they count is inside it.
	window := len(inWindow)
	counted := "kernel log lines"
	if haveLog && !klog.Latest.IsZero() {
		counted = "kernel log lines, aged from the log's newest line"
	}
	if uptimeSec > 0 && uptimeSec*1e6 <= flapWindowUsec && sinceBoot > window {
		window, counted = sinceBoot, "counters since boot (the host has been up less than 24 h)"
	}
	burst, burstAt := maxBurst(downs)
	name := p.name()
	nds := ""
	if len(p.port.Netdevs) > 0 {
		nds = " (" + strings.Join(p.port.Netdevs, ", ") + ")"
	}
	f.Evidence = append(f.Evidence,
		report.EvExp("link downs in the last 24 h", fmt.Sprint(window), fmt.Sprintf("below %d", flapWarnCount), counted),
		report.Ev("link downs since boot", fmt.Sprint(sinceBoot), "largest of the sources above"))
	switch {
	case burst >= flapBurstCritical:
		f.Severity = report.Critical
		f.Summary = fmt.Sprintf("%s%s is flapping: its link went down %d times within 10 minutes from %s (%d in the last 24 h, %d since boot)",
			name, nds, burst, strings.TrimPrefix(klog.At(burstAt), "at "), window, sinceBoot)
		f.Evidence = append(f.Evidence, report.EvExp("link downs within 10 minutes", fmt.Sprint(burst), fmt.Sprintf("below %d", flapBurstCritical), cite))
	case window >= flapWarnCount:
		f.Severity = report.Warning
		f.Summary = fmt.Sprintf("%s%s flapped: its link went down %d times in the last 24 h (%d since boot)", name, nds, window, sinceBoot)
	case sinceBoot >= flapWarnCount && uptimeSec == 0 && !(haveLog && agesKnown && len(downs) == sinceBoot):
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s%s: its link went down %d times since boot; without /proc/uptime their age is unknown", name, nds, sinceBoot)
	case sinceBoot > 0:
		f.Severity = report.Info
		f.Summary = fmt.Sprintf("%s%s: its link went down %d time(s) since boot, %d in the last 24 h", name, nds, sinceBoot, window)
		if !haveLog && window < sinceBoot {
			f.Summary = fmt.Sprintf("%s%s: its link went down %d time(s) since boot; without the kernel log their times are unknown", name, nds, sinceBoot)
		}
	default:
		f.Summary = fmt.Sprintf("%s%s: no link down since boot", name, nds)
	}
	if f.Severity.Problem() {
		f.Remediation = "A link that keeps going down is a bad cable, transceiver or switch port, or a peer being reset: " +
			"check the module (`ethtool -m`, `mlxlink -d <pci> -m`) and the switch port's log, reseat or replace the cable; " +
			"an interface someone set down and up by hand counts too, so rule that out first."
	}
	return f
}
