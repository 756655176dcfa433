package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unpack takes archives from other machines: whatever the bytes, it returns (an error or not)
// without panicking, and everything it leaves is inside the directory it was given.
func FuzzUnpack(f *testing.F) {
	snaps, _ := filepath.Glob("../../fixtures/sysfs/*/snapshot.txtar")
	for _, p := range snaps[:min(3, len(snaps))] {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		dir := f.TempDir()
		if err := UnpackTxtar(data, dir); err != nil {
			f.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Pack(&buf, dir); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte("not an archive"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "in")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		Unpack(bytes.NewReader(b), dir)
		err := filepath.Walk(parent, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if p != parent && p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("unpack left %s outside its directory", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
