// Package systemd holds the service and timer that write rdmadiag's node_exporter textfile. The
// tests assert what the service must keep (the reads rdmadiag needs) and drop (everything else),
// and run systemd-analyze on both units where it is installed.
package systemd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	service = "rdmadiag-textfile.service"
	timer   = "rdmadiag-textfile.timer"
	binary  = "/usr/local/bin/rdmadiag"
	// textfileDir is the default --collector.textfile.directory of Debian's and Ubuntu's
	// prometheus-node-exporter.
	textfileDir = "/var/lib/prometheus/node-exporter"
)

// unit is a unit file: section -> key -> values in order (a key may repeat).
type unit map[string]map[string][]string

func parse(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case section != "" && strings.Contains(line, "="):
			k, v, _ := strings.Cut(line, "=")
			u[section][k] = append(u[section][k], v)
		default:
			t.Fatalf("%s:%d: %q is neither a section, a key nor a comment", path, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one returns the single value of key, failing when it is absent or set twice.
func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	v := u[section][key]
	if len(v) != 1 {
		t.Errorf("[%s] %s= is set %d times, want once", section, key, len(v))
		return ""
	}
	return v[0]
}

func TestServiceCommand(t *testing.T) {
	u := parse(t, service)
	if got := u.one(t, "Service", "Type"); got != "oneshot" {
		t.Errorf("Type=%s, want oneshot", got)
	}
	args := strings.Fields(u.one(t, "Service", "ExecStart"))
	if len(args) < 2 || args[0] != binary || args[1] != "check" {
		t.Fatalf("ExecStart=%q, want %s check ...", args, binary)
	}
	flag := func(name string) string {
		i := slices.Index(args, name)
		if i < 0 || i+1 >= len(args) {
			return ""
		}
		return args[i+1]
	}
	if !slices.Contains(args, "--no-probe") {
		t.Error("ExecStart runs the verbs probes every 5 minutes")
	}
	if f := flag("--format"); f != "prometheus" {
		t.Errorf("--format %q, want prometheus", f)
	}
	out := flag("--output")
	if filepath.Dir(out) != textfileDir || filepath.Ext(out) != ".prom" {
		t.Errorf("--output %q, want a *.prom file in %s", out, textfileDir)
	}
	// The verdicts are the file's content; a usage error must still fail the unit.
	if got := strings.Fields(u.one(t, "Service", "SuccessExitStatus")); !slices.Equal(got, []string{"1", "2", "3"}) {
		t.Errorf("SuccessExitStatus=%q, want 1 2 3", got)
	}
	if got := u.one(t, "Service", "UMask"); got != "0022" {
		t.Errorf("UMask=%s: node_exporter, running as its own user, must read the file", got)
	}
	if d, err := time.ParseDuration(u.one(t, "Service", "TimeoutStartSec")); err != nil || d <= 2*time.Minute {
		t.Errorf("TimeoutStartSec must outlast rdmadiag's own 2-minute --timeout: %v %v", d, err)
	}
}

func TestServiceHardening(t *testing.T) {
	u := parse(t, service)
	s := u["Service"]
	caps := strings.Fields(u.one(t, "Service", "CapabilityBoundingSet"))
	slices.Sort(caps)
	if !slices.Equal(caps, []string{"CAP_NET_ADMIN", "CAP_SYSLOG"}) {
		t.Errorf("CapabilityBoundingSet=%v, want CAP_NET_ADMIN (devlink health diagnose) and CAP_SYSLOG (/dev/kmsg) only", caps)
	}
	for key, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ReadWritePaths": textfileDir,
		"PrivateTmp": "yes", "ProtectHome": "yes", "ProtectKernelTunables": "yes", "DevicePolicy": "closed",
		"IPAddressDeny": "any", "LimitMEMLOCK": "infinity",
	} {
		if got := u.one(t, "Service", key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	devices := s["DeviceAllow"]
	for _, want := range []string{"/dev/kmsg r", "char-infiniband_verbs rw"} {
		if !slices.Contains(devices, want) {
			t.Errorf("DeviceAllow=%q lacks %q", devices, want)
		}
	}
	if len(devices) != 2 {
		t.Errorf("DeviceAllow=%q: only the kernel log and the uverbs nodes (issm would set the port's IsSM bit)", devices)
	}
	families := strings.Fields(u.one(t, "Service", "RestrictAddressFamilies"))
	if !slices.Contains(families, "AF_NETLINK") {
		t.Errorf("RestrictAddressFamilies=%v forbids RDMA netlink and devlink", families)
	}
	// Each of these would hide something rdmadiag reads and turn findings into unknowns.
	for key, why := range map[string]string{
		"ProtectKernelLogs": "/dev/kmsg", "PrivateDevices": "/dev/infiniband and /dev/kmsg",
		"PrivateNetwork": "the host's netdevs, devlink and RDMA netlink port names", "ProtectProc": "QP owners' /proc/<pid>/comm",
		"ProcSubset": "/proc/modules and /proc/sys", "PrivateUsers": "capabilities in the initial user namespace",
		"DynamicUser": "root's files", "User": "root's files",
	} {
		if v, ok := s[key]; ok && !slices.Equal(v, []string{"no"}) {
			t.Errorf("%s=%v hides %s", key, v, why)
		}
	}
}

func TestTimer(t *testing.T) {
	u := parse(t, timer)
	if got := u.one(t, "Timer", "OnCalendar"); got != "*:0/5" {
		t.Errorf("OnCalendar=%s, want every 5 minutes (*:0/5)", got)
	}
	d, err := time.ParseDuration(u.one(t, "Timer", "RandomizedDelaySec"))
	if err != nil || d <= 0 || d >= 5*time.Minute {
		t.Errorf("RandomizedDelaySec=%v (%v): want a spread within the 5-minute interval", d, err)
	}
	for key, want := range map[string]string{"Persistent": "yes", "FixedRandomDelay": "yes"} {
		if got := u.one(t, "Timer", key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	if unitKey := u["Timer"]["Unit"]; unitKey != nil && !slices.Equal(unitKey, []string{service}) {
		t.Errorf("Unit=%v, want %s", unitKey, service)
	}
	if got := u.one(t, "Install", "WantedBy"); got != "timers.target" {
		t.Errorf("WantedBy=%s, want timers.target", got)
	}
}

// TestSystemdAnalyze has systemd itself read both units: `verify` warns about unknown keys and
// invalid values (and exits 0 for them, so any output fails here); `security --offline` scores
// the service's sandbox. ExecStart points at a stand-in, because verify wants it executable.
func TestSystemdAnalyze(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "rdmadiag")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{service, timer} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(strings.ReplaceAll(string(b), binary, stub)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(sa, "verify", "--man=no", filepath.Join(dir, service), filepath.Join(dir, timer)).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Exposure is printed from 0.0 (locked down) to 10.0 (unprotected) and --threshold counts it
	// in tenths; the service measures 2.7 with systemd 252.
	out, err = exec.Command(sa, "security", "--offline=yes", "--threshold=35", filepath.Join(dir, service)).CombinedOutput()
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 3.5 or an error: %v\n%s", err, out)
	}
}
