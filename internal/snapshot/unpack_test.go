package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/tools/txtar"

	"github.com/rdmadiag/rdmadiag/internal/tempdir"
)

// climb is a link target that stays inside the archive when read lexically (root/q/q/q/../..
// is root/q) but, with root/q -> ., leaves the unpack directory "in" for the directory around it,
// where the sentinel "victim" lies.
const climb = "q/q/q/../../victim"

// attacks are archives that try to write outside the unpack directory or through a link, or
// write a name twice, each as the entries of either form.
var attacks = map[string][]entry{
	"file through a climbing link": {meta, {name: "root/q", typ: tar.TypeSymlink, link: "."},
		{name: "root/x", typ: tar.TypeSymlink, link: climb}, {name: "root/x", body: "PWNED\n"}},
	"hex through a climbing link": {meta, {name: "root/q", typ: tar.TypeSymlink, link: "."},
		{name: "root/x", typ: tar.TypeSymlink, link: climb}, {name: "root/x.hex", body: "50574e45440a\n"}},
	"file below a link": {meta, {name: "root/q", typ: tar.TypeSymlink, link: "."},
		{name: "root/x", typ: tar.TypeSymlink, link: "q/q/q/../.."}, {name: "root/x/victim", body: "PWNED\n"}},
	"directory below a link": {meta, {name: "root/q", typ: tar.TypeSymlink, link: "."},
		{name: "root/x", typ: tar.TypeSymlink, link: "q/q/q/../.."}, {name: "root/x/made/", typ: tar.TypeDir}},
	"link below a link": {meta, {name: "root/q", typ: tar.TypeSymlink, link: "."},
		{name: "root/x", typ: tar.TypeSymlink, link: "q/q/q/../.."}, {name: "root/x/made", typ: tar.TypeSymlink, link: "."}},
	"inside link written through": {meta, {name: "root/a", body: "old\n"},
		{name: "root/l", typ: tar.TypeSymlink, link: "a"}, {name: "root/l", body: "new\n"}},
	"file twice":       {meta, {name: "root/a", body: "one\n"}, {name: "root/a", body: "two\n"}},
	"file and hex":     {meta, {name: "root/a", body: "one\n"}, {name: "root/a.hex", body: "74776f0a\n"}},
	"link then file":   {meta, {name: "root/a", typ: tar.TypeSymlink, link: "b"}, {name: "root/a", body: "x\n"}},
	"dir then file":    {meta, {name: "root/a/", typ: tar.TypeDir}, {name: "root/a", body: "x\n"}},
	"meta twice":       {meta, {name: "meta.json", body: "{}\n"}},
	"dir twice":        {meta, {name: "root/d/", typ: tar.TypeDir}, {name: "root/d/", typ: tar.TypeDir}},
	"file then within": {meta, {name: "root/a", body: "x\n"}, {name: "root/a/b", body: "y\n"}},
}

// asTxtar writes entries as a text archive: links as "NAME -> TARGET", directories as "NAME/".
func asTxtar(es []entry) []byte {
	var b bytes.Buffer
	b.WriteString("attack\n")
	for _, e := range es {
		switch e.typ {
		case tar.TypeSymlink:
			fmt.Fprintf(&b, "-- %s -> %s --\n", e.name, e.link)
		case tar.TypeDir:
			fmt.Fprintf(&b, "-- %s/ --\n", strings.TrimSuffix(e.name, "/"))
		default:
			fmt.Fprintf(&b, "-- %s --\n%s", e.name, e.body)
			if e.body != "" && !strings.HasSuffix(e.body, "\n") {
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

// sentinel lays out the directory around an unpack, a victim file and a directory, and makes the
// (empty) unpack directory inside it.
func sentinel(t testing.TB) (parent, dir string) {
	t.Helper()
	parent = t.TempDir()
	if err := os.WriteFile(filepath.Join(parent, "victim"), []byte("ORIGINAL\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(parent, "in")
	for _, d := range []string{filepath.Join(parent, "made", "deep"), dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return parent, dir
}

// outside describes everything in parent but dir (type, mode, size, content, time), so that any
// change an unpack made there shows.
func outside(t testing.TB, parent, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(parent, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return filepath.SkipDir
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", st.Mode(), st.Size(), st.ModTime().UnixNano())
		if st.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// allowed is every path an archive with these entry names may create: each name (a .hex
// entry's without .hex) and the directories above it. A path the unpack made that is not here
// was written through a link.
func allowed(names []string) map[string]bool {
	ok := map[string]bool{}
	for _, n := range names {
		n = path.Clean(strings.TrimSpace(n))
		for _, v := range []string{n, strings.TrimSuffix(n, ".hex")} {
			for d := v; d != "." && d != "/" && d != ""; d = path.Dir(d) {
				ok[d] = true
			}
		}
	}
	return ok
}

// assertConfined fails when the unpack changed anything outside dir or made, inside it, a path no
// entry names.
func assertConfined(t testing.TB, parent, dir string, before map[string]string, names []string) {
	t.Helper()
	after := outside(t, parent, dir)
	for p, d := range before {
		if after[p] != d {
			t.Errorf("unpack changed %s outside its directory: %s, was %s", p, after[p], d)
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("unpack made %s outside its directory", p)
		}
	}
	ok := allowed(names)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+"/"))
		if !ok[rel] {
			t.Errorf("unpack made %s, which no entry names: written through a link", rel)
		}
		return nil
	})
}

func txtarNames(data []byte) []string {
	var names []string
	for _, f := range txtar.Parse(data).Files {
		n, _, _ := strings.Cut(f.Name, " -> ")
		names = append(names, n)
	}
	return names
}

func tarNames(data []byte) []string {
	var names []string
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return names
		}
		names = append(names, h.Name)
	}
}

// Both forms refuse every attack, and nothing is written outside the unpack directory nor
// through a link.
func TestUnpackRefusesWritesThroughLinksAndTwiceNamed(t *testing.T) {
	for name, es := range attacks {
		for _, form := range []string{"txtar", "tar"} {
			if form == "tar" && strings.Contains(name, "hex") {
				continue // a tar entry's name is its name: a .hex one is a file like any other
			}
			t.Run(name+"/"+form, func(t *testing.T) {
				parent, dir := sentinel(t)
				before := outside(t, parent, dir)
				var err error
				var names []string
				if form == "txtar" {
					data := asTxtar(es)
					err, names = UnpackTxtar(data, dir), txtarNames(data)
				} else {
					data := archive(t, es...)
					err, names = Unpack(bytes.NewReader(data), dir), tarNames(data)
				}
				if !errors.Is(err, ErrNotSnapshot) {
					t.Errorf("got %v, want ErrNotSnapshot", err)
				}
				if b, _ := os.ReadFile(filepath.Join(parent, "victim")); string(b) != "ORIGINAL\n" {
					t.Errorf("the file outside holds %q", b)
				}
				assertConfined(t, parent, dir, before, names)
			})
		}
	}
}

// FuzzUnpackTxtar: whatever the text archive, its unpack in a directory nested in a sentinel
// directory changes nothing outside, and makes no path that no entry names (a write through a
// link would).
func FuzzUnpackTxtar(f *testing.F) {
	for _, es := range attacks {
		f.Add(asTxtar(es))
	}
	f.Add([]byte("-- meta.json --\n{}\n-- root/q -> . --\n-- root/x -> " + climb + " --\n-- root/x/y.hex --\n00\n"))
	f.Add([]byte("-- meta.json --\n{}\n-- root/a -> ../root --\n-- root/a/b/ --\n-- root/c -> a/b --\n-- root/c/d --\nx\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parent, dir := sentinel(t)
		before := outside(t, parent, dir)
		UnpackTxtar(data, dir)
		assertConfined(t, parent, dir, before, txtarNames(data))
	})
}

// The entry limit holds for text archives too, names that clean to nothing included.
func TestTxtarEntryLimit(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("-- meta.json --\n{\"format\":\"rdmadiag-snapshot/1\"}\n")
	for range MaxEntries {
		b.WriteString("-- ./ --\n")
	}
	err := UnpackTxtar(b.Bytes(), t.TempDir())
	if !errors.Is(err, ErrNotSnapshot) || !strings.Contains(err.Error(), "more than 200000 entries") {
		t.Errorf("%d entries: got %v", MaxEntries+1, err)
	}
}

// Every form holds to the same count and sizes, a file's size refused before it is written when
// the archive declares it.
func TestUnpackLimitsBothForms(t *testing.T) {
	lim := limits{entries: 4, file: 100, total: 250}
	big := strings.Repeat("x", 101)
	cases := []struct {
		name string
		es   []entry
		want string
	}{
		{"count", []entry{meta, {name: "a", body: ""}, {name: "b", body: ""}, {name: "c", body: ""}, {name: "d", body: ""}}, "more than 4 entries"},
		{"file", []entry{meta, {name: "a", body: big}}, "more than 100"},
		{"total", []entry{meta, {name: "a", body: big[:90]}, {name: "b", body: big[:90]}, {name: "c", body: big[:90]}}, "more than 250 bytes in all"},
		{"hex file", []entry{meta, {name: "a.hex", body: strings.Repeat("00", 101)}}, "more than 100"},
	}
	for _, c := range cases {
		for _, form := range []string{"txtar", "tar"} {
			if form == "tar" && strings.HasPrefix(c.name, "hex") {
				continue
			}
			t.Run(c.name+"/"+form, func(t *testing.T) {
				dir := t.TempDir()
				var err error
				if form == "txtar" {
					err = unpackTxtar(context.Background(), bytes.NewReader(asTxtar(c.es)), dir, lim)
				} else {
					err = unpackTar(context.Background(), bytes.NewReader(archive(t, c.es...)), dir, lim)
				}
				if !errors.Is(err, ErrNotSnapshot) || !strings.Contains(err.Error(), c.want) {
					t.Errorf("got %v, want %q", err, c.want)
				}
				if form == "tar" && c.name == "file" {
					if _, err := os.Lstat(filepath.Join(dir, "a")); err == nil {
						t.Error("the oversize file was written before it was refused")
					}
				}
			})
		}
	}
	// A large body in text is bounded before it is decoded: a .hex entry of white space.
	ws := "-- meta.json --\n{}\n-- a.hex --\n" + strings.Repeat(" ", 300) + "\n"
	if err := unpackTxtar(context.Background(), strings.NewReader(ws), t.TempDir(), lim); !errors.Is(err, ErrNotSnapshot) {
		t.Errorf("a body of 300 bytes of text with a limit of 100: %v", err)
	}
}

// A text archive is unpacked without holding an entry in memory: unpacking a file with a 24 MiB
// entry and a 12 MiB hex entry allocates a small fraction of that.
func TestTxtarUnpackStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.txtar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "-- meta.json --\n{\"format\":\"rdmadiag-snapshot/1\"}\n-- root/big --\n")
	line := strings.Repeat("y", 1023) + "\n"
	for range 24 << 10 {
		f.WriteString(line)
	}
	f.WriteString("-- root/big.bin.hex --\n")
	hexLine := strings.Repeat("ab", 32) + "\n"
	for range (12 << 20) / 32 {
		f.WriteString(hexLine)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	err = UnpackFile(p, dir)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "root/big.bin")); err != nil || st.Size() != 12<<20 {
		t.Fatalf("hex entry: %v %v", st, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Errorf("unpacking 36 MiB of entries allocated %d MiB", got>>20)
	}
}

// The streaming reader splits archives as txtar.Parse does: the same names, the same bodies.
func FuzzTxtarReaderMatchesParse(f *testing.F) {
	f.Add([]byte("comment\n-- a --\nbody\n-- b --\nno newline"))
	f.Add([]byte("-- a --\n--  --\n-- b -- \n--x --\n-- c --\r\n-- d --"))
	f.Add([]byte("-- a -> b --\nignored\n-- d/ --\n\n\n-- e.hex --\n00 ff\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		want := txtar.Parse(data).Files
		r := newTxtarReader(bytes.NewReader(data), int64(len(data))+2)
		for i := 0; ; i++ {
			name, err := r.Next()
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("%d entries, txtar.Parse finds %d", i, len(want))
				}
				return
			}
			if err != nil {
				if strings.Contains(err.Error(), "starts like a file marker") {
					return // a line txtarLineMax refuses
				}
				t.Fatal(err)
			}
			if i >= len(want) || name != want[i].Name {
				t.Fatalf("entry %d is %q, txtar.Parse finds %v", i, name, want)
			}
			body, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, want[i].Data) {
				t.Fatalf("%s: body %q, txtar.Parse reads %q", name, body, want[i].Data)
			}
		}
	})
}

// fifoWithWriter makes a named pipe whose writer is open and writes what feed writes (nothing
// when feed is nil), as a shell pipeline into /dev/stdin does.
func fifoWithWriter(t *testing.T, feed func(w *os.File)) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pipe.txtar")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	opened := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			opened <- nil
			return
		}
		opened <- w
		if feed != nil {
			feed(w)
		}
	}()
	// Hold the read side open once, so that the writer's open returns before Open's.
	r, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := <-opened
	t.Cleanup(func() {
		r.Close()
		if w != nil {
			w.Close()
		}
	})
	return p
}

// The run's context ends an unpack that waits for input (a pipe nobody writes yet) or that has
// a great deal of it, and the temporary directory is gone when OpenContext returns.
func TestOpenContextEndsTheUnpack(t *testing.T) {
	endless := func(w *os.File) {
		w.WriteString("-- meta.json --\n{\"format\":\"rdmadiag-snapshot/1\"}\n")
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "-- root/d%d/f --\nx\n", i); err != nil {
				return
			}
		}
	}
	for name, feed := range map[string]func(*os.File){"silent pipe": nil, "endless pipe": endless} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			p := fifoWithWriter(t, feed)
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("test signal")) })
			start := time.Now()
			_, cleanup, err := OpenContext(ctx, p)
			cleanup()
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("OpenContext returned %s after it was asked to stop", took)
			}
			if !errors.Is(err, ErrUnpackStopped) || !strings.Contains(err.Error(), "test signal") {
				t.Errorf("got %v, want ErrUnpackStopped with the cause", err)
			}
			if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
				t.Errorf("left behind in TMPDIR: %v", ents)
			}
			if held := tempdir.Held(); len(held) != 0 {
				t.Errorf("still registered: %v", held)
			}
		})
	}
}

// OpenUnpacked opens what UnpackFile wrote as Open opens the file: the same host, named after the
// file, with its root in the directory given and nothing written there; a directory that holds
// no snapshot is refused as Open refuses it.
func TestOpenUnpacked(t *testing.T) {
	p := "../../fixtures/sysfs/healthy/snapshot.txtar"
	dir := t.TempDir()
	if err := UnpackFile(p, dir); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	h, err := OpenUnpacked(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	want, cleanup, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if h.Meta().Source != p || h.Root() != filepath.Join(dir, RootDir) {
		t.Errorf("source %q root %q, want %q and %s/root", h.Meta().Source, h.Root(), p, dir)
	}
	for _, f := range []string{"/proc/modules", "/sys/class/infiniband/rxe0/fw_ver"} {
		got, gerr := h.ReadString(f)
		exp, eerr := want.ReadString(f)
		if got != exp || (gerr == nil) != (eerr == nil) {
			t.Errorf("%s: %q (%v), Open gives %q (%v)", f, got, gerr, exp, eerr)
		}
	}
	if kg, _ := h.KernelLog(); len(kg) == 0 {
		t.Error("no kernel log")
	}
	sameTree(t, before, tree(t, dir))
	if _, err := OpenUnpacked(t.TempDir(), p); !errors.Is(err, ErrNotSnapshot) {
		t.Errorf("an empty directory: %v, want ErrNotSnapshot", err)
	}
}
