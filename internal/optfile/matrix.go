package optfile

import (
	"fmt"
	"strings"
)

// MatrixRow is one line of the firmware/driver compatibility matrix: for a device family and a
// driver series, the minimum firmware (below it the driver is known not to work) and the
// recommended one (the train validated with that driver). Every row says where it comes from.
// The embedded matrix (checks/firmware/matrix.json) and --matrix files share this format.
type MatrixRow struct {
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
	// Unsupported says the driver release does not support the family (its release notes do not
	// list it); such a row has neither min nor recommended.
	Unsupported bool `json:"unsupported,omitempty"`

	min, rec *FirmwareVersion
}

// MinVersion is Min parsed; false when the row has no minimum.
func (r MatrixRow) MinVersion() (FirmwareVersion, bool) { return deref(r.min) }

// RecommendedVersion is Recommended parsed; false when the row recommends none.
func (r MatrixRow) RecommendedVersion() (FirmwareVersion, bool) { return deref(r.rec) }

func deref(v *FirmwareVersion) (FirmwareVersion, bool) {
	if v == nil {
		return FirmwareVersion{}, false
	}
	return *v, true
}

// Driver kinds of a matrix row.
const (
	// DriverOFED is MLNX_OFED or DOCA-OFED.
	DriverOFED = "ofed"
	// DriverInbox is the kernel's own driver.
	DriverInbox = "inbox"
)

var (
	matrixKeys = []string{"_comment", "rows"}
	rowKeys    = []string{"family", "driver", "driver_version", "min", "recommended", "unsupported", "source", "note"}
)

// DecodeMatrix decodes a matrix document and validates every row: a row that cannot be used
// is an error naming it, because a silently ignored row would make a verdict look checked.
// knownFamily says which firmware majors the firmware checks know; nil accepts any major.
func DecodeMatrix(b []byte, file string, knownFamily func(major int) bool) ([]MatrixRow, error) {
	root, err := parse(file, b)
	if err != nil {
		return nil, err
	}
	c := checker{file}
	if err := c.object("", root, `a JSON object like {"rows": [...]}`, "key", matrixKeys...); err != nil {
		return nil, err
	}
	if v, ok := root.obj["_comment"]; ok {
		if _, err := c.str("_comment", v, "a string"); err != nil {
			return nil, err
		}
	}
	v, ok := root.obj["rows"]
	if !ok {
		return nil, c.fail("", `missing key "rows" (want the list of rows)`)
	}
	if v.kind != kArray || len(v.items) == 0 {
		return nil, c.want("rows", "a non-empty list of rows", v)
	}
	rows := make([]MatrixRow, 0, len(v.items))
	seen := map[string]int{}
	for i, it := range v.items {
		path := index("rows", i)
		r, err := c.row(path, it, knownFamily)
		if err != nil {
			return nil, err
		}
		r.From = file
		key := fmt.Sprintf("%d/%s/%s", r.Family, r.Driver, r.DriverVersion)
		if j, dup := seen[key]; dup {
			return nil, c.fail(path, "same family %d, driver %q and driver_version %q as rows[%d]: one row per driver series",
				r.Family, r.Driver, r.DriverVersion, j)
		}
		seen[key] = i
		rows = append(rows, r)
	}
	return rows, nil
}

func (c checker) row(path string, v *value, knownFamily func(int) bool) (MatrixRow, error) {
	var r MatrixRow
	if err := c.object(path, v, "a row object", "key", rowKeys...); err != nil {
		return r, err
	}
	for _, k := range []string{"family", "driver", "source"} {
		if _, ok := v.obj[k]; !ok {
			return r, c.fail(path, "missing key %q (a row needs family, driver and source)", k)
		}
	}
	wantFamily := "the firmware major of a device family, like 16 for ConnectX-5"
	fp := field(path, "family")
	n, err := c.integer(fp, v.obj["family"], wantFamily)
	if err != nil {
		return r, err
	}
	if n <= 0 || n > 0xffff || (knownFamily != nil && !knownFamily(int(n))) {
		return r, c.fail(fp, "want %s (one the firmware checks know), got %s", wantFamily, v.obj["family"].describe())
	}
	r.Family = int(n)
	dp := field(path, "driver")
	if r.Driver, err = c.str(dp, v.obj["driver"], fmt.Sprintf("%q or %q", DriverOFED, DriverInbox)); err != nil {
		return r, err
	}
	if r.Driver != DriverOFED && r.Driver != DriverInbox {
		return r, c.want(dp, fmt.Sprintf("%q (MLNX_OFED, DOCA-OFED) or %q (the kernel's driver)", DriverOFED, DriverInbox), v.obj["driver"])
	}
	if x, ok := v.obj["driver_version"]; ok {
		vp := field(path, "driver_version")
		const want = `a driver series like "5.7" or "24.10" (OFED) or "6.1" (kernel), or "" for any`
		if r.DriverVersion, err = c.str(vp, x, want); err != nil {
			return r, err
		}
		if strings.TrimSpace(r.DriverVersion) != r.DriverVersion {
			return r, c.want(vp, want+" without surrounding white space", x)
		}
	}
	for _, p := range []struct {
		key string
		s   *string
		v   **FirmwareVersion
	}{{"min", &r.Min, &r.min}, {"recommended", &r.Recommended, &r.rec}} {
		x, ok := v.obj[p.key]
		if !ok {
			continue
		}
		fv, err := c.version(field(path, p.key), x, r.Family)
		if err != nil {
			return r, err
		}
		*p.s, *p.v = x.text, &fv
	}
	if x, ok := v.obj["unsupported"]; ok {
		if x.kind != kBool {
			return r, c.want(field(path, "unsupported"), "true or false", x)
		}
		r.Unsupported = x.b
	}
	if r.Unsupported && (r.min != nil || r.rec != nil) {
		return r, c.fail(path, "an unsupported row has no firmware to compare with (drop min and recommended)")
	}
	if r.min == nil && r.rec == nil && !r.Unsupported {
		return r, c.fail(path, "a row needs min or recommended (or both), or unsupported")
	}
	if r.min != nil && r.rec != nil && r.rec.older(*r.min) {
		return r, c.fail(field(path, "recommended"), "want a version no older than min %s, got %q", r.Min, r.Recommended)
	}
	sp := field(path, "source")
	const wantSource = "a non-empty citation of a public source (release notes and section)"
	if r.Source, err = c.str(sp, v.obj["source"], wantSource); err != nil {
		return r, err
	}
	if strings.TrimSpace(r.Source) == "" {
		return r, c.want(sp, wantSource, v.obj["source"])
	}
	if x, ok := v.obj["note"]; ok {
		if r.Note, err = c.str(field(path, "note"), x, "a string"); err != nil {
			return r, err
		}
	}
	return r, nil
}
