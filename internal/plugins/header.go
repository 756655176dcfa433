package plugins

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
)

// HeaderBytes is how much of a file is searched for its header line.
const HeaderBytes = 4096

// Header is what a plugin's "# rdmadiag: layer=port description="..." fault=ROW" line says;
// empty fields take their defaults (the site layer, a description naming the file, the
// site-plugin row).
type Header struct {
	Layer, Description, Fault string
}

// ReadHeader reads the header line from the first HeaderBytes of the file, if it has one. A
// line that starts "# rdmadiag:" but does not parse is an error: a plugin that meant to place
// itself is not placed elsewhere silently.
func ReadHeader(p string) (Header, error) {
	f, err := os.Open(p)
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, HeaderBytes))
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", p, err)
	}
	h, err := ParseHeader(b)
	if err != nil {
		return Header{}, fmt.Errorf("%s: header: %w", p, err)
	}
	return h, nil
}

// ParseHeader finds and parses the header line in the start of a file.
func ParseHeader(b []byte) (Header, error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, HeaderBytes), HeaderBytes)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		rest, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t"), "rdmadiag:")
		if !ok {
			continue
		}
		return parseFields(rest)
	}
	return Header{}, nil
}

func parseFields(s string) (Header, error) {
	var h Header
	seen := map[string]bool{}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return h, fmt.Errorf("want key=value, got %q", firstWord(s))
		}
		key := s[:eq]
		s = s[eq+1:]
		var val string
		if strings.HasPrefix(s, `"`) {
			end := -1
			var b strings.Builder
			for i := 1; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					b.WriteByte(s[i+1])
					i++
					continue
				}
				if s[i] == '"' {
					end = i
					break
				}
				b.WriteByte(s[i])
			}
			if end < 0 {
				return h, fmt.Errorf("%s: unterminated quoted value", key)
			}
			val, s = b.String(), s[end+1:]
		} else {
			val = firstWord(s)
			s = s[len(val):]
		}
		if seen[key] {
			return h, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		switch key {
		case "layer":
			if report.LayerRank(val) < 0 {
				return h, fmt.Errorf("layer %q: want one of %s or %s", val, strings.Join(report.Layers, ", "), report.SiteLayer)
			}
			h.Layer = val
		case "description":
			if err := textField(val, 200); err != nil {
				return h, fmt.Errorf("description: %w", err)
			}
			h.Description = val
		case "fault":
			if err := textField(val, 64); err != nil || val == "" {
				return h, fmt.Errorf("fault %q: want a row id of the fault table", val)
			}
			h.Fault = val // checked against the fault table by the caller
		default:
			return h, fmt.Errorf("unknown key %q (want layer, description or fault)", key)
		}
	}
	return h, nil
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		return s[:i]
	}
	return s
}

// textField holds a one-line text to at most max bytes of valid UTF-8 without control
// characters.
func textField(s string, max int) error {
	switch {
	case len(s) > max:
		return fmt.Errorf("longer than %d bytes", max)
	case !utf8.ValidString(s):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	return nil
}
