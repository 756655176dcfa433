package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	_ "github.com/rdmadiag/rdmadiag/checks/all" // the built-in ids a plugin may claim
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/snapshot"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// writePlugin writes an executable shell plugin into dir.
func writePlugin(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// pluginChecks discovers dir's plugins as checks of run on the port-ib-pkeys fixture, which it
// opens; run's Source, Root, Faults and Builtin are the fixture's and the built-in checks'.
func pluginChecks(t *testing.T, dir string, run Run) (*checks.Env, []checks.Check) {
	t.Helper()
	h, cleanup, err := snapshot.Open(checktest.Fixture(t, "port-ib-pkeys"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	ps, err := Discover(dir, os.Geteuid())
	if err != nil {
		t.Fatal(err)
	}
	run.Source, run.Root, run.Faults, run.Builtin = "snapshot", h.Root(), engine.DefaultFaults(), checks.Default.Has
	return checks.NewEnv(h, checks.Options{}), Checks(run, ps)
}

// runPlugins runs dir's plugins on the fixture as checks.Run runs any check.
func runPlugins(t *testing.T, dir string, timeout time.Duration) []engine.Finding {
	t.Helper()
	env, cs := pluginChecks(t, dir, Run{Version: "test", Timeout: timeout, Environ: []string{"RDMADIAG_SITE=x", "SECRET=y"}})
	return checks.Run(context.Background(), env, cs, 4)
}

const good = `cat >/dev/null
printf '%s\n' '{"schema": 1, "findings": [{"check": "bios", "subject": {"kind": "port", "name": "mlx5_0/1", "device": "mlx5_0"}, "severity": "warning", "summary": "SR-IOV off", "evidence": [{"name": "setting", "observed": "off", "expected": "on", "source": "bios"}], "remediation": "turn it on"}, {"severity": "ok", "summary": "host fine"}]}'`

// TestRunner: each kind of plugin behaviour becomes what docs/plugins.md says, and a failure is
// one unknown finding naming the file and what it did.
func TestRunner(t *testing.T) {
	cases := []struct {
		name, body string
		wantSev    report.Severity
		want       string // in the (first) finding's summary
		n          int    // findings
	}{
		{"good", good, report.Warning, "SR-IOV off", 2},
		{"empty", `echo '{"schema": 1, "findings": []}'`, report.OK, "reported nothing to judge", 1},
		{"hang", `sleep 600`, report.Unknown, "timed out after", 1},
		{"grandchild", `sleep 600 & echo '{"schema": 1, "findings": []}'; exec sleep 600`, report.Unknown, "timed out after", 1},
		{"segv", `echo dying >&2; kill -SEGV $$`, report.Unknown, "killed by signal 11 (SIGSEGV)", 1},
		{"exit3", `echo 'no pkeys.conf' >&2; exit 3`, report.Unknown, "exited 3: no pkeys.conf", 1},
		{"garbage", `echo '{"schema": 1, "findings": [}'`, report.Unknown, "printed invalid JSON at byte 28", 1},
		{"nothing", `true`, report.Unknown, "printed nothing", 1},
		{"binary", `printf '{"schema": 1, \377}'`, report.Unknown, "not valid UTF-8", 1},
		{"yes", `yes`, report.Unknown, "printed more than 1048576 bytes", 1},
		{"trailing", `echo '{"schema": 1, "findings": []} {}'`, report.Unknown, "more after the JSON document", 1},
		{"schema2", `echo '{"schema": 2, "findings": []}'`, report.Unknown, `"schema": 2`, 1},
		{"builtin", `echo '{"schema": 1, "findings": [{"check": "port.pkeys", "severity": "ok", "summary": "fine"}]}'`,
			report.Unknown, "claims the built-in check port.pkeys", 1},
		{"severity", `echo '{"schema": 1, "findings": [{"severity": "ok", "summary": "fine"}, {"severity": "fatal", "summary": "x"}]}'`,
			report.Unknown, `none of its 2 findings is kept: findings[1]: severity "fatal"`, 1},
		{"device", `echo '{"schema": 1, "findings": [{"subject": {"kind": "device", "name": "mlx5_9", "device": "mlx5_9"}, "severity": "critical", "summary": "x"}]}'`,
			report.Unknown, `subject device "mlx5_9" is not an RDMA device of this host`, 1},
		{"field", `echo '{"schema": 1, "findings": [{"severity": "ok", "summary": "x", "check_id": "port.state"}]}'`,
			report.Unknown, `unknown field "check_id"`, 1},
		{"environment", `cat >/dev/null; echo "{\"schema\": 1, \"findings\": [{\"severity\": \"ok\", \"summary\": \"$RDMADIAG_SOURCE $RDMADIAG_FACTS_SCHEMA $RDMADIAG_SITE ${SECRET:-none} $HOME $(pwd)\"}]}"`,
			report.OK, "snapshot 1 x none / /", 1},
		{"otherid", `echo '{"schema": 1, "findings": [{"check": "site.bios", "severity": "ok", "summary": "x"}]}'`,
			report.Unknown, `claims the check id "site.bios", which is not its own (plugin.otherid)`, 1},
		{"pci", `echo '{"schema": 1, "findings": [{"subject": {"kind": "pci", "name": "nic", "pci": "3b:00.0"}, "severity": "ok", "summary": "x"}]}'`,
			report.Unknown, `subject pci "3b:00.0": want a PCI address`, 1},
		{"action", `echo '{"schema": 1, "findings": [{"severity": "warning", "summary": "x", "action": "reboot-now"}]}'`,
			report.Unknown, `action "reboot-now" is not one of the report's actions`, 1},
		{"twice", `echo '{"schema": 1, "findings": [{"severity": "critical", "summary": "x", "severity": "ok"}]}'`,
			report.Unknown, `the key "severity" given twice in one object`, 1},
		{"case", `echo '{"schema": 1, "findings": [{"severity": "critical", "summary": "x", "Severity": "ok"}]}'`,
			report.Unknown, `the key "Severity": the protocol's keys are lowercase`, 1},
		{"noschema", `echo '{"findings": []}'`, report.Unknown, `no "schema"`, 1},
		{"nofindings", `echo '{"schema": 1}'`, report.Unknown, `no "findings" list`, 1},
		{"many", `printf '{"schema": 1, "findings": ['; i=0; while [ $i -lt 256 ]; do printf '{"severity": "ok", "summary": "x"},'; i=$((i+1)); done; echo '{"severity": "ok", "summary": "x"}]}'`,
			report.Unknown, "257 findings, more than 256", 1},
		{"lies", `printf '{"schema": 1, "findings": ['; i=0; while [ $i -lt 9 ]; do printf '{"severity": "bad", "summary": "x"},'; i=$((i+1)); done; echo '{"severity": "bad", "summary": "x"}]}'`,
			report.Unknown, `none of its 10 findings is kept: findings[0]: severity "bad"`, 1},
		{"facts", `grep -q '"devices":\[{"name":"mlx5_0","driver":"mlx5_core","pci":"0000:3b:00.0"' && echo '{"schema": 1, "findings": [{"severity": "ok", "summary": "facts"}]}'`,
			report.OK, "facts", 1},
	}
	dir := t.TempDir()
	for _, c := range cases {
		writePlugin(t, dir, c.name+".sh", c.body)
	}
	start := time.Now()
	fs := runPlugins(t, dir, 5*time.Second)
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the run took %s: a plugin held it beyond its deadline", d)
	}
	for _, c := range cases {
		id := "plugin." + c.name
		var got []engine.Finding
		for _, f := range fs {
			if f.CheckID == id {
				got = append(got, f)
			}
		}
		if len(got) != c.n {
			t.Errorf("%s: %d findings, want %d: %+v", c.name, len(got), c.n, got)
			continue
		}
		f := got[0]
		if f.Severity != c.wantSev || !strings.Contains(f.Summary, c.want) || f.Layer != report.SiteLayer {
			t.Errorf("%s: %s %s %q, want %s in layer site with %q", c.name, f.Layer, f.Severity, f.Summary, c.wantSev, c.want)
		}
		if f.Severity == report.Unknown && !strings.Contains(f.Summary, filepath.Join(dir, c.name+".sh")) {
			t.Errorf("%s: the summary does not name the file: %q", c.name, f.Summary)
		}
	}
	// Ten lies: eight are quoted, and the rest counted.
	checktest.WantEvidence(t, checktest.One(t, fs, "plugin.lies", ""), "rule broken", "and 2 more")
	g := checktest.One(t, fs, "plugin.good", "mlx5_0/1")
	if g.Key != "mlx5_0/1/bios" || g.Fault != Fault || g.Subject.Device != "mlx5_0" || g.Remediation != "turn it on" {
		t.Errorf("good: %+v", g)
	}
	checktest.WantEvidenceIs(t, g, "setting", "off")
}

// TestGrandchildOutsideGroup: a plugin whose child left its process group (setsid) and holds
// standard output does not hold the run: its pipes are closed WaitDelay after it exited.
func TestGrandchildOutsideGroup(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("no setsid")
	}
	dir := t.TempDir()
	pidfile := filepath.Join(t.TempDir(), "pid")
	writePlugin(t, dir, "escape.sh", setsid+` sh -c 'echo $$ >`+pidfile+`; exec sleep 600' &
while [ ! -s `+pidfile+` ]; do sleep 0.01; done
echo '{"schema": 1, "findings": []}'`)
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	fs := runPlugins(t, dir, time.Minute)
	f := checktest.One(t, fs, "plugin.escape", "")
	if f.Severity != report.Unknown || !strings.Contains(f.Summary, "left a process holding its standard output") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// TestInsecure: files and directories others may change are refused without being run, as is
// a symlink leading to such a file out of the directory; non-plugins are left out silently.
func TestInsecure(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	body := "touch " + ran + "\necho '{\"schema\": 1, \"findings\": []}'"
	writePlugin(t, dir, "open.sh", body)
	os.Chmod(filepath.Join(dir, "open.sh"), 0o777)
	writePlugin(t, dir, "group.sh", body)
	os.Chmod(filepath.Join(dir, "group.sh"), 0o775)
	outside := filepath.Join(t.TempDir(), "shared")
	os.Mkdir(outside, 0o777)
	os.Chmod(outside, 0o777)
	writePlugin(t, outside, "target.sh", body)
	os.Symlink(filepath.Join(outside, "target.sh"), filepath.Join(dir, "linked.sh"))
	for _, n := range []string{"README", ".hidden.sh", "old.sh~", "x.sh.dpkg-old", "y.sh.rpmnew", "z.rpmsave"} {
		writePlugin(t, dir, n, body)
	}
	os.WriteFile(filepath.Join(dir, "notexec.sh"), []byte(body), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	writePlugin(t, dir, "fine.sh", "cat >/dev/null; echo '{\"schema\": 1, \"findings\": []}'")

	fs := runPlugins(t, dir, time.Minute)
	if _, err := os.Stat(ran); err == nil {
		t.Error("a refused plugin ran")
	}
	ids := map[string]engine.Finding{}
	for _, f := range fs {
		ids[f.CheckID] = f
	}
	for id, want := range map[string]string{"plugin.open": "is world-writable (mode 0777)", "plugin.group": "is group-writable (mode 0775)",
		"plugin.linked": outside + " is world-writable"} {
		f, ok := ids[id]
		if !ok || f.Severity != report.Unknown || !strings.Contains(f.Summary, "was not run") || !strings.Contains(f.Summary, want) {
			t.Errorf("%s: %+v, want unknown with %q", id, f.Finding, want)
		}
	}
	if f := ids["plugin.fine"]; f.Severity != report.OK {
		t.Errorf("fine: %+v", f.Finding)
	}
	if len(ids) != 4 {
		t.Errorf("%d checks, want 4 (the others are not plugins): %v", len(ids), ids)
	}

	// A directory others may write to runs none of its files.
	os.Chmod(dir, 0o777)
	fs = runPlugins(t, dir, time.Minute)
	f := checktest.One(t, fs, "plugin.fine", "")
	if f.Severity != report.Unknown || !strings.Contains(f.Summary, dir+" is world-writable") {
		t.Errorf("in a world-writable directory: %+v", f.Finding)
	}
	os.Chmod(dir, 0o700)
}

// TestTooMany: past MaxPlugins, files are not read or run; one check says how many and where.
func TestTooMany(t *testing.T) {
	dir := t.TempDir()
	for i := range MaxPlugins + 3 {
		writePlugin(t, dir, fmt.Sprintf("p%03d.sh", i), `echo '{"schema": 1, "findings": []}'`)
	}
	ps, err := Discover(dir, os.Geteuid())
	if err != nil || len(ps) != MaxPlugins+1 {
		t.Fatalf("%d plugins, %v", len(ps), err)
	}
	last := ps[MaxPlugins]
	if ps[MaxPlugins-1].ID != fmt.Sprintf("plugin.p%03d", MaxPlugins-1) || last.ID != ExcessID || last.Refused == nil ||
		!strings.Contains(last.Refused.Error(), "3 more executable files than the 64") {
		t.Errorf("%+v", last)
	}
}

func TestIDOf(t *testing.T) {
	for in, want := range map[string]string{"ib-pkey.sh": "plugin.ib_pkey", "Rail-Names.py": "plugin.rail_names",
		"bios": "plugin.bios", "a..b.c": "plugin.a_b", "--x--.sh": "plugin.x", "été.sh": "plugin.t",
		"v1.2.3": "plugin.v1_2"} {
		if got := IDOf(in); got != want {
			t.Errorf("IDOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := IDOf("ßß.sh"); !strings.HasPrefix(got, "plugin.file_") {
		t.Errorf("IDOf(ßß.sh) = %q", got)
	}
}

// TestSameID: two files with one id: the first (by name) runs, the second says why it does not.
func TestSameID(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "pkey.py", `echo '{"schema": 1, "findings": []}'`)
	writePlugin(t, dir, "pkey.sh", `echo '{"schema": 1, "findings": []}'`)
	ps, err := Discover(dir, os.Geteuid())
	if err != nil || len(ps) != 2 {
		t.Fatal(ps, err)
	}
	if ps[0].ID != "plugin.pkey" || ps[0].Refused != nil || ps[1].ID != "plugin.pkey_2" || ps[1].Refused == nil ||
		!strings.Contains(ps[1].Refused.Error(), "already that of "+filepath.Join(dir, "pkey.py")) {
		t.Errorf("%+v", ps)
	}
}

func TestHeader(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Header
		err  string
	}{
		{"#!/bin/sh\n# rdmadiag: layer=port description=\"the site's \\\"P_Key\\\"\" fault=port-link\n", Header{"port", `the site's "P_Key"`, "port-link"}, ""},
		{"#!/bin/sh\necho hi\n", Header{}, ""},
		{"#rdmadiag: layer=site\n", Header{Layer: "site"}, ""},
		{"# rdmadiag: layer=gpu\n", Header{}, `layer "gpu"`},
		{"# rdmadiag: colour=red\n", Header{}, `unknown key "colour"`},
		{"# rdmadiag: description=\"open\n", Header{}, "unterminated"},
		{"# rdmadiag: layer=port layer=qp\n", Header{}, "given twice"},
		{"# rdmadiag: nonsense\n", Header{}, "want key=value"},
	} {
		h, err := ParseHeader([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || h != c.want {
			t.Errorf("%q: %+v %v, want %+v", c.in, h, err, c.want)
		}
	}
	// A header beyond the first 4 KiB is not read.
	h, err := ParseHeader(append([]byte(strings.Repeat("#\n", HeaderBytes/2)), "# rdmadiag: layer=port\n"...)[:HeaderBytes])
	if err != nil || h.Layer != "" {
		t.Errorf("late header: %+v %v", h, err)
	}
}

// TestHeaderPlaces: the header places the plugin's check and its findings, and a fault row the
// table lacks refuses the plugin.
func TestHeaderPlaces(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "placed.sh", "# rdmadiag: layer=port description=\"pkeys\" fault=port-link\necho '{\"schema\": 1, \"findings\": [{\"severity\": \"warning\", \"summary\": \"x\"}, {\"severity\": \"warning\", \"summary\": \"y\", \"fault\": \"no-such-row\"}]}'")
	writePlugin(t, dir, "badrow.sh", "# rdmadiag: fault=no-such-row\necho '{\"schema\": 1, \"findings\": []}'")
	fs := runPlugins(t, dir, time.Minute)
	for _, f := range fs {
		switch {
		case f.CheckID == "plugin.placed" && (f.Layer != "port" || f.Fault != "port-link"):
			t.Errorf("placed: %+v", f.Finding)
		case f.CheckID == "plugin.placed" && f.Summary == "y":
			checktest.WantEvidence(t, f, "fault row", "no-such-row (not in the fault table)")
		case f.CheckID == "plugin.badrow" && (f.Severity != report.Unknown || !strings.Contains(f.Summary, `fault "no-such-row" is not a row`)):
			t.Errorf("badrow: %+v", f.Finding)
		}
	}
}

// TestRunDeadline: the run's own end (--timeout, a signal) kills a plugin still running, well
// before its own deadline, and the check is reported cut short like a built-in one.
func TestRunDeadline(t *testing.T) {
	dir := t.TempDir()
	writePlugin(t, dir, "slow.sh", "sleep 600")
	env, cs := pluginChecks(t, dir, Run{Timeout: time.Hour})
	ctx, cancel := context.WithTimeoutCause(context.Background(), 300*time.Millisecond, errors.New("--timeout 300ms reached"))
	defer cancel()
	start := time.Now()
	fs := checks.Run(ctx, env, cs, 4)
	if d := time.Since(start); d > time.Minute {
		t.Errorf("Run returned after %s", d)
	}
	f := checktest.One(t, fs, "plugin.slow", "")
	if f.Severity != report.Unknown || !strings.Contains(f.Summary, "--timeout 300ms reached") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// TestNotStarted: a file the kernel cannot execute (its interpreter is missing) is one unknown
// finding saying it could not be started.
func TestNotStarted(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gone.sh"), []byte("#!/nonexistent/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := checktest.One(t, runPlugins(t, dir, time.Minute), "plugin.gone", "")
	if f.Severity != report.Unknown || !strings.Contains(f.Summary, "could not be started") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
}

// TestOwnedByAnother: a plugin owned by a user other than root and the one running rdmadiag
// is refused without being run, whatever its mode.
func TestOwnedByAnother(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file to another user")
	}
	dir := t.TempDir()
	ran := filepath.Join(t.TempDir(), "ran")
	p := writePlugin(t, dir, "theirs.sh", "touch "+ran+"; echo '{\"schema\": 1, \"findings\": []}'")
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	f := checktest.One(t, runPlugins(t, dir, time.Minute), "plugin.theirs", "")
	if f.Severity != report.Unknown || !strings.Contains(f.Summary, "is owned by uid 65534, neither root nor the user running rdmadiag") {
		t.Errorf("%s %q", f.Severity, f.Summary)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the refused plugin ran")
	}
}
