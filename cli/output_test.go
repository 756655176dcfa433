package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// --output writes what stdout would have held, mode 0644 whatever the umask, leaves no temporary
// file behind, and keeps the format's exit code.
func TestOutputFileForEveryFormat(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, format := range []string{"table", "json", "prometheus", "npd", "nagios"} {
		want, _, wantCode := run(t, "check", "--snapshot", fixture("port-down"), "--format", format)
		path := filepath.Join(dir, "rdmadiag."+format)
		out, errs, code := run(t, "check", "--snapshot", fixture("port-down"), "--format", format, "--output", path)
		if out != "" || errs != "" || code != wantCode {
			t.Errorf("%s: stdout %q, stderr %q, exit %d (want nothing and %d)", format, out, errs, code, wantCode)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s: file holds %q (%v), stdout would have been %q", format, got, err, want)
		}
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v (%v), want 0644", format, st.Mode(), err)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 5 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}

// An --output that can never be written is a usage error before anything is read, naming the file.
func TestOutputPathRefusedUpFront(t *testing.T) {
	dir := t.TempDir()
	notDir := filepath.Join(dir, "file")
	os.WriteFile(notDir, nil, 0o644)
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "missing", "r.prom"), "--output " + filepath.Join(dir, "missing", "r.prom") + ": directory"},
		{filepath.Join(notDir, "r.prom"), "is not a directory"},
		{dir, "--output " + dir + ": is a directory"},
	} {
		_, errs, code := run(t, "check", "--snapshot", fixture("healthy"), "--output", c.path)
		if code != 64 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 64 with %q", c.path, code, errs, c.want)
		}
	}
}

// A reader never sees a partial file: each read while the file is rewritten again and again is
// the old content or the new one, whole.
func TestWriteFileAtomicReadersSeeWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rdmadiag.prom")
	a := bytes.Repeat([]byte("a"), 256<<10)
	b := bytes.Repeat([]byte("b"), 300<<10)
	if err := writeFileAtomic(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads, torn atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			got, err := os.ReadFile(path)
			if err != nil {
				torn.Add(1) // the file must always exist
				continue
			}
			reads.Add(1)
			if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
				torn.Add(1)
			}
		}
	}()
	for i := 0; i < 200; i++ {
		data := a
		if i%2 == 0 {
			data = b
		}
		if err := writeFileAtomic(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() > 0 || reads.Load() == 0 {
		t.Errorf("%d of %d reads saw a partial or missing file", torn.Load(), reads.Load()+torn.Load())
	}
}

// When the rename fails (here the target is a directory) the error names the file, the target
// is untouched and the temporary file is gone.
func TestWriteFileAtomicCleansUpOnError(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "rdmadiag.prom")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	err := writeFileAtomic(target, []byte("x 1\n"), 0o644)
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("error %v does not name %s", err, target)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || !ents[0].IsDir() {
		t.Errorf("directory holds %v, want only the untouched target", ents)
	}
	// A directory that cannot take a new file: the error names the file too.
	err = writeFileAtomic(filepath.Join(dir, "missing", "r.prom"), []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "r.prom")) {
		t.Errorf("missing directory: %v", err)
	}
}

// Every file rdmadiag writes replaces a symlink at the target, never writes through it: the
// report (-o), the node_exporter textfile and record's snapshot.
func TestWritersReplaceALinkAtTheTarget(t *testing.T) {
	for _, c := range []struct {
		name string
		args func(out string) []string
	}{
		{"report.json", func(out string) []string {
			return []string{"check", "--snapshot", fixture("healthy"), "--format", "json", "-o", out}
		}},
		{"rdmadiag.prom", func(out string) []string {
			return []string{"check", "--snapshot", fixture("healthy"), "--format", "prometheus", "-o", out}
		}},
		{"host.tar.gz", func(out string) []string {
			return []string{"record", "--minimal", "--snapshot", fixture("healthy"), "-o", out}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("ORIGINAL\n"), 0o644)
			out := filepath.Join(dir, c.name)
			if err := os.Symlink(victim, out); err != nil {
				t.Fatal(err)
			}
			if _, errs, code := run(t, c.args(out)...); code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if b, _ := os.ReadFile(victim); string(b) != "ORIGINAL\n" {
				t.Errorf("written through the link: the file it pointed to holds %.40q", b)
			}
			if st, err := os.Lstat(out); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
				t.Errorf("%s is not the new file: %v %v", out, st, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Errorf("temporary files left behind: %v", ents)
			}
		})
	}
}

// A write that fails half way leaves the old file as it was and no temporary file.
func TestReplaceFileFailedWriteKeepsTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "host.tar.gz")
	os.WriteFile(path, []byte("old snapshot\n"), 0o644)
	boom := errors.New("disk full")
	err := replaceFile(path, 0o644, func(w io.Writer) error {
		w.Write(bytes.Repeat([]byte("new"), 1000))
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want the write's error naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "old snapshot\n" {
		t.Errorf("the old file holds %.40q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}
}
