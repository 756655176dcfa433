package snapshot

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/tools/txtar"
)

// Synthetic fixtures (hardware the lab cannot emulate) are written by hand as text archives so
// that every value can be reviewed in a diff and cited in the archive's comment. txtar has no
// symlinks and no binary, so two conventions extend it:
//
//	-- root/sys/class/infiniband/mlx5_0 -> ../../devices/pci0000:00/0000:00:01.0/0000:3b:00.0/infiniband/mlx5_0 --
//	    a file name containing " -> " is a symlink to the text after the arrow (the body is ignored);
//	-- netlink/1401-0300-.bin.hex --
//	    a name ending in .hex is hex-decoded (white space ignored) into the name without .hex;
//	-- root/sys/class/infiniband/ --
//	    a name ending in / is an (empty) directory.
//
// The comment (the text before the first file) must say that the fixture is synthetic and where
// each value comes from, or, for a recording stored in this form by PackTxtar, how it was recorded.

// UnpackTxtar writes a text archive into dir with the same safety rules as Unpack.
func UnpackTxtar(data []byte, dir string) error {
	a := txtar.Parse(data)
	if len(a.Files) == 0 {
		return fmt.Errorf("%w: text archive holds no files", ErrNotSnapshot)
	}
	for _, f := range a.Files {
		name, target, isLink := strings.Cut(f.Name, " -> ")
		isDir := strings.HasSuffix(strings.TrimSpace(name), "/")
		name, err := safeName(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		if err := checkParents(dir, name); err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if isDir {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if isLink {
			target = strings.TrimSpace(target)
			if err := checkLink(name, target); err != nil {
				return err
			}
			if err := os.Symlink(target, dst); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
			}
			continue
		}
		body := f.Data
		if strings.HasSuffix(name, ".hex") {
			b, err := hex.DecodeString(strings.Join(strings.Fields(string(body)), ""))
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrNotSnapshot, name, err)
			}
			body, dst = b, strings.TrimSuffix(dst, ".hex")
		}
		if err := os.WriteFile(dst, body, 0o644); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, MetaFile)); err != nil {
		return fmt.Errorf("%w: no %s in the text archive", ErrNotSnapshot, MetaFile)
	}
	return nil
}

// hexLine is how many hex digits PackTxtar writes per line of a .hex body.
const hexLine = 64

// PackTxtar is the inverse of UnpackTxtar: it writes the snapshot unpacked in dir as a text archive
// with the given comment, so that a recording can be reviewed in a diff like a synthetic fixture.
// Regular files are stored as text when txtar keeps them byte for byte (valid UTF-8, empty or
// ending in a newline, no line that reads as a file marker), otherwise hex-encoded as NAME.hex;
// symlinks as "NAME -> TARGET"; empty directories as "NAME/". Entries are sorted, so the same tree
// always gives the same bytes. A name or target the conventions cannot carry is an error, never a
// silently different tree.
func PackTxtar(dir string, comment string) ([]byte, error) {
	if bad := markerLine([]byte(comment)); bad != "" {
		return nil, fmt.Errorf("txtar comment: line %q would read as a file marker", bad)
	}
	entries, err := sortedEntries(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(comment)
	if comment != "" && !strings.HasSuffix(comment, "\n") {
		buf.WriteByte('\n')
	}
	files := 0
	for _, p := range entries {
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if err := packableName(rel); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		st, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			if t == "" || t != strings.TrimSpace(t) || strings.ContainsAny(t, "\r\n") || strings.HasSuffix(t, " --") {
				return nil, fmt.Errorf("%s: symlink target %q: %w", p, t, errNotTxtar)
			}
			fmt.Fprintf(&buf, "-- %s -> %s --\n", rel, t)
		case st.IsDir():
			ents, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			if len(ents) == 0 {
				fmt.Fprintf(&buf, "-- %s/ --\n", rel)
			}
			continue
		case st.Mode().IsRegular():
			body, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			if isText(rel, body) {
				fmt.Fprintf(&buf, "-- %s --\n", rel)
				buf.Write(body)
			} else {
				fmt.Fprintf(&buf, "-- %s.hex --\n", rel)
				writeHex(&buf, body)
			}
		default:
			return nil, fmt.Errorf("%s: %v is neither a file, a directory nor a symlink", p, st.Mode().Type())
		}
		files++
	}
	if files == 0 {
		return nil, fmt.Errorf("%s: %w", dir, errNothingToPack)
	}
	return buf.Bytes(), nil
}

var (
	errNothingToPack = errors.New("nothing to pack: no file, symlink or empty directory")
	errNotTxtar      = errors.New("cannot be written in a text archive")
)

// packableName refuses names UnpackTxtar would read as something else: white space it trims,
// the symlink arrow, line breaks, a marker's end.
func packableName(n string) error {
	switch {
	case n != strings.TrimSpace(n), strings.Contains(n, " -> "), strings.HasSuffix(n, " --"):
		return fmt.Errorf("name %q %w", n, errNotTxtar)
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return fmt.Errorf("name %q has a control character and %w", n, errNotTxtar)
	}
	return nil
}

// isText says whether txtar gives back body unchanged as the data of a file named name, and a
// reviewer can read it.
func isText(name string, body []byte) bool {
	if strings.HasSuffix(name, ".hex") || strings.HasSuffix(name, "/") {
		return false // UnpackTxtar would decode it, or take it for a directory
	}
	if len(body) == 0 {
		return true
	}
	// A NUL is valid UTF-8 and txtar keeps it, but it makes a diff treat the file as binary.
	return utf8.Valid(body) && body[len(body)-1] == '\n' && bytes.IndexByte(body, 0) < 0 && markerLine(body) == ""
}

// markerLine returns the first line of data that txtar would take for a file marker, if any.
// Any line that starts with "-- " and ends with " --" counts, even one with an empty name that
// txtar ignores: erring towards hex costs only size.
func markerLine(data []byte) string {
	for _, l := range bytes.Split(data, []byte("\n")) {
		l = bytes.TrimSuffix(l, []byte("\r"))
		if bytes.HasPrefix(l, []byte("-- ")) && bytes.HasSuffix(l, []byte(" --")) {
			return string(l)
		}
	}
	return ""
}

func writeHex(buf *bytes.Buffer, body []byte) {
	h := hex.EncodeToString(body)
	for len(h) > hexLine {
		buf.WriteString(h[:hexLine])
		buf.WriteByte('\n')
		h = h[hexLine:]
	}
	if h != "" {
		buf.WriteString(h)
		buf.WriteByte('\n')
	}
}

// UnpackFile unpacks a snapshot file into dir by its name: a text archive (.txtar) or a
// gzip-compressed tar archive (anything else), as Open does.
func UnpackFile(p, dir string) error {
	if strings.HasSuffix(p, ".txtar") {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return UnpackTxtar(data, dir)
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	return Unpack(f, dir)
}
