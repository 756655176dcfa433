package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The example is built as a site would build it and run as an operator would: its check is
// listed beside the built-in ones with its origin, selected by --only, and judges fixtures.
func TestSiteBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "rdmadiag-site")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.Command(bin, "list", "--format", "json").Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var list struct {
		Checks []struct {
			ID     string `json:"id"`
			Origin string `json:"origin"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("list JSON: %v\n%s", err, out)
	}
	origins := map[string]string{}
	for _, c := range list.Checks {
		origins[c.ID] = c.Origin
	}
	if o, ok := origins["port.site_mtu"]; !ok || o != "github.com/rdmadiag/rdmadiag/examples/sitecheck" {
		t.Errorf("port.site_mtu listed %v with origin %q", ok, o)
	}
	if o, ok := origins["port.state"]; !ok || o != "" {
		t.Errorf("built-in port.state listed %v with origin %q", ok, o)
	}

	for _, tc := range []struct {
		fixture  string
		code     int
		severity string
		summary  string
	}{
		{"healthy", 1, "warning", "eth0 MTU 1500, the site runs 9000"},
		{"fw-cx5-ofed57", 0, "ok", "MTU 9000, the site's"},
	} {
		snap := filepath.Join("..", "..", "fixtures", "sysfs", tc.fixture, "snapshot.txtar")
		out, err := exec.Command(bin, "check", "--snapshot", snap, "--only", "port.site_mtu", "--format", "json").Output()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("%s: %v", tc.fixture, err)
		}
		var rep struct {
			Findings []struct {
				CheckID  string `json:"check_id"`
				Severity string `json:"severity"`
				Summary  string `json:"summary"`
				Action   string `json:"action"`
			} `json:"findings"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("%s: %v\n%s", tc.fixture, err, out)
		}
		if code != tc.code || len(rep.Findings) == 0 {
			t.Fatalf("%s: exit %d with %d findings, want %d\n%s", tc.fixture, code, len(rep.Findings), tc.code, out)
		}
		f := rep.Findings[0]
		if f.CheckID != "port.site_mtu" || f.Severity != tc.severity || !strings.Contains(f.Summary, tc.summary) {
			t.Errorf("%s: %+v, want %s %q", tc.fixture, f, tc.severity, tc.summary)
		}
		if tc.severity == "warning" && f.Action != "fix-configuration" {
			t.Errorf("%s: action %q", tc.fixture, f.Action)
		}
	}
}

// A site outside this repository adds a check with this one file and a go.mod naming rdmadiag.
func TestOutsideModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/site\n\ngo 1.26\n\nrequire github.com/rdmadiag/rdmadiag v0.0.0\n\nreplace github.com/rdmadiag/rdmadiag => " + repo + "\n"
	for name, b := range map[string][]byte{"main.go": src, "go.mod": []byte(mod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "site")
	// -mod=mod lets the go command add the requirements rdmadiag brings, from the module cache.
	build := exec.Command("go", "build", "-mod=mod", "-o", bin, ".")
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build outside the repository: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "list").Output()
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if !strings.Contains(string(out), "port.site_mtu") || !strings.Contains(string(out), "(from example.com/site)") {
		t.Errorf("list of the outside build:\n%s", out)
	}
}
