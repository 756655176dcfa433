package render

import (
	"io"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// NPDMaxOutput is node-problem-detector's default max_output_length: the custom plugin monitor
// trims a plugin's stdout and cuts it to that many bytes (pkg/custompluginmonitor/types/config.go,
// defaultMaxOutputLength; the cut is in plugin.go, run()). The line is written to fit, cut at a
// character boundary, so that npd never splits a UTF-8 sequence.
const NPDMaxOutput = 80

// RenderNPD writes the one line a node-problem-detector custom plugin prints: the finding that
// decided the verdict (subject and the first clause of its summary), or "rdmadiag: healthy (N
// checks)". The exit code npd reads (0 OK, 1 problem, anything else unknown) is chosen by the
// command, which alone ends the process.
func RenderNPD(w io.Writer, r *report.Report, _ RenderOptions) error {
	line := statusText(r, NPDMaxOutput)
	if Decisive(r) == nil {
		line = words.Truncate("rdmadiag: "+line, NPDMaxOutput)
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}
