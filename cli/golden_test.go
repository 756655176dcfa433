package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files under fixtures/sysfs/*/")

const fixturesDir = "../fixtures/sysfs"

// goldenWidth is the terminal width the table goldens are laid out for: what a piped run gets.
const goldenWidth = 80

// testApp runs the CLI in-process with a fixed clock, version and environment (table width,
// UTF-8 locale, no NO_COLOR), as goldens need whatever the environment of the test run; a
// fixture's snapshot is unpacked once per test binary (openCached).
func testApp(stdout, stderr *bytes.Buffer) *App {
	return &App{Version: "test", Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) },
		Stdout: stdout, Stderr: stderr, Golden: true, OpenHost: openCached, Getenv: fixedEnv(map[string]string{
			"COLUMNS": strconv.Itoa(goldenWidth), "LANG": "C.UTF-8"})}
}

// fixedEnv is an environment of only these variables.
func fixedEnv(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := testApp(&out, &errb).Execute(context.Background(), args)
	return out.String(), errb.String(), code
}

// scenario is one fixture directory: a snapshot, optional extra check arguments in "args"
// (one per line), and goldens check.golden.{txt,json}.
type scenario struct {
	name, dir, snapshot string
	args                []string
}

func scenarios(t *testing.T) []scenario {
	t.Helper()
	dirs, err := os.ReadDir(fixturesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []scenario
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		dir := filepath.Join(fixturesDir, d.Name())
		snap := ""
		for _, n := range []string{"snapshot.tar.gz", "snapshot.txtar"} {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				snap = filepath.Join(dir, n)
			}
		}
		if snap == "" {
			t.Errorf("%s: no snapshot.tar.gz or snapshot.txtar", dir)
			continue
		}
		s := scenario{name: d.Name(), dir: dir, snapshot: snap}
		if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					s.args = append(s.args, strings.Fields(l)...)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "README.md")); err != nil {
			t.Errorf("%s: every fixture says how it was produced in README.md", dir)
		}
		out = append(out, s)
	}
	if len(out) < 3 {
		t.Errorf("want at least three scenarios, have %d", len(out))
	}
	return out
}

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return compileSchemaAt(t, "schema.json")
}

// compileListSchema compiles report/list-schema.json, the schema of `list --format json`.
func compileListSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.ListSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("list-schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("list-schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// compileSchemaAt compiles the report schema, or one of its definitions ("schema.json#/$defs/x").
func compileSchemaAt(t *testing.T, loc string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report.Schema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(loc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGolden runs `check` on every fixture and compares the table and the JSON with the goldens
// (go test ./cli -run Golden -update rewrites them; review the diff). Every JSON golden
// must validate against the published schema, and the exit code must match the verdict.
func TestGolden(t *testing.T) {
	schema := compileSchema(t)
	invSchema := compileSchemaAt(t, "schema.json#/$defs/inventory")
	for _, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel() // each scenario writes only its own goldens
			for _, format := range []string{"json", "table"} {
				args := append([]string{"check", "--snapshot", s.snapshot, "--format", format}, s.args...)
				var out, stderr string
				var code int
				if format == "json" {
					out, stderr, code = checkReport(t, s) // the same command line, run once for every test
				} else {
					out, stderr, code = run(t, args...)
				}
				if stderr != "" {
					t.Errorf("stderr: %s", stderr)
				}
				ext := map[string]string{"json": "json", "table": "txt"}[format]
				golden := filepath.Join(s.dir, "check.golden."+ext)
				full := out
				if format == "json" {
					out = pinFaults(t, out)
				}
				if *update {
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run go test ./cli -run Golden -update)", err)
				}
				if string(want) != out {
					t.Errorf("%s differs from the golden (make regen rewrites it; review the diff):\n%s", golden, unifiedDiff(golden, "rdmadiag "+strings.Join(args, " "), string(want), out, maxDiffLines))
				}
				if format != "json" {
					if w, line := widest(out); w > goldenWidth {
						t.Errorf("table at COLUMNS=%d has a line %d columns wide: %q", goldenWidth, w, line)
					}
					continue
				}
				out = full
				var doc any
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatal(err)
				}
				if err := schema.Validate(doc); err != nil {
					t.Errorf("JSON does not validate against report/schema.json: %v", err)
				}
				var rep report.Report
				if err := json.Unmarshal([]byte(out), &rep); err != nil {
					t.Fatal(err)
				}
				if rep.Summary.ExitCode != code {
					t.Errorf("exit code %d, report says %d", code, rep.Summary.ExitCode)
				}
			}
			goldenInventory(t, s, invSchema)
		})
	}
}

// goldenInventory runs `inventory` on a fixture in both formats against inventory.golden.{txt,json}
// (rewritten by -update with the check goldens). Its JSON's host.inventory must validate against
// the report schema's inventory definition, and the exit code must follow the command's contract:
// 0 when every file was read, 3 (with the unread files on stderr) otherwise.
func goldenInventory(t *testing.T, s scenario, schema *jsonschema.Schema) {
	t.Helper()
	for _, format := range []string{"json", "table"} {
		out, stderr, code := run(t, "inventory", "--snapshot", s.snapshot, "--format", format)
		switch {
		case code == 0 && stderr != "":
			t.Errorf("inventory exits 0 but says on stderr: %s", stderr)
		case code == report.ExitUnknown && !strings.Contains(stderr, "could not read"):
			t.Errorf("inventory exits 3 without naming what it could not read: %q", stderr)
		case code != 0 && code != report.ExitUnknown:
			t.Errorf("inventory exit code %d, stderr %s", code, stderr)
		}
		ext := map[string]string{"json": "json", "table": "txt"}[format]
		golden := filepath.Join(s.dir, "inventory.golden."+ext)
		if *update {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test ./cli -run Golden -update)", err)
		}
		if string(want) != out {
			t.Errorf("%s differs from the golden (make regen rewrites it; review the diff):\n%s", golden, unifiedDiff(golden, "rdmadiag inventory", string(want), out, maxDiffLines))
		}
		if format == "table" {
			if !strings.Contains(out, "PORT") && !strings.Contains(out, "no RDMA devices") {
				t.Errorf("table neither lists ports nor says there are no devices:\n%s", out)
			}
			continue
		}
		var doc struct {
			SchemaVersion string `json:"schema_version"`
			Host          struct {
				Inventory any `json:"inventory"`
			} `json:"host"`
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		if doc.SchemaVersion != report.SchemaVersion {
			t.Errorf("schema_version %q", doc.SchemaVersion)
		}
		if err := schema.Validate(doc.Host.Inventory); err != nil {
			t.Errorf("host.inventory does not validate against report/schema.json: %v", err)
		}
	}
}

// pinFaults reduces the report's fault-table rows (the last key) to their ids: a golden pins
// which rows a scenario's findings belong to, and the rows' text is tested once
// (TestReportCarriesItsFaultRows), so that editing a row does not rewrite every golden.
func pinFaults(t *testing.T, out string) string {
	t.Helper()
	var rep struct {
		Faults []report.FaultRow `json:"faults"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(out, ",\n  \"faults\": ")
	if i < 0 {
		t.Fatalf("no faults key at the end of the report:\n%s", out)
	}
	// Rows reduced to their ids stay fault rows, so a golden still decodes as a report (the
	// fleet and rendering tests read the goldens).
	ids := make([]string, len(rep.Faults))
	for k, r := range rep.Faults {
		b, _ := json.Marshal(r.ID)
		ids[k] = `{"id": ` + string(b) + `}`
	}
	return out[:i] + ",\n  \"faults\": [" + strings.Join(ids, ", ") + "]\n}\n"
}

// TestReportCarriesItsFaultRows: a report's faults section holds, whole and in table order,
// exactly the rows of the embedded fault table that its findings belong to (tested here once;
// the goldens pin only the ids).
func TestReportCarriesItsFaultRows(t *testing.T) {
	table := engine.DefaultFaults()
	for _, s := range scenarios(t) {
		out, _, _ := checkReport(t, s)
		var rep report.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		used := map[string]bool{}
		sigs := map[string][]string{}
		for _, f := range rep.Findings {
			used[f.Fault] = true
			for _, e := range f.Evidence {
				if e.Name == "signature" && !slices.Contains(sigs[f.Fault], e.Observed) {
					sigs[f.Fault] = append(sigs[f.Fault], e.Observed)
				}
			}
		}
		// Each row with the signature table's ids its findings were drawn from.
		var want []report.FaultRow
		for _, r := range table.Rows {
			if used[r.ID] {
				r.LogSignatures = append([]string{}, sigs[r.ID]...)
				slices.Sort(r.LogSignatures)
				want = append(want, r)
			}
		}
		got, _ := json.Marshal(rep.Faults)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("%s: faults section\n%s\nwant\n%s", s.name, got, exp)
		}
	}
}
