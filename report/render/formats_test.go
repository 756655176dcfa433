package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// parsePrometheus parses exposition text with the Prometheus project's own parser and refuses
// what it lets through but a scrape would not: two samples with the same labels, a sample with a
// timestamp (node_exporter's textfile collector refuses those).
func parsePrometheus(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	for name, mf := range mfs {
		if mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
			t.Errorf("%s: type %s, help %q; want a documented gauge", name, mf.GetType(), mf.GetHelp())
		}
		seen := map[uint64]bool{}
		for _, m := range mf.GetMetric() {
			key := model.LabelsToSignature(labelMap(m))
			if seen[key] {
				t.Errorf("%s: duplicate sample %v", name, labelMap(m))
			}
			seen[key] = true
			if m.TimestampMs != nil {
				t.Errorf("%s: client-side timestamp", name)
			}
		}
	}
	return mfs
}

func labelMap(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return l
}

func TestMetricSubjectDropsProcesses(t *testing.T) {
	for in, want := range map[string]string{
		"mlx5_0/1 pid 4242 (trainer) ERR":      "mlx5_0/1 process ERR",
		"mlx5_0 pid 4242 (trainer) cqe 255":    "mlx5_0 process cqe 255",
		"rxe0/1 pid 7 (a) b (c)) RTS":          "rxe0/1 process RTS", // a command may hold ")" and spaces
		"mlx5_0 pid 9 (command unknown) cqe 1": "mlx5_0 process cqe 1",
		"mlx5_0/1 [ib_core] ERR":               "mlx5_0/1 [ib_core] ERR", // kernel owners are a small set
		"0000:3b:00.0":                         "0000:3b:00.0",
	} {
		if got := MetricSubject(report.Subject{Kind: "qp", Name: in}); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := MetricSubject(report.Subject{Kind: "host"}); got != "host" {
		t.Errorf("nameless subject: %q", got)
	}
}

// hostile is a report whose subjects carry what the exposition format must escape, invalid UTF-8,
// and two processes that normalise to the same labels.
func hostile() *report.Report {
	started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d := 1.25
	return build([]report.Finding{
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: "mlx5_0/1 is DOWN",
			Subject: report.Subject{Kind: "port", Name: "mlx5_0/1", Device: "mlx5_0"}},
		{CheckID: "qp.state", Severity: report.Warning, Fault: "qp-context", Summary: "mlx5_0/1: 3 QP(s) in ERR",
			Subject: report.Subject{Kind: "qp", Name: "mlx5_0/1 pid 1 (a) ERR", Device: "mlx5_0"}},
		{CheckID: "qp.state", Severity: report.Warning, Fault: "qp-context", Summary: "mlx5_0/1: 2 QP(s) in ERR",
			Subject: report.Subject{Kind: "qp", Name: "mlx5_0/1 pid 2 (b) ERR", Device: "mlx5_0"}},
		{CheckID: "driver.modules", Severity: report.OK, Fault: "driver-module", Summary: "loaded",
			Subject: report.Subject{Kind: "module", Name: "odd\"mod\\ule\nx\xff"}},
	}, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: `v1 "q"`, Started: &started, DurationSeconds: &d},
		report.HostInfo{Devices: []string{"mlx5_0"}})
}

func TestRenderPrometheusParsesAndSaysWhatTheReportSays(t *testing.T) {
	r := hostile()
	var b bytes.Buffer
	if err := RenderPrometheus(&b, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	mfs := parsePrometheus(t, b.String())
	findings := mfs["rdmadiag_finding"].GetMetric()
	if len(findings) != 3 {
		t.Fatalf("want 3 finding samples (two processes merged), got %d:\n%s", len(findings), b.String())
	}
	byKey := map[string]*dto.Metric{}
	for _, m := range findings {
		l := labelMap(m)
		byKey[l["check"]+" "+l["subject"]] = m
	}
	port := byKey["port.state mlx5_0/1"]
	if port == nil || port.GetGauge().GetValue() != 1 {
		t.Fatalf("port.state sample missing or wrong:\n%s", b.String())
	}
	if l := labelMap(port); l["layer"] != "port" || l["device"] != "mlx5_0" || l["severity"] != "critical" || l["root_cause"] != "true" {
		t.Errorf("port.state labels %v", l)
	}
	if m := byKey["qp.state mlx5_0/1 process ERR"]; m == nil || m.GetGauge().GetValue() != 2 {
		t.Errorf("merged QP owners: %v", m)
	}
	// Escaped on the way out, the same text on the way in, the line break and the byte that is
	// not UTF-8 neutralised (Printable).
	if m := byKey[`driver.modules odd"mod\ule\nx\xff`]; m == nil {
		t.Errorf("hostile module name did not round-trip:\n%s", b.String())
	}
	for sev, want := range map[string]float64{"critical": 1, "warning": 2, "ok": 1, "unknown": 0, "skipped": 0, "info": 0} {
		got := -1.0
		for _, m := range mfs["rdmadiag_findings"].GetMetric() {
			if labelMap(m)["severity"] == sev {
				got = m.GetGauge().GetValue()
			}
		}
		if got != want {
			t.Errorf("rdmadiag_findings{severity=%q} = %g, want %g", sev, got, want)
		}
	}
	ones := 0
	for _, m := range mfs["rdmadiag_verdict"].GetMetric() {
		if m.GetGauge().GetValue() == 1 {
			ones++
			if labelMap(m)["verdict"] != "critical" {
				t.Errorf("verdict sample %v", labelMap(m))
			}
		}
	}
	if ones != 1 || len(mfs["rdmadiag_verdict"].GetMetric()) != len(report.Verdicts) {
		t.Errorf("verdict: %d samples set, %d samples", ones, len(mfs["rdmadiag_verdict"].GetMetric()))
	}
	for name, want := range map[string]float64{
		"rdmadiag_exit_code":                   2,
		"rdmadiag_devices":                     1,
		"rdmadiag_run_duration_seconds":        1.25,
		"rdmadiag_run_start_timestamp_seconds": float64(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Unix()),
		"rdmadiag_build_info":                  1,
	} {
		ms := mfs[name].GetMetric()
		if len(ms) != 1 || ms[0].GetGauge().GetValue() != want {
			t.Errorf("%s: %v, want %g", name, ms, want)
		}
	}
	if v := labelMap(mfs["rdmadiag_build_info"].GetMetric()[0])["version"]; v != `v1 "q"` {
		t.Errorf("version label %q", v)
	}
}

// Goldens carry no run time: the families that would hold it are left out, not written as 0.
func TestRenderPrometheusWithoutRunTimes(t *testing.T) {
	r := hostile()
	r.Tool.Started, r.Tool.DurationSeconds = nil, nil
	var b bytes.Buffer
	if err := RenderPrometheus(&b, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	mfs := parsePrometheus(t, b.String())
	for _, n := range []string{"rdmadiag_run_duration_seconds", "rdmadiag_run_start_timestamp_seconds"} {
		if _, ok := mfs[n]; ok {
			t.Errorf("%s present without a run time", n)
		}
	}
}

// port is the critical finding of hostile().
func port(r *report.Report) *report.Finding {
	for i := range r.Findings {
		if r.Findings[i].CheckID == "port.state" {
			return &r.Findings[i]
		}
	}
	panic("no port.state finding")
}

func TestNPDLine(t *testing.T) {
	r := hostile()
	port(r).Summary = strings.Repeat("ü", 100) // 200 bytes of two-byte runes
	var b bytes.Buffer
	if err := RenderNPD(&b, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSuffix(b.String(), "\n")
	if strings.Contains(line, "\n") || len(line) > NPDMaxOutput || !utf8.ValidString(line) || !strings.HasPrefix(line, "[reseat-or-clean-cable] mlx5_0/1: ü") {
		t.Errorf("npd line (%d bytes): %q", len(line), line)
	}
}

var nagiosLine = regexp.MustCompile(`^RDMADIAG (OK|WARNING|CRITICAL|UNKNOWN) - [^|\n]+ \| criticals=\d+;;; warnings=\d+;;; unknowns=\d+;;;( duration=[0-9.]+s;;;)?\n$`)

func TestNagiosLine(t *testing.T) {
	r := hostile()
	port(r).Summary = "a | b"
	var b bytes.Buffer
	if err := RenderNagios(&b, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "RDMADIAG CRITICAL - [reseat-or-clean-cable] mlx5_0/1: a / b | criticals=1;;; warnings=2;;; unknowns=0;;; duration=1.25s;;;\n"
	if b.String() != want || !nagiosLine.MatchString(b.String()) {
		t.Errorf("got  %q\nwant %q", b.String(), want)
	}
}

func TestDecisiveFollowsTheVerdict(t *testing.T) {
	warnCause := report.Finding{CheckID: "driver.kernel_log", Severity: report.Warning, Fault: "firmware", Summary: "fw rejected a command",
		Subject: report.Subject{Kind: "pci", Name: "0000:3b:00.0"}, Ref: "w"}
	crit := report.Finding{CheckID: "driver.devices", Severity: report.Critical, Fault: "rdma-device", Summary: "no device",
		Subject: report.Subject{Kind: "host"}, ExplainedBy: []string{"w"}}
	unk := report.Finding{CheckID: "port.state", Severity: report.Unknown, Summary: "unreadable", Subject: report.Subject{Kind: "port", Name: "p"}}
	r := &report.Report{Findings: []report.Finding{crit, warnCause, unk}}
	r.Summary.Verdict = "critical"
	if d := Decisive(r); d == nil || d.Ref != "w" {
		t.Errorf("critical: want the warning that explains the critical, got %+v", d)
	}
	r.Summary.Verdict = "unknown"
	if d := Decisive(r); d == nil || d.Severity != report.Unknown {
		t.Errorf("unknown: want the unknown finding, got %+v", d)
	}
	for _, v := range []string{"healthy", "interrupted"} {
		r.Summary.Verdict = v
		if d := Decisive(r); d != nil {
			t.Errorf("%s: %+v", v, d)
		}
	}
}

// Whatever a hostile tree puts into a subject or a summary, the exposition still parses with
// every finding counted, and the npd and Nagios outputs stay one valid line (npd within 80 bytes).
func FuzzFleetFormats(f *testing.F) {
	f.Add("mlx5_0/1 pid 4242 (trainer) ERR", "mlx5_0", "mlx5_0/1: 3 QP(s) in ERR; dead")
	f.Add("odd\"mod\\ule\nx\xff", "", "a | b\r\nc")
	f.Add("pid 1 ()) (", "é", strings.Repeat("日本", 60))
	f.Add("evil\u202etxt", "\u2066", "\x1b[2J\u009b\u200f")
	f.Fuzz(func(t *testing.T, subject, device, summary string) {
		r := build([]report.Finding{
			{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: summary, Subject: report.Subject{Kind: "port", Name: subject, Device: device}},
			{CheckID: "port.state", Severity: report.OK, Fault: "port-link", Summary: summary, Subject: report.Subject{Kind: "port", Name: subject + "x", Device: device}},
		}, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: subject}, report.HostInfo{})
		var b bytes.Buffer
		if err := RenderPrometheus(&b, r, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		mfs := parsePrometheus(t, b.String())
		n := 0.0
		for _, m := range mfs["rdmadiag_finding"].GetMetric() {
			n += m.GetGauge().GetValue()
		}
		if n != 2 {
			t.Errorf("findings add up to %g:\n%s", n, b.String())
		}
		b.Reset()
		RenderNPD(&b, r, RenderOptions{})
		if line, ok := strings.CutSuffix(b.String(), "\n"); !ok || words.HasUnprintable(line) || len(line) > NPDMaxOutput || !utf8.ValidString(line) {
			t.Errorf("npd: %q", b.String())
		}
		b.Reset()
		RenderNagios(&b, r, RenderOptions{})
		if !nagiosLine.MatchString(b.String()) || strings.Count(b.String(), "|") != 1 || !utf8.ValidString(b.String()) ||
			words.HasUnprintable(strings.TrimSuffix(b.String(), "\n")) {
			t.Errorf("nagios: %q", b.String())
		}
	})
}
