package watch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics (Prometheus), /healthz and /status.
func (w *Watcher) Handler() http.Handler {
	mux := http.NewServeMux()
	// Uncompressed: a scrape of a few devices is tens of kB, and each gzip writer costs the
	// agent about 1 MB of heap per scrape, a burst its resident size would carry.
	mux.Handle("/metrics", promhttp.HandlerFor(w.metrics.reg, promhttp.HandlerOpts{DisableCompression: true}))
	mux.HandleFunc("/healthz", w.healthz)
	mux.HandleFunc("/status", w.status)
	return mux
}

// Healthy says whether the poll loop runs: its last poll ended within three poll intervals and
// a read deadline. Reads stuck on a wedged device do not make the agent unhealthy (restarting
// it would not unwedge the device); they are conditions of their own.
func (w *Watcher) Healthy() (bool, string) {
	w.mu.Lock()
	last, started := w.lastPoll, w.started
	w.mu.Unlock()
	limit := 3*w.cfg.Poll + w.cfg.ReadTimeout
	now := w.now()
	if last.IsZero() {
		if now.Sub(started) > limit {
			return false, fmt.Sprintf("no poll has completed since the start %s ago", now.Sub(started).Round(time.Second))
		}
		return true, "starting"
	}
	if age := now.Sub(last); age > limit {
		return false, fmt.Sprintf("the last poll ended %s ago (limit %s): the poll loop is stuck", age.Round(time.Millisecond), limit)
	}
	return true, "polling"
}

func (w *Watcher) healthz(rw http.ResponseWriter, _ *http.Request) {
	ok, why := w.Healthy()
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !ok {
		rw.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(rw, why)
}

// Status is the /status document.
type Status struct {
	Healthy    bool           `json:"healthy"`
	Health     string         `json:"health"`
	BootID     string         `json:"boot_id,omitempty"`
	Started    time.Time      `json:"started"`
	LastPoll   *time.Time     `json:"last_poll,omitempty"`
	PollMillis float64        `json:"poll_duration_ms"`
	StuckReads int            `json:"stuck_reads"`
	LastFull   *time.Time     `json:"last_full_check,omitempty"`
	FullError  string         `json:"full_check_error,omitempty"`
	KernelLog  string         `json:"kernel_log"`
	Devices    []DeviceStatus `json:"devices"`
	// Other are the conditions of the host, the agent and what is no longer registered.
	Other []Condition `json:"other_conditions"`
}

// DeviceStatus is one device in /status.
type DeviceStatus struct {
	Identity   string       `json:"identity"`
	Device     string       `json:"device"`
	PCI        string       `json:"pci,omitempty"`
	NodeGUID   string       `json:"node_guid,omitempty"`
	Ports      []PortStatus `json:"ports"`
	Conditions []Condition  `json:"conditions"`
}

// PortStatus is one port in /status.
type PortStatus struct {
	Identity   string             `json:"identity"`
	Port       int                `json:"port"`
	LinkLayer  string             `json:"link_layer,omitempty"`
	Netdev     string             `json:"netdev,omitempty"`
	State      string             `json:"state,omitempty"`
	PhysState  string             `json:"phys_state,omitempty"`
	Up         *bool              `json:"up,omitempty"`
	Rates      map[string]float64 `json:"counter_rates_per_second,omitempty"`
	Conditions []Condition        `json:"conditions"`
}

// StatusDoc builds the /status document.
func (w *Watcher) StatusDoc() Status {
	ok, why := w.Healthy()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := Status{Healthy: ok, Health: why, BootID: w.bootID, Started: w.started, StuckReads: w.stuckReads,
		PollMillis: float64(w.lastPollDur.Microseconds()) / 1000, FullError: w.fullErr, KernelLog: w.cfg.Kmsg,
		Devices: []DeviceStatus{}, Other: []Condition{}}
	if w.kmsgErr != "" {
		s.KernelLog = "unavailable: " + w.kmsgErr
	} else if w.cfg.Kmsg == "" {
		s.KernelLog = "not followed"
	}
	if !w.lastPoll.IsZero() {
		t := w.lastPoll
		s.LastPoll = &t
	}
	if !w.lastFull.IsZero() {
		t := w.lastFull
		s.LastFull = &t
	}
	placed := map[string][]Condition{}
	for _, c := range w.tr.Active() {
		placed[c.Identity.Key] = append(placed[c.Identity.Key], c)
	}
	pp := map[string]*polledPort{}
	for _, p := range w.ports {
		pp[p.p.ID.Key] = p
	}
	for _, d := range w.devs {
		ds := DeviceStatus{Identity: d.ID.Key, Device: d.Name, PCI: d.PCI, NodeGUID: d.GUID, Ports: []PortStatus{},
			Conditions: orEmpty(placed[d.ID.Key])}
		delete(placed, d.ID.Key)
		for _, p := range d.Ports {
			ps := PortStatus{Identity: p.ID.Key, Port: p.Num, LinkLayer: p.LinkLayer, Netdev: p.Netdev,
				Rates: w.rates[p.ID.Key], Conditions: orEmpty(placed[p.ID.Key])}
			delete(placed, p.ID.Key)
			if h := pp[p.ID.Key]; h != nil && h.known {
				up := h.up
				ps.Up = &up
				ps.State, ps.PhysState = string(h.state.last), string(h.phys.last)
			}
			ds.Ports = append(ds.Ports, ps)
		}
		s.Devices = append(s.Devices, ds)
	}
	for _, c := range w.tr.Active() {
		if _, ok := placed[c.Identity.Key]; ok {
			s.Other = append(s.Other, c)
		}
	}
	return s
}

func orEmpty(c []Condition) []Condition {
	if c == nil {
		return []Condition{}
	}
	return c
}

func (w *Watcher) status(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(rw)
	enc.SetIndent("", "  ")
	enc.Encode(w.StatusDoc())
}
