package main

import (
	"strings"
	"testing"
)

// samples builds three rounds of the four configurations with the given rdmadiag numbers.
func samples(noProbeWall, check1, check8, rssKiB, qpcq float64) []Sample {
	var out []Sample
	add := func(config string, devices, qps, round int, label string, wall, cpu float64, rss int64) {
		out = append(out, Sample{Config: config, Devices: devices, QPs: qps, Round: round, Label: label, Command: label,
			WallMS: wall, CPUMS: cpu, MaxRSSKiB: rss})
	}
	for r := 1; r <= 3; r++ {
		for _, c := range []struct {
			name       string
			dev, qps   int
			check, rdm float64
		}{{"1dev", 1, 0, check1, 50}, {"1dev-20000qp", 1, 20000, check1, 10000}, {"8dev-20000qp", 8, 20000, check8, 10000}, {"8dev", 8, 0, check8, 60}} {
			add(c.name, c.dev, c.qps, r, "ibv_devinfo", 100, 90, 5000)
			add(c.name, c.dev, c.qps, r, "rdma_res_qp", c.rdm, c.rdm, 5000)
			add(c.name, c.dev, c.qps, r, "check_noprobe", noProbeWall, noProbeWall, int64(rssKiB))
			add(c.name, c.dev, c.qps, r, "check", c.check, c.check, int64(rssKiB))
			add(c.name, c.dev, c.qps, r, "only_qpcq", qpcq, qpcq, int64(rssKiB))
		}
	}
	return out
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		s      []Sample
		ok     bool
		missed string
	}{
		{"all met", samples(150, 1000, 1400, 30000, 2000), true, ""},
		{"no-probe too slow", samples(250, 1000, 1400, 30000, 2000), false, "1dev: check --no-probe / ibv_devinfo -v"},
		{"8 devices too slow", samples(150, 1000, 1600, 30000, 2000), false, "8 devices / 1 device"},
		{"too much memory", samples(150, 1000, 1400, 50000, 2000), false, "peak RSS"},
		{"qp,cq too slow", samples(150, 1000, 1400, 30000, 3000), false, "--only qp,cq"},
		{"a round missing", samples(150, 1000, 1400, 30000, 2000)[:30], false, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			ok := printTable(&b, tc.s)
			if ok != tc.ok {
				t.Errorf("ok %v, want %v\n%s", ok, tc.ok, b.String())
			}
			if tc.missed != "" {
				found := false
				for _, line := range strings.Split(b.String(), "\n") {
					if strings.Contains(line, tc.missed) && (strings.HasSuffix(line, "MISSED")) {
						found = true
					}
				}
				if !found {
					t.Errorf("no missed target line containing %q\n%s", tc.missed, b.String())
				}
			}
		})
	}
}
