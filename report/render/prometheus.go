package render

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// RenderPrometheus writes the report in the Prometheus text exposition format (version 0.0.4),
// for node_exporter's textfile collector. Every family is a gauge describing the last run; no
// sample carries a timestamp (node_exporter's collector/textfile.go skips a whole file that has
// one, and the file's age is its node_textfile_mtime_seconds).
//
// Design, after the Prometheus documentation's "Metric and label naming" and "Instrumentation"
// practices: one family per meaning, base units (seconds, *_timestamp_seconds for Unix time), an
// enum as one 0/1 sample per state (the verdict), label values from small stable sets ("do not use
// labels to store dimensions with high cardinality"). Labels never hold free text
// (summaries, evidence) or identifiers that change from run to run: a subject naming a process
// ("mlx5_0/1 pid 4242 (trainer) ERR", "mlx5_0 pid 4242 (trainer) cqe 255") keeps its device, state
// and depth but not the PID and command ("mlx5_0/1 process ERR"), since PIDs and the commands of
// a batch cluster's jobs are unbounded. Findings that this leaves with the same labels are one
// sample whose value counts them.
func RenderPrometheus(w io.Writer, r *report.Report, _ RenderOptions) error {
	var b bytes.Buffer

	family(&b, "rdmadiag_finding", "Findings of the last rdmadiag run by check, subject and severity "+
		"(root_cause=\"true\" for a problem no other finding explains); the value is how many findings have these labels, normally 1.")
	type sample struct {
		labels string
		n      int
	}
	var samples []*sample
	seen := map[string]*sample{}
	for i := range r.Findings {
		f := &r.Findings[i]
		root := f.Severity.Problem() && len(f.ExplainedBy) == 0
		labels := labelSet(
			"check", f.CheckID,
			"layer", f.Layer,
			"subject", MetricSubject(f.Subject),
			"device", f.Subject.Device,
			"severity", f.Severity.String(),
			"root_cause", strconv.FormatBool(root),
		)
		if s, ok := seen[labels]; ok {
			s.n++
			continue
		}
		s := &sample{labels: labels, n: 1}
		seen[labels] = s
		samples = append(samples, s)
	}
	for _, s := range samples {
		line(&b, "rdmadiag_finding", s.labels, float64(s.n))
	}

	family(&b, "rdmadiag_findings", "Findings of the last rdmadiag run per severity.")
	for _, v := range report.Severities {
		n := v.String()
		line(&b, "rdmadiag_findings", labelSet("severity", n), float64(r.Summary.Counts[n]))
	}

	family(&b, "rdmadiag_verdict", "Verdict of the last rdmadiag run: 1 for the verdict it reached, 0 for the others.")
	for _, v := range report.Verdicts {
		val := 0.0
		if r.Summary.Verdict == v {
			val = 1
		}
		line(&b, "rdmadiag_verdict", labelSet("verdict", v), val)
	}

	family(&b, "rdmadiag_exit_code", "Exit code of the last rdmadiag run (0 healthy, 1 warning, 2 critical, 3 could not check, 130 interrupted).")
	line(&b, "rdmadiag_exit_code", "", float64(r.Summary.ExitCode))

	family(&b, "rdmadiag_devices", "RDMA devices the last rdmadiag run found.")
	line(&b, "rdmadiag_devices", "", float64(r.Summary.Devices))

	if d := r.Tool.DurationSeconds; d != nil {
		family(&b, "rdmadiag_run_duration_seconds", "How long the checks of the last rdmadiag run took.")
		line(&b, "rdmadiag_run_duration_seconds", "", *d)
	}
	if t := r.Tool.Started; t != nil {
		family(&b, "rdmadiag_run_start_timestamp_seconds", "When the last rdmadiag run started, in seconds since the Unix epoch.")
		line(&b, "rdmadiag_run_start_timestamp_seconds", "", float64(t.Unix()))
	}

	family(&b, "rdmadiag_build_info", "The rdmadiag version that wrote these metrics; the value is always 1.")
	line(&b, "rdmadiag_build_info", labelSet("version", r.Tool.Version), 1)

	_, err := w.Write(b.Bytes())
	return err
}

// processOwner is how checks name a process owning QPs or CQs: "pid 4242 (trainer)". The command
// runs to the last ")" because a command may itself contain one and nothing after it in a
// subject does.
var processOwner = regexp.MustCompile(`pid [0-9]+ \(.*\)`)

// MetricSubject is a finding's subject as a label value: the subject's name with a process
// owner replaced by "process" (PIDs and job commands are unbounded label values).
func MetricSubject(s report.Subject) string {
	return processOwner.ReplaceAllLiteralString(s.String(), "process")
}

func family(b *bytes.Buffer, name, help string) {
	b.WriteString("# HELP " + name + " " + escapeHelp(help) + "\n# TYPE " + name + " gauge\n")
}

func line(b *bytes.Buffer, name, labels string, v float64) {
	b.WriteString(name)
	if labels != "" {
		b.WriteString("{" + labels + "}")
	}
	b.WriteString(" " + strconv.FormatFloat(v, 'f', -1, 64) + "\n")
}

// labelSet formats name/value pairs in the given order.
func labelSet(kv ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i] + `="` + escapeLabelValue(kv[i+1]) + `"`)
	}
	return b.String()
}

// Escaping per the text exposition format: in label values backslash, double quote and line
// feed; in HELP backslash and line feed. Values come from hostile files too, so what could act
// on a reader of the file (control characters, bidirectional overrides, bytes that are not UTF-8,
// which the format forbids) is neutralised by Printable first.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabelValue(s string) string { return labelEscaper.Replace(words.Printable(s)) }
func escapeHelp(s string) string       { return helpEscaper.Replace(words.Printable(s)) }
