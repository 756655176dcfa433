package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/rdmadiag/rdmadiag/report"
)

// RenderCheckList writes l as indented JSON.
func RenderCheckList(w io.Writer, l report.CheckList) error {
	if l.Checks == nil {
		l.Checks = []report.ListedCheck{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(l); err != nil {
		return fmt.Errorf("encode check list: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// RenderError writes the error document for err, which ends the run with code.
func RenderError(w io.Writer, tool report.Tool, err error, code int) error {
	msg := "error"
	if err != nil && err.Error() != "" {
		msg = err.Error()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(report.ErrorDocument{SchemaVersion: report.SchemaVersion, Tool: tool, Error: msg, ExitCode: code}); err != nil {
		return fmt.Errorf("encode error document: %w", err)
	}
	_, werr := w.Write(buf.Bytes())
	return werr
}
