package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

func fixture(name string) string {
	for _, n := range []string{"snapshot.tar.gz", "snapshot.txtar"} {
		p := filepath.Join(fixturesDir, name, n)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	panic("no fixture " + name)
}

// unknownSnapshot is the healthy snapshot with a port's rate file replaced by a FIFO: the tree
// refuses to open it, so that check could not run and the verdict is "could not check".
func unknownSnapshot(t *testing.T) string {
	snap := unpackHealthy(t)
	plantFIFO(t, filepath.Join(snap, "root"), rateFile)
	return snap
}

// runInterrupted runs the command line with a context already cancelled by a signal, as runMain
// does after SIGINT; the source is opened whole, as when the signal comes once it is read (one
// that comes while a snapshot is read leaves no report, see input_test.go).
func runInterrupted(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(&interrupted{sig: "SIGINT"})
	var out, errb bytes.Buffer
	app := testApp(&out, &errb)
	app.OpenHost = func(_ context.Context, src source) (*host.Host, func(), error) {
		return openCached(context.Background(), src)
	}
	code := app.Execute(ctx, args)
	return out.String(), code
}

// The npd and nagios lines and exit codes for every verdict. npd: 0 unless something is
// critical, 1 when it is, 3 when the host could not be checked or the run was cut short. Nagios:
// the state of the verdict, UNKNOWN for an interrupted run.
func TestOneLineFormatsPerVerdict(t *testing.T) {
	unknown := unknownSnapshot(t)
	cases := []struct {
		name   string
		args   []string
		interr bool
		npd    string // exact line, or prefix when it ends in "..."
		npdRC  int
		nag    string
		nagRC  int
	}{
		{name: "healthy", args: []string{"--snapshot", fixture("healthy")},
			npd: "rdmadiag: healthy (19 checks)", npdRC: 0,
			nag: "RDMADIAG OK - 1 RDMA device(s), 19 checks passed | criticals=0;;; warnings=0;;; unknowns=0;;;", nagRC: 0},
		{name: "warning", args: []string{"--snapshot", fixture("cq-raw-mlx5"), "--raw-contexts"},
			npd: "[fix-configuration] mlx5_0: 1 CQ(s) of pid 4242 (trainer) hold 256...", npdRC: 0,
			nag: "RDMADIAG WARNING - [fix-configuration] mlx5_0: 1 CQ(s) of pid 4242 (trainer) hold 256 completions but the 4 QP queue(s) attached " +
				"can hold at least 512 work requests (up to... | criticals=0;;; warnings=1;;; unknowns=0;;;", nagRC: 1},
		{name: "critical", args: []string{"--snapshot", fixture("port-down")},
			npd: "[fix-configuration] rxe0/1 is DOWN (physical Disabled) because its netdev...", npdRC: 1,
			nag: "RDMADIAG CRITICAL - [fix-configuration] rxe0/1 is DOWN (physical Disabled) because its netdev eth0 was set administratively down " +
				"| criticals=1;;; warnings=0;;; unknowns=0;;;", nagRC: 2},
		{name: "could not check", args: []string{"--snapshot", unknown},
			npd: "[fix-configuration] could not check rxe0/1: ", npdRC: 3,
			nag: "RDMADIAG UNKNOWN - [fix-configuration] could not check rxe0/1: ", nagRC: 3},
		{name: "nothing judged", args: []string{"--snapshot", fixture("healthy"), "--only", "*probe*"},
			npd: "rdmadiag: could not check: nothing was judged (0 finding(s) skipped)", npdRC: 3,
			nag: "RDMADIAG UNKNOWN - could not check: nothing was judged (0 finding(s) skipped) | criticals=0;;; warnings=0;;; unknowns=0;;;", nagRC: 3},
		{name: "interrupted", args: []string{"--snapshot", fixture("port-down")}, interr: true,
			npd: "rdmadiag: interrupted before every check finished ", npdRC: 3,
			nag: "RDMADIAG UNKNOWN - interrupted before every check finished ", nagRC: 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, f := range []struct {
				format, want string
				code         int
			}{{"npd", c.npd, c.npdRC}, {"nagios", c.nag, c.nagRC}} {
				args := append([]string{"check", "--format", f.format}, c.args...)
				var out string
				var code int
				if c.interr {
					out, code = runInterrupted(t, args...)
				} else {
					out, _, code = run(t, args...)
				}
				checkLine(t, f.format, out, f.want)
				if code != f.code {
					t.Errorf("%s: exit %d, want %d", f.format, code, f.code)
				}
			}
		})
	}
}

// checkLine asserts one line of output: equal to want, or starting with it when want ends in a
// space or is cut ("..."), where the rest names a temporary path or is cut differently.
func checkLine(t *testing.T, format, out, want string) {
	t.Helper()
	line, ok := strings.CutSuffix(out, "\n")
	if !ok || strings.Contains(line, "\n") {
		t.Errorf("%s: want exactly one line, got %q", format, out)
		return
	}
	if format == "npd" && (len(line) > render.NPDMaxOutput || !utf8.ValidString(line)) {
		t.Errorf("npd: %d bytes (max %d) or invalid UTF-8: %q", len(line), render.NPDMaxOutput, line)
	}
	if strings.HasSuffix(want, " ") {
		if !strings.HasPrefix(line, want) {
			t.Errorf("%s:\n got %q\nwant %q...", format, line, want)
		}
		return
	}
	if line != want {
		t.Errorf("%s:\n got %q\nwant %q", format, line, want)
	}
}

// A warning rule for npd: --npd-threshold warning makes warnings a problem (exit 1) too.
func TestNPDThreshold(t *testing.T) {
	out, _, code := run(t, "check", "--format", "npd", "--npd-threshold", "warning", "--snapshot", fixture("cq-raw-mlx5"), "--raw-contexts")
	if code != 1 || !strings.HasPrefix(out, "[fix-configuration] mlx5_0: 1 CQ(s)") {
		t.Errorf("warning with --npd-threshold warning: exit %d, %q", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "npd", "--npd-threshold", "info"}, `--npd-threshold "info": want critical or warning`},
		{[]string{"--format", "json", "--npd-threshold", "warning"}, "--npd-threshold applies to --format npd only"},
	} {
		_, errs, code := run(t, append([]string{"check", "--snapshot", fixture("healthy")}, c.args...)...)
		if code != report.ExitUsage || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q", c.args, code, errs)
		}
	}
}

// An error before any report still gives npd and Nagios their line on stdout (they do not show
// stderr). Nagios makes a usage error UNKNOWN (3); npd reads 64 as unknown already.
func TestOneLineFormatsWithoutAReport(t *testing.T) {
	out, errs, code := run(t, "check", "--snapshot", fixture("healthy"), "--format", "nagios", "--parallel", "0")
	if code != 3 || out != "RDMADIAG UNKNOWN - --parallel 0: must be at least 1\n" || !strings.Contains(errs, "--parallel 0") {
		t.Errorf("nagios usage error: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	out, _, code = run(t, "check", "--snapshot", fixture("healthy"), "--format", "npd", "--parallel", "0")
	if code != report.ExitUsage || out != "rdmadiag: --parallel 0: must be at least 1\n" {
		t.Errorf("npd usage error: exit %d, stdout %q", code, out)
	}
	missing := filepath.Join(t.TempDir(), "gone.tar.gz")
	out, _, code = run(t, "check", "--snapshot", missing, "--format", "nagios")
	if code != 3 || !strings.HasPrefix(out, "RDMADIAG UNKNOWN - ") || !strings.Contains(out, "gone.tar.gz") {
		t.Errorf("nagios, snapshot missing: exit %d, %q", code, out)
	}
}

// The real process under SIGINT: npd reads 130 as "unknown" too, but the contract is 3, and the
// line says the run was interrupted.
func TestSIGINTWithNPDExits3(t *testing.T) {
	if os.Getenv("RDMADIAG_TEST_LIVE_ROOT") != "" {
		t.Skip("helper process")
	}
	out, errs, code, _ := interruptBlockedRun(t, "npd")
	if code != 3 || !strings.HasPrefix(out, "rdmadiag: interrupted before every check finished") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

func parseExposition(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	return mfs
}

// sample finds the sample of a family with exactly these labels.
func sample(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, m := range mfs[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			if got[k] != v {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return nil
}

// The exposition of a critical host, parsed by the Prometheus project's parser.
func TestPrometheusCriticalFixture(t *testing.T) {
	out, _, code := run(t, "check", "--snapshot", fixture("port-down"), "--format", "prometheus")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	mfs := parseExposition(t, out)
	port := sample(mfs, "rdmadiag_finding", map[string]string{"check": "port.state", "layer": "port", "subject": "rxe0/1",
		"device": "rxe0", "severity": "critical", "root_cause": "true"})
	if port == nil || port.GetGauge().GetValue() != 1 {
		t.Errorf("port.state sample: %v\n%s", port, out)
	}
	for name, want := range map[string]float64{"rdmadiag_exit_code": 2, "rdmadiag_devices": 1} {
		if m := sample(mfs, name, map[string]string{}); m == nil || m.GetGauge().GetValue() != want {
			t.Errorf("%s: %v, want %g", name, m, want)
		}
	}
	if m := sample(mfs, "rdmadiag_verdict", map[string]string{"verdict": "critical"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("verdict critical: %v", m)
	}
	if m := sample(mfs, "rdmadiag_findings", map[string]string{"severity": "critical"}); m == nil || m.GetGauge().GetValue() != 1 {
		t.Errorf("critical count: %v", m)
	}
	// Goldens have no run time, so neither family is written.
	if _, ok := mfs["rdmadiag_run_start_timestamp_seconds"]; ok {
		t.Error("timestamp in golden mode")
	}

	// A CQ subject naming a process keeps its device and depth, not the PID and command.
	out, _, _ = run(t, "check", "--snapshot", fixture("cq-depth-128"), "--wr-concurrency", "256", "--format", "prometheus")
	mfs = parseExposition(t, out)
	if m := sample(mfs, "rdmadiag_finding", map[string]string{"check": "cq.depth", "layer": "cq", "subject": "mlx5_0 process cqe 128",
		"device": "mlx5_0", "severity": "critical", "root_cause": "true"}); m == nil {
		t.Errorf("cq.depth sample with a normalised subject missing:\n%s", out)
	}
	if strings.Contains(out, "pid 4242") || strings.Contains(out, "trainer") {
		t.Error("a PID or command reached a label")
	}
}

var nagiosRE = regexp.MustCompile(`^RDMADIAG (OK|WARNING|CRITICAL|UNKNOWN) - [^|\n]+ \| criticals=(\d+);;; warnings=(\d+);;; unknowns=(\d+);;;\n$`)

// Every fixture's report (its JSON golden), in every fleet format: what the line and the exit
// code say agrees with the verdict, the npd line fits npd's 80 bytes, and the exposition parses
// with one verdict set and a sample for every finding. Rendered from the golden rather than run
// again: the runs of each format are covered per verdict above.
func TestFleetFormatsAgreeWithTheVerdictOnEveryFixture(t *testing.T) {
	npdCode := map[string]int{"healthy": 0, "warning": 0, "critical": 1, "unknown": 3}
	nagios := map[string]string{"healthy": "OK", "warning": "WARNING", "critical": "CRITICAL", "unknown": "UNKNOWN"}
	renderFmt := func(t *testing.T, format string, r *report.Report) (string, int) {
		t.Helper()
		fn, err := render.Lookup(format)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := fn(&b, r, render.RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		return b.String(), (&checkFlags{outputFlags: outputFlags{format: format}, npdThreshold: "critical"}).exitFor(r)
	}
	for _, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(s.dir, "check.golden.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r report.Report
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			v := r.Summary.Verdict
			out, code := renderFmt(t, "npd", &r)
			line := strings.TrimSuffix(out, "\n")
			if code != npdCode[v] || len(line) > render.NPDMaxOutput || strings.Contains(line, "\n") || !utf8.ValidString(line) {
				t.Errorf("npd (verdict %s): exit %d, %d bytes: %q", v, code, len(line), line)
			}
			out, code = renderFmt(t, "nagios", &r)
			m := nagiosRE.FindStringSubmatch(out)
			c := r.Summary.Counts
			if m == nil || m[1] != nagios[v] || code != r.Summary.ExitCode ||
				m[2] != strconv.Itoa(c["critical"]) || m[3] != strconv.Itoa(c["warning"]) || m[4] != strconv.Itoa(c["unknown"]) {
				t.Errorf("nagios (verdict %s, exit %d): exit %d, %q", v, r.Summary.ExitCode, code, out)
			}
			out, code = renderFmt(t, "prometheus", &r)
			mfs := parseExposition(t, out)
			if code != r.Summary.ExitCode {
				t.Errorf("prometheus: exit %d, want %d", code, r.Summary.ExitCode)
			}
			if m := sample(mfs, "rdmadiag_verdict", map[string]string{"verdict": v}); m == nil || m.GetGauge().GetValue() != 1 {
				t.Errorf("rdmadiag_verdict{verdict=%q} not 1", v)
			}
			n := 0.0
			for _, m := range mfs["rdmadiag_finding"].GetMetric() {
				n += m.GetGauge().GetValue()
			}
			if int(n) != len(r.Findings) {
				t.Errorf("rdmadiag_finding adds up to %g, the report has %d findings", n, len(r.Findings))
			}
		})
	}
}
