package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// labels are the commands of every configuration, in the table's order.
var labels = []string{"ibv_devinfo", "rdma_res_qp", "start", "only_verbs", "check_noprobe", "check", "only_qpcq", "check_noprobe_before", "check_before"}

// rssLabels are the rdmadiag runs the peak RSS target applies to: the full run is not measured
// while QPs are held (lab/payloads/speed says why).
var rssLabels = []string{"check_noprobe", "only_qpcq"}

// The targets, as ratios within one boot (MB is 10^6 bytes).
const (
	maxNoProbeVsDevinfo = 2.0  // check --no-probe wall / ibv_devinfo -v wall, idle configurations
	maxCPUPerWall       = 2.0  // check --no-probe CPU / its wall (strictly below)
	maxEightVsOne       = 1.5  // check (with probes) on 8 devices / on 1 device, idle
	maxRSSBytes         = 50e6 // rdmadiag peak RSS with 8 devices and 20,000 QPs (strictly below)
	maxQPCQVsRdma       = 0.25 // check --only qp,cq --no-probe / rdma -j res show qp, 20,000 QPs
	bigQPs              = 20000
)

// data indexes samples by configuration, label and round.
type data struct {
	configs []string // in order of appearance
	meta    map[string]Sample
	by      map[string]map[string]map[int]Sample
	rounds  []int
}

func index(samples []Sample) *data {
	d := &data{meta: map[string]Sample{}, by: map[string]map[string]map[int]Sample{}}
	seenRound := map[int]bool{}
	for _, s := range samples {
		if _, ok := d.by[s.Config]; !ok {
			d.configs = append(d.configs, s.Config)
			d.meta[s.Config] = s
			d.by[s.Config] = map[string]map[int]Sample{}
		}
		if d.by[s.Config][s.Label] == nil {
			d.by[s.Config][s.Label] = map[int]Sample{}
		}
		d.by[s.Config][s.Label][s.Round] = s
		if !seenRound[s.Round] {
			seenRound[s.Round] = true
			d.rounds = append(d.rounds, s.Round)
		}
	}
	sort.Ints(d.rounds)
	return d
}

// get returns a sample that counts: a run killed by a signal (the guest's OOM killer, say) has
// no time worth comparing, and is reported as missing.
func (d *data) get(config, label string, round int) (Sample, bool) {
	s, ok := d.by[config][label][round]
	return s, ok && s.Exit >= 0
}

// find returns the first configuration with this many devices and at least/exactly these QPs.
func (d *data) find(devices int, match func(qps int) bool) string {
	for _, c := range d.configs {
		if m := d.meta[c]; m.Devices == devices && match(m.QPs) {
			return c
		}
	}
	return ""
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// printTable writes the per-configuration tables and the targets; it returns whether every
// target was met in every round.
func printTable(w io.Writer, samples []Sample) bool {
	d := index(samples)
	for _, c := range d.configs {
		m := d.meta[c]
		fmt.Fprintf(w, "\n== %s: %d RDMA device(s), %d QPs held ==\n", c, m.Devices, m.QPs)
		fmt.Fprintf(w, "%-44s %-26s %9s %9s %8s %8s  %-20s %-20s\n", "command", "wall ms per round", "wall med", "cpu med", "cpu/wall", "RSS MB",
			"wall/ibv_devinfo", "wall/rdma res qp")
		for _, l := range labels {
			var walls, cpus []float64
			var rss int64
			var cmd string
			var rw, rd, rr []string
			for _, r := range d.rounds {
				s, ok := d.by[c][l][r]
				if !ok {
					continue
				}
				cmd = s.Command
				if s.Exit < 0 {
					rw = append(rw, "killed")
					continue
				}
				walls, cpus = append(walls, s.WallMS), append(cpus, s.CPUMS)
				rss = max(rss, s.MaxRSSKiB)
				rw = append(rw, fmt.Sprintf("%.0f", s.WallMS))
				rd = append(rd, ratioText(d, c, r, s.WallMS, "ibv_devinfo"))
				rr = append(rr, ratioText(d, c, r, s.WallMS, "rdma_res_qp"))
			}
			if cmd == "" {
				continue
			}
			if len(walls) == 0 {
				fmt.Fprintf(w, "%-44s %-26s\n", shorten(cmd, 44), strings.Join(rw, " "))
				continue
			}
			wm, cm := median(walls), median(cpus)
			fmt.Fprintf(w, "%-44s %-26s %9.0f %9.0f %8.2f %8.1f  %-20s %-20s\n", shorten(cmd, 44), strings.Join(rw, " "), wm, cm, cm/wm,
				float64(rss)*1024/1e6, strings.Join(rd, " "), strings.Join(rr, " "))
		}
	}
	fmt.Fprintf(w, "\n== targets (every round must meet each) ==\n")
	all := true
	report := func(name string, vals []string, ok bool) {
		res := "ok"
		if !ok {
			res, all = "MISSED", false
		}
		fmt.Fprintf(w, "%-64s %-30s %s\n", name, strings.Join(vals, " "), res)
	}
	for _, c := range d.configs {
		if d.meta[c].QPs != 0 {
			continue
		}
		vals, ok := d.ratios(func(r int) (float64, bool) {
			a, ok1 := d.get(c, "check_noprobe", r)
			b, ok2 := d.get(c, "ibv_devinfo", r)
			return a.WallMS / b.WallMS, ok1 && ok2
		}, func(x float64) bool { return x <= maxNoProbeVsDevinfo })
		report(fmt.Sprintf("%s: check --no-probe / ibv_devinfo -v wall <= %.1f", c, maxNoProbeVsDevinfo), vals, ok)
	}
	for _, c := range d.configs {
		vals, ok := d.ratios(func(r int) (float64, bool) {
			a, ok := d.get(c, "check_noprobe", r)
			return a.CPUMS / a.WallMS, ok
		}, func(x float64) bool { return x < maxCPUPerWall })
		report(fmt.Sprintf("%s: check --no-probe CPU / wall < %.1f", c, maxCPUPerWall), vals, ok)
	}
	one, eight := d.find(1, func(q int) bool { return q == 0 }), d.find(8, func(q int) bool { return q == 0 })
	vals, ok := d.ratios(func(r int) (float64, bool) {
		a, ok1 := d.get(eight, "check", r)
		b, ok2 := d.get(one, "check", r)
		return a.WallMS / b.WallMS, ok1 && ok2 && one != "" && eight != ""
	}, func(x float64) bool { return x <= maxEightVsOne })
	report(fmt.Sprintf("check with probes: 8 devices / 1 device wall <= %.1f", maxEightVsOne), vals, ok)
	big8 := d.find(8, func(q int) bool { return q >= bigQPs })
	vals, ok = d.ratios(func(r int) (float64, bool) {
		var worst int64
		found := big8 != ""
		for _, l := range rssLabels {
			s, ok := d.get(big8, l, r)
			found = found && ok
			worst = max(worst, s.MaxRSSKiB)
		}
		return float64(worst) * 1024 / 1e6, found
	}, func(x float64) bool { return x < maxRSSBytes/1e6 })
	report(fmt.Sprintf("8 devices, %d+ QPs: rdmadiag peak RSS MB < %.0f", bigQPs, maxRSSBytes/1e6), vals, ok)
	anyBig := false
	for _, c := range d.configs {
		if d.meta[c].QPs < bigQPs {
			continue
		}
		anyBig = true
		vals, ok := d.ratios(func(r int) (float64, bool) {
			a, ok1 := d.get(c, "only_qpcq", r)
			b, ok2 := d.get(c, "rdma_res_qp", r)
			return a.WallMS / b.WallMS, ok1 && ok2
		}, func(x float64) bool { return x <= maxQPCQVsRdma })
		report(fmt.Sprintf("%s: --only qp,cq --no-probe / rdma -j res show qp <= %.2f", c, maxQPCQVsRdma), vals, ok)
	}
	if !anyBig {
		report(fmt.Sprintf("--only qp,cq --no-probe / rdma -j res show qp with %d+ QPs", bigQPs), []string{"missing"}, false)
	}
	return all
}

// ratios evaluates f in every round; ok is whether every round had data and passed.
func (d *data) ratios(f func(round int) (float64, bool), pass func(float64) bool) ([]string, bool) {
	var vals []string
	ok := len(d.rounds) > 0
	for _, r := range d.rounds {
		v, have := f(r)
		if !have {
			vals = append(vals, "missing")
			ok = false
			continue
		}
		vals = append(vals, fmt.Sprintf("%.2f", v))
		ok = ok && pass(v)
	}
	return vals, ok
}

func ratioText(d *data, config string, round int, wall float64, base string) string {
	b, ok := d.get(config, base, round)
	if !ok || b.WallMS == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", wall/b.WallMS)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
