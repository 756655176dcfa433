package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// FaultRow is one row of the fault table: the component that fails, what it does, how the failure
// shows, and the kernel log strings that betray it.
type FaultRow struct {
	ID            string   `json:"id"`
	Layer         string   `json:"layer"`
	Component     string   `json:"component"`
	Function      string   `json:"function"`
	Symptom       string   `json:"symptom"`
	LogSignatures []string `json:"log_signatures"`
	Explains      []string `json:"explains"`
}

//go:embed faults.json
var faultsJSON []byte

// FaultTable is the parsed fault table, in troubleshooting order.
type FaultTable struct {
	Rows []FaultRow `json:"rows"`
	byID map[string]int
}

// DefaultFaults parses the embedded fault table. It panics only if the embedded data is broken,
// which the package tests rule out.
func DefaultFaults() *FaultTable {
	t, err := ParseFaults(faultsJSON)
	if err != nil {
		panic(err)
	}
	return t
}

// ParseFaults reads a fault table and checks it: unique ids, known layers, explains patterns of
// a known form.
func ParseFaults(b []byte) (*FaultTable, error) {
	var t FaultTable
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("fault table: %w", err)
	}
	t.byID = map[string]int{}
	for i, r := range t.Rows {
		if _, dup := t.byID[r.ID]; dup {
			return nil, fmt.Errorf("fault table: duplicate row %q", r.ID)
		}
		if LayerRank(r.Layer) < 0 {
			return nil, fmt.Errorf("fault table: row %q has unknown layer %q", r.ID, r.Layer)
		}
		t.byID[r.ID] = i
	}
	for _, r := range t.Rows {
		for _, e := range r.Explains {
			switch {
			case strings.HasPrefix(e, "fault:"):
				if _, ok := t.byID[strings.TrimPrefix(e, "fault:")]; !ok {
					return nil, fmt.Errorf("fault table: row %q explains unknown row %q", r.ID, e)
				}
			case strings.HasPrefix(e, "check:"):
				if _, err := path.Match(strings.TrimPrefix(e, "check:"), ""); err != nil {
					return nil, fmt.Errorf("fault table: row %q: bad pattern %q: %w", r.ID, e, err)
				}
			default:
				return nil, fmt.Errorf("fault table: row %q: explains %q, which is neither a fault nor a check pattern", r.ID, e)
			}
		}
	}
	return &t, nil
}

// Row returns the row with the given id.
func (t *FaultTable) Row(id string) (FaultRow, bool) {
	i, ok := t.byID[id]
	if !ok {
		return FaultRow{}, false
	}
	return t.Rows[i], true
}

// explains reports whether a problem in row cause can produce finding effect.
func (t *FaultTable) explains(cause string, effect *Finding) bool {
	r, ok := t.Row(cause)
	if !ok {
		return false
	}
	return matchExplains(r.Explains, effect)
}

// canExplain reports whether finding cause can produce finding effect: by the cause's own
// Explains when it narrows them, else by its fault row's.
func (t *FaultTable) canExplain(cause, effect *Finding) bool {
	if cause.Explains != nil {
		return matchExplains(cause.Explains, effect)
	}
	return t.explains(cause.Fault, effect)
}

func matchExplains(patterns []string, effect *Finding) bool {
	for _, e := range patterns {
		if id, ok := strings.CutPrefix(e, "fault:"); ok && id == effect.Fault {
			return true
		}
		if g, ok := strings.CutPrefix(e, "check:"); ok {
			if m, _ := path.Match(g, effect.CheckID); m {
				return true
			}
		}
	}
	return false
}

// Layers in troubleshooting order: hardware first, then firmware, driver and kernel modules, the
// port, and the verbs objects that live on top.
var Layers = []string{"pcie", "firmware", "driver", "port", "qp", "cq"}

// LayerRank is the position of a layer in Layers, -1 if unknown.
func LayerRank(layer string) int {
	for i, l := range Layers {
		if l == layer {
			return i
		}
	}
	return -1
}

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON Schema of the report document (report/schema.json).
func Schema() []byte { return append([]byte(nil), schemaJSON...) }

//go:embed list-schema.json
var listSchemaJSON []byte

// ListSchema returns the JSON Schema of `rdmadiag list --format json` (report/list-schema.json).
func ListSchema() []byte { return append([]byte(nil), listSchemaJSON...) }
