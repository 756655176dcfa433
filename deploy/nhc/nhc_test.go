// Package nhc holds check_rdmadiag (rdmadiag.nhc), an LBNL NHC check. This test sources it into
// bash next to stand-ins for NHC's die, log, dbg and syslog and for rdmadiag, one case per
// decision; `E2E_NHC=DIR make e2e-slurm` runs it inside the real NHC under a real slurmd.
package nhc

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// What `rdmadiag check --format nagios` prints: the status, the text, then perfdata.
const (
	criticalLine  = "RDMADIAG CRITICAL - rxe0/1 is DOWN (physical Disabled) because its netdev eth0 was set administratively down | criticals=1;;; warnings=0;;; unknowns=0;;; duration=0.171s;;;"
	healthyStatus = "RDMADIAG OK - 1 RDMA device(s), 28 checks passed"
	healthyLine   = healthyStatus + " | criticals=0;;; warnings=0;;; unknowns=0;;; duration=0.079s;;;"
	warningStatus = "RDMADIAG WARNING - mlx5_0/1 runs at 100 Gb/s, below the 200 Gb/s expected"
	warningLine   = warningStatus + " | criticals=0;;; warnings=1;;; unknowns=0;;;"
)

// NHC's die marks the node offline and exits; log and dbg print; syslog queues for the system log.
const harness = `
die() { echo "DIE $1 $2"; exit 1; }
log() { echo "LOG $*"; }
dbg() { echo "DBG $*"; }
syslog() { echo "SYSLOG $*"; }
TIMEOUT=${NHC_TIMEOUT:-30}
. ./rdmadiag.nhc
check_rdmadiag "$@"
echo "RET $?"
`

type result struct {
	out  string   // what the stand-ins printed
	args []string // arguments rdmadiag was run with, nil when it was not run
}

func runCheck(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("NHC is bash; no bash here")
	}
	dir := t.TempDir()
	rdmadiag := filepath.Join(dir, "rdmadiag")
	body := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done >" + filepath.Join(dir, "args") + "\n" +
		"[ -z \"$STUB_LINE\" ] || printf '%s\\n' \"$STUB_LINE\"\n" +
		"[ -z \"$STUB_ERR\" ] || echo \"$STUB_ERR\" >&2\nexit \"$STUB_RC\"\n"
	if err := os.WriteFile(rdmadiag, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{"-c", harness, "harness"}, args...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "RDMADIAG=" + rdmadiag}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	r := result{out: string(out)}
	if b, err := os.ReadFile(filepath.Join(dir, "args")); err == nil {
		r.args = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	return r
}

func TestCheckRdmadiag(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string // lines of output, in order
	}{
		{"critical dies with the root cause", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine}, nil,
			[]string{"DIE 1 check_rdmadiag:  rxe0/1 is DOWN (physical Disabled) because its netdev eth0 was set administratively down\n"}},
		{"critical with stderr after the summary still names the root cause", map[string]string{"STUB_RC": "2", "STUB_LINE": criticalLine, "STUB_ERR": "rdmadiag: note: something"}, nil,
			[]string{"DIE 1 check_rdmadiag:  rxe0/1 is DOWN"}},
		{"healthy passes", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine}, nil,
			[]string{"DBG check_rdmadiag:  " + healthyStatus + "\n", "RET 0"}},
		{"warnings are logged and pass", map[string]string{"STUB_RC": "1", "STUB_LINE": warningLine}, nil,
			[]string{"LOG check_rdmadiag:  " + warningStatus + "\n", "RET 0"}},
		{"could not check is logged and passes", map[string]string{"STUB_RC": "3", "STUB_LINE": "RDMADIAG UNKNOWN - host.tar.gz: not a usable rdmadiag snapshot", "STUB_ERR": "rdmadiag: host.tar.gz: not a usable rdmadiag snapshot"}, nil,
			[]string{"LOG check_rdmadiag:  could not check (rdmadiag exit 3):  RDMADIAG UNKNOWN - host.tar.gz: not a usable rdmadiag snapshot; node not marked offline",
				"SYSLOG check_rdmadiag:  could not check (rdmadiag exit 3)", "RET 0"}},
		{"a usage error passes too", map[string]string{"STUB_RC": "64", "STUB_ERR": "Error: unknown flag: --bogus"}, nil,
			[]string{"LOG check_rdmadiag:  could not check (rdmadiag exit 64):  Error: unknown flag: --bogus", "RET 0"}},
		{"a missing rdmadiag passes too", map[string]string{"RDMADIAG": "/nonexistent/rdmadiag"}, nil,
			[]string{"LOG check_rdmadiag:  could not check (rdmadiag exit 127)", "RET 0"}},
		{"a timeout past NHC's watchdog is shortened", map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "NHC_TIMEOUT": "15"}, []string{"-t", "20"},
			[]string{"LOG check_rdmadiag:  rdmadiag timeout 20s plus 5s exceeds NHC timeout 15s; using 10s", "RET 0"}},
		{"a timeout that is not a number is an nhc.conf error", map[string]string{"STUB_RC": "0"}, []string{"-t", "20s"},
			[]string{`DIE 1 check_rdmadiag:  Timeout "20s" is not a number of seconds`}},
		{"an unknown option is an nhc.conf error", map[string]string{"STUB_RC": "0"}, []string{"-x"},
			[]string{"DIE 1 check_rdmadiag:  Invalid option:  -x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCheck(t, tt.env, tt.args...)
			rest := r.out
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", w, r.out)
				}
				rest = rest[i+len(w):]
			}
			if strings.Contains(r.out, "DIE") == strings.Contains(r.out, "RET") {
				t.Errorf("the check must either die or return:\n%s", r.out)
			}
		})
	}
}

func TestCheckRdmadiagArguments(t *testing.T) {
	t.Parallel()
	r := runCheck(t, map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine})
	if got, want := strings.Join(r.args, " "), "check --format nagios --timeout 20s --no-probe"; got != want {
		t.Errorf("rdmadiag %s, want %s", got, want)
	}
	// RDMADIAG_ARGS replaces --no-probe and is split, never globbed; the check's own arguments
	// after -- come last.
	r = runCheck(t, map[string]string{"STUB_RC": "0", "STUB_LINE": healthyLine, "RDMADIAG_ARGS": "--snapshot /x/*.tar.gz"},
		"-t", "9", "--", "--expect-rate", "200")
	if got, want := strings.Join(r.args, " "), "check --format nagios --timeout 9s --snapshot /x/*.tar.gz --expect-rate 200"; got != want {
		t.Errorf("rdmadiag %s, want %s", got, want)
	}
}

// The note is one line of at most 200 bytes, whatever rdmadiag prints.
func TestCheckRdmadiagNoteBounded(t *testing.T) {
	t.Parallel()
	long := "RDMADIAG CRITICAL - mlx5_0: \tfirmware " + strings.Repeat("x", 400) + " | criticals=1;;;"
	r := runCheck(t, map[string]string{"STUB_RC": "2", "STUB_LINE": long})
	line := strings.SplitN(r.out, "\n", 2)[0]
	note := strings.TrimPrefix(line, "DIE 1 check_rdmadiag:  ")
	if len(note) != 200 || !strings.HasPrefix(note, "mlx5_0: firmware xxx") {
		t.Errorf("note %d bytes: %q", len(note), note)
	}
}
