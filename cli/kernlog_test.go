package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
)

// labRoot unpacks the healthy lab recording (rxe0) and returns its root/ tree, a plain
// directory as --root reads it: no kmsg, no netlink answers.
func labRoot(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := snapshot.UnpackFile(filepath.Join(fixturesDir, "healthy", "snapshot.txtar"), dir); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "root")
}

func writeTreeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kernLog is a syslog kern.log around a real mlx5 command-timeout message, the one posted in
// openucx/ucx issue #7738 (https://github.com/openucx/ucx/issues/7738, node b1360's dmesg). The
// syslog prefix (time, host name) and the surrounding lines are made up; the message is not.
const kernLog = "" +
	"Dec  1 08:00:00 node17 kernel: [    0.000000] Linux version 6.1.0-56-amd64 (debian-kernel@lists.debian.org)\n" +
	"Dec  1 08:00:03 node17 systemd[1]: Starting Journal Service...\n" +
	"Dec  1 11:58:00 node17 kernel: [14280.445220] mlx5_core 0000:61:00.0: wait_func_handle_exec_timeout:1104:(pid 141183): cmd[22]: CREATE_DCT(0x710) No done completion\n"

// A --root tree with a kern.log: its lines are judged like /dev/kmsg records, the evidence
// names the file, and the report says where the log came from. Recording the tree keeps both.
func TestRootKernelLogFile(t *testing.T) {
	root := labRoot(t)
	writeTreeFile(t, filepath.Join(root, "var/log/kern.log"), kernLog)
	out, _, code := run(t, "check", "--root", root, "--format", "json")
	r := decode(t, out)
	if r.Host.KernelLog != "/var/log/kern.log" || code != report.ExitCritical {
		t.Fatalf("kernel_log %q, exit %d", r.Host.KernelLog, code)
	}
	var timeout *report.Finding
	for i, f := range r.Findings {
		if f.CheckID == "driver.kernel_log" && f.Subject.Name == "0000:61:00.0" {
			timeout = &r.Findings[i]
		}
	}
	if timeout == nil || timeout.Severity != report.Critical {
		t.Fatalf("no critical command-timeout finding: %+v", r.Findings)
	}
	var cited bool
	for _, e := range timeout.Evidence {
		if e.Name == "first" && e.Source == "/var/log/kern.log" && strings.Contains(e.Observed, "[Dec  1 11:58:00 boot+14280.445220s] mlx5_core 0000:61:00.0:") &&
			strings.Contains(e.Observed, "CREATE_DCT(0x710) No done completion") {
			cited = true
		}
	}
	if !cited {
		t.Errorf("evidence does not quote the line from the file: %+v", timeout.Evidence)
	}

	snap := filepath.Join(t.TempDir(), "tree.tar.gz")
	if _, stderr, code := run(t, "record", "--root", root, "-o", snap); code != 0 {
		t.Fatalf("record: %d %s", code, stderr)
	}
	replayed, _, code2 := run(t, "check", "--snapshot", snap, "--format", "json")
	rr := decode(t, replayed)
	if code2 != code || findingsOnly(rr) != findingsOnly(r) || rr.Host.KernelLog != "kmsg (recorded from /var/log/kern.log)" {
		t.Errorf("the recording of the tree judges otherwise (exit %d vs %d, kernel_log %q)", code2, code, rr.Host.KernelLog)
	}
}

// A kern.log larger than a read takes is judged by its newest part, and every judgement drawn
// from it says that only that part was read; it used to make the kernel log unknown.
func TestRootKernelLogTooLarge(t *testing.T) {
	root := labRoot(t)
	var b strings.Builder
	for i := 0; b.Len() < 20<<20; i++ {
		fmt.Fprintf(&b, "Nov 30 08:00:00 node17 kernel: [%6d.000000] eth0: an older line of the log, number %d\n", i/100, i)
	}
	b.WriteString(kernLog)
	writeTreeFile(t, filepath.Join(root, "var/log/kern.log"), b.String())
	out, _, code := run(t, "check", "--root", root, "--format", "json", "--only", "driver.kernel_log")
	r := decode(t, out)
	if code != report.ExitCritical {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, f := range r.Findings {
		said := false
		for _, e := range f.Evidence {
			said = said || e.Name == "kernel log read" && strings.HasPrefix(e.Observed, "only the last 8.0 MiB of the 20.0 MiB of /var/log/kern.log were read")
		}
		if !said {
			t.Errorf("%s %s (%s) does not say which part of the log it judged: %+v", f.CheckID, f.Subject.Name, f.Severity, f.Evidence)
		}
	}
}

// A --root tree without a kernel log is a limit of the input, not a failure: the kernel log's
// parts are skipped with a source limit and a healthy tree stays healthy.
func TestRootWithoutKernelLog(t *testing.T) {
	root := labRoot(t)
	// driver.user_verbs judges /dev nodes and libraries the recorder does not copy; it has
	// nothing to do with the kernel log.
	out, _, code := run(t, "check", "--root", root, "--format", "json", "--skip", "driver.user_verbs")
	r := decode(t, out)
	if code != report.ExitHealthy || r.Summary.Counts["unknown"] != 0 || r.Host.KernelLog != "" {
		t.Fatalf("exit %d, %d unknown, kernel_log %q: %s", code, r.Summary.Counts["unknown"], r.Host.KernelLog, r.Summary.Line)
	}
	n := 0
	for _, f := range r.Findings {
		if f.Subject.Name != "kernel log" {
			continue
		}
		n++
		if f.Severity != report.Skipped || f.Limit == nil || f.Limit.Kind != report.LimitSource || !strings.Contains(f.Limit.Lift, "var/log/kern.log") {
			t.Errorf("%s: %s %+v", f.CheckID, f.Severity, f.Limit)
		}
	}
	if n < 2 {
		t.Errorf("want the kernel log part of driver.kernel_log and cq.errors skipped, got %d finding(s)", n)
	}
}
