package render

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// build is engine.Build of findings that carry nothing for the engine beyond the document's
// fields, as the renderers' tests write them.
func build(fs []report.Finding, faults *engine.FaultTable, tool report.Tool, host report.HostInfo) *report.Report {
	return buildWith(fs, faults, tool, host, engine.BuildOptions{})
}

func buildWith(fs []report.Finding, faults *engine.FaultTable, tool report.Tool, host report.HostInfo, o engine.BuildOptions) *report.Report {
	in := make([]engine.Finding, len(fs))
	for i, f := range fs {
		in[i] = engine.Finding{Finding: f}
	}
	return engine.BuildWith(in, faults, tool, host, o)
}

// fnd builds a finding for the renderers' tests.
func fnd(check string, sev report.Severity, fault, subject, device string) report.Finding {
	return report.Finding{CheckID: check, Severity: sev, Fault: fault, Summary: check + " " + subject,
		Subject: report.Subject{Kind: "x", Name: subject, Device: device}}
}

func TestRenderers(t *testing.T) {
	r := build([]report.Finding{
		fnd("driver.modules", report.Critical, "driver-module", "ib_core", ""),
		fnd("driver.devices", report.Critical, "rdma-device", "host", ""),
	}, engine.DefaultFaults(), report.Tool{Name: "rdmadiag", Version: "t"}, report.HostInfo{Source: "live"})
	var tb, cb bytes.Buffer
	if err := RenderTable(&tb, r, RenderOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tb.String(), "\x1b[") {
		t.Error("colour without Color")
	}
	// The summary line is wrapped with a hanging indent of two spaces.
	unwrapped := strings.ReplaceAll(tb.String(), "\n  ", " ")
	for _, want := range []string{"driver.modules", "(consequence)", "cause:    driver.modules@ib_core", r.Summary.Line} {
		if !strings.Contains(unwrapped, want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	if err := RenderTable(&cb, r, RenderOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cb.String(), ansiRed+"CRITICAL"+ansiReset) {
		t.Error("no colour with Color")
	}
	var jb bytes.Buffer
	if err := RenderJSON(&jb, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	var back report.Report
	if err := json.Unmarshal(jb.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.SchemaVersion != report.SchemaVersion || len(back.Findings) != 2 || back.Findings[0].Ref != "driver.devices@host" ||
		len(back.Findings[0].ExplainedBy) != 1 || back.Findings[0].ExplainedBy[0] != "driver.modules@ib_core" {
		t.Errorf("JSON round trip lost data: %+v", back)
	}
	if _, err := Lookup("yaml"); err == nil {
		t.Error("unknown format accepted")
	}
}

// --problems keeps only warnings, criticals and unknowns in the table, says how many rows it
// left out, and on a clean host prints no empty table.
func TestRenderProblemsOnly(t *testing.T) {
	fs := []report.Finding{
		{CheckID: "pcie.link", Layer: "pcie", Subject: report.Subject{Kind: "pci", Name: "0000:3b:00.0"}, Severity: report.OK, Summary: "link fine"},
		{CheckID: "port.state", Layer: "port", Subject: report.Subject{Kind: "port", Name: "mlx5_0/1"}, Severity: report.Warning, Summary: "port flapping"},
		{CheckID: "qp.state", Layer: "qp", Subject: report.Subject{Kind: "device", Name: "mlx5_0"}, Severity: report.Skipped, Summary: "nothing to see"},
	}
	render := func(fs []report.Finding) string {
		var b strings.Builder
		if err := RenderTable(&b, build(fs, engine.DefaultFaults(), report.Tool{Name: "rdmadiag"}, report.HostInfo{}), RenderOptions{Problems: true}); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	got := render(fs)
	if !strings.Contains(got, "port flapping") || strings.Contains(got, "link fine") || strings.Contains(got, "nothing to see") {
		t.Errorf("table with --problems:\n%s", got)
	}
	if !strings.Contains(got, "2 passing, informational or skipped finding(s) not shown") {
		t.Errorf("no count of the rows left out:\n%s", got)
	}
	got = render(fs[:1])
	if strings.Contains(got, "LAYER") || !strings.Contains(got, "no warning, critical or unknown finding; 1 passing") {
		t.Errorf("clean host with --problems:\n%s", got)
	}
}
