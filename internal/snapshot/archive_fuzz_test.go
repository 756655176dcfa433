package snapshot

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Unpack takes archives from other machines: whatever the bytes, it returns (an error or not)
// without panicking, changes nothing outside the directory it was given (nested in a sentinel
// directory), and makes no path that no entry names (a write through a link would).
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
	for name, es := range attacks {
		if !strings.Contains(name, "hex") {
			f.Add(archive(f, es...))
		}
	}
	f.Add([]byte("not an archive"))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		parent, dir := sentinel(t)
		before := outside(t, parent, dir)
		Unpack(bytes.NewReader(b), dir)
		assertConfined(t, parent, dir, before, tarNames(b))
	})
}
