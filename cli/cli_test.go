package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

func decode(t *testing.T, out string) report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	return r
}

// findingsOnly drops what legitimately differs between two ways of reading the same data.
func findingsOnly(r report.Report) string {
	b, _ := json.MarshalIndent(struct {
		F []report.Finding
		S report.Summary
		D []string
	}{r.Findings, r.Summary, r.Host.Devices}, "", " ")
	return string(b)
}

// TestRoundTripRoot: record of a plain root, then check --snapshot, gives the report that check
// --root gives on that root (on every fixture with RDMADIAG_SLOW=1, make test-slow).
func TestRoundTripRoot(t *testing.T) {
	for _, s := range slowScenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			dir, ok, err := unpackedFixture(s.snapshot) // shared: check and record only read it
			if err != nil || !ok {
				t.Fatalf("%s: not unpacked (%v)", s.snapshot, err)
			}
			root := filepath.Join(dir, "root")
			direct, _, code1 := run(t, append([]string{"check", "--root", root, "--format", "json"}, s.args...)...)
			snap := filepath.Join(t.TempDir(), "again.tar.gz")
			if _, stderr, code := run(t, "record", "--root", root, "-o", snap); code != 0 {
				t.Fatalf("record: %d %s", code, stderr)
			}
			replayed, _, code2 := run(t, append([]string{"check", "--snapshot", snap, "--format", "json"}, s.args...)...)
			if code1 != code2 || findingsOnly(decode(t, direct)) != findingsOnly(decode(t, replayed)) {
				t.Errorf("check --root and check of its recording differ (exit %d vs %d):\n%s\n---\n%s", code1, code2, direct, replayed)
			}
		})
	}
}

// recordArgs are the record options a scenario's check options need: a check that reads raw
// contexts needs them recorded.
func recordArgs(checkArgs []string) []string {
	if slices.Contains(checkArgs, "--raw-contexts") {
		return []string{"--raw-contexts"}
	}
	return nil
}

// TestRoundTripSnapshot: re-recording a snapshot (netlink replies, kernel log, facts included)
// gives the same report. The recording is --minimal, without the allow-list walk: what the
// checks read while recording is all they need, which is what lets a new check go without any
// change to the recorder. On every fixture with RDMADIAG_SLOW=1 (make test-slow).
func TestRoundTripSnapshot(t *testing.T) {
	for _, s := range slowScenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			first, _, code1 := checkReport(t, s)
			again := filepath.Join(t.TempDir(), "again.tar.gz")
			if _, stderr, code := run(t, append([]string{"record", "--minimal", "--snapshot", s.snapshot, "-o", again}, recordArgs(s.args)...)...); code != 0 {
				t.Fatalf("record: %d %s", code, stderr)
			}
			second, _, code2 := run(t, append([]string{"check", "--snapshot", again, "--format", "json"}, s.args...)...)
			if code1 != code2 || findingsOnly(decode(t, first)) != findingsOnly(decode(t, second)) {
				t.Errorf("re-recorded snapshot gives another report (exit %d vs %d)", code1, code2)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"check", "--format", "yaml"},
		{"check", "--only", "gpu"},
		{"check", "--bogus"},
		{"bogus"},
		{"check", "--snapshot", "a", "--root", "b"},
		{"record"},
		{"check", "--wr-concurrency", "-1"},
	} {
		_, stderr, code := run(t, args...)
		if code != report.ExitUsage {
			t.Errorf("%v: exit %d, want %d (%s)", args, code, report.ExitUsage, stderr)
		}
		if stderr == "" {
			t.Errorf("%v: no message", args)
		}
	}
}

func TestBadSnapshotExit3(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.tar.gz")
	os.WriteFile(garbage, []byte("not an archive"), 0o644)
	for _, p := range []string{garbage, filepath.Join(dir, "missing.tar.gz"), dir} {
		out, stderr, code := run(t, "check", "--snapshot", p)
		if code != report.ExitUnknown {
			t.Errorf("%s: exit %d, want 3", p, code)
		}
		if out != "" || !strings.Contains(stderr, "not a usable rdmadiag snapshot") {
			t.Errorf("%s: want a clear message on stderr, got out=%q err=%q", p, out, stderr)
		}
	}
}

// TestLiveHostWithoutRDMA runs on the project's own machines, whose kernel has no RDMA: the
// verdict must say so plainly with the reason, and exit 2, not a stack trace.
func TestLiveHostWithoutRDMA(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this host has RDMA devices")
	}
	out, stderr, code := run(t, "check", "--no-probe", "--format", "json")
	if code != report.ExitCritical {
		t.Fatalf("exit %d (%s)", code, stderr)
	}
	r := decode(t, out)
	var devices *report.Finding
	for i := range r.Findings {
		if r.Findings[i].CheckID == "driver.devices" {
			devices = &r.Findings[i]
		}
	}
	if devices == nil || devices.Severity != report.Critical || !strings.Contains(devices.Summary, "/sys/class/infiniband does not exist") {
		t.Fatalf("no plain 'no RDMA device' finding: %+v", devices)
	}
	if len(devices.ExplainedBy) == 0 {
		t.Errorf("'no RDMA device' should be explained by its cause (kernel config or ib_core): %+v", r.Summary.RootCauses)
	}
}

func TestDemoFallsBackToEmbeddedSnapshot(t *testing.T) {
	if _, err := os.Stat("/sys/class/infiniband"); err == nil {
		t.Skip("this host has RDMA devices: demo checks the host")
	}
	out, stderr, code := run(t, "demo", "--format", "json")
	if !strings.Contains(stderr, "embedded demo snapshot") {
		t.Errorf("demo does not say it shows the embedded snapshot: %q", stderr)
	}
	r := decode(t, out)
	if r.Host.Source != "snapshot" || len(r.Host.Devices) == 0 || code != r.Summary.ExitCode {
		t.Errorf("demo report: source %s, devices %v, exit %d vs %d", r.Host.Source, r.Host.Devices, code, r.Summary.ExitCode)
	}
}

func TestListShowsEveryLayer(t *testing.T) {
	out, _, code := run(t, "list")
	if code != 0 {
		t.Fatal(code)
	}
	for _, id := range []string{"driver.devices", "driver.modules", "driver.kernel_config"} {
		if !strings.Contains(out, id) {
			t.Errorf("list lacks %s", id)
		}
	}
}

// A healthy ConnectX-6 Dx on a distribution's in-box mlx5_core must pass: NVIDIA documents no
// minimum firmware for the in-box driver, so the firmware check may not make the host "could not
// check" (exit 3), and nothing else in the fixture is wrong.
func TestInboxConnectX6DxIsHealthy(t *testing.T) {
	out, stderr, code := run(t, "check", "--snapshot", filepath.Join(fixturesDir, "fw-inbox-cx6dx", "snapshot.txtar"), "--format", "json")
	if code != report.ExitHealthy {
		t.Fatalf("exit %d, want 0 (%s)", code, stderr)
	}
	r := decode(t, out)
	if r.Summary.Verdict != "healthy" {
		t.Errorf("verdict %s", r.Summary.Verdict)
	}
	var fw *report.Finding
	for i := range r.Findings {
		f := &r.Findings[i]
		if f.Severity.Problem() {
			t.Errorf("problem finding %s %s: %s", f.CheckID, f.Severity, f.Summary)
		}
		if f.CheckID == "firmware.version" {
			fw = f
		}
	}
	if fw == nil || fw.Severity != report.OK || !strings.Contains(fw.Summary, "in-box") {
		t.Errorf("firmware.version: %+v", fw)
	}
}
