package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// ErrorDocument is what --format json prints instead of a report when the run ends before there
// is one (a usage error, a snapshot that cannot be opened), so that a program reading standard
// output always gets a JSON document with the exit code (report/schema.json, since 1.3).
type ErrorDocument struct {
	SchemaVersion string `json:"schema_version"`
	Tool          Tool   `json:"tool"`
	Error         string `json:"error"`
	ExitCode      int    `json:"exit_code"`
}

// RenderError writes the error document for err, which ends the run with code.
func RenderError(w io.Writer, tool Tool, err error, code int) error {
	msg := "error"
	if err != nil && err.Error() != "" {
		msg = err.Error()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ErrorDocument{SchemaVersion: SchemaVersion, Tool: tool, Error: msg, ExitCode: code}); err != nil {
		return fmt.Errorf("encode error document: %w", err)
	}
	_, werr := w.Write(buf.Bytes())
	return werr
}
