// Package slurm holds the Slurm HealthCheckProgram (rdmadiag-healthcheck, POSIX sh). This test
// runs it against stand-ins for rdmadiag, sinfo and scontrol, one per decision it makes; `make
// e2e-slurm` runs it under a real slurmd.
package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// What `rdmadiag check --format nagios` prints: the status, the text, then perfdata.
const (
	criticalStatus = "RDMADIAG CRITICAL - rxe0/1 is DOWN (physical Disabled) because its netdev eth0 was set administratively down"
	criticalLine   = criticalStatus + " | criticals=1;;; warnings=0;;; unknowns=0;;; duration=0.171s;;;"
	ourReason      = "rdmadiag: rxe0/1 is DOWN (physical Disabled) because its netdev eth0 was set administratively down"
	healthyStatus  = "RDMADIAG OK - 1 RDMA device(s), 28 checks passed"
	healthyLine    = healthyStatus + " | criticals=0;;; warnings=0;;; unknowns=0;;; duration=0.079s;;;"
	warningLine    = "RDMADIAG WARNING - mlx5_0/1 runs at 100 Gb/s, below the 200 Gb/s expected | criticals=0;;; warnings=1;;; unknowns=0;;;"
	unknownStatus  = "RDMADIAG UNKNOWN - could not check mlx5_0: reading /sys/class/infiniband/mlx5_0/fw_ver: input/output error"
	unknownLine    = unknownStatus + " | criticals=0;;; warnings=0;;; unknowns=1;;;"
)

// stub writes an executable sh script named name into dir.
func stub(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

type run struct {
	out      string   // the program's stdout and stderr
	code     int      // its exit status
	rdmadiag []string // arguments rdmadiag was run with, nil when it was not run
	sinfo    []string // arguments sinfo was run with, nil when it was not run
	scontrol []string // arguments scontrol was run with, nil when it was not run
}

// runProgram runs rdmadiag-healthcheck with only env set, as slurmd does (an empty environment
// but for SLURMD_NODENAME). The stand-ins print STUB_* and record their arguments, one a line.
func runProgram(t *testing.T, env map[string]string) run {
	t.Helper()
	dir := t.TempDir()
	rec := func(name string) string {
		return `for a in "$@"; do printf '%s\n' "$a"; done >` + filepath.Join(dir, name+".args") + "\n"
	}
	full := map[string]string{
		"SLURMD_NODENAME":           "n1",
		"RDMADIAG_HEALTHCHECK_CONF": os.DevNull,
		"RDMADIAG":                  stub(t, dir, "rdmadiag", rec("rdmadiag")+"${STUB_SLEEP:+sleep $STUB_SLEEP}\n[ -z \"$STUB_LINE\" ] || printf '%s\\n' \"$STUB_LINE\"\necho \"$STUB_ERR\" >&2\nexit \"$STUB_RC\"\n"),
		"SINFO":                     stub(t, dir, "sinfo", rec("sinfo")+"printf '%s\\n' \"$STUB_SINFO\" \"$STUB_SINFO\"\n"),
		"SCONTROL":                  stub(t, dir, "scontrol", rec("scontrol")+"echo \"$STUB_SCONTROL_ERR\" >&2\nexit ${STUB_SCONTROL_RC:-0}\n"),
		"TMPDIR":                    dir,
	}
	for k, v := range env {
		full[k] = v
	}
	cmd := exec.Command("./rdmadiag-healthcheck")
	cmd.Env = []string{}
	for k, v := range full {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	r := run{out: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	args := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name+".args"))
		if os.IsNotExist(err) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	r.rdmadiag, r.sinfo, r.scontrol = args("rdmadiag"), args("sinfo"), args("scontrol")
	if left, _ := filepath.Glob(filepath.Join(dir, "rdmadiag-healthcheck.*")); len(left) > 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	return r
}

func TestHealthCheckDecisions(t *testing.T) {
	drain := []string{"update", "NodeName=n1", "State=DRAIN", "Reason=" + ourReason}
	resume := []string{"update", "NodeName=n1", "State=RESUME"}
	tests := []struct {
		name     string
		env      map[string]string
		code     int
		scontrol []string // nil: scontrol must not run
		out      string   // in the output
	}{
		{"critical idle node drains", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle|none"},
			1, drain, "drained node n1: " + ourReason},
		{"critical busy node drains", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "mix|none"},
			1, drain, "drained node n1"},
		{"critical not-responding node drains", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "alloc*|none"},
			1, drain, "drained node n1"},
		{"critical node drained by us with the same reason is left alone", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "drain|" + ourReason},
			1, nil, "stays drained"},
		{"critical node drained by us for another cause gets the new reason", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "drng|rdmadiag: [mlx5_0] firmware failed"},
			1, drain, "reason now: " + ourReason},
		{"critical node drained by someone else keeps their reason", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "drain|bad DIMM"},
			1, nil, "already drained by someone else (bad DIMM), reason kept"},
		{"critical down node is left to Slurm", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "down*|Not responding"},
			1, nil, "is down, left as it is"},
		{"critical node pending reboot is left to Slurm", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle@|none"},
			1, nil, "is idle@, left as it is"},
		{"healthy node we drained resumes", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "drain|" + ourReason},
			0, resume, "resumed node n1 (was: " + ourReason + ")"},
		{"warnings only: a node we drained resumes", map[string]string{"STUB_RC": "1", "STUB_LINE": warningLine, "STUB_SINFO": "drng|" + ourReason},
			0, resume, "resumed node n1"},
		{"healthy node drained by someone else stays drained", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "drain|maintenance: cable swap"},
			0, nil, "drained by someone else (maintenance: cable swap), left drained"},
		{"a reason that only starts with the word is not ours", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "drain|rdmadiag reports flaps, keep out"},
			0, nil, "drained by someone else"},
		{"healthy idle node: nothing to do", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "idle|none"},
			0, nil, "rdmadiag-healthcheck: " + healthyStatus + "\n"},
		{"could not check leaves a drained node drained", map[string]string{"STUB_RC": "3", "STUB_LINE": unknownLine, "STUB_SINFO": "drain|" + ourReason},
			3, nil, "could not check (rdmadiag exit 3): " + unknownStatus + "; node n1 left as it is"},
		{"could not check leaves an idle node in service", map[string]string{"STUB_RC": "3", "STUB_ERR": "rdmadiag: not a usable rdmadiag snapshot", "STUB_SINFO": "idle|none"},
			3, nil, "could not check (rdmadiag exit 3): rdmadiag: not a usable rdmadiag snapshot; node n1 left as it is"},
		{"a usage error is not a verdict", map[string]string{"STUB_RC": "64", "STUB_ERR": "unknown flag: --bogus", "STUB_SINFO": "idle|none"},
			3, nil, "rdmadiag exit 64"},
		{"a signal is not a verdict", map[string]string{"STUB_RC": "130", "STUB_SINFO": "drain|" + ourReason},
			3, nil, "rdmadiag exit 130"},
		{"no node state from sinfo: nothing is changed", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": ""},
			3, nil, "gave no state for node n1"},
		{"scontrol failing is reported", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle|none", "STUB_SCONTROL_RC": "1", "STUB_SCONTROL_ERR": "slurm_update error: Invalid node name specified"},
			3, drain, "failed: slurm_update error: Invalid node name specified"},
		{"dry run only prints the command", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle|none", "RDMADIAG_DRY_RUN": "1"},
			1, nil, "dry run: "},
		{"node name from RDMADIAG_NODE", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "drain|" + ourReason, "RDMADIAG_NODE": "gpu-017"},
			0, []string{"update", "NodeName=gpu-017", "State=RESUME"}, "resumed node gpu-017"},
		{"a timeout slurmd would not wait for is refused", map[string]string{"STUB_RC": "0", "STUB_SINFO": "idle|none", "RDMADIAG_TIMEOUT": "55"},
			3, nil, "outside 1-40 s"},
		{"a timeout that is not a number is refused", map[string]string{"STUB_RC": "0", "STUB_SINFO": "idle|none", "RDMADIAG_TIMEOUT": "30s"},
			3, nil, "not a number of seconds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runProgram(t, tt.env)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d; output:\n%s", r.code, tt.code, r.out)
			}
			if strings.Join(r.scontrol, " ") != strings.Join(tt.scontrol, " ") {
				t.Errorf("scontrol %q, want %q; output:\n%s", r.scontrol, tt.scontrol, r.out)
			}
			if !strings.Contains(r.out, tt.out) {
				t.Errorf("output lacks %q:\n%s", tt.out, r.out)
			}
			if tt.env["STUB_RC"] != "0" && tt.env["STUB_RC"] != "1" && tt.env["STUB_RC"] != "2" && r.sinfo != nil {
				t.Errorf("sinfo ran although rdmadiag gave no verdict: %q", r.sinfo)
			}
		})
	}
}

func TestHealthCheckArguments(t *testing.T) {
	t.Parallel()
	r := runProgram(t, map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "idle|none"})
	want := "check --format nagios --timeout 25s --no-probe"
	if got := strings.Join(r.rdmadiag, " "); got != want {
		t.Errorf("rdmadiag %s, want %s", got, want)
	}
	if got, want := strings.Join(r.sinfo, " "), "--noheader --Node --nodes=n1 --format=%t|%E"; got != want {
		t.Errorf("sinfo %s, want %s", got, want)
	}

	// RDMADIAG_ARGS replaces the default --no-probe; its words are split, never globbed.
	r = runProgram(t, map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "STUB_SINFO": "idle|none",
		"RDMADIAG_ARGS": "--snapshot /x/*.tar.gz  --only port", "RDMADIAG_TIMEOUT": "7"})
	want = "check --format nagios --timeout 7s --snapshot /x/*.tar.gz --only port"
	if got := strings.Join(r.rdmadiag, " "); got != want {
		t.Errorf("rdmadiag %s, want %s", got, want)
	}
}

// The settings file is read after the environment and wins; slurmd gives the program no other.
func TestHealthCheckSettingsFile(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "rdmadiag-healthcheck")
	if err := os.WriteFile(conf, []byte("RDMADIAG_NODE=from-file\nRDMADIAG_TIMEOUT=9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle|none",
		"RDMADIAG_HEALTHCHECK_CONF": conf, "RDMADIAG_NODE": "from-env"})
	if got, want := strings.Join(r.scontrol[:2], " "), "update NodeName=from-file"; got != want {
		t.Errorf("scontrol %s, want %s", got, want)
	}
	if !strings.Contains(strings.Join(r.rdmadiag, " "), "--timeout 9s") {
		t.Errorf("rdmadiag %q lacks --timeout 9s", r.rdmadiag)
	}

	r = runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "RDMADIAG_HEALTHCHECK_CONF": conf + ".missing"})
	if r.code != 3 || r.rdmadiag != nil || !strings.Contains(r.out, "cannot read settings file") {
		t.Errorf("missing settings file: exit %d, rdmadiag %q, output %s", r.code, r.rdmadiag, r.out)
	}
}

// A reason is one line of at most 200 bytes, whatever rdmadiag prints.
func TestHealthCheckReasonBounded(t *testing.T) {
	t.Parallel()
	long := "RDMADIAG CRITICAL - mlx5_0: \tfirmware " + strings.Repeat("x", 400) + " | criticals=1;;;"
	r := runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": long, "STUB_SINFO": "idle|none"})
	if len(r.scontrol) != 4 {
		t.Fatalf("scontrol %q", r.scontrol)
	}
	reason := strings.TrimPrefix(r.scontrol[3], "Reason=")
	if len(reason) != 200 || !strings.HasPrefix(reason, "rdmadiag: mlx5_0: firmware xxx") {
		t.Errorf("reason %d bytes: %q", len(reason), reason)
	}
}

// A run that hangs past its own --timeout is killed by the backstop, reported, and changes nothing.
func TestHealthCheckHungRdmadiag(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 6 s")
	}
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Skip("no timeout(1)")
	}
	t.Parallel()
	start := time.Now()
	r := runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_SINFO": "idle|none",
		"STUB_SLEEP": "30", "RDMADIAG_TIMEOUT": "1"})
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("took %s; the backstop is 1+5 s", took)
	}
	if r.code != 3 || r.scontrol != nil || !strings.Contains(r.out, "could not check (rdmadiag exit 124)") {
		t.Errorf("exit %d, scontrol %q, output %s", r.code, r.scontrol, r.out)
	}
}

// The dry run prints a command that a shell reads back as the very arguments scontrol would
// have been given, whatever the reason holds (quotes, $, backticks, a backslash).
func TestHealthCheckDryRunCanBePasted(t *testing.T) {
	t.Parallel()
	status := "RDMADIAG CRITICAL - mlx5_0/1 isn't \"up\": $(touch x) `id` ; a\\b & c; mlx5_1/1 is INIT"
	want := []string{"update", "NodeName=n1", "State=DRAIN", "Reason=rdmadiag: " + strings.TrimPrefix(status, "RDMADIAG CRITICAL - ")}
	r := runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": status + " | criticals=2;;; warnings=0;;; unknowns=0;;;",
		"STUB_SINFO": "idle|none", "RDMADIAG_DRY_RUN": "1"})
	if r.code != 1 || r.scontrol != nil {
		t.Fatalf("exit %d, scontrol run %q:\n%s", r.code, r.scontrol, r.out)
	}
	var cmdline string
	for _, l := range strings.Split(r.out, "\n") {
		if _, c, ok := strings.Cut(l, "rdmadiag-healthcheck: dry run: "); ok {
			cmdline = c
		}
	}
	if cmdline == "" {
		t.Fatalf("no dry run command in:\n%s", r.out)
	}
	// The shell's own reading of the line: its words, one a line, the first being scontrol.
	dir := t.TempDir()
	sh := exec.Command("sh", "-c", "set -- "+cmdline+"; shift; for a in \"$@\"; do printf '%s\\n' \"$a\"; done")
	sh.Dir = dir
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("sh cannot read %q: %v", cmdline, err)
	}
	if got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
		t.Errorf("the pasted command gives scontrol\n%q\nwant\n%q", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("pasting the command ran part of the reason: %v", left)
	}
}

// Every root cause the status line names reaches the drain reason.
func TestHealthCheckReasonNamesEveryRootCause(t *testing.T) {
	t.Parallel()
	status := "RDMADIAG CRITICAL - mlx5_0/1 runs at 1X width; mlx5_1/1 is INIT: no subnet manager +1 more"
	r := runProgram(t, map[string]string{"STUB_RC": "2", "STUB_LINE": status + " | criticals=3;;;", "STUB_SINFO": "idle|none"})
	if len(r.scontrol) != 4 || r.scontrol[3] != "Reason=rdmadiag: mlx5_0/1 runs at 1X width; mlx5_1/1 is INIT: no subnet manager +1 more" {
		t.Errorf("scontrol %q", r.scontrol)
	}
}
