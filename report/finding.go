// Package report is rdmadiag's JSON report as a program reading it imports it: the document
// (Report, Finding, Subject, Evidence, Severity, Limit, the inventory), its JSON Schema, and the
// reads every consumer needs (RootCauses in their one order). It depends on no renderer and no
// engine: report/engine builds a Report from the checks' findings, report/render writes one.
package report

import (
	"encoding/json"
	"fmt"
)

// Severity of a finding. The order of the constants is the order of gravity used for sorting;
// the exit code is derived separately (see ExitCode).
type Severity int

// Severities, from least to most grave.
const (
	OK Severity = iota
	Skipped
	Info
	Unknown
	Warning
	Critical
)

var severityNames = [...]string{"ok", "skipped", "info", "unknown", "warning", "critical"}

// Severities are every severity, from least to most grave.
var Severities = []Severity{OK, Skipped, Info, Unknown, Warning, Critical}

func (s Severity) String() string {
	if int(s) < len(severityNames) && s >= 0 {
		return severityNames[s]
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText writes the stable lower-case name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (s *Severity) UnmarshalText(b []byte) error {
	for i, n := range severityNames {
		if n == string(b) {
			*s = Severity(i)
			return nil
		}
	}
	return fmt.Errorf("unknown severity %q", b)
}

// Problem reports whether the severity needs an operator's attention.
func (s Severity) Problem() bool { return s == Warning || s == Critical || s == Unknown }

// Subject is what a finding is about. Kind is one of host, device, port, pci, netdev, module,
// qp, cq, file; Name identifies it ("mlx5_0/1", "0000:3b:00.0", "ib_core"). Device ties the
// subject to an RDMA device so that causes on that device can explain it; empty means host-wide.
type Subject struct {
	Kind   string `json:"kind"`
	Name   string `json:"name"`
	Device string `json:"device,omitempty"`
	PCI    string `json:"pci,omitempty"`
}

func (s Subject) String() string {
	if s.Name == "" {
		return s.Kind
	}
	return s.Name
}

// Evidence is one observation behind a finding: what was seen, where, and what was expected.
type Evidence struct {
	Name     string `json:"name"`
	Observed string `json:"observed"`
	Expected string `json:"expected,omitempty"`
	// Source is where it was read: a host path, "netlink:RES_QP_GET mlx5_0", "kmsg", "verbs".
	Source string `json:"source,omitempty"`
}

// Finding is one verdict of one check on one subject.
type Finding struct {
	CheckID     string     `json:"check_id"`
	Layer       string     `json:"layer"`
	Subject     Subject    `json:"subject"`
	Severity    Severity   `json:"severity"`
	Summary     string     `json:"summary"`
	Evidence    []Evidence `json:"evidence,omitempty"`
	Remediation string     `json:"remediation,omitempty"`
	// Fault is the id of the fault-table row this finding belongs to.
	Fault string `json:"fault"`
	// Action is what automation should do about this finding (schema 1.4): set on every problem
	// (warning, critical, unknown), from its fault row unless the check knew better; omitted or
	// ActionNone on the others.
	Action Action `json:"action,omitempty"`
	// Ref identifies this finding within a report ("driver.modules@ib_core"); consequences name
	// their causes by Ref. It is the check id and the subject's identity (a key the check gives,
	// else Subject.Name), and stays the same across runs and restarts of the owning processes, so
	// a ticket can quote it.
	Ref string `json:"ref"`
	// ExplainedBy lists the Refs of the findings that explain this one, as Build links them (from
	// the fault table and shared events; what a check sets here is replaced). A finding that is
	// explained is a consequence, not a root cause.
	ExplainedBy []string `json:"explained_by,omitempty"`
	// Limit is set on a skipped finding that could not be judged because of a limit the operator
	// chose or the run's circumstances allow (no root, a tree without a kernel log, --no-probe):
	// such a skip does not make the verdict unknown unless --strict asks for certainty.
	Limit *Limit `json:"limit,omitempty"`
}

// Limit says why a finding was skipped and how to lift the limit.
type Limit struct {
	// Kind is one of the Limit* constants; stable for scripts.
	Kind string `json:"kind"`
	// Lift is what the operator can do to have it judged ("run as root", "drop --no-probe").
	Lift string `json:"lift"`
}

// Limit kinds.
const (
	// LimitPrivilege: the run lacks root, CAP_SYSLOG or CAP_NET_ADMIN (kernel.dmesg_restrict,
	// root-only files, admin-only netlink dumps).
	LimitPrivilege = "privilege"
	// LimitSource: the snapshot or tree does not hold this source (no kernel log in a --root tree,
	// a snapshot recorded without it).
	LimitSource = "source"
	// LimitSelection: --only, --skip or --no-probe left out something this finding needs.
	LimitSelection = "selection"
	// LimitLiveOnly: the check needs the live host (verbs probes, a second reading).
	LimitLiveOnly = "live-only"
)

// SkippedBy turns f into a skipped finding held back by a limit. One held back by the run's
// privilege says what lifts it: the run's configuration (root, the capability it lacks).
func (f Finding) SkippedBy(kind, lift string) Finding {
	f.Severity = Skipped
	f.Limit = &Limit{Kind: kind, Lift: lift}
	if kind == LimitPrivilege {
		f.Action = ActionFixConfiguration
	}
	return f
}

// Evidence helpers keep check code short and the wording uniform.

// Ev builds an Evidence with an observed value and its source.
func Ev(name, observed, source string) Evidence {
	return Evidence{Name: name, Observed: observed, Source: source}
}

// EvExp builds an Evidence with an expected value too.
func EvExp(name, observed, expected, source string) Evidence {
	return Evidence{Name: name, Observed: observed, Expected: expected, Source: source}
}

// DefaultRef is the ref of a finding that was not given one: its check id and subject name.
// The engine gives every finding its ref, from a key that survives restarts where it has one.
func (f *Finding) DefaultRef() string { return RefOf(f.CheckID, f.Subject.Name) }

// RefOf is the ref of check checkID's finding whose key (or, without one, subject name) is key:
// the one place refs are built.
func RefOf(checkID, key string) string {
	if key == "" {
		return checkID
	}
	return checkID + "@" + key
}

// MarshalJSON keeps the field order stable and omits nothing that the schema requires.
func (f Finding) MarshalJSON() ([]byte, error) {
	type plain Finding
	if f.Ref == "" {
		f.Ref = f.DefaultRef()
	}
	return json.Marshal(plain(f))
}
