// Package packaging builds rdmadiag's .deb and .rpm with nfpm (`make package`). Its test, run by
// `make test-package` on the packages just built, installs the .deb into scratch roots, unpacks
// the .rpm, and runs the installed binary from them: a package that lacks a file, names the
// binary where it is not, or holds a binary that does not run fails here.
package packaging

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rpmutils "github.com/sassoftware/go-rpmutils"
)

// pkgs are the inputs `make test-package` passes: the directory holding the packages, the tree
// `make install` staged for them, and the package version.
type pkgs struct {
	deb, rpm, stage, version string
}

func inputs(t *testing.T) pkgs {
	t.Helper()
	dir, stage, version := os.Getenv("RDMADIAG_PKGDIR"), os.Getenv("RDMADIAG_PKGROOT"), os.Getenv("RDMADIAG_PKG_VERSION")
	if dir == "" || stage == "" || version == "" {
		t.Skip("run `make test-package`: it builds the packages and names them in RDMADIAG_PKGDIR, RDMADIAG_PKGROOT, RDMADIAG_PKG_VERSION")
	}
	one := func(glob string) string {
		m, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil || len(m) != 1 {
			t.Fatalf("want one %s in %s, found %v (%v)", glob, dir, m, err)
		}
		return m[0]
	}
	return pkgs{deb: one("rdmadiag_*.deb"), rpm: one("rdmadiag-*.rpm"), stage: stage, version: version}
}

// zshDeb is where the .deb puts the zsh completion (Debian's zsh reads vendor-completions);
// make install and the .rpm use site-functions.
const (
	zshStaged = "usr/share/zsh/site-functions/_rdmadiag"
	zshDeb    = "usr/share/zsh/vendor-completions/_rdmadiag"
)

// tree lists the regular files under root with their permission bits, relative to root.
func tree(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	out := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, "var/lib/dpkg") || strings.HasPrefix(rel, "var/log") {
			return nil // dpkg's own database and log in a --root install
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			out[rel] = info.Mode().Perm()
		} else if !d.IsDir() {
			t.Errorf("%s: neither a file nor a directory (%s)", rel, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// staged is what make install put into the package root, keyed as the .deb lays it out.
func staged(t *testing.T, p pkgs, forDeb bool) map[string]fs.FileMode {
	want := tree(t, p.stage)
	if forDeb {
		want[zshDeb] = want[zshStaged]
		delete(want, zshStaged)
	}
	for _, must := range []string{"usr/bin/rdmadiag", "usr/share/man/man1/rdmadiag.1", "usr/share/bash-completion/completions/rdmadiag",
		zshStaged, "usr/share/fish/vendor_completions.d/rdmadiag.fish", "usr/lib/systemd/system/rdmadiag-textfile.service",
		"usr/lib/systemd/system/rdmadiag-textfile.timer", "usr/lib/systemd/system/rdmadiag-watch.service", "usr/sbin/rdmadiag-healthcheck", "usr/share/doc/rdmadiag/examples/policy.json",
		"usr/share/doc/rdmadiag/examples/plugins/ib-pkey.sh", "usr/share/doc/rdmadiag/examples/plugins/rail-names.py"} {
		key := must
		if forDeb && must == zshStaged {
			key = zshDeb
		}
		if _, ok := want[key]; !ok {
			t.Errorf("make install staged no %s", must)
		}
	}
	return want
}

func sameTree(t *testing.T, what string, got, want map[string]fs.FileMode) {
	t.Helper()
	for f, m := range want {
		if g, ok := got[f]; !ok {
			t.Errorf("%s lacks %s", what, f)
		} else if g != m {
			t.Errorf("%s: %s has mode %v, make install gave %v", what, f, g, m)
		}
	}
	for f := range got {
		if _, ok := want[f]; !ok {
			t.Errorf("%s has %s, which make install does not install", what, f)
		}
	}
}

// result is one run of the installed binary.
type result struct {
	stdout, stderr string
	code           int
}

func runIn(t *testing.T, root string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "usr/bin/rdmadiag"), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("rdmadiag %v: %v", args, err)
	}
	return result{out.String(), errb.String(), code}
}

// exercise runs the binary installed under root: version, a check of a recorded snapshot, the
// demo where this machine has no RDMA device, and compares the installed manual page and
// completions with what that binary generates.
func exercise(t *testing.T, root, version string) {
	t.Helper()
	r := runIn(t, root, "version", "--format", "json")
	var v map[string]string
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &v) != nil {
		t.Fatalf("version: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if got := strings.ReplaceAll(strings.TrimPrefix(v["version"], "v"), "-", "+"); !strings.HasSuffix(version, got) {
		t.Errorf("version %q does not match the package version %q", v["version"], version)
	}
	if len(v["commit"]) < 7 || v["build_date"] == "" || !strings.HasPrefix(v["go_version"], "go") {
		t.Errorf("version lacks its stamps: %v", v)
	}

	// The aer fixture: an uncorrectable PCIe error recorded in the lab, critical (exit 2).
	snap, err := filepath.Abs("../fixtures/sysfs/aer/snapshot.txtar")
	if err != nil {
		t.Fatal(err)
	}
	r = runIn(t, root, "check", "--snapshot", snap, "--format", "json")
	var rep struct {
		Tool    struct{ Version, Commit string }
		Summary struct{ Verdict string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 2 || rep.Summary.Verdict != "critical" {
		t.Errorf("check --snapshot aer: exit %d, verdict %q (%v); want 2, critical\n%s", r.code, rep.Summary.Verdict, err, r.stderr)
	}
	if rep.Tool.Version != v["version"] || rep.Tool.Commit != v["commit"] {
		t.Errorf("report's tool %+v, want the version command's %s %s", rep.Tool, v["version"], v["commit"])
	}

	if _, err := os.Stat("/sys/class/infiniband"); errors.Is(err, fs.ErrNotExist) {
		r = runIn(t, root, "demo")
		if r.code != 2 || !strings.Contains(r.stderr, "embedded demo snapshot") || !strings.Contains(r.stdout, "aer") {
			t.Errorf("demo: exit %d; want 2 on the embedded demo snapshot\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
	}

	// The site plugin directory, empty and closed to others, and the example plugins, which
	// list from where they are installed.
	if fi, err := os.Stat(filepath.Join(root, "etc/rdmadiag/checks.d")); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o755 {
		t.Errorf("etc/rdmadiag/checks.d: %v %v, want a directory of mode 0755", fi, err)
	} else if ents, _ := os.ReadDir(filepath.Join(root, "etc/rdmadiag/checks.d")); len(ents) != 0 {
		t.Errorf("etc/rdmadiag/checks.d is not empty: %v", ents)
	}
	r = runIn(t, root, "list", "--plugins", filepath.Join(root, "usr/share/doc/rdmadiag/examples/plugins"))
	if r.code != 0 || !strings.Contains(r.stdout, "plugin.ib_pkey") || !strings.Contains(r.stdout, "plugin.rail_names") {
		t.Errorf("list --plugins of the installed examples: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	zsh := zshStaged
	if _, err := os.Stat(filepath.Join(root, zshDeb)); err == nil {
		zsh = zshDeb
	}
	for file, args := range map[string][]string{
		"usr/share/man/man1/rdmadiag.1":                  {"man"},
		"usr/share/bash-completion/completions/rdmadiag": {"completion", "bash"},
		zsh: {"completion", "zsh"},
		"usr/share/fish/vendor_completions.d/rdmadiag.fish": {"completion", "fish"},
	} {
		installed, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Error(err)
			continue
		}
		if r := runIn(t, root, args...); r.code != 0 || r.stdout != string(installed) {
			t.Errorf("%s differs from what the installed binary's %v prints (exit %d)", file, args, r.code)
		}
	}

	unit, err := os.ReadFile(filepath.Join(root, "usr/lib/systemd/system/rdmadiag-textfile.service"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "\nExecStart=/usr/bin/rdmadiag check ") || strings.Contains(string(unit), "/usr/local/bin") {
		t.Errorf("the installed service does not run /usr/bin/rdmadiag:\n%s", unit)
	}
}

// TestDebExtracted: dpkg -x, as any user can.
func TestDebExtracted(t *testing.T) {
	p := inputs(t)
	for field, want := range map[string]string{"Package": "rdmadiag", "Version": p.version + "-1", "Depends": "libc6"} {
		out, err := exec.Command("dpkg-deb", "-f", p.deb, field).Output()
		if err != nil {
			t.Fatalf("dpkg-deb -f %s: %v", field, err)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("%s: %q, want %q", field, got, want)
		}
	}
	root := t.TempDir()
	if out, err := exec.Command("dpkg", "-x", p.deb, root).CombinedOutput(); err != nil {
		t.Fatalf("dpkg -x: %v\n%s", err, out)
	}
	sameTree(t, "the .deb", tree(t, root), staged(t, p, true))
	exercise(t, root, p.version)
}

// TestDebInstalled: dpkg --root, with the package's maintainer scripts and database, where this
// runs as root (CI does). The scratch root has no libc6 package, so the dependency is forced.
func TestDebInstalled(t *testing.T) {
	p := inputs(t)
	if os.Geteuid() != 0 {
		t.Skip("dpkg --root needs root; TestDebExtracted covers the files")
	}
	root := t.TempDir()
	admin := filepath.Join(root, "var/lib/dpkg")
	for _, d := range []string{"info", "updates", "triggers"} {
		if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"status", "available"} {
		if err := os.WriteFile(filepath.Join(admin, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "var/log"), 0o755); err != nil {
		t.Fatal(err)
	}
	dpkg := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("dpkg", append([]string{"--root=" + root, "--log=" + filepath.Join(root, "var/log/dpkg.log")}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("dpkg %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	dpkg("--force-depends", "--install", p.deb)
	if st := dpkg("--status", "rdmadiag"); !strings.Contains(st, "Status: install ok installed") {
		t.Errorf("dpkg --status after install:\n%s", st)
	}
	listed := strings.Fields(dpkg("--listfiles", "rdmadiag"))
	for _, f := range []string{"/usr/bin/rdmadiag", "/usr/share/man/man1/rdmadiag.1", "/" + zshDeb} {
		if !slices.Contains(listed, f) {
			t.Errorf("dpkg --listfiles lacks %s", f)
		}
	}
	sameTree(t, "the installed .deb", tree(t, root), staged(t, p, true))
	exercise(t, root, p.version)

	dpkg("--force-depends", "--purge", "rdmadiag")
	if left := tree(t, root); len(left) != 0 {
		t.Errorf("files left after dpkg --purge: %v", left)
	}
}

// TestRPM: the .rpm's header and payload (read with go-rpmutils; no rpm tools needed), unpacked
// into a scratch root and run from there.
func TestRPM(t *testing.T) {
	p := inputs(t)
	f, err := os.Open(p.rpm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatal(err)
	}
	nevra, err := r.Header.GetNEVRA()
	if err != nil {
		t.Fatal(err)
	}
	if nevra.Name != "rdmadiag" || nevra.Version != p.version || nevra.Release != "1" {
		t.Errorf("rpm is %s, want rdmadiag-%s-1", nevra, p.version)
	}
	requires, err := r.Header.GetStrings(rpmutils.REQUIRENAME)
	if err != nil || !slices.Contains(requires, "glibc") {
		t.Errorf("rpm requires %v (%v), want glibc among them", requires, err)
	}
	root := t.TempDir()
	unpackRPM(t, r, root)
	sameTree(t, "the .rpm", tree(t, root), staged(t, p, false))
	exercise(t, root, p.version)
}

// unpackRPM writes the payload's regular files under root with their modes, as rpm2cpio | cpio
// -id would; directories are created as needed, anything else fails the test.
func unpackRPM(t *testing.T, r *rpmutils.Rpm, root string) {
	t.Helper()
	pr, err := r.PayloadReaderExtended()
	if err != nil {
		t.Fatal(err)
	}
	for {
		fi, err := pr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		const typeMask, regular, dir = 0o170000, 0o100000, 0o040000
		switch fi.Mode() & typeMask {
		case dir:
			// Kept: the package's empty directories (/etc/rdmadiag/checks.d) are part of it.
			d := filepath.Join(root, filepath.FromSlash(fi.Name()))
			if !strings.HasPrefix(d, root+string(filepath.Separator)) {
				t.Fatalf("%s leaves the root", fi.Name())
			}
			if err := os.MkdirAll(d, fs.FileMode(fi.Mode()&0o777)); err != nil {
				t.Fatal(err)
			}
			continue
		case regular:
		default:
			t.Fatalf("%s: unexpected file type %o in the rpm", fi.Name(), fi.Mode())
		}
		dst := filepath.Join(root, filepath.FromSlash(fi.Name()))
		if !strings.HasPrefix(dst, root+string(filepath.Separator)) {
			t.Fatalf("%s leaves the root", fi.Name())
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, fs.FileMode(fi.Mode()&0o777))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, pr); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLinkage: the packaged binary needs no shared library but the C library's (the verbs probes
// dlopen libibverbs through purego, which needs the dynamic loader), and no versioned glibc
// symbol, so it runs on any glibc distribution.
func TestLinkage(t *testing.T) {
	p := inputs(t)
	f, err := elf.Open(filepath.Join(p.stage, "usr/bin/rdmadiag"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if !slices.Contains([]string{"libc.so.6", "libdl.so.2", "libpthread.so.0"}, l) {
			t.Errorf("the binary needs %s; want the C library only", l)
		}
	}
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Version != "" {
			t.Errorf("the binary needs %s@%s: a glibc at least that new", s.Name, s.Version)
		}
	}
}
