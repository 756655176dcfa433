package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/render"
)

// pluginDir is a directory of the two examples (as a package installs them) and the given
// shell plugins, each 0755 in a 0700 directory of this user.
func pluginDir(t *testing.T, shell map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"ib-pkey.sh", "rail-names.py"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "plugins", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for n, body := range shell {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runPluginEnv is run with these RDMADIAG_* variables in the environment plugins see.
func runPluginEnv(t *testing.T, environ []string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	a := testApp(&out, &errb)
	a.Environ = func() []string { return append(environ, "SECRET=not passed") }
	a.PluginDir = filepath.Join(t.TempDir(), "absent")
	code := a.Execute(context.Background(), args)
	return out.String(), errb.String(), code
}

func findingsOf(r report.Report, id string) []report.Finding {
	var out []report.Finding
	for _, f := range r.Findings {
		if f.CheckID == id {
			out = append(out, f)
		}
	}
	return out
}

func validate(t *testing.T, s *jsonschema.Schema, out string) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(doc); err != nil {
		t.Errorf("output does not validate against its schema: %v", err)
	}
}

// TestPluginsEndToEnd: on the P_Key fixture, the two examples, a hanging and a lying plugin
// run beside the built-in checks through the command line: the example's critical finding is
// a root cause and sets the verdict and exit code, the hanging one is killed at its deadline
// and the liar is not trusted, each one unknown finding, and the run ends well within its own
// deadline.
func TestPluginsEndToEnd(t *testing.T) {
	dir := pluginDir(t, map[string]string{
		"hang.sh": "sleep 600",
		"liar.sh": `echo '{"schema": 1, "findings": [{"severity": "ok", "summary": "fine"}, {"check": "port.pkeys", "severity": "ok", "summary": "all partitions fine"}]}'`,
	})
	snap := filepath.Join(fixturesDir, "port-ib-pkeys", "snapshot.txtar")
	start := time.Now()
	out, stderr, code := runPluginEnv(t, []string{"RDMADIAG_PKEYS=0xffff 0x8001"}, "check", "--snapshot", snap, "--plugins", dir,
		"--plugin-timeout", "1s", "--timeout", "60s", "--format", "json")
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %s", d)
	}
	if code != report.ExitCritical {
		t.Fatalf("exit %d, want 2 (%s)", code, stderr)
	}
	validate(t, compileSchema(t), out)
	r := decode(t, out)
	if r.Summary.Verdict != "critical" {
		t.Errorf("verdict %s", r.Summary.Verdict)
	}
	pk := findingsOf(r, "plugin.ib_pkey")
	if len(pk) != 3 {
		t.Fatalf("plugin.ib_pkey: %d findings, want one per port: %+v", len(pk), pk)
	}
	for _, f := range pk {
		want := report.OK
		if f.Subject.Name == "mlx5_2/1" {
			want = report.Critical
		}
		if f.Severity != want || f.Layer != "port" || f.Fault != "port-link" || f.Subject.Device == "" {
			t.Errorf("plugin.ib_pkey on %s: %s layer %s fault %s, want %s in port/port-link", f.Subject.Name, f.Severity, f.Layer, f.Fault, want)
		}
	}
	root := false
	for _, c := range r.RootCauses() {
		if c.CheckID == "plugin.ib_pkey" && c.Subject.Name == "mlx5_2/1" && c.Action == report.ActionFixConfiguration {
			root = true
		}
	}
	if !root {
		t.Errorf("the plugin's critical finding is not a root cause: %v", r.Summary.RootCauses)
	}
	for id, want := range map[string]string{"plugin.hang": "timed out after 1s", "plugin.liar": "claims the built-in check port.pkeys"} {
		fs := findingsOf(r, id)
		if len(fs) != 1 || fs[0].Severity != report.Unknown || !strings.Contains(fs[0].Summary, filepath.Join(dir, strings.TrimPrefix(id, "plugin.")+".sh")) ||
			!strings.Contains(fs[0].Summary, want) {
			t.Errorf("%s: %+v, want one unknown naming the file and %q", id, fs, want)
		}
	}
	// The RoCE example has no Ethernet port here and says nothing about one.
	if fs := findingsOf(r, "plugin.rail_names"); len(fs) != 1 || fs[0].Severity != report.Skipped {
		t.Errorf("plugin.rail_names without a scheme: %+v", fs)
	}
	for _, f := range findingsOf(r, "port.pkeys") {
		if strings.Contains(f.Summary, "all partitions fine") {
			t.Error("the liar's finding went under a built-in id")
		}
	}
}

// TestRailNamesExample: the Python example judges the RoCE fixture's netdevs from the facts.
func TestRailNamesExample(t *testing.T) {
	dir := pluginDir(t, nil)
	snap := filepath.Join(fixturesDir, "port-roce", "snapshot.txtar")
	for _, c := range []struct {
		pattern string
		code    int
		want    map[string]report.Severity // subject -> the gravest severity of plugin.rail_names
	}{
		{`^ens(?P<rail>[0-9]+)f0np0$`, -1, map[string]report.Severity{"mlx5_0/1": report.OK, "mlx5_1/1": report.OK}},
		{`^rail(?P<rail>[0-9]+)$`, -1, map[string]report.Severity{"mlx5_0/1": report.Warning, "mlx5_1/1": report.Warning}},
		{`^ens[0-9]f0np(?P<rail>[0-9])$`, report.ExitCritical, map[string]report.Severity{"mlx5_0/1": report.Critical, "mlx5_1/1": report.Critical}},
	} {
		out, stderr, code := runPluginEnv(t, []string{"RDMADIAG_RAIL_PATTERN=" + c.pattern}, "check", "--snapshot", snap, "--plugins", dir, "--format", "json")
		r := decode(t, out)
		if c.code >= 0 && code != c.code {
			t.Errorf("%s: exit %d, want %d (%s)", c.pattern, code, c.code, stderr)
		}
		got := map[string]report.Severity{}
		for _, f := range findingsOf(r, "plugin.rail_names") {
			got[f.Subject.Name] = max(got[f.Subject.Name], f.Severity)
		}
		for s, want := range c.want {
			if got[s] != want {
				t.Errorf("%s: %s is %s, want %s (%v)", c.pattern, s, got[s], want, got)
			}
		}
	}
}

// TestPluginsOnlyWhenAsked: a snapshot or tree runs no plugin unless --plugins names the
// directory, whatever the default directory holds; a live run takes the default directory when
// it exists; --no-plugins and --plugins ” run none.
func TestPluginsOnlyWhenAsked(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "mark.sh"), []byte("#!/bin/sh\necho $RDMADIAG_SOURCE $RDMADIAG_ROOT >"+ran+
		"\necho '{\"schema\": 1, \"findings\": []}'\n"), 0o755)
	snap := filepath.Join(fixturesDir, "healthy", "snapshot.txtar")
	runWith := func(args ...string) report.Report {
		var out, errb bytes.Buffer
		a := testApp(&out, &errb)
		a.PluginDir = dir
		a.Execute(context.Background(), args)
		if errb.Len() > 0 && !strings.Contains(errb.String(), "rdmadiag:") {
			t.Logf("%s", errb.String())
		}
		return decode(t, out.String())
	}
	for _, args := range [][]string{
		{"check", "--snapshot", snap, "--format", "json"},
		{"check", "--snapshot", snap, "--format", "json", "--plugins", dir, "--no-plugins"},
		{"check", "--snapshot", snap, "--format", "json", "--plugins", ""},
		{"check", "--no-probe", "--format", "json", "--no-plugins"},
	} {
		os.Remove(ran)
		r := runWith(args...)
		if _, err := os.Stat(ran); err == nil || len(findingsOf(r, "plugin.mark")) > 0 {
			t.Errorf("%v: the plugin ran", args)
		}
	}
	r := runWith("check", "--snapshot", snap, "--format", "json", "--plugins", dir)
	if b, err := os.ReadFile(ran); err != nil || !strings.HasPrefix(string(b), "snapshot /") || len(findingsOf(r, "plugin.mark")) != 1 {
		t.Errorf("--plugins on a snapshot: %q %v", b, err)
	}
	os.Remove(ran)
	r = runWith("check", "--no-probe", "--format", "json")
	if b, err := os.ReadFile(ran); err != nil || string(b) != "live /\n" || len(findingsOf(r, "plugin.mark")) != 1 {
		t.Errorf("live with the default directory: %q %v", b, err)
	}
}

func TestPluginUsageErrors(t *testing.T) {
	dir := pluginDir(t, nil)
	for _, args := range [][]string{
		{"check", "--plugins", filepath.Join(dir, "absent")},
		{"check", "--plugins", filepath.Join(dir, "ib-pkey.sh")},
		{"check", "--plugins", dir, "--no-plugins"},
		{"check", "--plugins", dir, "--plugin-timeout", "0s"},
		{"check", "--plugins", dir, "--only", "plugin.nope"},
		{"list", "--plugins", filepath.Join(dir, "absent")},
	} {
		if _, stderr, code := run(t, args...); code != report.ExitUsage || stderr == "" {
			t.Errorf("%v: exit %d (%s), want 64 with a message", args, code, stderr)
		}
	}
}

// TestListPlugins: list shows each plugin with its layer, its header's description and its
// file as origin, without running it; --only selects plugins by id and by layer.
func TestListPlugins(t *testing.T) {
	ran := filepath.Join(t.TempDir(), "ran")
	dir := pluginDir(t, map[string]string{"never.sh": "touch " + ran})
	out, _, code := run(t, "list", "--plugins", dir)
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{
		"plugin.ib_pkey               port      every InfiniBand port holds the site's P_Keys, membership included (from " + filepath.Join(dir, "ib-pkey.sh") + ")",
		"plugin.rail_names            port      RoCE netdevs follow the site's rail naming scheme (from " + filepath.Join(dir, "rail-names.py") + ")",
		"plugin.never                 site      site plugin (no description in its header) (from " + filepath.Join(dir, "never.sh") + ")",
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("list ran a plugin")
	}
	js, _, _ := run(t, "list", "--plugins", dir, "--format", "json")
	var l report.CheckList
	if err := json.Unmarshal([]byte(js), &l); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range l.Checks {
		if c.ID == "plugin.ib_pkey" && c.Layer == "port" && c.Origin == filepath.Join(dir, "ib-pkey.sh") && c.Fault == "port-link" {
			found = true
		}
	}
	if !found {
		t.Errorf("list --format json lacks plugin.ib_pkey with its origin")
	}
	validate(t, compileListSchema(t), js)
}

// TestPluginFindingsInEveryFormat: a plugin's finding reaches every output format and, through
// the JSON report, `rdmadiag fleet`'s root causes.
func TestPluginFindingsInEveryFormat(t *testing.T) {
	dir := pluginDir(t, nil)
	snap := filepath.Join(fixturesDir, "port-ib-pkeys", "snapshot.txtar")
	env := []string{"RDMADIAG_PKEYS=0xffff,0x8001"}
	for _, format := range render.Formats() {
		out, stderr, _ := runPluginEnv(t, env, "check", "--snapshot", snap, "--plugins", dir, "--only", "plugin.ib_pkey", "--format", format)
		want := "not in the site's partition"
		if format == "prometheus" {
			want = `check="plugin.ib_pkey",layer="port",subject="mlx5_2/1",device="mlx5_2",severity="critical",root_cause="true"`
		}
		if !strings.Contains(out, want) {
			t.Errorf("--format %s lacks %q:\n%s%s", format, want, out, stderr)
		}
	}
	out, _, _ := runPluginEnv(t, env, "check", "--snapshot", snap, "--plugins", dir, "--format", "json")
	p := filepath.Join(t.TempDir(), "gpu-node-17.json")
	if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	fl, stderr, code := run(t, "fleet", "--stale", "0", "--format", "json", p)
	if code != 1 {
		t.Errorf("fleet: exit %d, want 1 (%s)", code, stderr)
	}
	var agg struct {
		RootCauses []struct {
			CheckID string `json:"check_id"`
			Fault   string `json:"fault"`
			Hosts   struct {
				Count int `json:"count"`
			} `json:"hosts"`
		} `json:"root_causes"`
	}
	if err := json.Unmarshal([]byte(fl), &agg); err != nil {
		t.Fatal(err, fl)
	}
	found := false
	for _, c := range agg.RootCauses {
		found = found || c.CheckID == "plugin.ib_pkey" && c.Fault == "port-link" && c.Hosts.Count == 1
	}
	if !found {
		t.Errorf("fleet does not name the plugin's root cause: %s", fl)
	}
}
