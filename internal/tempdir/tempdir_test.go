package tempdir

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A directory is held until its own remove, or RemoveAll, deletes it with what it holds.
func TestMakeRemoveRemoveAll(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	a, removeA, err := Make("a-")
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := Make("b-")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(b, "f"), []byte("x"), 0o644)
	if held := Held(); !slices.Contains(held, a) || !slices.Contains(held, b) {
		t.Fatalf("held %v, want %s and %s", held, a, b)
	}
	removeA()
	removeA()
	if _, err := os.Stat(a); !os.IsNotExist(err) || slices.Contains(Held(), a) {
		t.Errorf("%s still there after its remove: %v", a, err)
	}
	RemoveAll()
	if _, err := os.Stat(b); !os.IsNotExist(err) || len(Held()) != 0 {
		t.Errorf("%s still there after RemoveAll: %v (held %v)", b, err, Held())
	}
}
