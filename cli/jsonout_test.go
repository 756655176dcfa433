package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// With --format json a run that ends before there is a report still prints one JSON document on
// stdout: the error and the exit code the process returns, valid against report/schema.json.
func TestFatalErrorWithJSONFormatPrintsAnErrorDocument(t *testing.T) {
	schema := compileSchema(t)
	garbled := filepath.Join(t.TempDir(), "garbled.tar.gz")
	os.WriteFile(garbled, []byte("not a tar file"), 0o644)
	healthy := filepath.Join(fixturesDir, "healthy", "snapshot.txtar")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "--format", "json", "--snapshot", filepath.Join(t.TempDir(), "missing.tar.gz")}, 3, "missing.tar.gz"},
		{[]string{"check", "--format", "json", "--snapshot", garbled}, 3, "garbled.tar.gz"},
		{[]string{"check", "--format", "json", "--snapshot", healthy, "--timeout", "-1s"}, 64, "--timeout -1s"},
		{[]string{"check", "--format", "json", "--snapshot", healthy, "--only", "nosuchlayer"}, 64, "nosuchlayer"},
		{[]string{"check", "--format", "json", "--bogus"}, 64, "unknown flag: --bogus"},
		{[]string{"check", "-f", "json", "--snapshot", healthy, "--policy", filepath.Join(t.TempDir(), "none.json")}, 64, "--policy"},
		{[]string{"list", "--format", "json", "--output", filepath.Join(t.TempDir(), "no", "such", "dir", "l.json")}, 64, "--output"},
		{[]string{"fleet", "--format", "json", "--stale", "-1h", "x"}, 64, "--stale"},
	} {
		out, stderr, code := run(t, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d (%s)", c.args, code, c.code, stderr)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Errorf("%v: stdout is not one JSON document: %v: %q", c.args, err, out)
			continue
		}
		if err := schema.Validate(doc); err != nil {
			t.Errorf("%v: error document does not validate: %v\n%s", c.args, err, out)
		}
		var e report.ErrorDocument
		json.Unmarshal([]byte(out), &e)
		if e.ExitCode != code || e.SchemaVersion != report.SchemaVersion || !strings.Contains(e.Error, c.want) {
			t.Errorf("%v: document %+v, exit %d, want an error naming %q", c.args, e, code, c.want)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr does not say it either: %q", c.args, stderr)
		}
	}
	// Without --format json the error is on stderr only, as before.
	out, _, code := run(t, "check", "--snapshot", garbled)
	if code != 3 || out != "" {
		t.Errorf("table format: exit %d, stdout %q", code, out)
	}
	// A report and an error document are told apart by the schema: a report with an error field,
	// or an error document with findings, is invalid.
	for _, bad := range []string{
		`{"schema_version": "1.3", "tool": {"name": "rdmadiag", "version": "t"}, "error": "x"}`,
		`{"schema_version": "1.3", "tool": {"name": "rdmadiag", "version": "t"}, "error": "x", "exit_code": 3, "findings": []}`,
	} {
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if schema.Validate(doc) == nil {
			t.Errorf("schema accepts %s", bad)
		}
	}
}

// -o names the output file on every command and -f the format; a format name given to -o, as
// check, demo and fleet took it before, is still read as the format, with a warning.
func TestOutputFlagMeansTheFileEverywhere(t *testing.T) {
	healthy, err := filepath.Abs(filepath.Join(fixturesDir, "healthy", "snapshot.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()

	file := filepath.Join(dir, "r.json")
	out, stderr, code := run(t, "check", "--snapshot", healthy, "-f", "json", "-o", file)
	if code != 0 || out != "" || stderr != "" {
		t.Fatalf("check -f json -o FILE: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, err := os.ReadFile(file); err != nil || decode(t, string(b)).Summary.Verdict != "healthy" {
		t.Errorf("check -o FILE: %v", err)
	}

	out, stderr, code = run(t, "check", "--snapshot", healthy, "-o", "json")
	if code != 0 || decode(t, out).Summary.Verdict != "healthy" || !strings.Contains(stderr, "-o json is read as --format json") {
		t.Errorf("check -o json: exit %d, stderr %q", code, stderr)
	}
	// With --format given, -o is a file, whatever its name.
	t.Chdir(dir)
	out, _, code = run(t, "check", "--snapshot", healthy, "--format", "table", "-o", "json")
	if b, err := os.ReadFile(filepath.Join(dir, "json")); code != 0 || out != "" || err != nil || !strings.HasPrefix(string(b), "VERDICT HEALTHY") {
		t.Errorf("check --format table -o json: exit %d, stdout %q, file: %v", code, out, err)
	}

	snap := filepath.Join(dir, "s.tar.gz")
	if _, stderr, code := run(t, "record", "--snapshot", healthy, "-o", snap); code != 0 {
		t.Fatalf("record -o: %d %s", code, stderr)
	}
	list := filepath.Join(dir, "list.txt")
	if out, stderr, code := run(t, "list", "-o", list); code != 0 || out != "" {
		t.Errorf("list -o FILE: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(list); !strings.Contains(string(b), "pcie.aer") {
		t.Errorf("list -o FILE wrote %q", b)
	}
	report1 := filepath.Join(dir, "host1.json")
	os.WriteFile(report1, []byte(mustRun(t, "check", "--snapshot", healthy, "--format", "json")), 0o644)
	fleetOut := filepath.Join(dir, "fleet.json")
	if out, stderr, code := run(t, "fleet", "-f", "json", "-o", fleetOut, "--stale", "0", report1); code != 0 || out != "" {
		t.Errorf("fleet -o FILE: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	if b, _ := os.ReadFile(fleetOut); !json.Valid(b) {
		t.Errorf("fleet -o FILE wrote %q", b)
	}
	if out, stderr, _ := run(t, "fleet", "-o", "json", "--stale", "0", report1); !json.Valid([]byte(out)) || !strings.Contains(stderr, "read as --format json") {
		t.Errorf("fleet -o json: stdout %q, stderr %q", out, stderr)
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, code := run(t, args...)
	if code > 3 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	return out
}

// list --format json names every registered check with its layer, description, fault row and
// whether it is a probe, valid against report/list-schema.json.
func TestListJSON(t *testing.T) {
	schema := compileListSchema(t)
	out, stderr, code := run(t, "list", "--format", "json")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(v); err != nil {
		t.Fatalf("list JSON does not validate: %v", err)
	}
	var l report.CheckList
	json.Unmarshal([]byte(out), &l)
	reg := checks.Default.All()
	if len(l.Checks) != len(reg) {
		t.Fatalf("%d checks listed, %d registered", len(l.Checks), len(reg))
	}
	faults := engine.DefaultFaults()
	probes := 0
	for i, c := range l.Checks {
		if c.ID != reg[i].ID || c.Probe != reg[i].Probe || c.Fault != reg[i].Fault || c.Layer != reg[i].Layer() {
			t.Errorf("listed %+v, registered %+v", c, reg[i])
		}
		if !slices.ContainsFunc(faults.Rows, func(r report.FaultRow) bool { return r.ID == c.Fault }) {
			t.Errorf("%s: fault row %q is not in the fault table", c.ID, c.Fault)
		}
		if c.Probe {
			probes++
		}
	}
	if probes == 0 || probes == len(l.Checks) {
		t.Errorf("%d of %d checks are probes", probes, len(l.Checks))
	}
	if out, _, code := run(t, "list", "--format", "yaml"); code != 64 || out != "" {
		t.Errorf("list --format yaml: exit %d, stdout %q", code, out)
	}
}
