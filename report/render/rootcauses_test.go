package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Two unrelated criticals on two cards: one port trained at 1X, another stuck in INIT.
func twoCriticals(reverse bool) *report.Report {
	fs := []report.Finding{
		{CheckID: "port.rate", Severity: report.Critical, Fault: "port-link", Summary: "mlx5_0/1 runs at 1X width (100 Gb/s of 400 Gb/s): a lane is down",
			Remediation: "Reseat or replace the cable.", Subject: report.Subject{Kind: "port", Name: "mlx5_0/1", Device: "mlx5_0"}},
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: "mlx5_1/1 is INIT: no subnet manager has configured it",
			Remediation: "Start a subnet manager.", Subject: report.Subject{Kind: "port", Name: "mlx5_1/1", Device: "mlx5_1"},
			Action: report.ActionFixConfiguration},
		{CheckID: "port.state", Severity: report.OK, Fault: "port-link", Summary: "mlx5_0/1 is ACTIVE",
			Subject: report.Subject{Kind: "port", Name: "mlx5_0/1", Device: "mlx5_0"}},
	}
	if reverse {
		slices.Reverse(fs)
	}
	return build(fs, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: "t"}, report.HostInfo{Source: "live", Devices: []string{"mlx5_0", "mlx5_1"}})
}

func render(t *testing.T, fn Renderer, r *report.Report, o RenderOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := fn(&b, r, o); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Every independent root cause is named by every output, with its action, in the same order
// whatever the order the checks reported them in.
func TestEveryRootCauseIsNamed(t *testing.T) {
	for _, reverse := range []bool{false, true} {
		r := twoCriticals(reverse)
		if got := r.Summary.Line; !strings.Contains(got, "2 root causes: (1) mlx5_0/1 runs at 1X width") ||
			!strings.Contains(got, "(2) mlx5_1/1 is INIT: no subnet manager has configured it (action fix-configuration)") ||
			!strings.Contains(got, "a lane is down (action reseat-or-clean-cable)") {
			t.Errorf("summary line: %q", got)
		}
		nag := render(t, RenderNagios, r, RenderOptions{})
		// The tags take room: the first cause's text is cut, neither tag is.
		if want := "RDMADIAG CRITICAL - [reseat-or-clean-cable] mlx5_0/1 runs at 1X width (100 Gb/s of 400 Gb/s): a lane...; [fix-configuration] mlx5_1/1 is INIT: no subnet manager has configured it | "; !strings.HasPrefix(nag, want) {
			t.Errorf("nagios:\n got %q\nwant %q...", nag, want)
		}
		npd := render(t, RenderNPD, r, RenderOptions{})
		// 80 bytes hold the first cause whole enough, with its action; the second is counted.
		if !strings.HasPrefix(npd, "[reseat-or-clean-cable] mlx5_0/1 runs at 1X") || !strings.HasSuffix(npd, " +1 more\n") || len(npd) > NPDMaxOutput+1 {
			t.Errorf("npd: %q", npd)
		}
		table := render(t, RenderTable, r, RenderOptions{})
		one, two := strings.Index(table, "1. CRITICAL mlx5_0/1 (port.rate) -> reseat-or-clean-cable\n"), strings.Index(table, "2. CRITICAL mlx5_1/1 (port.state) -> fix-configuration\n")
		if one < 0 || two < one || strings.Index(table, "rdmadiag t on live") < two {
			t.Errorf("table does not open with both root causes in order:\n%s", table)
		}
	}
}

// The order is severity as the verdict ranks it, then the troubleshooting order of layers, then
// the subject; a warning that explains a critical decides a critical verdict.
func TestRootCauseOrder(t *testing.T) {
	fs := []report.Finding{
		{CheckID: "qp.state", Severity: report.Warning, Fault: "qp-context", Summary: "w qp", Subject: report.Subject{Kind: "device", Name: "mlx5_0", Device: "mlx5_0"}},
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: "c port 10", Subject: report.Subject{Kind: "port", Name: "mlx5_10/1", Device: "mlx5_10"}},
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: "c port 2", Subject: report.Subject{Kind: "port", Name: "mlx5_2/1", Device: "mlx5_2"}},
		{CheckID: "cq.depth", Severity: report.Unknown, Fault: "cq-eq", Summary: "u cq", Subject: report.Subject{Kind: "device", Name: "mlx5_0", Device: "mlx5_0"}},
		{CheckID: "pcie.link", Severity: report.Critical, Fault: "pcie-interface", Summary: "c pcie", Subject: report.Subject{Kind: "pci", Name: "0000:5e:00.0", Device: "mlx5_5"}},
		{CheckID: "firmware.version", Severity: report.Warning, Fault: "firmware", Summary: "w firmware", Subject: report.Subject{Kind: "device", Name: "mlx5_3", Device: "mlx5_3"}},
		{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Summary: "c explained", Subject: report.Subject{Kind: "port", Name: "mlx5_3/1", Device: "mlx5_3"}},
	}
	r := build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	var got []string
	for _, f := range r.RootCauses() {
		got = append(got, f.Summary)
	}
	want := []string{"c pcie", "w firmware", "c port 2", "c port 10", "u cq", "w qp"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("root causes %q, want %q", got, want)
	}
}

// Where a format has a byte limit it names as many root causes as fit and counts the rest.
func TestManyRootCausesBounded(t *testing.T) {
	var fs []report.Finding
	for i := range 9 {
		fs = append(fs, report.Finding{CheckID: "port.state", Severity: report.Critical, Fault: "port-link",
			Summary: fmt.Sprintf("mlx5_%d/1 is DOWN, physical state Polling: no link partner (cable unplugged)", i),
			Subject: report.Subject{Kind: "port", Name: fmt.Sprintf("mlx5_%d/1", i), Device: fmt.Sprintf("mlx5_%d", i)}})
	}
	r := build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	nag := render(t, RenderNagios, r, RenderOptions{})
	text, _, _ := strings.Cut(strings.TrimPrefix(nag, "RDMADIAG CRITICAL - "), " | ")
	// One action for all of them: given once, before the first, and kept whatever is cut.
	if len(text) > nagiosTextMax || !strings.HasPrefix(text, "[reseat-or-clean-cable] mlx5_0/1 is DOWN") || !strings.Contains(text, "; mlx5_1/1 is DOWN") ||
		strings.Count(text, "[") != 1 ||
		!strings.HasSuffix(text, " more") {
		t.Errorf("nagios text (%d bytes): %q", len(text), text)
	}
	npd := strings.TrimSuffix(render(t, RenderNPD, r, RenderOptions{}), "\n")
	if len(npd) > NPDMaxOutput || !strings.HasPrefix(npd, "[reseat-or-clean-cable] mlx5_0/1 is DOWN") || !strings.HasSuffix(npd, " more") {
		t.Errorf("npd (%d bytes): %q", len(npd), npd)
	}
	if !strings.Contains(r.Summary.Line, "9 root causes:") || !strings.Contains(r.Summary.Line, "(9) mlx5_8/1 is DOWN") {
		t.Errorf("summary line: %q", r.Summary.Line)
	}
}

// A bounded line cuts the causes' text, never their actions: each named cause keeps its tag,
// and a cause with the action of the one before it is not tagged again.
func TestBoundedLineKeepsEveryAction(t *testing.T) {
	acts := []report.Action{report.ActionReplaceCableOrModule, report.ActionReplaceCableOrModule, report.ActionFixConfiguration, report.ActionResetDevice}
	var fs []report.Finding
	for i, a := range acts {
		fs = append(fs, report.Finding{CheckID: "port.state", Severity: report.Critical, Fault: "port-link", Action: a,
			Summary: fmt.Sprintf("mlx5_%d/1 lost its link partner", i),
			Subject: report.Subject{Kind: "port", Name: fmt.Sprintf("mlx5_%d/1", i), Device: fmt.Sprintf("mlx5_%d", i)}})
	}
	r := build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	nag := render(t, RenderNagios, r, RenderOptions{})
	text, _, _ := strings.Cut(strings.TrimPrefix(nag, "RDMADIAG CRITICAL - "), " | ")
	want := "[replace-cable-or-module] mlx5_0/1 lost its link partner; mlx5_1/1 lost its link partner; [fix-configuration] mlx5_2/1 lost its link partner +1 more"
	if text != want {
		t.Errorf("nagios text (%d bytes): %q", len(text), text)
	}
	for _, f := range r.Findings {
		if f.Action == "" {
			t.Errorf("%s: the check's action was dropped", f.Subject.Name)
		}
	}
}
