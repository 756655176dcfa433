package host

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkReadFileLive reads small files the way a live run reads sysfs attributes, through the
// live host (open/read/close), relative to the directory held open (Dir) and, for comparison,
// through os.ReadFile.
func BenchmarkReadFileLive(b *testing.B) {
	dir := b.TempDir()
	var names []string
	for i := range 64 {
		p := filepath.Join(dir, strconv.Itoa(i))
		if err := os.WriteFile(p, []byte("fe80:0000:0000:0000:5054:00ff:fe12:3456\n"), 0o644); err != nil {
			b.Fatal(err)
		}
		names = append(names, p)
	}
	h, err := New(Options{Root: "/", Kind: KindLive})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("host", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := h.ReadFile(names[i%len(names)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		d := h.OpenDir(dir)
		defer d.Close()
		for i := 0; b.Loop(); i++ {
			if _, err := d.ReadFile(strconv.Itoa(i % len(names))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := os.ReadFile(names[i%len(names)]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestReadLiveMatchesOS(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 70000)
	for i := range big {
		big[i] = byte('a' + i%26)
	}
	for name, data := range map[string][]byte{"empty": nil, "small": []byte("4: ACTIVE\n"), "big": big} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readLive(p, "/x/"+name)
		if err != nil || string(got) != string(data) {
			t.Errorf("%s: got %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
		// As a text attribute (Dir): a full first read goes on, a short one is the end.
		got, err = readLiveAt(unix.AT_FDCWD, p, "/x/"+name, true)
		if err != nil || string(got) != string(data) {
			t.Errorf("%s as an attribute: got %d bytes, %v; want %d bytes", name, len(got), err, len(data))
		}
	}
	for name, p := range map[string]string{"missing": filepath.Join(dir, "nope"), "directory": dir} {
		_, err := readLive(p, "/x/"+name)
		_, oserr := os.ReadFile(p)
		if err == nil || oserr == nil {
			t.Fatalf("%s: no error (os: %v)", name, oserr)
		}
		// The same operation and errno as os, naming the host path.
		want := oserr.(*os.PathError)
		want.Path = "/x/" + name
		if err.Error() != want.Error() {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
}
