package snapshot

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/slowtest"
)

// tree describes an unpacked snapshot as what a reader can observe: each file's bytes, each
// symlink's target, each directory. Modes are not part of a snapshot.
func tree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			out[rel] = "link " + l
			return err
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			out[rel] = "file " + string(b)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t testing.TB, a, b map[string]string) {
	t.Helper()
	for k, v := range a {
		if w, ok := b[k]; !ok {
			t.Errorf("%s is missing after the round trip", k)
		} else if v != w {
			t.Errorf("%s differs after the round trip: %.80q, was %.80q", k, w, v)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s appeared in the round trip", k)
		}
	}
}

// TestPackTxtarFixtures: every fixture snapshot, recorded or synthetic, survives Unpack ->
// PackTxtar -> UnpackTxtar byte for byte, and packing is deterministic (every fixture with
// RDMADIAG_SLOW=1, make test-slow; slowtest.Sample without).
func TestPackTxtarFixtures(t *testing.T) {
	snaps, err := filepath.Glob("../../fixtures/sysfs/*/snapshot.*")
	if err != nil || len(snaps) < 3 {
		t.Fatalf("fixtures: %v %v", snaps, err)
	}
	for _, snap := range slowtest.Pick(t, snaps, func(p string) string { return filepath.Base(filepath.Dir(p)) }) {
		t.Run(filepath.Base(filepath.Dir(snap)), func(t *testing.T) {
			src := filepath.Join(t.TempDir(), "src")
			b, err := os.ReadFile(snap)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(snap, ".txtar") {
				err = UnpackTxtar(b, src)
			} else {
				err = Unpack(bytes.NewReader(b), src)
			}
			if err != nil {
				t.Fatal(err)
			}
			packed, err := PackTxtar(src, "a comment\n")
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "dst")
			if err := UnpackTxtar(packed, dst); err != nil {
				t.Fatal(err)
			}
			sameTree(t, tree(t, src), tree(t, dst))
			again, err := PackTxtar(dst, "a comment\n")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(packed, again) {
				t.Error("packing the unpacked text archive gives other bytes")
			}
		})
	}
}

func TestPackTxtarForms(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("meta.json", "{}\n")
	write("root/text", "line\n")
	write("root/empty", "")
	write("root/no-newline", "1")
	write("root/marker", "a\n-- meta.json --\nb\n")
	write("root/latin1", "caf\xe9\n")
	write("root/nul", "a\x00b\n")
	write("root/data.hex", "abc\n")
	write("root/long", strings.Repeat("\xff", 40))
	if err := os.MkdirAll(filepath.Join(dir, "root/sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../text", filepath.Join(dir, "root/sys/link")); err != nil {
		t.Fatal(err)
	}
	got, err := PackTxtar(dir, "Recorded somewhere.")
	if err != nil {
		t.Fatal(err)
	}
	want := `Recorded somewhere.
-- meta.json --
{}
-- root/data.hex.hex --
6162630a
-- root/empty --
-- root/latin1.hex --
636166e90a
-- root/long.hex --
ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff
ffffffffffffffff
-- root/marker.hex --
610a2d2d206d6574612e6a736f6e202d2d0a620a
-- root/no-newline.hex --
31
-- root/nul.hex --
6100620a
-- root/sys/class/infiniband/ --
-- root/sys/link -> ../text --
-- root/text --
line
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := UnpackTxtar(got, out); err != nil {
		t.Fatal(err)
	}
	sameTree(t, tree(t, dir), tree(t, out))

	if _, err := PackTxtar(dir, "x\n-- y --\n"); err == nil {
		t.Error("a comment with a marker line was accepted")
	}
	write("root/spaced ", "x\n")
	if _, err := PackTxtar(dir, ""); !errors.Is(err, errNotTxtar) {
		t.Errorf("a name txtar would trim: %v", err)
	}
	if _, err := PackTxtar(t.TempDir(), ""); err == nil {
		t.Error("an empty directory packed")
	}
}

// FuzzTxtarRoundTrip: whatever text archive UnpackTxtar accepts, PackTxtar writes back into one
// that unpacks to the same tree, unless PackTxtar says the tree cannot be written.
func FuzzTxtarRoundTrip(f *testing.F) {
	f.Add([]byte("-- meta.json --\n{}\n-- root/a -> b --\n-- root/b.hex --\n00ff\n-- root/d/ --\n"))
	f.Add([]byte("c\n-- meta.json --\n-- x --\nno newline"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := filepath.Join(t.TempDir(), "src")
		if err := UnpackTxtar(data, src); err != nil {
			return
		}
		packed, err := PackTxtar(src, "")
		if errors.Is(err, errNotTxtar) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(t.TempDir(), "dst")
		if err := UnpackTxtar(packed, dst); err != nil {
			t.Fatalf("%v\n%s", err, packed)
		}
		sameTree(t, tree(t, src), tree(t, dst))
	})
}

// TestFixturesAreText: the repository keeps every fixture as a text archive, so that a change to
// one is reviewed as a diff; a recording is converted by lab/totxtar, as make fixtures does.
func TestFixturesAreText(t *testing.T) {
	snaps, err := filepath.Glob("../../fixtures/sysfs/*/snapshot.*")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range snaps {
		if filepath.Base(p) == "snapshot.txtar" {
			continue
		}
		d := filepath.Dir(strings.TrimPrefix(p, "../"))
		t.Errorf("%s: store it as text: go run ./lab/totxtar -scenario %s -readme %s/README.md -o %s/snapshot.txtar %s && git rm %s",
			p, filepath.Base(d), d, d, strings.TrimPrefix(p, "../"), strings.TrimPrefix(p, "../"))
	}
}
