package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The run's own diagnostics (docs/speed.md): a CPU profile and an execution trace written where
// the environment says, and a file that cannot be created reported without stopping the run.
func TestProfileAndTraceFiles(t *testing.T) {
	dir := t.TempDir()
	for name, start := range map[string]func(string, *bytes.Buffer) func(){
		"RDMADIAG_CPUPROFILE": func(f string, w *bytes.Buffer) func() { return startCPUProfile(f, w) },
		"RDMADIAG_TRACE":      func(f string, w *bytes.Buffer) func() { return startTrace(f, w) },
	} {
		var stderr bytes.Buffer
		start("", &stderr)() // unset: nothing is written
		file := filepath.Join(dir, name)
		start(file, &stderr)()
		if st, err := os.Stat(file); err != nil || st.Size() == 0 || stderr.Len() != 0 {
			t.Errorf("%s: file %v (%v), stderr %q", name, st, err, stderr.String())
		}
		// A link at the name is replaced, not written through, and no temporary file is left.
		victim := filepath.Join(dir, name+".victim")
		if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, name+".link")
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
		start(link, &stderr)()
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Errorf("%s: written through the link to %s", name, victim)
		}
		if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s: the link at the name was not replaced by the file", name)
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, ".*.tmp")); len(tmps) > 0 {
			t.Errorf("%s: temporary files left: %v", name, tmps)
		}
		start(filepath.Join(dir, "missing", "x"), &stderr)()
		if !strings.Contains(stderr.String(), "rdmadiag: "+name+": ") {
			t.Errorf("%s: an uncreatable file was not reported: %q", name, stderr.String())
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "RDMADIAG_TRACE"))
	if !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("the trace does not start with the execution trace header: %q", b[:min(len(b), 16)])
	}
}
