package report

// ErrorDocument is what --format json prints instead of a report when the run ends before there
// is one (a usage error, a snapshot that cannot be opened), so that a program reading standard
// output always gets a JSON document with the exit code (report/schema.json, since 1.3).
type ErrorDocument struct {
	SchemaVersion string `json:"schema_version"`
	Tool          Tool   `json:"tool"`
	Error         string `json:"error"`
	ExitCode      int    `json:"exit_code"`
}
