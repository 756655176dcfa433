package firmware

import (
	_ "embed"
	"fmt"
	"sort"

	"github.com/rdmadiag/rdmadiag/internal/optfile"
)

// Row is one line of the firmware/driver compatibility matrix (decoded and validated by
// optfile, which --matrix files share with the embedded matrix).
type Row = optfile.MatrixRow

// Entry is a row as Lookup returns it, with its versions parsed for the judgement.
type Entry struct {
	Row
	min, rec *Version
}

func entryOf(r Row) Entry {
	e := Entry{Row: r}
	if v, ok := r.MinVersion(); ok {
		w := Version(v)
		e.min = &w
	}
	if v, ok := r.RecommendedVersion(); ok {
		w := Version(v)
		e.rec = &w
	}
	return e
}

// Matrix is the whole table.
type Matrix struct {
	Rows []Row
}

//go:embed matrix.json
var defaultMatrix []byte

// embeddedName is what rows of the embedded matrix say they come from.
const embeddedName = "embedded matrix.json"

// DefaultMatrix returns the embedded matrix.
func DefaultMatrix() (*Matrix, error) { return ParseMatrix(defaultMatrix, embeddedName) }

// KnownFamily says whether the matrix can hold rows for a firmware major: a row for another
// family could never match a device.
func KnownFamily(major int) bool {
	_, ok := FamilyOf(major)
	return ok
}

// ParseMatrix decodes a matrix document strictly (optfile.DecodeMatrix) against the families
// this package knows.
func ParseMatrix(b []byte, from string) (*Matrix, error) {
	rows, err := optfile.DecodeMatrix(b, from, KnownFamily)
	if err != nil {
		return nil, err
	}
	return &Matrix{Rows: rows}, nil
}

func rowKey(r Row) string { return fmt.Sprintf("%d/%s/%s", r.Family, r.Driver, r.DriverVersion) }

// Merge returns m with the rows of o added; a row of o with the same family, driver and driver
// series replaces m's (so --matrix can correct the embedded data as well as extend it).
func (m *Matrix) Merge(o *Matrix) *Matrix {
	out := &Matrix{}
	idx := map[string]int{}
	for _, r := range append(append([]Row{}, m.Rows...), o.Rows...) {
		if i, ok := idx[rowKey(r)]; ok {
			out.Rows[i] = r
			continue
		}
		idx[rowKey(r)] = len(out.Rows)
		out.Rows = append(out.Rows, r)
	}
	return out
}

// Lookup returns the row for a family and driver: the one with the longest matching driver
// series, so "5.8-2" beats "5.8" and "5.8" beats "".
func (m *Matrix) Lookup(family int, d Driver) (Entry, bool) {
	var cands []Row
	for _, r := range m.Rows {
		if r.Family == family && r.Driver == d.Kind && seriesMatch(r.DriverVersion, d.Version) {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return Entry{}, false
	}
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].DriverVersion) > len(cands[j].DriverVersion) })
	return entryOf(cands[0]), true
}
