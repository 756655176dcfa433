package watch

import (
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are watch's Prometheus series, on a registry of its own (no global state).
type metrics struct {
	reg         *prometheus.Registry
	condition   *prometheus.GaugeVec
	portUpG     *prometheus.GaugeVec
	rate        *prometheus.GaugeVec
	events      *prometheus.CounterVec
	kmsgRecords prometheus.Counter
	lastPoll    prometheus.Gauge
	pollDur     prometheus.Histogram
	stuck       prometheus.Gauge
	lastFull    prometheus.Gauge
	fullDur     prometheus.Gauge
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.condition = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rdmadiag_watch_condition",
		Help: "1 for each active condition of a device or port (identity: PCI address or node GUID, and port), with its severity"},
		[]string{"identity", "device", "port", "condition", "severity"})
	m.portUpG = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rdmadiag_watch_port_up",
		Help: "1 when the port is ACTIVE and LinkUp (and its RoCE netdev up with carrier), 0 otherwise"},
		[]string{"identity", "device", "port"})
	m.rate = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rdmadiag_watch_counter_rate",
		Help: "growth per second of a port error counter between its last two samples"},
		[]string{"identity", "device", "port", "counter"})
	m.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "rdmadiag_watch_events_total",
		Help: "events written, by kind and condition"}, []string{"kind", "condition"})
	m.kmsgRecords = prometheus.NewCounter(prometheus.CounterOpts{Name: "rdmadiag_watch_kernel_log_records_total",
		Help: "kernel log records read and classified"})
	m.lastPoll = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmadiag_watch_last_poll_timestamp_seconds",
		Help: "when the last poll of the ports' state ended"})
	m.pollDur = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "rdmadiag_watch_poll_duration_seconds",
		Help:    "time one poll of every port's state took, reads abandoned at their deadline included",
		Buckets: []float64{0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3}})
	m.stuck = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmadiag_watch_stuck_reads",
		Help: "reads of the host that have not returned by their deadline"})
	m.lastFull = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmadiag_watch_full_check_timestamp_seconds",
		Help: "when the last full check ended"})
	m.fullDur = prometheus.NewGauge(prometheus.GaugeOpts{Name: "rdmadiag_watch_full_check_duration_seconds",
		Help: "how long the last full check took"})
	m.reg.MustRegister(m.condition, m.portUpG, m.rate, m.events, m.kmsgRecords, m.lastPoll, m.pollDur, m.stuck,
		m.lastFull, m.fullDur, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// lv makes a label value of a name read from the host: client_golang refuses (panics on) label
// values that are not UTF-8, and a netdev's or a tree's names need not be.
func lv(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func portLabel(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func (m *metrics) conditions(cs []Condition) {
	m.condition.Reset()
	for _, c := range cs {
		m.condition.WithLabelValues(lv(c.Identity.Key), lv(c.Identity.Device), portLabel(c.Identity.Port), lv(string(c.Kind)), c.Severity.String()).Set(1)
	}
}

func (m *metrics) event(e Event) { m.events.WithLabelValues(lv(e.Kind), lv(string(e.Condition))).Inc() }

func (m *metrics) portUp(p port, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.portUpG.WithLabelValues(lv(p.ID.Key), lv(p.Device), portLabel(p.Num)).Set(v)
}

// devices drops the series of ports no longer held (a rename gives new labels).
func (m *metrics) devices(ps []*polledPort) {
	m.portUpG.Reset()
	m.rate.Reset()
	for _, p := range ps {
		if p.known {
			m.portUp(p.p, p.up)
		}
	}
}

func (m *metrics) counterRates(p port, rates map[string]float64) {
	for c, r := range rates {
		m.rate.WithLabelValues(lv(p.ID.Key), lv(p.Device), portLabel(p.Num), c).Set(r)
	}
}

func (m *metrics) polled(at time.Time, took time.Duration, stuck int) {
	m.lastPoll.Set(float64(at.UnixNano()) / 1e9)
	m.pollDur.Observe(took.Seconds())
	m.stuck.Set(float64(stuck))
}

func (m *metrics) fullCheck(at time.Time, took time.Duration) {
	m.lastFull.Set(float64(at.UnixNano()) / 1e9)
	m.fullDur.Set(took.Seconds())
}
