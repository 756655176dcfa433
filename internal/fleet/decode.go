// Package fleet aggregates many rdmadiag JSON reports into what a cluster owner asks: hosts by
// verdict, root causes ranked by how many hosts they hit, drift between hosts of the same card,
// outliers, and hosts whose report is stale or failed.
//
// Reports are read one at a time and reduced to a small per-host record at once; the aggregate
// keeps counts, a bounded number of names per list and bounded histograms, so memory does not
// grow with the number of reports (only the names kept, at most Options.Names per list).
package fleet

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// doc is the part of a report fleet reads (parseDoc fills it; the json tags say what each field
// is, and let tests check parseDoc against encoding/json). Nothing of it outlives the reduction
// to a hostRecord.
type doc struct {
	SchemaVersion string `json:"schema_version"`
	Tool          struct {
		Started *time.Time `json:"started"`
	} `json:"tool"`
	Host struct {
		Hostname  string  `json:"hostname"`
		Inventory *invDoc `json:"inventory"`
	} `json:"host"`
	Summary struct {
		Verdict string `json:"verdict"`
	} `json:"summary"`
	Findings []findingDoc `json:"findings"`
	// Error and ExitCode are set in the error document `check --format json` writes instead of a
	// report when the run ends before there is one (report.ErrorDocument).
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
	// roots are the root causes parseDoc keeps while reading the findings, which it does not
	// store; reduce takes them, or derives them from Findings when encoding/json filled doc.
	roots rootSet
}

type findingDoc struct {
	CheckID string `json:"check_id"`
	Subject struct {
		Kind   string `json:"kind"`
		Name   string `json:"name"`
		Device string `json:"device"`
	} `json:"subject"`
	Severity    string   `json:"severity"`
	Summary     string   `json:"summary"`
	Fault       string   `json:"fault"`
	Action      string   `json:"action"`
	ExplainedBy nonEmpty `json:"explained_by"`
}

// nonEmpty records whether a JSON array has elements without decoding them: fleet needs to
// know only whether a finding is explained by another.
type nonEmpty bool

func (n *nonEmpty) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '[' {
		if string(b) == "null" {
			*n = false
			return nil
		}
		return fmt.Errorf("explained_by: want an array, got %.20s", b)
	}
	*n = nonEmpty(len(bytes.TrimSpace(b[1:len(b)-1])) > 0)
	return nil
}

type invDoc struct {
	Devices []invDevice `json:"devices"`
}

type invDevice struct {
	Name            string    `json:"name"`
	VendorID        string    `json:"vendor_id"`
	DeviceID        string    `json:"device_id"`
	HCAType         string    `json:"hca_type"`
	FirmwareVersion string    `json:"firmware_version"`
	BoardID         string    `json:"board_id"`
	Driver          string    `json:"driver"`
	DriverVersion   string    `json:"driver_version"`
	Ports           []invPort `json:"ports"`
}

type invPort struct {
	Port          int               `json:"port"`
	State         string            `json:"state"`
	LinkLayer     string            `json:"link_layer"`
	RateGbps      *float64          `json:"rate_gbps"`
	NetdevMTU     int               `json:"netdev_mtu"`
	ErrorCounters map[string]uint64 `json:"error_counters"`
}

// Severity order as the report defines it (report.Severity); only problems are kept here.
var severityRank = map[string]int{"unknown": 1, "warning": 2, "critical": 3}

// hostRecord is what one report contributes to the aggregate.
type hostRecord struct {
	host string // host.hostname, or the input's name when the report has none
	// named is set when the report names its host (host.hostname): only then can two reports
	// be of the same host.
	named  bool
	source string // the input's name (file path, "-", "path#2" for a later report of a stream)
	// failed is why the report could not be used at all (unreadable, not a report, wrong
	// schema); the other fields are then empty.
	failed  string
	verdict string
	started *time.Time
	roots   []rootRecord
	// rootsDropped counts root-cause kinds beyond maxRootsPerReport.
	rootsDropped int
	// facts are the inventory's values, one per (attribute, group, value) for this host.
	facts        []fact
	counters     []counterRecord
	hasInventory bool
	// errorDoc is the message of an error document (report.ErrorDocument): rdmadiag ran on the
	// host and could not check it, so the host counts as unknown with this message.
	errorDoc string
}

type rootRecord struct {
	key      rootKey
	severity string
	// detail is the finding's summary naming its subject once (withSubject).
	detail string
}

// rootKey groups root causes across hosts: the check, its fault row, the kind of subject and the
// action (one check's findings ask for different ones: a port down for its cable, or waiting for
// the subnet manager). Subject names and summaries carry PIDs, QP numbers and sizes, so they
// never group.
type rootKey struct{ check, fault, kind, action string }

type fact struct {
	attr, group, label, value string
	// where names the first device or port of this host with this value ("mlx5_0", "mlx5_1/1").
	where string
}

type counterRecord struct {
	name, where string
	value       uint64
}

// clean replaces control characters (a newline, a terminal escape) in text that comes from
// reports, so that a hostile report cannot forge lines or drive the operator's terminal.
func clean(s string) string {
	if !strings.ContainsFunc(s, isControl) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }

// reduce turns a decoded report into its host record. name is the input's name.
func reduce(d *doc, name string) hostRecord {
	name = clean(name)
	r := hostRecord{host: clean(d.Host.Hostname), source: name, verdict: d.Summary.Verdict, started: d.Tool.Started}
	r.named = r.host != ""
	if r.host == "" {
		r.host = name
	}
	switch {
	case d.SchemaVersion == "":
		return hostRecord{host: r.host, source: name, failed: "not an rdmadiag report (no schema_version)"}
	case !strings.HasPrefix(d.SchemaVersion, "1."):
		return hostRecord{host: r.host, source: name, failed: fmt.Sprintf("schema_version %q: this rdmadiag reads 1.x", d.SchemaVersion)}
	}
	if d.Error != "" && d.Summary.Verdict == "" {
		// An error document, not a report: the run ended before there was one. Whatever its
		// exit code (3, or 64 for an option file the host's command line named), the host was
		// not checked, which is what a report's verdict unknown says.
		r.verdict = "unknown"
		r.errorDoc = fmt.Sprintf("rdmadiag could not check the host (error document, exit %d): %s", d.ExitCode, clean(d.Error))
		return r
	}
	rs := d.roots
	if d.Findings != nil {
		rs = rootsOf(d.Findings)
	}
	r.roots, r.rootsDropped = rs.list, rs.dropped
	if inv := d.Host.Inventory; inv != nil {
		r.hasInventory = true
		r.facts, r.counters = factsOf(inv)
	}
	return r
}

// rootsOf keeps the problems no other finding explains (the report's root causes, as
// report.summarize defines them), one per key with the worst severity.
func rootsOf(fs []findingDoc) rootSet {
	var rs rootSet
	for i := range fs {
		if !fs[i].ExplainedBy {
			rs.add(&fs[i])
		}
	}
	return rs
}

// maxRootsPerReport caps the distinct root causes kept of one report: a report names a few
// dozen kinds; thousands are a hostile report, and add's linear search must stay short.
const maxRootsPerReport = 256

// rootSet is the root causes of one report, one per key.
type rootSet struct {
	list    []rootRecord
	dropped int
}

// add adds an unexplained finding if it is a problem.
func (rs *rootSet) add(f *findingDoc) {
	sev := severityRank[f.Severity]
	if sev == 0 {
		return
	}
	k := rootKey{clean(f.CheckID), clean(f.Fault), clean(f.Subject.Kind), actionOf(f.Action)}
	for j := range rs.list {
		if r := &rs.list[j]; r.key == k {
			if sev > severityRank[r.severity] {
				r.severity, r.detail = f.Severity, withSubject(f)
			}
			return
		}
	}
	if len(rs.list) >= maxRootsPerReport {
		rs.dropped++
		return
	}
	rs.list = append(rs.list, rootRecord{key: k, severity: f.Severity, detail: withSubject(f)})
}

// withSubject is the summary of a finding naming its subject once, as the report's own tables
// and status lines write it (report.Finding.ShortText): as it is when its first word names the
// subject or its device ("ConnectX-7 15b3:1021: 3 identical cards differ", "rxe0/1 is DOWN"),
// else preceded by the subject (its kind when it has no name). Most summaries start with their
// subject, so prefixing it always printed it twice.
func withSubject(f *findingDoc) string {
	subject, summary := clean(f.Subject.Name), clean(f.Summary)
	if subject == "" {
		subject = clean(f.Subject.Kind)
	}
	end := len(summary)
	for _, sep := range []string{" ", ": ", "("} {
		if i := strings.Index(summary, sep); i >= 0 && i < end {
			end = i
		}
	}
	if word := summary[:end]; len(word) >= 2 && (word == clean(f.Subject.Device) || startsWithName(subject, word)) {
		return summary
	}
	return subject + ": " + summary
}

// startsWithName reports whether s begins with name as a whole word ("mlx5_1" is not a word of
// "mlx5_10").
func startsWithName(s, name string) bool {
	if !strings.HasPrefix(s, name) {
		return false
	}
	rest := s[len(name):]
	return rest == "" || rest[0] == ' ' || rest[0] == ':' || rest[0] == '('
}

// Attributes compared between hosts of the same card.
const (
	AttrFirmware      = "firmware_version" // per board (PSID), or per family without one
	AttrBoard         = "board_id"         // per family (vendor:device)
	AttrDriverVersion = "driver_version"   // per driver
	AttrLinkLayer     = "link_layer"       // per family
	AttrRate          = "rate_gbps"        // per family and link layer, active ports only
	AttrMTU           = "netdev_mtu"       // per family, ports with a netdev
)

// noVersion stands for a driver that declares no module version (in-box drivers).
const noVersion = "(none)"

func factsOf(inv *invDoc) ([]fact, []counterRecord) {
	var facts []fact
	var counters []counterRecord
	type key struct{ attr, group, value string }
	seen := map[key]bool{}
	add := func(attr, group, label, value, where string) {
		if k := (key{attr, group, value}); !seen[k] {
			seen[k] = true
			facts = append(facts, fact{attr: attr, group: clean(group), label: clean(label), value: clean(value), where: clean(where)})
		}
	}
	for _, d := range inv.Devices {
		family, label := familyOf(d.VendorID, d.DeviceID, d.HCAType, d.Driver)
		board, boardLabel := family, label
		if d.BoardID != "" {
			board, boardLabel = d.BoardID, "board "+d.BoardID+" ("+label+")"
		}
		if d.FirmwareVersion != "" {
			add(AttrFirmware, board, boardLabel, d.FirmwareVersion, d.Name)
		}
		if d.BoardID != "" {
			add(AttrBoard, family, label, d.BoardID, d.Name)
		}
		if d.Driver != "" {
			v := d.DriverVersion
			if v == "" {
				v = noVersion
			}
			add(AttrDriverVersion, d.Driver, "driver "+d.Driver, v, d.Name)
		}
		for _, p := range d.Ports {
			where := d.Name + "/" + strconv.Itoa(p.Port)
			if p.LinkLayer != "" {
				add(AttrLinkLayer, family, label, p.LinkLayer, where)
			}
			// A port that is not active prints the rate it would train to, or a placeholder:
			// only active ports say what the link runs at.
			if p.RateGbps != nil && p.State == "ACTIVE" {
				add(AttrRate, family+" "+p.LinkLayer, label+" "+p.LinkLayer, strconv.FormatFloat(*p.RateGbps, 'f', -1, 64), where)
			}
			if p.NetdevMTU > 0 {
				add(AttrMTU, family, label, strconv.Itoa(p.NetdevMTU), where)
			}
			for n, v := range p.ErrorCounters {
				counters = append(counters, counterRecord{name: clean(n), where: clean(where), value: v})
			}
		}
	}
	return facts, counters
}

// familyOf names the card model a device is: the PCI vendor and device id (with the HCA type the
// driver reports), or for software devices the driver.
func familyOf(vendor, device, hcaType, driver string) (key, label string) {
	switch {
	case vendor != "" && device != "":
		key = vendor + ":" + device
		label = key
		if hcaType != "" {
			label += " " + hcaType
		}
	case driver != "":
		key, label = driver, driver
	default:
		key, label = "unknown", "unknown card"
	}
	return key, label
}

// sortedKeys returns a map's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// actionOf is a finding's action when it is one of the vocabulary (report.Actions), else ""
// (a report older than schema 1.4, or a value rdmadiag never writes).
func actionOf(s string) string {
	if a, err := report.ParseAction(s); err == nil && a != report.ActionNone {
		return string(a)
	}
	return ""
}
