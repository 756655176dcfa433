package checks_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// kernelLogChecks are the checks that read the kernel log; the first five judge (part of)
// their verdict from it, the last two only quote it as evidence.
var kernelLogChecks = []string{"driver.kernel_log", "cq.errors", "pcie.link", "pcie.aer", "pcie.dma", "driver.registration", "driver.modules"}

// fixtureHost returns a host on the tree of a fixture with another kernel log source.
func fixtureHost(t *testing.T, fixture string, kind host.Kind, klog func() ([]byte, error)) *host.Host {
	t.Helper()
	h, cleanup, err := snapshot.Open(checktest.Fixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	h2, err := host.New(host.Options{Root: h.Root(), Kind: kind, KernelLog: klog})
	if err != nil {
		t.Fatal(err)
	}
	return h2
}

func runChecks(t *testing.T, h *host.Host, ids ...string) (*checks.Env, []engine.Finding) {
	t.Helper()
	cs, err := checks.Default.Select(ids, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, checks.Options{})
	return env, checks.Run(context.Background(), env, cs, 4)
}

// A live ring buffer changes between two reads. Every check of a run must judge the same
// records: the host's kernel log is read once, whatever the number of checks that use it.
func TestKernelLogReadOncePerRun(t *testing.T) {
	// Each read gives another ring buffer: the first an overrun on CQN 0xaaa of mlx5_1
	// (0000:5e:00.0 in the fixture), later ones an overrun on CQN 0xbbb.
	var calls atomic.Int32
	klog := func() ([]byte, error) {
		cqn := "0xbbb"
		if calls.Add(1) == 1 {
			cqn = "0xaaa"
		}
		return []byte("3,1,86400123456,-;mlx5_core 0000:5e:00.0: cq_err_event_notifier:735:(pid 0): CQ error on CQN " + cqn + ", syndrome 0x1\n" +
			" SUBSYSTEM=pci\n DEVICE=+pci:0000:5e:00.0\n"), nil
	}
	h := fixtureHost(t, "drv-mlx5-health", host.KindLive, klog)
	env, fs := runChecks(t, h, kernelLogChecks...)
	if n := calls.Load(); n != 1 {
		t.Errorf("the kernel log was read %d times in one run, want once", n)
	}
	seen := map[string]bool{}
	for _, f := range fs {
		text := f.Summary
		for _, e := range f.Evidence {
			text += " " + e.Observed
		}
		if strings.Contains(text, "0xbbb") {
			t.Errorf("%s saw another read of the log: %s", f.CheckID, text)
		}
		if strings.Contains(text, "0xaaa") {
			seen[f.CheckID] = true
		}
	}
	// One line, one judge: the CQ error is cq.errors' (checks.JudgeOf), never also driver.kernel_log's.
	if !seen["cq.errors"] || len(seen) != 1 {
		t.Errorf("the one overrun must be reported by cq.errors alone; reported by %v", seen)
	}
	l1, err1 := env.KernelLog()
	l2, err2 := env.KernelLog()
	if err1 != nil || err2 != nil || l1 != l2 || env.KernelLogSource() != "/dev/kmsg" || l1.Cite != "kmsg" {
		t.Errorf("KernelLog: %p %p %v %v, source %q", l1, l2, err1, err2, env.KernelLogSource())
	}
}

// Run as a user on a kernel with kernel.dmesg_restrict=1, the kernel log's part of each check is
// skipped with a privilege limit, not unknown, and the rest of each check is still judged.
func TestKernelLogRefused(t *testing.T) {
	eperm := func() ([]byte, error) { return nil, &fs.PathError{Op: "open", Path: "/dev/kmsg", Err: syscall.EPERM} }
	h := fixtureHost(t, "drv-mlx5-health", host.KindLive, eperm)
	if err := os.WriteFile(filepath.Join(h.Root(), "proc/sys/kernel/dmesg_restrict"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, fs := runChecks(t, h, kernelLogChecks...)
	for _, id := range kernelLogChecks[:5] {
		f := checktest.One(t, fs, id, "kernel log")
		checktest.WantSeverity(t, f, report.Skipped)
		if f.Limit == nil || f.Limit.Kind != report.LimitPrivilege || !strings.Contains(f.Limit.Lift, "CAP_SYSLOG") ||
			!strings.Contains(f.Limit.Lift, "dmesg_restrict=0") || !strings.Contains(f.Summary, "kernel.dmesg_restrict=1") {
			t.Errorf("%s: %+v limit %+v", id, f, f.Limit)
		}
	}
	for _, f := range fs {
		if f.Severity == report.Unknown {
			t.Errorf("unknown finding: %s %s: %s", f.CheckID, f.Subject.Name, f.Summary)
		}
	}
	// pcie.link still judges the link from sysfs, and says the kernel's own report is missing.
	link := checktest.One(t, fs, "pcie.link", "0000:3b:00.0")
	if link.Severity == report.Skipped || link.Severity == report.Unknown {
		t.Errorf("pcie.link dropped its sysfs judgement: %s", link.Summary)
	}
	checktest.WantEvidence(t, link, "kernel log", "privilege limit")
	if env.KernelLogSource() != "" {
		t.Errorf("no log was read, yet the source is %q", env.KernelLogSource())
	}
}

// A log that fails to read (not a limit of the run) leaves its part unknown.
func TestKernelLogFailureIsUnknown(t *testing.T) {
	eio := func() ([]byte, error) { return nil, &fs.PathError{Op: "read", Path: "/dev/kmsg", Err: syscall.EIO} }
	_, fs := runChecks(t, fixtureHost(t, "drv-mlx5-health", host.KindLive, eio), "driver.kernel_log", "cq.errors")
	for _, id := range []string{"driver.kernel_log", "cq.errors"} {
		f := checktest.One(t, fs, id, "kernel log")
		checktest.WantSeverity(t, f, report.Unknown)
		if f.Limit != nil || !strings.Contains(f.Summary, "input/output error") {
			t.Errorf("%s: %+v", id, f)
		}
	}
}
