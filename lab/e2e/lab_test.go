//go:build lab

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// labConfig says what TestLab runs; it comes from the environment so that make targets can point
// the same test at rdmadiag or at guest tools (see lab.mk).
type labConfig struct {
	payload   string   // LAB_E2E_PAYLOAD: shell command run in the guest
	files     []string // LAB_E2E_FILES: host files copied into the guest's /usr/bin
	expectDir string   // LAB_E2E_EXPECT: directory of <scenario>.json expectations
	scenarios []string // LAB_E2E_SCENARIOS: which scenarios; default every lab/scenarios/*.sh
	outDir    string   // LAB_E2E_OUT: where each scenario's results are kept
	strict    bool     // CI=true: a lab that cannot start fails instead of skipping
}

func configFromEnv(t *testing.T) labConfig {
	get := func(k, def string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return def
	}
	c := labConfig{
		payload:   get("LAB_E2E_PAYLOAD", "rdmadiag check --format json"),
		files:     strings.Fields(get("LAB_E2E_FILES", "../../bin/rdmadiag")),
		expectDir: get("LAB_E2E_EXPECT", "expect"),
		scenarios: strings.Fields(get("LAB_E2E_SCENARIOS", "")),
		outDir:    get("LAB_E2E_OUT", "../out/e2e"),
		strict:    os.Getenv("CI") == "true",
	}
	if len(c.scenarios) == 0 {
		all, err := filepath.Glob("../scenarios/*.sh")
		if err != nil || len(all) == 0 {
			t.Fatalf("no scenarios in ../scenarios (%v)", err)
		}
		for _, s := range all {
			c.scenarios = append(c.scenarios, strings.TrimSuffix(filepath.Base(s), ".sh"))
		}
	}
	return c
}

// unavailable fails in CI and skips elsewhere: a developer machine without QEMU is not a defect,
// a CI runner that silently runs no scenario is.
func (c labConfig) unavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if c.strict {
		t.Fatalf("lab cannot run (CI=true, so this is a failure): %s", msg)
	}
	t.Skipf("lab cannot run, skipping: %s", msg)
}

func TestLab(t *testing.T) {
	c := configFromEnv(t)
	for _, f := range c.files {
		if _, err := os.Stat(f); err != nil {
			c.unavailable(t, "%s does not exist (make build): %v", f, err)
		}
	}
	labDown := ""
	for _, scenario := range c.scenarios {
		t.Run(scenario, func(t *testing.T) {
			if labDown != "" {
				c.unavailable(t, "%s", labDown)
			}
			exp, err := LoadExpectation(filepath.Join(c.expectDir, scenario+".json"))
			if err != nil {
				t.Fatal(err)
			}
			payload := c.payload
			if exp.Payload != "" {
				payload = exp.Payload
			}
			run, err := runScenario(c, scenario, payload, exp.Args)
			var unavail errLabUnavailable
			if errors.As(err, &unavail) {
				labDown = unavail.Error()
				c.unavailable(t, "%s", labDown)
			}
			if err != nil {
				t.Fatalf("scenario %s: %v\n%s", scenario, err, run.consoleTail(40))
			}
			for _, line := range exp.Logged(run.stdout) {
				t.Logf("scenario %s: %s", scenario, line)
			}
			if fails := exp.Check(Result{Output: run.stdout, ExitCode: run.rc}); len(fails) > 0 {
				// The failures again after the console: a CI excerpt keeps only the tail.
				t.Errorf("scenario %s: expectations %s not met:\n  %s\n%s\nscenario %s not met: %s", scenario,
					filepath.Join(c.expectDir, scenario+".json"), strings.Join(fails, "\n  "), run.describe(),
					scenario, strings.Join(fails, "; "))
				return
			}
			if !exp.HasFindingExpectations() && exp.Todo != "" {
				t.Skipf("scenario %s: output is valid JSON (exit %d) but findings are not asserted yet: TODO %s", scenario, run.rc, exp.Todo)
			}
		})
	}
}

type errLabUnavailable struct{ msg string }

func (e errLabUnavailable) Error() string { return e.msg }

// labRun is what one scenario left on the host.
type labRun struct {
	scenario string
	dir      string
	vmOutput []byte
	stdout   []byte
	stderr   []byte
	rc       int
}

func runScenario(c labConfig, scenario, payload string, extra []string) (*labRun, error) {
	r := &labRun{scenario: scenario, dir: filepath.Join(c.outDir, scenario)}
	args := []string{"-s", scenario, "-o", r.dir}
	for _, f := range c.files {
		args = append(args, "-f", f)
	}
	for _, a := range extra {
		payload += " '" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	args = append(args, "--", payload)
	// vm.sh has its own hard limit (LAB_TIMEOUT); this one only guards against vm.sh itself hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "../vm.sh", args...)
	cmd.Env = append(os.Environ(), "LAB_QUIET=1")
	out, err := cmd.CombinedOutput()
	r.vmOutput = out
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && exit.ExitCode() == 3:
		return r, errLabUnavailable{strings.TrimSpace(string(out))}
	case err != nil:
		return r, fmt.Errorf("lab/vm.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if r.stdout, err = os.ReadFile(filepath.Join(r.dir, "out", "payload.stdout")); err != nil {
		return r, fmt.Errorf("reading the payload's output: %w", err)
	}
	r.stderr, _ = os.ReadFile(filepath.Join(r.dir, "out", "payload.stderr"))
	rcText, err := os.ReadFile(filepath.Join(r.dir, "out", "payload.rc"))
	if err != nil {
		return r, fmt.Errorf("reading the payload's exit code: %w", err)
	}
	if r.rc, err = strconv.Atoi(strings.TrimSpace(string(rcText))); err != nil {
		return r, fmt.Errorf("payload.rc %q: %w", rcText, err)
	}
	return r, nil
}

// describe is what a failure shows: what the payload said, its exit code and the guest console.
func (r *labRun) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "payload exit code: %d\n", r.rc)
	fmt.Fprintf(&b, "payload stdout (%s):\n%s\n", filepath.Join(r.dir, "out", "payload.stdout"), clip(r.stdout, 8000))
	if len(bytes.TrimSpace(r.stderr)) > 0 {
		fmt.Fprintf(&b, "payload stderr:\n%s\n", clip(r.stderr, 2000))
	}
	b.WriteString(r.consoleTail(40))
	return b.String()
}

func (r *labRun) consoleTail(n int) string {
	p := filepath.Join(r.dir, "console.log")
	data, err := os.ReadFile(p)
	if err != nil {
		return fmt.Sprintf("(no guest console: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("guest console (last %d lines of %s):\n  | %s", len(lines), p, strings.Join(lines, "\n  | "))
}

func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + fmt.Sprintf("\n... (%d more bytes)", len(b)-n)
}
