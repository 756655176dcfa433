package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
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
type Renderer func(w io.Writer, r *Report, o RenderOptions) error

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
func RenderJSON(w io.Writer, r *Report, _ RenderOptions) error {
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

func paint(s string, sev Severity, on bool) string {
	if !on {
		return s
	}
	c := ""
	switch sev {
	case Critical:
		c = ansiRed
	case Warning:
		c = ansiYellow
	case Unknown:
		c = ansiBlue
	case OK:
		c = ansiGreen
	case Skipped, Info:
		c = ansiDim
	}
	if c == "" {
		return s
	}
	return c + s + ansiReset
}

func faultRow(r *Report, id string) (FaultRow, bool) {
	for _, row := range r.Faults {
		if row.ID == id {
			return row, true
		}
	}
	return FaultRow{}, false
}

// wireReport is Report with findings that have no MarshalJSON: the encoder then writes each
// finding in its one pass, where through Finding.MarshalJSON it marshalled each apart, then
// checked and copied the bytes (a tenth of an eight-device run's CPU under emulation). Its
// fields are Report's (TestWireReportIsReport); the document is the same (the goldens).
type wireReport struct {
	SchemaVersion string        `json:"schema_version"`
	Tool          Tool          `json:"tool"`
	Host          HostInfo      `json:"host"`
	Summary       Summary       `json:"summary"`
	Findings      []wireFinding `json:"findings"`
	Faults        []FaultRow    `json:"faults"`
}

// wireFinding is a Finding with its ref filled in, as Finding.MarshalJSON writes it.
type wireFinding Finding

func wire(r *Report) *wireReport {
	w := &wireReport{SchemaVersion: r.SchemaVersion, Tool: r.Tool, Host: r.Host, Summary: r.Summary, Faults: r.Faults}
	if r.Findings != nil {
		w.Findings = make([]wireFinding, len(r.Findings))
	}
	for i, f := range r.Findings {
		if f.Ref == "" {
			f.Ref = f.ref()
		}
		w.Findings[i] = wireFinding(f)
	}
	return w
}
