package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const watchService = "rdmadiag-watch.service"

// The watch service is a notify service with a watchdog, keeps its state where watch writes
// it, and is sandboxed like the textfile service.
func TestWatchService(t *testing.T) {
	u := parse(t, watchService)
	for key, want := range map[string]string{
		"Type": "notify", "NotifyAccess": "main", "WatchdogSec": "30", "Restart": "on-failure",
		"StateDirectory": "rdmadiag", "NoNewPrivileges": "yes", "ProtectSystem": "strict", "DevicePolicy": "closed",
		"IPAddressDeny": "any", "IPAddressAllow": "localhost",
	} {
		if got := u.one(t, "Service", key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	args := strings.Fields(u.one(t, "Service", "ExecStart"))
	if len(args) < 2 || args[0] != binary || args[1] != "watch" {
		t.Fatalf("ExecStart=%v: want %s watch", args, binary)
	}
	if i := slices.Index(args, "--state-dir"); i < 0 || i+1 >= len(args) || args[i+1] != "/var/lib/rdmadiag" {
		t.Errorf("ExecStart=%v: --state-dir must be StateDirectory= (/var/lib/rdmadiag), the one writable place", args)
	}
	if i := slices.Index(args, "--listen"); i < 0 || !strings.HasPrefix(args[i+1], "127.0.0.1:") {
		t.Errorf("ExecStart=%v: --listen must be on localhost, as IPAddressAllow= is", args)
	}
	if d, err := time.ParseDuration(u.one(t, "Service", "TimeoutStopSec") + "s"); err != nil || d < 2*time.Second {
		t.Errorf("TimeoutStopSec=%v: watch stops within 1 s of SIGTERM; leave it room", d)
	}
	caps := strings.Fields(u.one(t, "Service", "CapabilityBoundingSet"))
	slices.Sort(caps)
	if !slices.Equal(caps, []string{"CAP_NET_ADMIN", "CAP_SYSLOG"}) {
		t.Errorf("CapabilityBoundingSet=%v", caps)
	}
	if !slices.Contains(strings.Fields(u.one(t, "Service", "RestrictAddressFamilies")), "AF_UNIX") {
		t.Error("RestrictAddressFamilies forbids AF_UNIX: sd_notify would fail and the watchdog kill the service")
	}
	if got := u.one(t, "Install", "WantedBy"); got != "multi-user.target" {
		t.Errorf("WantedBy=%s", got)
	}
}

func TestWatchServiceSystemdAnalyze(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "rdmadiag")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(watchService)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, watchService)
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), binary, stub)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sa, "verify", "--man=no", p).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	out, err = exec.Command(sa, "security", "--offline=yes", "--threshold=35", p).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 3.5 or an error: %v\n%s", err, out)
	}
}
