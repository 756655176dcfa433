package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
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

// UnpackTxtar writes a text archive into dir with the same rules as Unpack.
func UnpackTxtar(data []byte, dir string) error {
	return UnpackTxtarContext(context.Background(), bytes.NewReader(data), dir)
}

// UnpackTxtarContext reads a text archive from r as txtar.Parse splits it, entry by entry,
// writing each body as it is read (a body is never held in memory), under the rules and limits of
// Unpack; once ctx is done it stops with an error wrapping ErrUnpackStopped.
func UnpackTxtarContext(ctx context.Context, r io.Reader, dir string) error {
	return unpackTxtar(ctx, r, dir, defaultLimits)
}

func unpackTxtar(ctx context.Context, r io.Reader, dir string, lim limits) error {
	u, err := newUnpacker(ctx, dir, lim)
	if err != nil {
		return err
	}
	defer u.Close()
	t := newTxtarReader(ctxReader{ctx, r}, 2*lim.file+lim.file/2)
	files := 0
	for {
		marker, err := t.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if stop := u.interrupted(); stop != nil {
				return stop
			}
			return err
		}
		files++
		if err := u.admit(); err != nil {
			return err
		}
		name, target, isLink := strings.Cut(marker, " -> ")
		isDir := strings.HasSuffix(strings.TrimSpace(name), "/")
		name, err = safeName(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		switch {
		case isDir:
			err = u.mkdir(name)
		case isLink:
			err = u.symlink(name, strings.TrimSpace(target))
		case strings.HasSuffix(name, ".hex"):
			plain := strings.TrimSuffix(name, ".hex")
			if plain == "" || strings.HasSuffix(plain, "/") {
				return fmt.Errorf("%w: %s names no file", ErrNotSnapshot, name)
			}
			err = u.file(plain, &hexReader{r: t, half: -1}, -1)
		default:
			err = u.file(name, t, -1)
		}
		if err != nil {
			return err
		}
	}
	if files == 0 {
		return fmt.Errorf("%w: text archive holds no files", ErrNotSnapshot)
	}
	return u.finish("text archive")
}

// txtarLineMax bounds a line that starts like a file marker: it holds a path. The text of one
// body is bounded too (newTxtarReader): at most a file of the largest size in hex, two digits a
// byte and a newline every hexLine digits, with room to spare.
const txtarLineMax = 64 << 10

// txtarReader splits a text archive as txtar.Parse does (a file marker is a whole line "-- NAME
// --" whose NAME, trimmed, is not empty; the last body gets a final newline when it lacks one),
// but streams: Next returns the next marker's name, and Read yields that entry's body up to the
// following marker. A line that starts like a marker and is longer than txtarLineMax is refused
// rather than held.
type txtarReader struct {
	br      *bufio.Reader
	pending []byte // the rest of the current chunk of body
	atLine  bool   // the next chunk starts a line
	ended   bool   // the current body has ended (at a marker or the end of the input)
	next    string // the marker that ended it, "" at the end of the input
	eof     bool
	lastNL  bool // the body given so far is empty or ends in a newline
	body    int64
	bodyMax int64
	err     error
}

func newTxtarReader(r io.Reader, bodyMax int64) *txtarReader {
	return &txtarReader{br: bufio.NewReaderSize(r, txtarLineMax), atLine: true, lastNL: true, bodyMax: bodyMax}
}

// Next skips the rest of the current body (the comment, first) and returns the next entry's
// name, or io.EOF after the last.
func (t *txtarReader) Next() (string, error) {
	for !t.ended {
		t.pending = nil
		if err := t.fill(); err != nil {
			return "", err
		}
	}
	if t.next == "" {
		return "", io.EOF
	}
	name := t.next
	t.next, t.ended, t.lastNL, t.body = "", false, true, 0
	return name, nil
}

// Read yields the current entry's body.
func (t *txtarReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(t.pending) == 0 {
		if t.ended {
			if t.next == "" && !t.lastNL {
				// txtar.Parse ends the last body with a newline.
				t.lastNL = true
				p[0] = '\n'
				return 1, nil
			}
			return 0, io.EOF
		}
		if err := t.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	t.lastNL = p[n-1] == '\n'
	return n, nil
}

// fill reads the next chunk of the input: a marker ends the body, anything else is body.
func (t *txtarReader) fill() error {
	if t.err != nil {
		return t.err
	}
	if t.eof {
		t.ended = true
		return nil
	}
	chunk, err := t.br.ReadSlice('\n')
	switch {
	case err == io.EOF:
		t.eof = true
		if len(chunk) == 0 {
			t.ended = true
			return nil
		}
	case err == bufio.ErrBufferFull:
		if t.atLine && bytes.HasPrefix(chunk, txtarMarker) {
			t.err = fmt.Errorf("%w: a line of more than %d bytes starts like a file marker", ErrNotSnapshot, txtarLineMax)
			return t.err
		}
	case err != nil:
		t.err = err
		return err
	}
	if t.atLine {
		if name := markerName(chunk); name != "" {
			t.ended, t.next = true, name
			return nil
		}
	}
	t.atLine = chunk[len(chunk)-1] == '\n'
	t.body += int64(len(chunk))
	if t.body > t.bodyMax {
		t.err = fmt.Errorf("%w: an entry of more than %d bytes of text", ErrNotSnapshot, t.bodyMax)
		return t.err
	}
	t.pending = chunk
	return nil
}

var (
	txtarMarker    = []byte("-- ")
	txtarMarkerEnd = []byte(" --")
)

// markerName is the name a line (with or without its newline) marks, as txtar reads it, or "":
// a line ended by "\r\n" is a marker as one ended by "\n" is.
func markerName(line []byte) string {
	if l, ok := bytes.CutSuffix(line, []byte("\n")); ok {
		line = bytes.TrimSuffix(l, []byte("\r"))
	}
	if len(line) < len(txtarMarker)+len(txtarMarkerEnd) || !bytes.HasPrefix(line, txtarMarker) || !bytes.HasSuffix(line, txtarMarkerEnd) {
		return ""
	}
	return strings.TrimSpace(string(line[len(txtarMarker) : len(line)-len(txtarMarkerEnd)]))
}

// hexReader decodes a .hex body: hex digits, ASCII white space ignored.
type hexReader struct {
	r    io.Reader
	in   [32 << 10]byte
	half int // a high nibble waiting for its low one, or -1
	err  error
}

func (h *hexReader) Read(p []byte) (int, error) {
	n := 0
	for n == 0 && len(p) > 0 {
		if h.err != nil {
			if h.err == io.EOF && h.half >= 0 {
				return 0, errors.New("odd number of hex digits")
			}
			return 0, h.err
		}
		k, err := h.r.Read(h.in[:min(len(h.in), 2*len(p))])
		for _, c := range h.in[:k] {
			var v int
			switch {
			case '0' <= c && c <= '9':
				v = int(c - '0')
			case 'a' <= c && c <= 'f':
				v = int(c-'a') + 10
			case 'A' <= c && c <= 'F':
				v = int(c-'A') + 10
			case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
				continue
			default:
				h.err = fmt.Errorf("invalid hex byte %q", c)
				if n == 0 {
					return 0, h.err
				}
				return n, nil
			}
			if h.half < 0 {
				h.half = v
				continue
			}
			p[n] = byte(h.half<<4 | v)
			n++
			h.half = -1
		}
		h.err = err
	}
	return n, nil
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
func UnpackFile(p, dir string) error { return UnpackFileContext(context.Background(), p, dir) }

// UnpackFileContext is UnpackFile ended by ctx, even while a read of the file (a pipe) blocks.
func UnpackFileContext(ctx context.Context, p, dir string) error {
	f, err := openInput(ctx, p)
	if err != nil {
		return err
	}
	defer f.Close()
	if strings.HasSuffix(p, ".txtar") {
		return UnpackTxtarContext(ctx, f, dir)
	}
	return UnpackContext(ctx, f, dir)
}
