package render

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

// wireReport must stay Report field for field, Findings apart, or the document would lose a
// field without any golden to show it until a fixture has one.
func TestWireReportIsReport(t *testing.T) {
	rt, wt := reflect.TypeOf(report.Report{}), reflect.TypeOf(wireReport{})
	if rt.NumField() != wt.NumField() {
		t.Fatalf("Report has %d fields, wireReport %d", rt.NumField(), wt.NumField())
	}
	for i := range rt.NumField() {
		rf, wf := rt.Field(i), wt.Field(i)
		if rf.Name != wf.Name || rf.Tag != wf.Tag {
			t.Errorf("field %d: Report %s %q, wireReport %s %q", i, rf.Name, rf.Tag, wf.Name, wf.Tag)
		}
		if rf.Name != "Findings" && rf.Type != wf.Type {
			t.Errorf("field %s: Report %s, wireReport %s", rf.Name, rf.Type, wf.Type)
		}
	}
}

// RenderJSON writes the document encoding the Report itself (Finding.MarshalJSON) gives, refs
// included, and keeps <, > and & readable in findings as everywhere else (Finding.MarshalJSON
// escapes them, as json.Marshal does).
func TestRenderJSONAsMarshal(t *testing.T) {
	r := sampleReport(t)
	r.Findings = append(r.Findings, report.Finding{CheckID: "port.state", Subject: report.Subject{Kind: "port", Name: "mlx5_0/1"}, Severity: report.Warning, Summary: "no ref set"})
	var got bytes.Buffer
	if err := RenderJSON(&got, r, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		t.Fatal(err)
	}
	var g, w any
	if err := json.Unmarshal(got.Bytes(), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want.Bytes(), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("RenderJSON differs from encoding the report:\n%s\n----\n%s", got.String(), want.String())
	}
	if !bytes.Contains(want.Bytes(), []byte(`\u003c-\u003e`)) || bytes.Contains(got.Bytes(), []byte(`\u003c`)) || !bytes.Contains(got.Bytes(), []byte("<->")) {
		t.Error("want <-> written as is (the sample has a PCIe link summary)")
	}
	if !bytes.Contains(got.Bytes(), []byte(`"ref": "port.state@mlx5_0/1"`)) {
		t.Errorf("ref not filled in:\n%s", got.String())
	}
}

// sampleReport is the largest fixture golden, decoded.
func sampleReport(t testing.TB) *report.Report {
	raw, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sysfs", "drv-klog-families", "check.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r report.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) == 0 {
		t.Fatal("no finding in the sample")
	}
	return &r
}

func BenchmarkRenderJSON(b *testing.B) {
	r := sampleReport(b)
	for b.Loop() {
		if err := RenderJSON(io.Discard, r, RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
