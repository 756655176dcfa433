package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
)

// nagiosTextMax bounds the status text before the perfdata. The Monitoring Plugins Development
// Guidelines ("Plugin Output") ask for short output that fits a pager message; the root cause's
// subject and first clause fit well within this.
const nagiosTextMax = 160

// NagiosStatus is the service state a Nagios-compatible scheduler derives from the exit code
// (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN); an interrupted run proves nothing and is UNKNOWN.
func NagiosStatus(verdict string) (string, int) {
	switch verdict {
	case "healthy":
		return "OK", 0
	case "warning":
		return "WARNING", 1
	case "critical":
		return "CRITICAL", 2
	}
	return "UNKNOWN", 3
}

// RenderNagios writes one status line in the plugin format of Nagios and its successors:
//
//	RDMADIAG CRITICAL - rxe0/1 is DOWN (...) | criticals=1;;; warnings=0;;; unknowns=0;;; duration=1.2s;;;
//
// Perfdata follows the Monitoring Plugins Development Guidelines ("Performance data":
// 'label'=value[UOM];[warn];[crit];[min];[max], space separated, "s" the unit of seconds); the
// labels need no quoting. duration is left out when the run's duration is not known (goldens).
func RenderNagios(w io.Writer, r *report.Report, _ RenderOptions) error {
	status, _ := NagiosStatus(r.Summary.Verdict)
	text := statusText(r, nagiosTextMax)
	if r.Summary.Verdict == "healthy" {
		text = fmt.Sprintf("%d RDMA device(s), %d checks passed", r.Summary.Devices, judgedChecks(r))
	}
	// A "|" in the text would start the perfdata early.
	text = strings.ReplaceAll(text, "|", "/")
	c := r.Summary.Counts
	line := fmt.Sprintf("RDMADIAG %s - %s | criticals=%d;;; warnings=%d;;; unknowns=%d;;;", status, text,
		c["critical"], c["warning"], c["unknown"])
	if d := r.Tool.DurationSeconds; d != nil {
		line += " duration=" + strconv.FormatFloat(*d, 'f', -1, 64) + "s;;;"
	}
	_, err := io.WriteString(w, line+"\n")
	return err
}
