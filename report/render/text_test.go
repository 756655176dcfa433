package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestWrap(t *testing.T) {
	for _, c := range []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, []string{""}},
		{"short", 10, []string{"short"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"a  [kmsg]", 20, []string{"a  [kmsg]"}},
		{"value  [source]", 8, []string{"value", "[source]"}},
		// A path longer than a line breaks after a separator in the second half of the line.
		{"/usr/lib/x86_64-linux-gnu/libibverbs.so.1", 20, []string{"/usr/lib/x86_64-", "linux-gnu/libibverbs", ".so.1"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		// Wide characters take two columns.
		{"日本語テキスト", 6, []string{"日本語", "テキス", "ト"}},
	} {
		got := wrap(c.in, c.width)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
		for _, l := range got {
			if textWidth(l) > c.width {
				t.Errorf("wrap(%q, %d): line %q is %d wide", c.in, c.width, l, textWidth(l))
			}
		}
	}
}

func TestTermSafe(t *testing.T) {
	for _, c := range []struct {
		in    string
		ascii bool
		want  string
	}{
		{"fw\x1b[2Jx\n", false, `fw\x1b[2Jx\n`},
		{"a\u009bb", false, `a\u009bb`},
		{"x\u202ey\u2066", false, `x\u202ey\u2066`},
		{"≥ 2 → ok…", true, ">= 2 -> ok..."},
		{"Müller 日本", true, "M?ller ??"},
		{"Müller", false, "Müller"},
		{"bad \xff byte", true, `bad \xff byte`},
	} {
		if got := termSafe(c.in, c.ascii); got != c.want {
			t.Errorf("termSafe(%q, %v) = %q, want %q", c.in, c.ascii, got, c.want)
		}
	}
}

func TestWithoutSubject(t *testing.T) {
	for _, c := range []struct {
		subject, summary string
		sev              report.Severity
		want             string
	}{
		{"mlx5_0/1", "mlx5_0/1: LID 0x11, subnet manager at LID 0x1", report.OK, "LID 0x11, subnet manager at LID 0x1"},
		{"0000:3b:00.0", "0000:3b:00.0 (mlx5_0): link trained at 16 GT/s x16", report.OK, "(mlx5_0) link trained at 16 GT/s x16"},
		{"rxe0/1 pid 120 (labqp) ERR", "rxe0/1: 3 QP(s) of pid 120 (labqp) in ERR", report.Warning, "3 QP(s) of pid 120 (labqp) in ERR"},
		{"rxe0 uverbs", "rxe0: /dev/infiniband/uverbs0 present", report.OK, "/dev/infiniband/uverbs0 present"},
		// A sentence whose subject is the subject is kept, and so is a name that only shares a prefix.
		{"mlx5_0/1", "mlx5_0/1 is DOWN", report.Critical, "mlx5_0/1 is DOWN"},
		{"mlx5_10", "mlx5_1: other device", report.OK, "mlx5_1: other device"},
		{"ib_core", "ib_core loaded", report.OK, "ib_core loaded"},
		{"host", "skipped: no hardware RDMA device", report.Skipped, "no hardware RDMA device"},
		{"rxe0", "rxe0: skipped: software device", report.Skipped, "software device"},
		{"rxe0", "rxe0: ", report.OK, "rxe0: "},
	} {
		f := report.Finding{Subject: report.Subject{Kind: "x", Name: c.subject}, Summary: c.summary, Severity: c.sev}
		if got := withoutSubject(&f); got != c.want {
			t.Errorf("withoutSubject(%q, %q) = %q, want %q", c.subject, c.summary, got, c.want)
		}
	}
}

// A long report fits in the width it is given, however narrow, with its box drawn in ASCII when
// asked, and nothing of a hostile summary reaches the terminal as a control sequence.
func TestRenderTableWidth(t *testing.T) {
	long := strings.Repeat("word ", 60)
	r := build([]report.Finding{
		{CheckID: "driver.modules", Subject: report.Subject{Kind: "module", Name: "ib_core"}, Severity: report.Critical, Fault: "driver-module",
			Summary: "ib_core is not loaded: " + long, Remediation: long,
			Evidence: []report.Evidence{{Name: "path", Observed: "/sys/" + strings.Repeat("very_long_component/", 12), Source: "/proc/modules"}}},
		{CheckID: "qp.state", Subject: report.Subject{Kind: "qp", Name: "mlx5_0/1 pid 4242 (a-very-long-command-name) ERR", Device: "mlx5_0"},
			Severity: report.Warning, Fault: "qp-context", Summary: "mlx5_0/1: \x1b]0;pwned\x07 " + long},
		{CheckID: "port.state", Subject: report.Subject{Kind: "port", Name: "mlx5_0/1", Device: "mlx5_0"}, Severity: report.OK, Fault: "port", Summary: "mlx5_0/1 is ACTIVE → fine"},
	}, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: "t"}, report.HostInfo{Source: "live", Devices: []string{"mlx5_0"}})
	for _, width := range []int{60, 80, 100, 132, 250} {
		for _, o := range []RenderOptions{{}, {ASCII: true}, {All: true}, {All: true, ASCII: true}, {Verbose: true}} {
			ascii := o.ASCII
			o.Width = width
			var b bytes.Buffer
			if err := RenderTable(&b, r, o); err != nil {
				t.Fatal(err)
			}
			widest := 0
			for _, l := range strings.Split(b.String(), "\n") {
				widest = max(widest, textWidth(l))
			}
			if widest > width {
				t.Errorf("width %d ascii %v: a line is %d wide:\n%s", width, ascii, widest, b.String())
			}
			if width >= 100 && widest < 100 {
				t.Errorf("width %d: the table does not use the room it has (widest line %d)", width, widest)
			}
			if strings.ContainsAny(b.String(), "\x1b\x07") {
				t.Errorf("width %d: a control character reached the output", width)
			}
			if ascii {
				for i := 0; i < b.Len(); i++ {
					if b.Bytes()[i] >= 0x80 {
						t.Fatalf("width %d ascii: non-ASCII byte %#x at %d:\n%s", width, b.Bytes()[i], i, b.String())
					}
				}
			} else if o.All && (!strings.Contains(b.String(), "┌") || !strings.Contains(b.String(), "→")) {
				t.Errorf("width %d: UTF-8 table lost its box or its text", width)
			}
		}
	}
}

// The summary line counts checks, and says so: a check with several findings counts once, under
// its gravest outcome, and the problem findings are counted by severity next to it, so that a
// check that found a critical and a warning does not read as one critical finding.
func TestSummaryCountsChecks(t *testing.T) {
	fs := []report.Finding{
		fnd("driver.modules", report.Critical, "driver-module", "ib_core", ""),
		fnd("driver.modules", report.Warning, "driver-module", "ib_umad", ""),
		fnd("driver.modules", report.OK, "driver-module", "rdma_cm", ""),
		fnd("port.state", report.OK, "port", "mlx5_0/1", "mlx5_0"),
		fnd("port.state", report.Info, "port", "mlx5_0/2", "mlx5_0"),
		fnd("cq.depth", report.OK, "cq-depth", "mlx5_0", "mlx5_0"),
		{CheckID: "cq.depth", Subject: report.Subject{Kind: "device", Name: "mlx5_1"}, Severity: report.Skipped, Fault: "cq-depth",
			Summary: "not judged", Limit: &report.Limit{Kind: report.LimitPrivilege, Lift: "run as root"}},
	}
	r := buildWith(fs, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: "t"}, report.HostInfo{Source: "live"},
		engine.BuildOptions{NotRun: []report.NotRun{{CheckID: "qp.loopback_probe", Limit: report.Limit{Kind: report.LimitSelection, Lift: "run without --no-probe"}}}})
	want := report.CheckCounts{Run: 3, Passed: 1, Skipped: 1, Critical: 1, NotRun: 1}
	if *r.Summary.Checks != want {
		t.Errorf("checks = %+v, want %+v", *r.Summary.Checks, want)
	}
	for _, part := range []string{"3 checks run: 1 passed, 1 with problems (findings: 1 critical, 1 warning), 1 skipped (1 by a limit: not root)",
		"1 not run (limit: left out by an option)"} {
		if !strings.Contains(r.Summary.Line, part) {
			t.Errorf("line %q lacks %q", r.Summary.Line, part)
		}
	}
}
