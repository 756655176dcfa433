package optfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

type kind uint8

const (
	kNull kind = iota
	kBool
	kNumber
	kString
	kArray
	kObject
)

// value is one JSON value as written: numbers keep their literal and objects their key order,
// so that a check can say exactly what it found and the decoder can refuse duplicate keys
// (encoding/json keeps the last one silently).
type value struct {
	kind  kind
	text  string // a string's contents or a number's literal
	b     bool
	keys  []string // object keys in file order
	obj   map[string]*value
	items []*value
}

// maxDepth bounds nesting: the deepest format (the matrix) nests three levels.
const maxDepth = 16

// parse reads exactly one JSON value; anything but white space after it is an error.
func parse(file string, b []byte) (*value, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, &Error{File: file, Msg: "empty file: want a JSON object"}
	}
	p := parser{file: file, b: b, dec: json.NewDecoder(bytes.NewReader(b))}
	p.dec.UseNumber()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	off := p.dec.InputOffset()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(off, "trailing data after the JSON document (one object per file)")
	}
	return v, nil
}

type parser struct {
	file string
	b    []byte
	dec  *json.Decoder
}

// errAt reports a problem at a byte offset as a line and column.
func (p *parser) errAt(off int64, msg string) error {
	off = min(max(off, 0), int64(len(p.b)))
	// The decoder's offset is the end of the last token; point at the next one.
	for off < int64(len(p.b)) && strings.IndexByte(" \t\r\n", p.b[off]) >= 0 {
		off++
	}
	line := 1 + bytes.Count(p.b[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(p.b[:off], '\n'))
	return &Error{File: p.file, Path: fmt.Sprintf("line %d, column %d", line, col), Msg: msg}
}

func (p *parser) syntax(err error) error {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return p.errAt(se.Offset, "not JSON: "+se.Error())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{File: p.file, Msg: "not JSON: the document ends early (a missing } or ])"}
	}
	return &Error{File: p.file, Msg: "not JSON: " + err.Error(), Err: err}
}

func (p *parser) value(depth int) (*value, error) {
	start := p.dec.InputOffset()
	if depth > maxDepth {
		return nil, p.errAt(start, fmt.Sprintf("nested deeper than %d levels", maxDepth))
	}
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.syntax(err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			v := &value{kind: kArray}
			for p.dec.More() {
				item, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				v.items = append(v.items, item)
			}
			if _, err := p.dec.Token(); err != nil {
				return nil, p.syntax(err)
			}
			return v, nil
		}
		// The decoder only returns '{' or '[' here: closing delimiters end the loops.
		v := &value{kind: kObject, obj: map[string]*value{}}
		for p.dec.More() {
			at := p.dec.InputOffset()
			// The comma before a key belongs to the key's token.
			for at < int64(len(p.b)) && strings.IndexByte(" \t\r\n,", p.b[at]) >= 0 {
				at++
			}
			kt, err := p.dec.Token()
			if err != nil {
				return nil, p.syntax(err)
			}
			k, _ := kt.(string) // the decoder allows only a string here
			if _, dup := v.obj[k]; dup {
				return nil, p.errAt(at, fmt.Sprintf("key %s appears twice", quote(k)))
			}
			item, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			v.keys = append(v.keys, k)
			v.obj[k] = item
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, p.syntax(err)
		}
		return v, nil
	case string:
		return &value{kind: kString, text: t}, nil
	case json.Number:
		return &value{kind: kNumber, text: string(t)}, nil
	case bool:
		return &value{kind: kBool, b: t}, nil
	}
	return &value{kind: kNull}, nil
}

// describe says what a value is, for "want X, got Y".
func (v *value) describe() string {
	switch v.kind {
	case kBool:
		return strconv.FormatBool(v.b)
	case kNumber:
		return shorten(v.text)
	case kString:
		return quote(v.text)
	case kArray:
		return "an array"
	case kObject:
		return "an object"
	}
	return "null"
}

const maxShown = 48

func shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + "..."
}

// quote prints a string from the file, shortened, with anything unprintable escaped.
func quote(s string) string {
	if len(s) > maxShown {
		return strconv.Quote(s[:maxShown]) + "..."
	}
	return strconv.Quote(s)
}

// Key paths: section.key for fixed keys, map["key"] for names the operator chose, list[i].
func field(path, key string) string {
	if !plainKey(key) {
		return entry(path, key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func entry(path, key string) string { return path + "[" + quote(key) + "]" }

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func plainKey(k string) bool {
	if k == "" || len(k) > maxShown {
		return false
	}
	for _, c := range k {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// checker turns values into typed ones, each error naming the file and the key path.
type checker struct{ file string }

func (c checker) fail(path, format string, a ...any) error {
	return &Error{File: c.file, Path: path, Msg: fmt.Sprintf(format, a...)}
}

func (c checker) want(path, want string, v *value) error {
	return c.fail(path, "want %s, got %s", want, v.describe())
}

// object checks that v is an object whose keys are all known ("section" or "key" says what
// the known names are called in the message).
func (c checker) object(path string, v *value, want, noun string, known ...string) error {
	if v.kind != kObject {
		return c.want(path, want, v)
	}
	for _, k := range v.keys {
		ok := false
		for _, n := range known {
			ok = ok || k == n
		}
		if !ok {
			return c.fail(field(path, k), "unknown %s (want %s)", noun, orList(known))
		}
	}
	return nil
}

func orList(s []string) string {
	switch len(s) {
	case 0:
		return "none"
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func (c checker) str(path string, v *value, want string) (string, error) {
	if v.kind != kString {
		return "", c.want(path, want, v)
	}
	return v.text, nil
}

// number accepts a finite JSON number.
func (c checker) number(path string, v *value, want string) (float64, error) {
	if v.kind != kNumber {
		return 0, c.want(path, want, v)
	}
	f, err := strconv.ParseFloat(v.text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, c.want(path, want, v)
	}
	return f, nil
}

// integer accepts a JSON number written as an integer (no fraction, no exponent).
func (c checker) integer(path string, v *value, want string) (int64, error) {
	if v.kind != kNumber {
		return 0, c.want(path, want, v)
	}
	n, err := strconv.ParseInt(v.text, 10, 64)
	if err != nil {
		return 0, c.want(path, want, v)
	}
	return n, nil
}
