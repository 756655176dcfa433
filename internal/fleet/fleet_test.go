package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
	"github.com/rdmadiag/rdmadiag/report/words"
)

var now = time.Date(2026, 5, 6, 7, 0, 0, 0, time.UTC)

// host builds a small healthy report: one ConnectX-6 Dx (values as sysfs prints them for that
// card: vendor 0x15b3, device 0x101d) with one active 100 Gb/s RoCE port, started 10 minutes
// before now.
func host(name string, mods ...func(*report.Report)) *report.Report {
	started := now.Add(-10 * time.Minute)
	rate := 100.0
	r := &report.Report{SchemaVersion: "1.2", Tool: report.Tool{Name: "rdmadiag", Version: "test", Started: &started},
		Host: report.HostInfo{Source: "live", Hostname: name, Devices: []string{"mlx5_0"}, Inventory: &report.Inventory{Devices: []report.InventoryDevice{{
			Name: "mlx5_0", PCI: "0000:3b:00.0", VendorID: "0x15b3", DeviceID: "0x101d", HCAType: "MT4125",
			FirmwareVersion: "22.43.2026", BoardID: "MT_0000000436", Driver: "mlx5_core",
			Ports: []report.InventoryPort{{Port: 1, State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet", RateGbps: &rate,
				Rate: "100 Gb/sec (2X HDR)", Netdevs: []string{"ens1f0np0"}, NetdevMTU: 9000,
				ErrorCounters: map[string]uint64{"symbol_error": 0, "link_downed": 0}}},
		}}}},
		Summary:  report.Summary{Verdict: "healthy", Counts: map[string]int{}, RootCauses: []string{}},
		Findings: []report.Finding{{CheckID: "port.state", Layer: "port", Subject: report.Subject{Kind: "port", Name: "mlx5_0/1"}, Severity: report.OK, Summary: "active", Fault: "port-link", Ref: "port.state@mlx5_0/1"}},
	}
	for _, m := range mods {
		m(r)
	}
	return r
}

func port0(r *report.Report) *report.InventoryPort { return &r.Host.Inventory.Devices[0].Ports[0] }

func problem(check, kind, subject, sev, summary string, explainedBy ...string) func(*report.Report) {
	return func(r *report.Report) {
		var s report.Severity
		if err := s.UnmarshalText([]byte(sev)); err != nil {
			panic(err)
		}
		r.Findings = append(r.Findings, report.Finding{CheckID: check, Layer: strings.Split(check, ".")[0], Subject: report.Subject{Kind: kind, Name: subject},
			Severity: s, Summary: summary, Fault: "port-link", Ref: check + "@" + subject, ExplainedBy: explainedBy})
		if s > report.Info && r.Summary.Verdict == "healthy" || sev == "critical" {
			r.Summary.Verdict = sev
		}
	}
}

func encode(t testing.TB, r *report.Report) []byte {
	t.Helper()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run aggregates reports given as *report.Report or raw []byte.
func run(t testing.TB, o Options, reps ...any) *Result {
	t.Helper()
	var bs [][]byte
	for _, x := range reps {
		switch v := x.(type) {
		case *report.Report:
			bs = append(bs, encode(t, v))
		case []byte:
			bs = append(bs, v)
		case string:
			bs = append(bs, []byte(v))
		}
	}
	if o.Now.IsZero() {
		o.Now = now
	}
	if o.Stale == 0 {
		o.Stale = time.Hour
	}
	if o.Names == 0 {
		o.Names = 20
	}
	a := NewAggregator(o)
	a.Consume(context.Background(), memInputs(bs), 2)
	return a.Result()
}

func hostsOf(l List) string {
	var s []string
	for _, n := range l.Names {
		s = append(s, n.Host)
	}
	return strings.Join(s, ",")
}

func TestHealthyFleet(t *testing.T) {
	r := run(t, Options{}, host("a"), host("b"), host("c"))
	if !r.Healthy || r.ExitCode != 0 || len(r.Drift) != 0 || len(r.RootCauses) != 0 || r.Stale.Count+r.Failed.Count != 0 {
		t.Fatalf("%+v", r)
	}
	if len(r.Verdicts) != 1 || r.Verdicts[0].Verdict != "healthy" || r.Verdicts[0].Count != 3 {
		t.Errorf("verdicts %+v", r.Verdicts)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil || !strings.Contains(b.String(), "Fleet: HEALTHY (3 host(s)") {
		t.Errorf("%v\n%s", err, b.String())
	}
	b.Reset()
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back.Kind != "rdmadiag-fleet" || !back.Healthy {
		t.Errorf("JSON: %v %+v", err, back)
	}
	if r := run(t, Options{}); r.Healthy || r.ExitCode != 1 {
		t.Errorf("no report at all proves nothing: %+v", r)
	}
}

func TestVerdictsAndFailed(t *testing.T) {
	r := run(t, Options{},
		host("ok1"),
		host("warn1", problem("port.counters", "port", "mlx5_0/1", "warning", "symbol errors")),
		host("crit1", problem("port.state", "port", "mlx5_0/1", "critical", "down")),
		host("unk1", func(r *report.Report) { r.Summary.Verdict = "unknown" }),
		host("int1", func(r *report.Report) { r.Summary.Verdict = "interrupted" }),
		host("v2", func(r *report.Report) { r.SchemaVersion = "2.0" }),
		host("odd", func(r *report.Report) { r.Summary.Verdict = "fine" }),
		`{"not": "a report"}`,
		`{"schema_version": "1.2", "findings": [`,
		``,
	)
	got := map[string]string{}
	for _, v := range r.Verdicts {
		got[v.Verdict] = fmt.Sprint(v.Count, " ", hostsOf(v.List))
	}
	want := map[string]string{"healthy": "1 ok1", "warning": "1 warn1", "critical": "1 crit1", "unknown": "1 unk1", "interrupted": "1 int1"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("verdict %s: got %q, want %q", k, got[k], v)
		}
	}
	if r.Failed.Count != 7 {
		t.Fatalf("failed: %+v", r.Failed)
	}
	reasons := map[string]string{}
	for _, n := range r.Failed.Names {
		reasons[n.Host] = n.Detail
	}
	for h, sub := range map[string]string{
		"unk1": "could not be checked", "int1": "interrupted", "v2": `schema_version "2.0": this rdmadiag reads 1.x`,
		"odd": `verdict "fine"`, "mem/7.json": "no schema_version", "mem/8.json": "truncated", "mem/9.json": "empty",
	} {
		if !strings.Contains(reasons[h], sub) {
			t.Errorf("failed %s: %q, want %q", h, reasons[h], sub)
		}
	}
	if r.Healthy || r.ExitCode != 1 {
		t.Errorf("exit %d", r.ExitCode)
	}
}

// The error document `check --format json` writes when a run ends without a report is a host
// that could not be checked, with the document's own message, not a report that failed to decode.
func TestErrorDocument(t *testing.T) {
	var doc bytes.Buffer
	if err := render.RenderError(&doc, report.Tool{Name: "rdmadiag", Version: "test"},
		errors.New("open snapshot h.tar.gz: unexpected EOF"), 3); err != nil {
		t.Fatal(err)
	}
	r := run(t, Options{}, host("ok1"), doc.Bytes())
	if len(r.Verdicts) != 2 || r.Verdicts[1].Verdict != "unknown" || hostsOf(r.Verdicts[1].List) != "mem/1.json" {
		t.Errorf("verdicts: %+v", r.Verdicts)
	}
	if r.Failed.Count != 1 || !strings.Contains(r.Failed.Names[0].Detail, "could not check the host (error document, exit 3): open snapshot h.tar.gz: unexpected EOF") {
		t.Errorf("failed: %+v", r.Failed)
	}
	if r.Stale.Count != 0 || len(r.Notes) != 1 || r.ExitCode != 1 {
		t.Errorf("an error document has no start time nor inventory to note: stale %+v, notes %q, exit %d", r.Stale, r.Notes, r.ExitCode)
	}
}

// A host with several reports counts once, with its newest (by tool.started), whatever order
// the reports are read in; the older ones are named as ignored. Two copies of one report (the
// same start time) count once too.
func TestDuplicateHosts(t *testing.T) {
	older := host("a")
	newer := host("a", problem("port.state", "port", "mlx5_0/1", "critical", "down"), func(r *report.Report) {
		s := now.Add(-5 * time.Minute)
		r.Tool.Started = &s
	})
	for _, order := range [][]any{{older, newer, host("b")}, {newer, host("b"), older}} {
		r := run(t, Options{}, order...)
		got := map[string]string{}
		for _, v := range r.Verdicts {
			got[v.Verdict] = fmt.Sprint(v.Count, " ", hostsOf(v.List))
		}
		if len(got) != 2 || got["critical"] != "1 a" || got["healthy"] != "1 b" {
			t.Errorf("verdicts: %v", got)
		}
		if len(r.RootCauses) != 1 || r.RootCauses[0].Hosts.Count != 1 {
			t.Errorf("root causes: %+v", r.RootCauses)
		}
		old := fmt.Sprintf("mem/%d.json", slices.Index(order, any(older)))
		if r.Reports != 3 || r.Duplicates.Count != 1 || r.Duplicates.Names[0].Host != "a" ||
			!strings.HasPrefix(r.Duplicates.Names[0].Detail, old+", started 2026-05-06T06:50:00Z: older than the host's newest report, started 2026-05-06T06:55:00Z") {
			t.Errorf("duplicates: %d reports, %+v", r.Reports, r.Duplicates)
		}
		var b bytes.Buffer
		if err := WriteTable(&b, r); err != nil || !strings.Contains(b.String(), "Older duplicate reports ignored") ||
			!strings.Contains(b.String(), "1 older duplicate report(s) ignored") {
			t.Errorf("%v\n%s", err, b.String())
		}
	}
	r := run(t, Options{}, host("a"), host("a"), host("b"))
	if len(r.Verdicts) != 1 || r.Verdicts[0].Count != 2 || r.Duplicates.Count != 1 ||
		!strings.Contains(r.Duplicates.Names[0].Detail, "the same start time as the report of this host that is used") || !r.Healthy {
		t.Errorf("copies: %+v %+v", r.Verdicts, r.Duplicates)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil || !strings.Contains(b.String(), "Fleet: HEALTHY (2 host(s)") {
		t.Errorf("%v\n%s", err, b.String())
	}
	// A host is the name its report gives, even one that is also a file's name.
	r = run(t, Options{}, host("mem/0.json"), host("mem/0.json"))
	if r.Verdicts[0].Count != 1 || r.Duplicates.Count != 1 {
		t.Errorf("host named like its file: %+v %+v", r.Verdicts, r.Duplicates)
	}
}

// Root causes group by check, fault and subject kind, whatever the subject's name and summary
// (which carry PIDs and sizes); explained findings and non-problems are not root causes; the
// ranking is by hosts hit, then severity.
func TestRootCauses(t *testing.T) {
	r := run(t, Options{},
		host("a", problem("qp.state", "qp", "mlx5_0 pid 120", "critical", "3 QPs of pid 120 in ERR"),
			problem("qp.state", "qp", "mlx5_0 pid 121", "warning", "1 QP of pid 121 in ERR")),
		host("b", problem("qp.state", "qp", "mlx5_0 pid 9000", "warning", "7 QPs of pid 9000 in ERR")),
		host("c", problem("qp.state", "qp", "mlx5_1 pid 5", "warning", "1 QP of pid 5 in ERR"),
			problem("cq.errors", "device", "mlx5_1", "critical", "overrun", "qp.state@mlx5_1 pid 5")),
		host("d", problem("port.counters", "port", "mlx5_0/1", "warning", "symbol errors"),
			problem("port.state", "port", "mlx5_0/1", "info", "noted")),
		host("e", problem("pcie.aer", "pci", "0000:3b:00.0", "critical", "uncorrectable")),
	)
	var got []string
	for _, c := range r.RootCauses {
		got = append(got, fmt.Sprintf("%s/%s %d %s [%s]", c.CheckID, c.SubjectKind, c.Hosts.Count, c.Severity, hostsOf(c.Hosts)))
	}
	want := []string{"qp.state/qp 3 critical [a,b,c]", "pcie.aer/pci 1 critical [e]", "port.counters/port 1 warning [d]"}
	if !slices.Equal(got, want) {
		t.Errorf("root causes:\n got %q\nwant %q", got, want)
	}
	if d := r.RootCauses[0].Hosts.Names[0].Detail; d != "mlx5_0 pid 120: 3 QPs of pid 120 in ERR" {
		t.Errorf("a host's worst finding is its example: %q", d)
	}
}

func TestDrift(t *testing.T) {
	slow := func(g float64) func(*report.Report) { return func(r *report.Report) { port0(r).RateGbps = &g } }
	for _, tc := range []struct {
		name  string
		odd   func(*report.Report)
		attr  string
		value string
		slow  bool
	}{
		{"firmware", func(r *report.Report) { r.Host.Inventory.Devices[0].FirmwareVersion = "22.39.1002" }, AttrFirmware, "22.39.1002", false},
		{"psid", func(r *report.Report) { r.Host.Inventory.Devices[0].BoardID = "MT_0000000359" }, AttrBoard, "MT_0000000359", false},
		{"driver version", func(r *report.Report) { r.Host.Inventory.Devices[0].DriverVersion = "24.10-1.1.4" }, AttrDriverVersion, "24.10-1.1.4", false},
		{"link layer", func(r *report.Report) { port0(r).LinkLayer = "InfiniBand" }, AttrLinkLayer, "InfiniBand", false},
		{"mtu", func(r *report.Report) { port0(r).NetdevMTU = 1500 }, AttrMTU, "1500", false},
		{"slower port", slow(25), AttrRate, "25", true},
		{"faster port", slow(200), AttrRate, "200", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, Options{}, host("n1"), host("n2"), host("n3"), host("n4", tc.odd))
			var ds []Drift
			for _, d := range r.Drift {
				if d.Attribute == tc.attr {
					ds = append(ds, d)
				}
			}
			if len(ds) != 1 {
				t.Fatalf("drift %+v", r.Drift)
			}
			d := ds[0]
			if d.Majority.Hosts.Count != 3 || d.Tie || len(d.Odd) != 1 || d.Odd[0].Value != tc.value || hostsOf(d.Odd[0].Hosts) != "n4" {
				t.Errorf("%+v", d)
			}
			if got := len(r.Outliers.SlowPorts) == 1 && hostsOf(r.Outliers.SlowPorts[0].Hosts) == "n4"; got != tc.slow {
				t.Errorf("slow ports %+v, want slow %v", r.Outliers.SlowPorts, tc.slow)
			}
			if r.ExitCode != 1 {
				t.Errorf("drift needs attention: exit %d", r.ExitCode)
			}
		})
	}
	// A port that is not active does not say what its link runs at; an even split has no
	// majority and no slower side.
	down := func(r *report.Report) { g := 10.0; port0(r).RateGbps, port0(r).State = &g, "DOWN" }
	if r := run(t, Options{}, host("a"), host("b", down)); len(r.Drift) != 0 {
		t.Errorf("down port: %+v", r.Drift)
	}
	r := run(t, Options{}, host("a"), host("b", slow(25)))
	if len(r.Drift) != 1 || !r.Drift[0].Tie || len(r.Outliers.SlowPorts) != 0 {
		t.Errorf("tie: %+v %+v", r.Drift, r.Outliers.SlowPorts)
	}
}

func TestStale(t *testing.T) {
	old := func(d time.Duration) func(*report.Report) {
		return func(r *report.Report) { s := now.Add(-d); r.Tool.Started = &s }
	}
	undated := func(r *report.Report) { r.Tool.Started = nil }
	r := run(t, Options{}, host("fresh"), host("old", old(2*time.Hour)), host("undated", undated), host("future", old(-time.Hour)))
	if r.Stale.Count != 2 || hostsOf(r.Stale) != "old,undated" || !strings.Contains(r.Stale.Names[0].Detail, "2h0m0s before now") ||
		!strings.Contains(r.Stale.Names[1].Detail, "age is unknown") {
		t.Errorf("%+v", r.Stale)
	}
	if r := run(t, Options{Stale: -1}, host("old", old(2*time.Hour))); r.Stale.Count != 0 || !r.Healthy {
		t.Errorf("age not judged: %+v", r.Stale)
	}
}

// The names kept are the first by name whatever order the reports come in, and the counts are
// complete.
func TestNamesCap(t *testing.T) {
	var reps []any
	for i := range 7 {
		name := fmt.Sprintf("h%d", i)
		if i < 5 {
			reps = append(reps, host(name, func(r *report.Report) { r.Host.Inventory.Devices[0].FirmwareVersion = "old" }))
		} else {
			reps = append(reps, host(name))
		}
	}
	for i := range 10 {
		rand.New(rand.NewSource(int64(i))).Shuffle(len(reps), func(a, b int) { reps[a], reps[b] = reps[b], reps[a] })
		r := run(t, Options{Names: 2}, reps...)
		if len(r.Drift) != 1 {
			t.Fatalf("%+v", r.Drift)
		}
		d := r.Drift[0] // "old" is on 5 hosts: the majority; the two others are odd
		if d.Majority.Value != "old" || d.Majority.Hosts.Count != 5 || hostsOf(d.Odd[0].Hosts) != "h5,h6" {
			t.Fatalf("%+v", d)
		}
		v := r.Verdicts[0]
		if v.Count != 7 || hostsOf(v.List) != "h0,h1" || v.More != 5 {
			t.Fatalf("verdict list %+v", v)
		}
	}
}

func TestCounterOutliers(t *testing.T) {
	counters := func(v uint64) func(*report.Report) {
		return func(r *report.Report) {
			port0(r).ErrorCounters = map[string]uint64{"symbol_error": v, "link_downed": 0}
		}
	}
	var reps []any
	for i := range 40 {
		reps = append(reps, host(fmt.Sprintf("n%02d", i), counters(uint64(i%5))))
	}
	reps = append(reps, host("bad", counters(5000)))
	r := run(t, Options{}, reps...)
	if len(r.Outliers.ErrorCounters) != 1 {
		t.Fatalf("%+v", r.Outliers.ErrorCounters)
	}
	c := r.Outliers.ErrorCounters[0]
	// Values 0..4 eight times each and 5000: Q1 1, median 2, Q3 3, fence 3 + 3*2 = 9.
	if c.Counter != "symbol_error" || c.Ports != 41 || c.Q1 != 1 || c.Median != 2 || c.Q3 != 3 || c.Fence != 9 || c.Above != 1 ||
		len(c.Top) != 1 || c.Top[0].Host != "bad" || c.Top[0].Where != "mlx5_0/1" || c.Top[0].Value != 5000 {
		t.Errorf("%+v", c)
	}
	if !r.Healthy || r.ExitCode != 0 {
		t.Errorf("counter outliers are relative and leave the exit code alone: %d", r.ExitCode)
	}
	if r := run(t, Options{}, reps[:40]...); len(r.Outliers.ErrorCounters) != 0 {
		t.Errorf("no outlier in a plain spread: %+v", r.Outliers.ErrorCounters)
	}
}

func TestHist(t *testing.T) {
	for _, v := range []uint64{0, 1, 1023, 1024, 1025, 5000, 1 << 40, 1<<64 - 1} {
		b := bucketOf(v)
		lo := lowerBound(b)
		if lo > v || (v < 1024 && lo != v) || float64(v-lo) > float64(v)/512 {
			t.Errorf("%d: bucket %d from %d", v, b, lo)
		}
		if bucketOf(lo) != b {
			t.Errorf("%d: the lower bound %d is not in bucket %d", v, lo, b)
		}
	}
	var h hist
	for v := range uint64(100) {
		h.add(v)
	}
	if q := h.quantile(0.5); q != 49 {
		t.Errorf("median of 0..99 (nearest rank) = %d", q)
	}
	if a := h.above(90); a != 9 {
		t.Errorf("above 90: %d", a)
	}
}

// Text from reports cannot forge lines or reach the terminal as escapes.
func TestHostileText(t *testing.T) {
	r := run(t, Options{}, host("evil\x1b[2J\nFleet: HEALTHY", problem("port.state", "port", "x\ry", "critical", "a\nb")))
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\r") || strings.Contains(b.String(), "\nFleet: HEALTHY") {
		t.Errorf("%q", b.String())
	}
}

func TestHostFallback(t *testing.T) {
	r := run(t, Options{}, host("", func(r *report.Report) { r.Summary.Verdict = "warning" }))
	if hostsOf(r.Verdicts[0].List) != "mem/0.json" {
		t.Errorf("%+v", r.Verdicts)
	}
}

func TestInputs(t *testing.T) {
	dir := t.TempDir()
	mk := func(p, s string) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("a.json", "{}")
	mk("rack1/b.json", "{}")
	mk("rack1/deep/c.json", "{}")
	mk("rack1/notes.txt", "x")
	if err := os.Symlink(dir, filepath.Join(dir, "rack1", "loop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "a.json"), filepath.Join(dir, "rack1", "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling.json")); err != nil {
		t.Fatal(err)
	}
	var got []string
	var failed []string
	for in := range Inputs([]string{dir, filepath.Join(dir, "missing.json"), "-"}, strings.NewReader("{}")) {
		got = append(got, strings.TrimPrefix(in.Name, dir))
		rc, err := in.Open(context.Background())
		if err != nil {
			failed = append(failed, strings.TrimPrefix(in.Name, dir))
			continue
		}
		rc.Close()
	}
	slices.Sort(got)
	want := []string{"-", "/a.json", "/missing.json", "/rack1/b.json", "/rack1/deep/c.json", "/rack1/link.json"}
	if !slices.Equal(got, want) || !slices.Equal(failed, []string{"/missing.json"}) {
		t.Errorf("inputs %q (failed %q), want %q", got, failed, want)
	}
}

// --names 0 names every host, once each, in order.
func TestNamesAll(t *testing.T) {
	a := NewAggregator(Options{Now: now})
	for _, h := range []string{"c", "a", "b", "a"} {
		a.add(hostRecord{host: h, source: h, verdict: "warning"})
	}
	l := a.Result().Verdicts[0].List
	if l.Count != 4 || hostsOf(l) != "a,b,c" || l.More != 0 {
		t.Errorf("%+v", l)
	}
}

// A report far beyond any host (20,000 kinds of root cause, 16,000 cards with their own
// firmware, within the reader's limits) is read in linear time, and the caps it meets are said.
func TestHostileSizes(t *testing.T) {
	r := host("big")
	dev := r.Host.Inventory.Devices[0]
	r.Host.Inventory.Devices = nil
	for i := range 20000 {
		if i < 16000 {
			d := dev
			d.Name, d.FirmwareVersion, d.BoardID = fmt.Sprintf("mlx5_%d", i), fmt.Sprintf("22.%d.1", i), fmt.Sprintf("B%d", i%5000)
			r.Host.Inventory.Devices = append(r.Host.Inventory.Devices, d)
		}
		r.Findings = append(r.Findings, report.Finding{CheckID: fmt.Sprintf("port.c%d", i), Layer: "port", Subject: report.Subject{Kind: "port", Name: "p"},
			Severity: report.Warning, Summary: "s", Fault: "port-link", Ref: fmt.Sprint(i)})
	}
	r.Summary.Verdict = "warning"
	start := time.Now()
	res := run(t, Options{}, r, host("small"))
	if res.Reports != 2 || len(res.RootCauses) != maxRootsPerReport {
		t.Fatalf("reports %d, root causes %d, failed %+v", res.Reports, len(res.RootCauses), res.Failed)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "caps reached") }) {
		t.Errorf("notes %q", res.Notes)
	}
	t.Logf("%s", time.Since(start))
}

// A report rewritten between the two readings (a collector writing into the directory while
// fleet reads it) must not make its host vanish, and a fleet with a critical host is never
// healthy: the later report is kept, and a host none of whose reports the second reading could
// keep is a failed host.
func TestDuplicateRewrittenBetweenReadings(t *testing.T) {
	at := func(min int) func(*report.Report) {
		return func(r *report.Report) { s := now.Add(time.Duration(min) * time.Minute); r.Tool.Started = &s }
	}
	crit := problem("port.state", "port", "mlx5_0/1", "critical", "down")
	first := [][]byte{encode(t, host("a", crit, at(-20))), encode(t, host("a", crit, at(-10))), encode(t, host("b"))}
	for name, second := range map[string][]byte{
		"rewritten later":  encode(t, host("a", crit, at(-1))),
		"rewritten older":  encode(t, host("a", crit, at(-30))),
		"replaced by junk": []byte("{"),
	} {
		reads := 0
		inputs := func(yield func(Input) bool) {
			reads++
			for i, b := range first {
				if reads == 2 && i == 1 {
					b = second
				}
				if !yield(Input{Name: fmt.Sprintf("mem/%d.json", i), Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }}) {
					return
				}
			}
		}
		a := NewAggregator(Options{Now: now, Stale: time.Hour, Names: 20})
		a.Consume(context.Background(), inputs, 2)
		r := a.Result()
		if r.Healthy || r.ExitCode == 0 {
			t.Errorf("%s: healthy with a critical host", name)
		}
		var hosts []string
		for _, v := range r.Verdicts {
			hosts = append(hosts, v.Verdict+":"+hostsOf(v.List))
		}
		for _, f := range r.Failed.Names {
			hosts = append(hosts, "failed:"+f.Host)
		}
		if !slices.ContainsFunc(hosts, func(h string) bool { return strings.Contains(h, "a") && !strings.HasPrefix(h, "healthy") }) {
			t.Errorf("%s: host a vanished: %v", name, hosts)
		}
	}
}

// A copy of standard input that cannot be written (a full disk) gives up the removal of older
// duplicates, not the reading of the reports.
func TestSpoolWriteErrorDoesNotFailTheReading(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spool")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // writes now fail
	var s spools
	w := &spoolWriter{f: f, s: &s, name: "-"}
	data := []byte(`{"kind":"x"}`)
	got, err := io.ReadAll(io.TeeReader(bytes.NewReader(data), w))
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("reading through a failing copy: %q, %v", got, err)
	}
	if s.err == nil || !strings.Contains(s.err.Error(), "keep a copy of -") {
		t.Errorf("the failed copy is not remembered: %v", s.err)
	}
}

// A root cause's detail names its subject once: a summary that starts with its subject (or its
// device) is kept as it is, any other is preceded by the subject.
func TestRootCauseNamesSubjectOnce(t *testing.T) {
	for _, tc := range []struct {
		subject report.Subject
		summary string
		want    string
	}{
		{report.Subject{Kind: "device", Name: "ConnectX-7 15b3:1021", Device: "mlx5_2"}, "ConnectX-7 15b3:1021: 3 identical cards differ: firmware 28.39.1002 on mlx5_2",
			"ConnectX-7 15b3:1021: 3 identical cards differ: firmware 28.39.1002 on mlx5_2"},
		{report.Subject{Kind: "port", Name: "mlx5_0/1"}, "mlx5_0/1 is DOWN", "mlx5_0/1 is DOWN"},
		{report.Subject{Kind: "qp", Name: "rxe0/1 pid 120 (labqp) ERR", Device: "rxe0"}, "rxe0: 3 QP(s) in ERR", "rxe0: 3 QP(s) in ERR"},
		{report.Subject{Kind: "port", Name: "mlx5_10/1"}, "mlx5_1 shares a slot", "mlx5_10/1: mlx5_1 shares a slot"},
		{report.Subject{Kind: "port", Name: "mlx5_0/1"}, "link is down", "mlx5_0/1: link is down"},
		{report.Subject{Kind: "host"}, "kernel taint", "host: kernel taint"},
	} {
		r := run(t, Options{}, host("a", func(r *report.Report) {
			r.Summary.Verdict = "warning"
			r.Findings = append(r.Findings, report.Finding{CheckID: "firmware.consistency", Subject: tc.subject, Severity: report.Warning,
				Summary: tc.summary, Fault: "fw-drift"})
		}))
		if len(r.RootCauses) != 1 || r.RootCauses[0].Hosts.Names[0].Detail != tc.want {
			t.Errorf("%q on %+v: %+v, want detail %q", tc.summary, tc.subject, r.RootCauses, tc.want)
		}
	}
}

// withSubject writes a summary as the report's own status line does (report.Finding.ShortText),
// for every finding of every golden report whose summary the status line does not shorten.
func TestWithSubjectAsTheReport(t *testing.T) {
	golden, _ := filepath.Glob("../../fixtures/sysfs/*/check.golden.json")
	n := 0
	for _, g := range golden {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		var rep report.Report
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		for _, f := range rep.Findings {
			if strings.Contains(f.Summary, "; ") {
				continue
			}
			var d findingDoc
			d.Subject.Kind, d.Subject.Name, d.Subject.Device, d.Summary = f.Subject.Kind, f.Subject.Name, f.Subject.Device, f.Summary
			if got, want := withSubject(&d), words.ShortText(&f, 1<<20); got != want {
				t.Errorf("%s: %s: %q, the report writes %q", g, f.CheckID, got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no finding compared")
	}
}

// acting sets the action of the finding with this subject.
func acting(subject string, a report.Action) func(*report.Report) {
	return func(r *report.Report) {
		for i := range r.Findings {
			if r.Findings[i].Subject.Name == subject {
				r.Findings[i].Action = a
			}
		}
	}
}

// Hosts are counted by the actions their root causes ask for, each host once per action, most
// hosts first; a root cause's row names its action, and two actions of one check are two rows.
func TestHostsByAction(t *testing.T) {
	cable := func(name string) *report.Report {
		return host(name, problem("port.state", "port", "mlx5_0/1", "critical", "DOWN"), acting("mlx5_0/1", report.ActionReplaceCableOrModule),
			problem("port.rate", "port", "mlx5_1/1", "warning", "1X"), acting("mlx5_1/1", report.ActionReplaceCableOrModule))
	}
	r := run(t, Options{}, cable("a"), cable("b"), cable("c"),
		host("d", problem("port.state", "port", "mlx5_0/1", "critical", "INIT"), acting("mlx5_0/1", report.ActionFixConfiguration),
			problem("port.rate", "port", "mlx5_1/1", "warning", "1X"), acting("mlx5_1/1", report.ActionReplaceCableOrModule)),
		host("e", problem("port.state", "port", "mlx5_0/1", "critical", "old report, no action")),
		host("f", problem("port.state", "port", "mlx5_0/1", "critical", "hostile"), acting("mlx5_0/1", "format-the-disk")))
	var got []string
	for _, g := range r.Actions {
		got = append(got, fmt.Sprintf("%d %s [%s]", g.Hosts.Count, g.Action, hostsOf(g.Hosts)))
	}
	want := []string{"4 replace-cable-or-module [a,b,c,d]", "1 fix-configuration [d]"}
	if !slices.Equal(got, want) {
		t.Errorf("actions:\n got %q\nwant %q", got, want)
	}
	rows := map[string]int{}
	for _, c := range r.RootCauses {
		rows[c.CheckID+" "+c.Action] = c.Hosts.Count
	}
	if rows["port.state replace-cable-or-module"] != 3 || rows["port.state fix-configuration"] != 1 || rows["port.state "] != 2 {
		t.Errorf("root causes by action: %v", rows)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, r); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "4 host(s):  replace-cable-or-module  a, b, c, d\n") ||
		!strings.Contains(out, "ACTION") || strings.Contains(out, "format-the-disk") {
		t.Errorf("table:\n%s", out)
	}
}
