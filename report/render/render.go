// Package render writes a report in every format rdmadiag prints: the table for people, the
// versioned JSON, the Prometheus exposition, npd and Nagios status lines, the inventory table,
// the check list and the error document.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
)

// RenderOptions change how a report looks, never what it says.
type RenderOptions struct {
	// Color adds ANSI colours to severities; the CLI sets it only when stdout is a terminal and
	// neither NO_COLOR nor --no-color asks otherwise.
	Color bool
	// Width is the number of terminal columns the table must fit in; 0 means DefaultWidth.
	Width int
	// ASCII draws the table with ASCII characters only and replaces any other character of the
	// report's text, for terminals whose locale is not UTF-8.
	ASCII bool
	// All lists every finding in a table, passing, informational and skipped ones included,
	// where the view otherwise counts those per layer.
	All bool
	// Verbose is All with the evidence of every finding, not only of the problems.
	Verbose bool
	// Problems leaves passing, informational and skipped findings out, also of the table of All,
	// and says how many were left out. The JSON document always holds every finding.
	Problems bool
}

// Renderer writes a report in one format.
type Renderer func(w io.Writer, r *report.Report, o RenderOptions) error

// Renderers by format name; Formats lists the names for help texts.
var renderers = map[string]Renderer{
	"table":      RenderTable,
	"json":       RenderJSON,
	"prometheus": RenderPrometheus,
	"npd":        RenderNPD,
	"nagios":     RenderNagios,
}

// Formats are the names accepted by Lookup, sorted.
func Formats() []string {
	names := make([]string, 0, len(renderers))
	for n := range renderers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the renderer for a format name.
func Lookup(format string) (Renderer, error) {
	r, ok := renderers[format]
	if !ok {
		return nil, fmt.Errorf("unknown format %q (known: %s)", format, strings.Join(Formats(), ", "))
	}
	return r, nil
}

// RenderJSON writes the versioned JSON document (see report/schema.json).
func RenderJSON(w io.Writer, r *report.Report, _ RenderOptions) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(wire(r)); err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31;1m"
	ansiYellow = "\x1b[33;1m"
	ansiGreen  = "\x1b[32m"
	ansiBlue   = "\x1b[36m"
	ansiDim    = "\x1b[2m"
)

func paint(s string, sev report.Severity, on bool) string {
	if !on {
		return s
	}
	c := ""
	switch sev {
	case report.Critical:
		c = ansiRed
	case report.Warning:
		c = ansiYellow
	case report.Unknown:
		c = ansiBlue
	case report.OK:
		c = ansiGreen
	case report.Skipped, report.Info:
		c = ansiDim
	}
	if c == "" {
		return s
	}
	return c + s + ansiReset
}

func faultRow(r *report.Report, id string) (report.FaultRow, bool) {
	for _, row := range r.Faults {
		if row.ID == id {
			return row, true
		}
	}
	return report.FaultRow{}, false
}

// wireReport is Report with findings that have no MarshalJSON: the encoder then writes each
// finding in its one pass, where through Finding.MarshalJSON it marshalled each apart, then
// checked and copied the bytes (a tenth of an eight-device run's CPU under emulation). Its
// fields are Report's (TestWireReportIsReport); the document is the same (the goldens).
type wireReport struct {
	SchemaVersion string            `json:"schema_version"`
	Tool          report.Tool       `json:"tool"`
	Host          report.HostInfo   `json:"host"`
	Summary       report.Summary    `json:"summary"`
	Findings      []wireFinding     `json:"findings"`
	Faults        []report.FaultRow `json:"faults"`
}

// wireFinding is a Finding with its ref filled in, as Finding.MarshalJSON writes it.
type wireFinding report.Finding

func wire(r *report.Report) *wireReport {
	w := &wireReport{SchemaVersion: r.SchemaVersion, Tool: r.Tool, Host: r.Host, Summary: r.Summary, Faults: r.Faults}
	if r.Findings != nil {
		w.Findings = make([]wireFinding, len(r.Findings))
	}
	for i, f := range r.Findings {
		if f.Ref == "" {
			f.Ref = f.DefaultRef()
		}
		w.Findings[i] = wireFinding(f)
	}
	return w
}
