package engine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"path"

	"github.com/rdmadiag/rdmadiag/report"
)

// Link names findings a problem can cause, or be caused by: those of one fault row, or those
// of the checks a pattern matches; SameSubject narrows it to findings about the same subject.
type Link struct {
	Fault string `json:"fault,omitempty"`
	// Check is a path.Match pattern over check ids ("*probe*", "port.flaps").
	Check string `json:"check,omitempty"`
	// SameSubject: only a finding about the same subject (kind and name) matches: the same
	// event counted twice on one port is not another port's.
	SameSubject bool `json:"same_subject,omitempty"`
}

// String is the published form of a link, as a report's fault rows carry it.
func (l Link) String() string {
	if l.Fault != "" {
		return "fault:" + l.Fault
	}
	return "check:" + l.Check
}

// matches reports whether finding other is one the link names, seen from finding owner.
func (l Link) matches(owner, other *Finding) bool {
	if l.SameSubject && (owner.Subject.Kind != other.Subject.Kind || owner.Subject.Name != other.Subject.Name) {
		return false
	}
	if l.Fault != "" {
		return l.Fault == other.Fault
	}
	m, _ := path.Match(l.Check, other.CheckID)
	return m
}

// Observation is what a check states it saw (Finding.Observation) where that changes the links
// its fault row would make: Explains, when not nil, replaces the row's (an empty list explains
// nothing); ExplainedBy names causes beyond the rows'.
type Observation struct {
	Check       string `json:"check"`
	Observation string `json:"observation"`
	Why         string `json:"why"`
	Explains    []Link `json:"explains"`
	ExplainedBy []Link `json:"explained_by"`
}

type faultRowData struct {
	ID        string `json:"id"`
	Layer     string `json:"layer"`
	Component string `json:"component"`
	Function  string `json:"function"`
	Symptom   string `json:"symptom"`
	// Action is what a warning or critical finding of the row carries unless its check set one.
	Action   report.Action `json:"action"`
	Explains []Link        `json:"explains"`
}

// couldNotCheck is the action of an unknown finding whose check set none, and why.
type couldNotCheck struct {
	Action report.Action `json:"action"`
	Why    string        `json:"why"`
}

type faultsData struct {
	Comment       string         `json:"_comment"`
	CouldNotCheck couldNotCheck  `json:"could_not_check"`
	Rows          []faultRowData `json:"rows"`
	Observations  []Observation  `json:"observations"`
}

//go:embed faults.json
var faultsJSON []byte

// FaultTable is the parsed fault table, in troubleshooting order.
type FaultTable struct {
	// Rows are the rows as reports carry them.
	Rows     []report.FaultRow
	explains [][]Link
	byID     map[string]int
	obs      map[obsKey]*Observation
	observed []Observation
	// unknownAction is what an unknown finding carries unless its check set an action.
	unknownAction report.Action
}

type obsKey struct{ check, observation string }

// DefaultFaults parses the embedded fault table. It panics only if the embedded data is broken,
// which the package tests rule out.
func DefaultFaults() *FaultTable {
	t, err := ParseFaults(faultsJSON)
	if err != nil {
		panic(err)
	}
	return t
}

// ParseFaults reads a fault table and checks it: unique ids, known layers, an action of the
// vocabulary (report.Actions, never none) on every row and for unknown findings, links that name
// a known row or a valid pattern (exactly one of the two), observations named once.
func ParseFaults(b []byte) (*FaultTable, error) {
	var d faultsData
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("fault table: %w", err)
	}
	t := &FaultTable{byID: map[string]int{}, obs: map[obsKey]*Observation{}, unknownAction: d.CouldNotCheck.Action}
	if err := problemAction(d.CouldNotCheck.Action); err != nil {
		return nil, fmt.Errorf("fault table: could_not_check: %w", err)
	}
	for i, r := range d.Rows {
		if _, dup := t.byID[r.ID]; dup {
			return nil, fmt.Errorf("fault table: duplicate row %q", r.ID)
		}
		if report.LayerRank(r.Layer) < 0 {
			return nil, fmt.Errorf("fault table: row %q has unknown layer %q", r.ID, r.Layer)
		}
		if err := problemAction(r.Action); err != nil {
			return nil, fmt.Errorf("fault table: row %q: %w", r.ID, err)
		}
		t.byID[r.ID] = i
	}
	check := func(where string, ls []Link) error {
		for _, l := range ls {
			switch {
			case (l.Fault == "") == (l.Check == ""):
				return fmt.Errorf("fault table: %s: a link names either a fault or a check: %+v", where, l)
			case l.Fault != "":
				if _, ok := t.byID[l.Fault]; !ok {
					return fmt.Errorf("fault table: %s: unknown row %q", where, l.Fault)
				}
			default:
				if _, err := path.Match(l.Check, ""); err != nil {
					return fmt.Errorf("fault table: %s: bad pattern %q: %w", where, l.Check, err)
				}
			}
		}
		return nil
	}
	for _, r := range d.Rows {
		if err := check("row "+r.ID, r.Explains); err != nil {
			return nil, err
		}
		published := make([]string, len(r.Explains))
		for i, l := range r.Explains {
			published[i] = l.String()
		}
		t.Rows = append(t.Rows, report.FaultRow{ID: r.ID, Layer: r.Layer, Component: r.Component, Function: r.Function,
			Symptom: r.Symptom, Action: r.Action, LogSignatures: []string{}, Explains: published})
		t.explains = append(t.explains, r.Explains)
	}
	for i := range d.Observations {
		o := &d.Observations[i]
		k := obsKey{o.Check, o.Observation}
		where := "observation " + o.Check + "/" + o.Observation
		if o.Check == "" || o.Observation == "" {
			return nil, fmt.Errorf("fault table: %s: names no check or no observation", where)
		}
		if _, dup := t.obs[k]; dup {
			return nil, fmt.Errorf("fault table: %s: given twice", where)
		}
		if err := check(where, o.Explains); err != nil {
			return nil, err
		}
		if err := check(where, o.ExplainedBy); err != nil {
			return nil, err
		}
		t.obs[k] = o
	}
	t.observed = d.Observations
	return t, nil
}

// Row returns the row with the given id.
func (t *FaultTable) Row(id string) (report.FaultRow, bool) {
	i, ok := t.byID[id]
	if !ok {
		return report.FaultRow{}, false
	}
	return t.Rows[i], true
}

// problemAction checks an action a problem is given: one of the vocabulary, and not none.
func problemAction(a report.Action) error {
	switch {
	case a == "":
		return fmt.Errorf("no action")
	case !a.Valid():
		return fmt.Errorf("action %q is not one of report.Actions", a)
	case a == report.ActionNone:
		return fmt.Errorf("action none: a problem always asks for something")
	}
	return nil
}

// ActionOf is the action a finding carries in the report: for a problem the one its check set,
// else the fault table's (an unknown one's could_not_check, a warning or critical one's row's; a
// row the table lacks is contact-vendor's, since no one knows what fails). Of the other findings
// only a skip held back by a limit keeps the action its check set (report.Finding.SkippedBy): an
// action set on the way to a judgement that ended ok or info does not stand.
func (t *FaultTable) ActionOf(f *report.Finding) report.Action {
	switch {
	case !f.Severity.Problem():
		if f.Severity == report.Skipped && f.Limit != nil {
			return f.Action
		}
		return ""
	case f.Action != "":
		return f.Action
	case f.Severity == report.Unknown:
		return t.unknownAction
	}
	if row, ok := t.Row(f.Fault); ok {
		return row.Action
	}
	return report.ActionContactVendor
}

// Explains returns what a problem in row id can cause, typed.
func (t *FaultTable) Explains(id string) []Link {
	if i, ok := t.byID[id]; ok {
		return t.explains[i]
	}
	return nil
}

// Observations returns the table's observations, in table order.
func (t *FaultTable) Observations() []Observation { return t.observed }

// rank is a row's position in troubleshooting order; rows the table lacks come last.
func (t *FaultTable) rank(id string) int {
	if i, ok := t.byID[id]; ok {
		return i
	}
	return len(t.Rows)
}

func (t *FaultTable) observation(f *Finding) *Observation {
	if f.Observation == "" {
		return nil
	}
	return t.obs[obsKey{f.CheckID, f.Observation}]
}

// canExplain reports whether finding cause can produce finding effect: by what the cause's
// observation says it explains, else by its fault row, or by a cause the effect's observation
// names.
func (t *FaultTable) canExplain(cause, effect *Finding) bool {
	links := t.Explains(cause.Fault)
	if o := t.observation(cause); o != nil && o.Explains != nil {
		links = o.Explains
	}
	for _, l := range links {
		if l.matches(cause, effect) {
			return true
		}
	}
	if o := t.observation(effect); o != nil {
		for _, l := range o.ExplainedBy {
			if l.matches(effect, cause) {
				return true
			}
		}
	}
	return false
}
