package observe_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

// treeEnv lays out a txtar archive as a root tree (each file a path under /), with binary files
// added as they are, and returns a run's environment on it.
func treeEnv(t *testing.T, archive string, binary ...txtar.File) *checks.Env {
	t.Helper()
	a := txtar.Parse([]byte(archive))
	a.Files = append(a.Files, binary...)
	return checks.NewEnv(treeHost(t, a), checks.Options{})
}

func treeHost(t *testing.T, a *txtar.Archive) *host.Host {
	t.Helper()
	dir := t.TempDir()
	for _, f := range a.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.New(host.Options{Root: dir, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// wantErr checks that err is nil when want is "", else that it names want (a path).
func wantErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s: unexpected error %v", what, err)
	case want != "" && err == nil:
		t.Errorf("%s: no error, want one naming %s", what, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not name %s", what, err, want)
	}
}
