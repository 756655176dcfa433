package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/rdmadiag/rdmadiag/report/words"
)

// WriteJSON writes the result as one indented JSON document.
func WriteJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the result for people: each question a section, the hosts to act on named.
func WriteTable(w io.Writer, r *Result) error {
	var b bytes.Buffer
	stale := "not judged"
	if r.StaleAfter != "0s" {
		stale = "after " + r.StaleAfter
	}
	fmt.Fprintf(&b, "rdmadiag fleet: %d report(s); now %s; stale %s\n", r.Reports, r.Now.Format("2006-01-02T15:04:05Z"), stale)

	fmt.Fprintln(&b, "\nHosts by verdict")
	if len(r.Verdicts) == 0 {
		fmt.Fprintln(&b, "  none: no report could be read")
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, v := range r.Verdicts {
		who := ""
		if v.Verdict != "healthy" {
			who = hostsText(v.List, false)
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", cell(v.Verdict), v.Count, cell(who))
	}
	tw.Flush()

	// What to do, and on how many hosts: a host is under each action its root causes ask for.
	fmt.Fprintln(&b, "\nHosts by action (what their root causes ask for)")
	if len(r.Actions) == 0 {
		fmt.Fprintln(&b, "  none")
	} else {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, g := range r.Actions {
			fmt.Fprintf(tw, "  %d host(s):\t%s\t%s\n", g.Hosts.Count, cell(g.Action), cell(hostNames(g.Hosts)))
		}
		tw.Flush()
	}

	fmt.Fprintln(&b, "\nRoot causes, by hosts hit")
	if len(r.RootCauses) == 0 {
		fmt.Fprintln(&b, "  none")
	} else {
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  HOSTS\tSEVERITY\tCHECK\tFAULT\tSUBJECT\tACTION\tFIRST HOST: SUBJECT: SUMMARY")
		for _, c := range r.RootCauses {
			ex := ""
			if len(c.Hosts.Names) > 0 {
				ex = c.Hosts.Names[0].Host + ": " + c.Hosts.Names[0].Detail
			}
			act := c.Action
			if act == "" {
				act = "-" // a report without actions
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Hosts.Count, cell(c.Severity), cell(c.CheckID), cell(c.Fault), cell(c.SubjectKind), cell(act), oneLine(ex, 100))
		}
		tw.Flush()
	}

	fmt.Fprintln(&b, "\nDrift between hosts of the same card")
	if len(r.Drift) == 0 {
		fmt.Fprintln(&b, "  none")
	}
	for _, d := range r.Drift {
		if d.Tie {
			fmt.Fprintf(&b, "  %s on %s: no majority:\n", d.Attribute, d.Label)
			fmt.Fprintf(&b, "    %s: %s\n", d.Majority.Value, hostsText(d.Majority.Hosts, true))
		} else {
			fmt.Fprintf(&b, "  %s on %s: %d host(s) have %s; odd:\n", d.Attribute, d.Label, d.Majority.Hosts.Count, d.Majority.Value)
		}
		for _, o := range d.Odd {
			fmt.Fprintf(&b, "    %s: %s\n", o.Value, hostsText(o.Hosts, true))
		}
	}

	fmt.Fprintln(&b, "\nOutliers")
	fmt.Fprintln(&b, "  Ports slower than their peers (active ports of the same card and link layer):")
	if len(r.Outliers.SlowPorts) == 0 {
		fmt.Fprintln(&b, "    none")
	}
	for _, s := range r.Outliers.SlowPorts {
		fmt.Fprintf(&b, "    %s Gb/s where peers run %s Gb/s on %s: %s\n", fmtG(s.Gbps), fmtG(s.PeerGbps), s.Label, hostsText(s.Hosts, true))
	}
	fmt.Fprintln(&b, "  Error counters beyond the fleet's outer fence, Q3 + 3 x IQR (NIST/SEMATECH e-Handbook 7.1.6):")
	if len(r.Outliers.ErrorCounters) == 0 {
		fmt.Fprintln(&b, "    none")
	}
	for _, c := range r.Outliers.ErrorCounters {
		var top []string
		for _, e := range c.Top {
			top = append(top, fmt.Sprintf("%s %s = %d", e.Host, e.Where, e.Value))
		}
		if more := c.Above - uint64(len(c.Top)); more > 0 {
			top = append(top, fmt.Sprintf("and %d more", more))
		}
		fmt.Fprintf(&b, "    %s: %d of %d port(s), median %d, fence %d: %s\n", c.Counter, c.Above, c.Ports, c.Median, c.Fence, strings.Join(top, "; "))
	}

	fmt.Fprintf(&b, "\nStale reports (%s)\n", stale)
	listSection(&b, r.Stale)
	fmt.Fprintln(&b, "\nFailed reports (unreadable, not a 1.x report, or the host could not be checked)")
	listSection(&b, r.Failed)

	if r.Duplicates.Count > 0 {
		fmt.Fprintln(&b, "\nOlder duplicate reports ignored (each host counts once, with its newest report)")
		listSection(&b, r.Duplicates)
	}

	if len(r.Notes) > 0 {
		fmt.Fprintln(&b, "\nNotes")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	if r.Healthy {
		fmt.Fprintf(&b, "\nFleet: HEALTHY (%d host(s), nothing named above)\n", r.Reports-r.Duplicates.Count)
	} else {
		fmt.Fprintf(&b, "\nFleet: NEEDS ATTENTION (exit %d)\n", r.ExitCode)
	}
	// Empty last cells leave the aligned columns' padding at the end of a line. Every line is
	// neutralised (words.Printable) whatever field of a report it shows: the reports are the
	// hosts' word, and a terminal escape or a bidi override in one would act on the reader.
	out := bufio.NewWriter(w)
	for line := range bytes.Lines(b.Bytes()) {
		out.WriteString(words.Printable(string(bytes.TrimRight(line, " \n"))))
		out.WriteByte('\n')
	}
	return out.Flush()
}

// cell is a tabwriter cell: a tab or a line break from a report would split it.
func cell(s string) string { return words.Printable(s) }

func listSection(b io.Writer, l List) {
	if l.Count == 0 {
		fmt.Fprintln(b, "  none")
		return
	}
	for _, n := range l.Names {
		fmt.Fprintf(b, "  %s: %s\n", n.Host, oneLine(n.Detail, 160))
	}
	if l.More > 0 {
		fmt.Fprintf(b, "  and %d more (--names)\n", l.More)
	}
}

// hostsText is "N host(s): a (detail), b (detail), and M more".
func hostsText(l List, detail bool) string {
	var s []string
	for _, n := range l.Names {
		if detail && n.Detail != "" {
			s = append(s, n.Host+" ("+n.Detail+")")
		} else {
			s = append(s, n.Host)
		}
	}
	if l.More > 0 {
		s = append(s, fmt.Sprintf("and %d more", l.More))
	}
	return fmt.Sprintf("%d host(s): %s", l.Count, strings.Join(s, ", "))
}

// hostNames names the hosts of a list (without their details), and how many more there are.
func hostNames(l List) string {
	var s []string
	for _, n := range l.Names {
		s = append(s, n.Host)
	}
	if l.More > 0 {
		s = append(s, fmt.Sprintf("and %d more", l.More))
	}
	return strings.Join(s, ", ")
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// oneLine shortens text, neutralised (words.Printable), to n runes.
func oneLine(s string, n int) string {
	s = words.Printable(s)
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
