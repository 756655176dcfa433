package render

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// hostileStrings is what a hostile tree, snapshot or report can put into any string rdmadiag
// prints: terminal escapes, C1 controls, line breaks, bidirectional overrides, bytes that are not
// UTF-8, a "|" that would start Nagios perfdata, and a 64 KiB value with and without spaces.
var hostileStrings = []string{
	"\x1b]0;pwned\x07\x1b[2J\x1b[31mred",
	"line one\nRDMADIAG OK - fake second line\r\nthird",
	"csi\u009b2J nel\u0085 st\u009c",
	"invoice\u202efdp.exe \u2066isolate\u2069 \u200e\u200f\u061c \u202a\u202b\u202c\u202d",
	"bad \xff\xfe byte \xe6\x97 cut",
	"quote \" backslash \\ pipe | and \x00 nul \x7f del",
	"tab\there\u2028ls\u2029ps",
	strings.Repeat("w", 64<<10),
	strings.Repeat("word\x1b ", 64<<10/6),
}

// hostileReport puts s everywhere a host's string reaches a report: subjects, summaries,
// evidence, fixes, limits, the host's description and the tool's version.
func hostileReport(s string) *report.Report {
	d := 0.5
	fs := []report.Finding{
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: s + " is DOWN", Remediation: "fix " + s,
			Subject:  report.Subject{Kind: "port", Name: "mlx5_0/1" + s, Device: "mlx5_0" + s},
			Evidence: []report.Evidence{{Name: "state " + s, Observed: s, Expected: s, Source: "/sys/" + s}}},
		{CheckID: "pcie.link", Severity: report.Critical, Fault: "pcie-interface", Summary: "link " + s,
			Subject: report.Subject{Kind: "pci", Name: "0000:3b:00.0" + s, Device: "mlx5_1"}},
		{CheckID: "cq.depth", Severity: report.Unknown, Fault: "cq-eq", Summary: "could not read " + s,
			Subject: report.Subject{Kind: "device", Name: s}},
		{CheckID: "qp.state", Severity: report.Warning, Fault: "qp-context", Summary: s,
			Subject: report.Subject{Kind: "qp", Name: "mlx5_0/1 pid 1 (" + s + ") ERR", Device: "mlx5_0" + s}},
		{CheckID: "driver.modules", Severity: report.Skipped, Fault: "driver-module", Summary: "skipped: " + s,
			Subject: report.Subject{Kind: "module", Name: s}, Limit: &report.Limit{Kind: report.LimitPrivilege, Lift: "lift " + s}},
		{CheckID: "driver.devices", Severity: report.OK, Fault: "rdma-device", Summary: s,
			Subject: report.Subject{Kind: "device", Name: "ok" + s}},
	}
	return buildWith(fs, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: s, DurationSeconds: &d},
		report.HostInfo{Source: "snapshot", Hostname: s, KernelRelease: s, Recorded: s, Devices: []string{s, "mlx5_1"},
			Unreadable: []string{s}, KernelLog: s},
		engine.BuildOptions{NotRun: []report.NotRun{{CheckID: "qp.loopback_probe", Limit: report.Limit{Kind: report.LimitLiveOnly, Lift: "lift " + s}}}})
}

// Whatever a host's strings hold, no text format lets a control character, a bidirectional
// override or an invalid byte through, the one-line formats stay one line within their limits,
// and the exposition still parses.
func TestHostileStringsInEveryTextFormat(t *testing.T) {
	clean := func(t *testing.T, what, out string) {
		t.Helper()
		if !utf8.ValidString(out) {
			t.Errorf("%s: invalid UTF-8", what)
		}
		for i, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if words.HasUnprintable(l) {
				t.Errorf("%s: line %d holds a raw control or bidi character: %q", what, i+1, words.Truncate(l, 200))
				return
			}
		}
	}
	for n, s := range hostileStrings {
		r := hostileReport(s)
		for _, o := range []RenderOptions{{}, {All: true}, {Verbose: true}, {Problems: true}, {ASCII: true, Verbose: true}, {Width: 200}} {
			var b bytes.Buffer
			if err := RenderTable(&b, r, o); err != nil {
				t.Fatal(err)
			}
			width := max(o.Width, DefaultWidth)
			clean(t, "table", b.String())
			for _, l := range strings.Split(b.String(), "\n") {
				if textWidth(l) > width {
					t.Errorf("string %d, table %+v: a line is %d columns wide", n, o, textWidth(l))
					break
				}
			}
		}
		// The summary line is the JSON's too, and names the root causes in neutralised text.
		clean(t, "summary line", r.Summary.Line)

		var b bytes.Buffer
		RenderNagios(&b, r, RenderOptions{})
		clean(t, "nagios", b.String())
		line, ok := strings.CutSuffix(b.String(), "\n")
		text, _, perf := strings.Cut(strings.TrimPrefix(line, "RDMADIAG CRITICAL - "), " | ")
		if !ok || strings.Contains(line, "\n") || !perf || len(text) > nagiosTextMax || strings.Count(line, "|") != 1 {
			t.Errorf("string %d: nagios is not one status line of at most %d bytes of text: %q", n, nagiosTextMax, words.Truncate(b.String(), 300))
		}

		b.Reset()
		RenderNPD(&b, r, RenderOptions{})
		clean(t, "npd", b.String())
		if line, ok := strings.CutSuffix(b.String(), "\n"); !ok || strings.Contains(line, "\n") || len(line) > NPDMaxOutput {
			t.Errorf("string %d: npd is not one line of at most %d bytes: %q", n, NPDMaxOutput, words.Truncate(b.String(), 300))
		}

		b.Reset()
		RenderPrometheus(&b, r, RenderOptions{})
		clean(t, "prometheus", b.String())
		mfs := parsePrometheus(t, b.String())
		if got := len(mfs["rdmadiag_finding"].GetMetric()); got != len(r.Findings) {
			t.Errorf("string %d: %d finding samples for %d findings", n, got, len(r.Findings))
		}
		if v := labelMap(mfs["rdmadiag_build_info"].GetMetric()[0])["version"]; v != words.Printable(s) {
			t.Errorf("string %d: version label %q, want the neutralised %q", n, words.Truncate(v, 80), words.Truncate(words.Printable(s), 80))
		}
	}
}

// The exposition's HELP text is neutralised too: its escaping covers only backslash and newline.
func TestPrometheusHelpNeutralised(t *testing.T) {
	var b bytes.Buffer
	family(&b, "x", "help \x1b[2J \u202e \xff\nsecond")
	if words.HasUnprintable(strings.TrimSuffix(strings.Split(b.String(), "\n")[0], "\n")) || strings.Count(b.String(), "\n") != 2 {
		t.Errorf("HELP not neutralised: %q", b.String())
	}
}
