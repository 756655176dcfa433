package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// RenderOptions change how a report looks, never what it says.
type RenderOptions struct {
	// Color adds ANSI colours to severities; the CLI sets it only when stdout is a terminal.
	Color bool
	// Verbose lists passing findings' evidence too.
	Verbose bool
	// Problems leaves passing, informational and skipped findings out of the table and says
	// how many were left out: on a host with 16 HCAs the full table runs to hundreds of rows.
	// The JSON document always holds every finding.
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
	if err := enc.Encode(r); err != nil {
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

// RenderTable writes the human view: a header, one row per finding in troubleshooting order,
// then the details (evidence, fix, causal links) of every problem, root causes first, and the
// one-line summary last, where a terminal leaves the eye.
func RenderTable(w io.Writer, r *Report, o RenderOptions) error {
	var out bytes.Buffer
	fmt.Fprintf(&out, "rdmadiag %s on %s", r.Tool.Version, r.Host.Source)
	if r.Host.Hostname != "" {
		fmt.Fprintf(&out, " (%s", r.Host.Hostname)
		if r.Host.KernelRelease != "" {
			fmt.Fprintf(&out, ", kernel %s", r.Host.KernelRelease)
		}
		out.WriteString(")")
	}
	out.WriteString("\n")
	if r.Host.Recorded != "" {
		fmt.Fprintf(&out, "snapshot recorded %s\n", r.Host.Recorded)
	}
	if len(r.Host.Devices) > 0 {
		fmt.Fprintf(&out, "devices: %s\n", strings.Join(r.Host.Devices, ", "))
	}
	for _, u := range r.Host.Unreadable {
		fmt.Fprintf(&out, "not readable: %s\n", u)
	}
	out.WriteString("\n")

	shown := 0
	for _, f := range r.Findings {
		if !o.Problems || f.Severity.Problem() {
			shown++
		}
	}
	if shown == 0 && len(r.Findings) > 0 {
		fmt.Fprintf(&out, "no warning, critical or unknown finding; %d passing, informational or skipped finding(s) not shown (--problems)\n", len(r.Findings))
		fmt.Fprintf(&out, "\n%s\n", r.Summary.Line)
		_, err := w.Write(out.Bytes())
		return err
	}

	t := tablewriter.NewTable(&out,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithRowMaxWidth(160),
		tablewriter.WithColumnWidths(tw.NewMapper[int, int]().Set(4, 70)),
		tablewriter.WithTrimSpace(tw.Off),
	)
	t.Header("LAYER", "CHECK", "SUBJECT", "STATUS", "FINDING")
	hidden := 0
	for _, f := range r.Findings {
		if o.Problems && !f.Severity.Problem() {
			hidden++
			continue
		}
		status := strings.ToUpper(f.Severity.String())
		summary := f.Summary
		if len(f.ExplainedBy) > 0 && f.Severity.Problem() {
			summary += " (consequence)"
		}
		if err := t.Append(f.Layer, f.CheckID, f.Subject.String(), paint(status, f.Severity, o.Color), summary); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	if hidden > 0 {
		fmt.Fprintf(&out, "%d passing, informational or skipped finding(s) not shown (--problems)\n", hidden)
	}

	details := detailOrder(r.Findings, o.Verbose && !o.Problems)
	if len(details) > 0 {
		out.WriteString("\nDetails\n")
	}
	for _, f := range details {
		fmt.Fprintf(&out, "\n%s %s [%s]: %s\n", paint(strings.ToUpper(f.Severity.String()), f.Severity, o.Color), f.CheckID, f.Subject, f.Summary)
		if row, ok := faultRow(r, f.Fault); ok && f.Severity.Problem() {
			fmt.Fprintf(&out, "  fault:    %s: %s\n", row.Component, row.Symptom)
		}
		for _, e := range f.Evidence {
			line := fmt.Sprintf("%s = %s", e.Name, e.Observed)
			if e.Expected != "" {
				line += fmt.Sprintf(" (expected %s)", e.Expected)
			}
			if e.Source != "" {
				line += fmt.Sprintf("  [%s]", e.Source)
			}
			fmt.Fprintf(&out, "  evidence: %s\n", line)
		}
		if f.Remediation != "" {
			fmt.Fprintf(&out, "  fix:      %s\n", f.Remediation)
		}
		if len(f.ExplainedBy) > 0 {
			fmt.Fprintf(&out, "  cause:    %s\n", strings.Join(f.ExplainedBy, ", "))
		}
		if f.Limit != nil {
			fmt.Fprintf(&out, "  lift:     %s\n", f.Limit.Lift)
		}
	}
	writeLimits(&out, r)
	fmt.Fprintf(&out, "\n%s\n", r.Summary.Line)
	_, err := w.Write(out.Bytes())
	return err
}

// writeLimits says, once per way of lifting it, what a limit kept from being judged: the skipped
// findings and the checks that did not run.
func writeLimits(out *bytes.Buffer, r *Report) {
	var lifts []string
	what := map[string][]string{}
	add := func(lift, item string) {
		if _, ok := what[lift]; !ok {
			lifts = append(lifts, lift)
		}
		if !slices.Contains(what[lift], item) {
			what[lift] = append(what[lift], item)
		}
	}
	for _, f := range r.Findings {
		if f.Limit != nil && f.Severity == Skipped {
			add(f.Limit.Lift, f.CheckID)
		}
	}
	for _, n := range r.Summary.NotRun {
		add(n.Limit.Lift, n.CheckID+" (not run)")
	}
	if len(lifts) == 0 {
		return
	}
	out.WriteString("\nNot judged because of a limit\n")
	for _, l := range lifts {
		fmt.Fprintf(out, "  %s\n    to judge them: %s\n", strings.Join(what[l], ", "), l)
	}
}

// detailOrder lists root causes before consequences, gravest first, and keeps the
// troubleshooting order within each group. Passing, informational and skipped findings are in the
// table already; their evidence is shown with --verbose.
func detailOrder(fs []Finding, verbose bool) []Finding {
	var roots, cons, rest []Finding
	for _, f := range fs {
		switch {
		case f.Severity.Problem() && len(f.ExplainedBy) == 0:
			roots = append(roots, f)
		case f.Severity.Problem():
			cons = append(cons, f)
		case verbose:
			rest = append(rest, f)
		}
	}
	sort.SliceStable(roots, func(i, j int) bool { return roots[i].Severity > roots[j].Severity })
	return append(append(roots, cons...), rest...)
}

func faultRow(r *Report, id string) (FaultRow, bool) {
	for _, row := range r.Faults {
		if row.ID == id {
			return row, true
		}
	}
	return FaultRow{}, false
}
