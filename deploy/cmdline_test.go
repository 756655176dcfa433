// Package deploy holds what runs rdmadiag across a cluster (kubernetes/, systemd/, container/).
// This test runs the exact rdmadiag command lines those files contain, built from this
// repository, on recorded fixture snapshots, and checks what the engines reading the results
// rely on: the textfile appears, node-problem-detector gets one short line and an exit code it
// understands.
package deploy

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

const binaryPath = "/usr/local/bin/rdmadiag"

// commandLine is one rdmadiag invocation found in a deployment file.
type commandLine struct {
	where string
	args  []string // after the binary
}

// systemdCommand is the service's ExecStart.
func systemdCommand(t *testing.T) commandLine {
	t.Helper()
	b, err := os.ReadFile("systemd/rdmadiag-textfile.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
			f := strings.Fields(v)
			if len(f) == 0 || f[0] != binaryPath {
				t.Fatalf("ExecStart=%s does not run %s", v, binaryPath)
			}
			return commandLine{"systemd/rdmadiag-textfile.service", f[1:]}
		}
	}
	t.Fatal("rdmadiag-textfile.service has no ExecStart")
	return commandLine{}
}

// manifestObjects decodes a multi-document manifest into generic maps.
func manifestObjects(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []map[string]any
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, m)
		}
	}
}

// textfileCommand is the line of the textfile DaemonSet's loop that runs rdmadiag.
func textfileCommand(t *testing.T) commandLine {
	t.Helper()
	const path = "kubernetes/rdmadiag-textfile.yaml"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == binaryPath {
			return commandLine{path, slices.DeleteFunc(f[1:], func(s string) bool { return s == "&" })}
		}
	}
	t.Fatalf("%s: no line runs %s", path, binaryPath)
	return commandLine{}
}

// npdRule is one rule of the custom plugin monitor in the npd manifest's ConfigMap.
type npdRule struct {
	Type string   `json:"type"`
	Path string   `json:"path"`
	Args []string `json:"args"`
}

func npdRules(t *testing.T) []npdRule {
	t.Helper()
	const path = "kubernetes/rdmadiag-npd.yaml"
	for _, o := range manifestObjects(t, path) {
		if o["kind"] != "ConfigMap" {
			continue
		}
		data, _ := o["data"].(map[string]any)
		raw, _ := data["rdmadiag-plugin-monitor.json"].(string)
		var c struct {
			Rules []npdRule `json:"rules"`
		}
		if err := json.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatalf("%s: plugin monitor: %v", path, err)
		}
		return c.Rules
	}
	t.Fatalf("%s: no ConfigMap", path)
	return nil
}

// built is the rdmadiag the tests run: linking it takes seconds, so it is built once per test
// binary, into a directory TestMain removes.
var built struct {
	once     sync.Once
	dir, bin string
	err      error
	out      []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildRdmadiag builds this repository's rdmadiag (once), or skips when it does not yet have the
// output formats the deployment files use.
func buildRdmadiag(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "rdmadiag-deploy-test-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "rdmadiag")
		build := exec.Command("go", "build", "-o", built.bin, "./cmd/rdmadiag")
		build.Dir = ".."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		built.out, built.err = build.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build ./cmd/rdmadiag: %v\n%s", built.err, built.out)
	}
	bin := built.bin
	help, _ := exec.Command(bin, "check", "--help").CombinedOutput()
	for _, want := range []string{"--output", "prometheus", "npd"} {
		if !strings.Contains(string(help), want) {
			t.Skipf("this rdmadiag's check has no %s (check --help), so the deployment command lines cannot run yet", want)
		}
	}
	return bin
}

// fixture is a recorded snapshot and the exit code its golden report holds.
type fixture struct {
	name, snapshot string
	exit           int
}

// fixturesByExit picks, for each exit code 0-3, the first fixture that needs no extra arguments.
func fixturesByExit(t *testing.T) []fixture {
	t.Helper()
	dirs, err := filepath.Glob("../fixtures/sysfs/*/snapshot.*") // recorded and synthetic fixtures alike
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	var out []fixture
	for _, snap := range dirs {
		dir := filepath.Dir(snap)
		if _, err := os.Stat(filepath.Join(dir, "args")); err == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "check.golden.json"))
		if err != nil {
			continue
		}
		var g struct {
			Summary struct {
				ExitCode int `json:"exit_code"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(b, &g); err != nil || seen[g.Summary.ExitCode] {
			continue
		}
		seen[g.Summary.ExitCode] = true
		out = append(out, fixture{filepath.Base(dir), snap, g.Summary.ExitCode})
	}
	for code := range 4 {
		if !seen[code] {
			t.Errorf("no fixture without arguments has exit code %d", code)
		}
	}
	return out
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func TestTextfileCommandLines(t *testing.T) {
	bin := buildRdmadiag(t)
	for _, cl := range []commandLine{systemdCommand(t), textfileCommand(t)} {
		for _, fx := range fixturesByExit(t) {
			t.Run(filepath.Base(cl.where)+"/"+fx.name, func(t *testing.T) {
				dir := t.TempDir()
				args := slices.Clone(cl.args)
				i := slices.Index(args, "--output")
				if i < 0 || i+1 >= len(args) {
					t.Fatalf("%s: %q has no --output", cl.where, args)
				}
				out := filepath.Join(dir, filepath.Base(args[i+1]))
				args[i+1] = out
				args = append(args, "--snapshot", fx.snapshot)
				_, err := exec.Command(bin, args...).Output()
				if code := exitCode(t, err); code != fx.exit {
					t.Errorf("exit %d, want the verdict's %d", code, fx.exit)
				}
				b, err := os.ReadFile(out)
				if err != nil || len(b) == 0 || b[len(b)-1] != '\n' {
					t.Errorf("textfile %s: %v, %d bytes", out, err, len(b))
				}
				if ents, _ := os.ReadDir(dir); len(ents) != 1 {
					t.Errorf("%d files left in the textfile directory, want only %s", len(ents), filepath.Base(out))
				}
			})
		}
	}
}

func TestNPDCommandLines(t *testing.T) {
	bin := buildRdmadiag(t)
	rules := npdRules(t)
	if len(rules) == 0 {
		t.Fatal("no rules")
	}
	for i, r := range rules {
		if r.Path != binaryPath {
			t.Errorf("rule %d runs %s, want %s", i, r.Path, binaryPath)
			continue
		}
		for _, fx := range fixturesByExit(t) {
			t.Run(r.Type+"/"+fx.name, func(t *testing.T) {
				args := append(slices.Clone(r.Args), "--snapshot", fx.snapshot)
				stdout, err := exec.Command(bin, args...).Output()
				code := exitCode(t, err)
				// npd: 0 OK, 1 problem, anything else unknown. The permanent rule's problem is a
				// critical finding; the temporary rule also reports warnings.
				want := map[int]int{0: 0, 1: 0, 2: 1}[fx.exit]
				if r.Type == "temporary" && fx.exit == 1 {
					want = 1
				}
				switch {
				case fx.exit == 3 && (code == 0 || code == 1):
					t.Errorf("exit %d for a host that could not be checked: npd would take it as known", code)
				case fx.exit != 3 && code != want:
					t.Errorf("exit %d, want %d for a verdict of %d", code, want, fx.exit)
				}
				line := strings.TrimSuffix(string(stdout), "\n")
				if line == "" || strings.Contains(line, "\n") || len(line) > 80 {
					t.Errorf("stdout %q: want one line of 1-80 bytes", stdout)
				}
			})
		}
	}
}
