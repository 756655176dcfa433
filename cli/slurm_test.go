package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const slurmHealthCheck = "../deploy/slurm/rdmadiag-healthcheck"

// The Slurm health check drains a node with every root cause rdmadiag's Nagios line names, each
// with its action: on port-cx7-ib one card runs at 1X width (its cable) and another is stuck in
// INIT (no subnet manager: configuration), two faults with two fixes.
func TestSlurmReasonNamesEveryRootCause(t *testing.T) {
	line, _, code := run(t, "check", "--snapshot", fixture("port-cx7-ib"), "--format", "nagios")
	if code != 2 {
		t.Fatalf("exit %d: %s", code, line)
	}
	dir := t.TempDir()
	stub := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	status := filepath.Join(dir, "status")
	if err := os.WriteFile(status, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", slurmHealthCheck)
	cmd.Env = []string{"SLURMD_NODENAME=n1", "RDMADIAG_HEALTHCHECK_CONF=" + os.DevNull, "TMPDIR=" + dir,
		"RDMADIAG=" + stub("rdmadiag", "cat "+status+"\nexit 2\n"),
		"SINFO=" + stub("sinfo", "echo 'idle|none'\n"),
		"SCONTROL=" + stub("scontrol", `for a in "$@"; do printf '%s\n' "$a"; done >`+filepath.Join(dir, "scontrol.args")+"\n")}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("health check: %v\n%s", err, out)
	}
	args, err := os.ReadFile(filepath.Join(dir, "scontrol.args"))
	if err != nil {
		t.Fatal(err)
	}
	reason := ""
	for _, a := range strings.Split(string(args), "\n") {
		if r, ok := strings.CutPrefix(a, "Reason="); ok {
			reason = r
		}
	}
	// Each cause led by its action, which a site's scripts read from the reason (sinfo -R).
	for _, want := range []string{"rdmadiag: [reseat-or-clean-cable] mlx5_1/1 is degraded to 1X width", "; [fix-configuration] mlx5_2/1 has link but is INIT"} {
		if !strings.Contains(reason, want) {
			t.Errorf("drain reason %q lacks %q", reason, want)
		}
	}
	if len(reason) > 200 {
		t.Errorf("drain reason is %d bytes", len(reason))
	}
}
