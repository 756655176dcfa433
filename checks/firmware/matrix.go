package firmware

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

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

// release is an MLNX_OFED/DOCA-OFED version as the matrix orders releases: the series
// ("5.7", "24.10") and the update, the number after the dash ("23.10-1" is update 1; a row
// naming the series alone stands for its first release, update 0).
type release struct{ major, minor, update int }

func (r release) series() [2]int { return [2]int{r.major, r.minor} }

func seriesLess(a, b [2]int) bool { return a[0] < b[0] || (a[0] == b[0] && a[1] < b[1]) }

// parseRelease reads "5.7", "23.10-1" (a matrix series) or "5.7-1.0.2" (a driver version).
func parseRelease(s string) (release, bool) {
	base, rest, dash := strings.Cut(s, "-")
	maj, min, ok := strings.Cut(base, ".")
	if !ok {
		return release{}, false
	}
	var r release
	var err error
	if r.major, err = strconv.Atoi(maj); err != nil || r.major < 0 {
		return release{}, false
	}
	if r.minor, err = strconv.Atoi(min); err != nil || r.minor < 0 {
		return release{}, false
	}
	if dash {
		upd, _, _ := strings.Cut(rest, ".")
		if r.update, err = strconv.Atoi(upd); err != nil || r.update < 0 {
			return release{}, false
		}
	}
	return r, true
}

// Neighbour is the row of another release that bounds a firmware the matrix has no row for,
// or that an older firmware is measured against: Need is the firmware it asks for (its
// minimum, else the firmware it was released with).
type Neighbour struct {
	Entry
	Need Version
}

// Neighbours returns, for a family on an MLNX_OFED/DOCA-OFED release, the nearest earlier
// and later releases the matrix has firmware for. Within one series the updates are ordered
// ("23.10-1" after "23.10"); across series only each series' first row counts, because an
// LTS update of an older series ("5.8-7") ships later, and newer, firmware than the next
// series did. Unsupported rows and rows whose version does not parse bound nothing; nor does
// the row Lookup found for this release (matched, nil when there is none).
func (m *Matrix) Neighbours(family int, d Driver, matched *Entry) (earlier, later *Neighbour) {
	host, ok := parseRelease(d.Version)
	if d.Kind != KindOFED || !ok {
		return nil, nil
	}
	type cand struct {
		rel release
		n   Neighbour
	}
	var same, before, after []cand
	for _, r := range m.Rows {
		if r.Family != family || r.Driver != KindOFED || r.Unsupported || (matched != nil && rowKey(r) == rowKey(matched.Row)) {
			continue
		}
		rel, ok := parseRelease(r.DriverVersion)
		if !ok {
			continue
		}
		e := entryOf(r)
		need := e.rec
		if e.min != nil {
			need = e.min
		}
		if need == nil {
			continue
		}
		c := cand{rel, Neighbour{e, *need}}
		switch {
		case rel.series() == host.series():
			same = append(same, c)
		case seriesLess(rel.series(), host.series()):
			before = append(before, c)
		default:
			after = append(after, c)
		}
	}
	pick := func(cs []cand, better func(a, b release) bool) *Neighbour {
		var best *cand
		for i := range cs {
			if best == nil || better(cs[i].rel, best.rel) {
				best = &cs[i]
			}
		}
		if best == nil {
			return nil
		}
		return &best.n
	}
	// Earlier: the latest earlier update of this series, else the first row of the latest
	// earlier series. Later: the first later update of this series, else the first row of
	// the next series.
	var sameBefore, sameAfter []cand
	for _, c := range same {
		switch {
		case c.rel.update < host.update:
			sameBefore = append(sameBefore, c)
		case c.rel.update > host.update:
			sameAfter = append(sameAfter, c)
		}
	}
	earlier = pick(sameBefore, func(a, b release) bool { return a.update > b.update })
	if earlier == nil {
		earlier = pick(before, func(a, b release) bool {
			if a.series() != b.series() {
				return seriesLess(b.series(), a.series())
			}
			return a.update < b.update
		})
	}
	later = pick(sameAfter, func(a, b release) bool { return a.update < b.update })
	if later == nil {
		later = pick(after, func(a, b release) bool {
			if a.series() != b.series() {
				return seriesLess(a.series(), b.series())
			}
			return a.update < b.update
		})
	}
	return earlier, later
}
