package main

import (
	"bytes"
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
