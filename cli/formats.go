package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// formatsHelp documents what the formats for fleet engines change besides the output.
const formatsHelp = `Formats for fleet engines:
  prometheus  text exposition format for node_exporter's textfile collector (use --output
              DIR/rdmadiag.prom); exit codes as above
  npd         one line of at most 80 bytes for a node-problem-detector custom plugin; exit 0
              when nothing is critical (warnings do not flip a NodeCondition), 1 when something
              is critical (or a warning, with --npd-threshold warning), 3 when the host could
              not be checked or the run was interrupted; usage errors stay 64 (npd: unknown)
  nagios      "RDMADIAG OK|WARNING|CRITICAL|UNKNOWN - <root cause> | perfdata"; exit 0/1/2/3,
              an interrupted run or an invalid option value is UNKNOWN (3)`

// exitFor is the exit code of a finished run in the chosen format. npd reads 0 as OK, 1 as a
// problem and anything else as unknown (node-problem-detector,
// pkg/custompluginmonitor/plugin/plugin.go, run()); Nagios reads 0-3 as OK, WARNING, CRITICAL,
// UNKNOWN.
func (f *checkFlags) exitFor(rep *report.Report) int {
	v := rep.Summary.Verdict
	switch f.format {
	case "npd":
		switch {
		case v == "critical", v == "warning" && f.npdThreshold == "warning":
			return 1
		case v == "healthy", v == "warning":
			return 0
		}
		return report.ExitUnknown // unknown, interrupted: not known to be healthy, not a problem found
	case "nagios":
		_, code := render.NagiosStatus(v)
		return code
	}
	return rep.Summary.ExitCode
}

// interruptedExit is the exit code of an interrupted run: the shell's 128+SIGINT, except where the
// format's protocol knows only "could not tell".
func interruptedExit(format string) int {
	switch format {
	case "npd", "nagios":
		return report.ExitUnknown
	}
	return report.ExitInterrupted
}

// noReport handles a run that ended before there was a report (invalid flags or option files, a
// snapshot that cannot be opened). The one-line formats still print their line, because npd
// and Nagios show stdout, not stderr; the error itself goes to stderr as usual. A Nagios plugin
// reports invalid arguments as UNKNOWN (Monitoring Plugins Development Guidelines, "Plugin
// Return Codes").
func (a *App) noReport(f *checkFlags, err error) error {
	switch f.format {
	case "nagios":
		text := strings.ReplaceAll(words.OneLine(err.Error()), "|", "/")
		fmt.Fprintf(a.Stdout, "RDMADIAG UNKNOWN - %s\n", words.Truncate(text, 160))
		return &exitError{code: report.ExitUnknown, err: err}
	case "npd":
		io.WriteString(a.Stdout, words.Truncate("rdmadiag: "+words.OneLine(err.Error()), render.NPDMaxOutput)+"\n")
	}
	return err
}
