package firmware

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
)

// Row is one line of the firmware/driver compatibility matrix: for a device family and a driver
// series, the minimum firmware (below it the driver is known not to work) and the recommended one
// (for a driver release, the firmware NVIDIA bundles with it; for the in-box driver, the newest
// firmware NVIDIA publishes), or that the release does not support the family at all. Every row
// says where it comes from.
type Row struct {
	Family int `json:"family"`
	// Driver is "ofed" or "inbox"; DriverVersion the series ("5.7", "24.10", a kernel "6.1"),
	// empty for any version of that kind.
	Driver        string `json:"driver"`
	DriverVersion string `json:"driver_version"`
	Min           string `json:"min,omitempty"`
	Recommended   string `json:"recommended,omitempty"`
	Source        string `json:"source"`
	// Note is shown with the remediation ("the documented case was fixed with 16.27.4000").
	Note string `json:"note,omitempty"`
	// From says which file the row came from (set on load).
	From string `json:"-"`

	min, rec *Version

	// Unsupported says the driver release does not support the family (its release notes do not
	// list it); such a row has neither min nor recommended.
	Unsupported bool `json:"unsupported,omitempty"`
}

// Matrix is the whole table.
type Matrix struct {
	Comment string `json:"_comment,omitempty"`
	Rows    []Row  `json:"rows"`
}

//go:embed matrix.json
var defaultMatrix []byte

// DefaultMatrix returns the embedded matrix.
func DefaultMatrix() (*Matrix, error) { return ParseMatrix(defaultMatrix, "embedded matrix.json") }

// ParseMatrix reads a matrix document and validates every row: a row that cannot be used is an
// error naming the row, because a silently ignored row would make a verdict look checked.
func ParseMatrix(b []byte, from string) (*Matrix, error) {
	var m Matrix
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	for i := range m.Rows {
		r := &m.Rows[i]
		r.From = from
		where := fmt.Sprintf("%s: row %d (family %d, %s %q)", from, i+1, r.Family, r.Driver, r.DriverVersion)
		if _, ok := FamilyOf(r.Family); !ok {
			return nil, fmt.Errorf("%s: unknown family %d (want a firmware major such as 16 for ConnectX-5)", where, r.Family)
		}
		if r.Driver != KindOFED && r.Driver != KindInbox {
			return nil, fmt.Errorf("%s: driver must be %q or %q", where, KindOFED, KindInbox)
		}
		if r.Source == "" {
			return nil, fmt.Errorf("%s: every row must cite its source", where)
		}
		if r.Min == "" && r.Recommended == "" && !r.Unsupported {
			return nil, fmt.Errorf("%s: a row needs min or recommended, or unsupported", where)
		}
		if r.Unsupported && (r.Min != "" || r.Recommended != "") {
			return nil, fmt.Errorf("%s: an unsupported row has no firmware to compare with (drop min and recommended)", where)
		}
		for _, p := range []struct {
			s   string
			dst **Version
		}{{r.Min, &r.min}, {r.Recommended, &r.rec}} {
			if p.s == "" {
				continue
			}
			v, err := ParseVersion(p.s)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if v.Major != r.Family {
				return nil, fmt.Errorf("%s: version %s is not of family %d", where, p.s, r.Family)
			}
			*p.dst = &v
		}
	}
	return &m, nil
}

func (r Row) key() string { return fmt.Sprintf("%d/%s/%s", r.Family, r.Driver, r.DriverVersion) }

// Merge returns m with the rows of o added; a row of o with the same family, driver and driver
// series replaces m's (so --matrix can correct the embedded data as well as extend it).
func (m *Matrix) Merge(o *Matrix) *Matrix {
	out := &Matrix{}
	idx := map[string]int{}
	for _, r := range append(append([]Row{}, m.Rows...), o.Rows...) {
		if i, ok := idx[r.key()]; ok {
			out.Rows[i] = r
			continue
		}
		idx[r.key()] = len(out.Rows)
		out.Rows = append(out.Rows, r)
	}
	return out
}

// Lookup returns the row for a family and driver: the one with the longest matching driver
// series, so "5.8-2" beats "5.8" and "5.8" beats "".
func (m *Matrix) Lookup(family int, d Driver) (Row, bool) {
	var cands []Row
	for _, r := range m.Rows {
		if r.Family == family && r.Driver == d.Kind && seriesMatch(r.DriverVersion, d.Version) {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return Row{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].DriverVersion) > len(cands[j].DriverVersion) })
	return cands[0], true
}
