package report

// CheckList is what `rdmadiag list --format json` prints (report/list-schema.json).
type CheckList struct {
	SchemaVersion string        `json:"schema_version"`
	Tool          Tool          `json:"tool"`
	Checks        []ListedCheck `json:"checks"`
}

// ListedCheck describes one registered check.
type ListedCheck struct {
	// ID is what --only and --skip name and what findings carry as check_id.
	ID          string `json:"id"`
	Layer       string `json:"layer"`
	Description string `json:"description"`
	// Fault is the id of the check's row of the fault table (report/engine/faults.json).
	Fault string `json:"fault"`
	// Probe marks the verbs probes, which create their own resources and run only live.
	Probe bool `json:"probe"`
	// Origin is where a check that is not built in comes from: the Go package that registered
	// it (a site's own build). Absent for the built-in checks.
	Origin string `json:"origin,omitempty"`
}
