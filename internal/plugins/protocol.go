package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
)

// The output protocol's version, and its bounds: a plugin that needs more is misbehaving.
const (
	OutputSchema = 1
	// MaxStdout is how much of standard output is read; more is a failure.
	MaxStdout   = 1 << 20
	MaxFindings = 256
	MaxEvidence = 32
)

// Output is a plugin's standard output: {"schema": 1, "findings": [...]}.
type Output struct {
	Schema   *int             `json:"schema"`
	Findings *[]OutputFinding `json:"findings"`
}

// OutputFinding is one finding as a plugin writes it: report.Finding's JSON names, with the
// plugin's own sub-check in place of check_id (the runner sets the id, layer and ref).
type OutputFinding struct {
	// Check is an optional sub-name ([a-z0-9_], up to 32): findings of one plugin on one
	// subject are told apart by it. The plugin's own id is accepted too; any other id is a lie.
	Check       string            `json:"check"`
	Subject     *report.Subject   `json:"subject"`
	Severity    string            `json:"severity"`
	Summary     string            `json:"summary"`
	Evidence    []report.Evidence `json:"evidence"`
	Remediation string            `json:"remediation"`
	Fault       string            `json:"fault"`
	Action      string            `json:"action"`
}

// SyntaxError is output that is not one JSON document of the protocol's shape: where (a byte
// offset into standard output) and a short sanitised excerpt of what is there.
type SyntaxError struct {
	Offset  int64
	Excerpt string
	Err     error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("at byte %d (%s): %v", e.Offset, e.Excerpt, e.Err)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// Decode reads a plugin's standard output strictly: valid UTF-8, one JSON object and nothing
// after it but white space, no field the protocol does not name (at any depth), the schema
// version this build reads, a findings list (empty is fine) of at most MaxFindings. What the
// findings say is checked by Validate.
func Decode(b []byte) (*Output, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, errors.New("printed nothing (want a JSON document: docs/plugins.md)")
	}
	if !utf8.Valid(b) {
		off := invalidUTF8(b)
		return nil, &SyntaxError{Offset: off, Excerpt: excerpt(b, off), Err: errors.New("not valid UTF-8")}
	}
	if off, err := exactKeys(b); err != nil {
		return nil, &SyntaxError{Offset: off, Excerpt: excerpt(b, off), Err: err}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var o Output
	if err := dec.Decode(&o); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		case errors.Is(err, io.ErrUnexpectedEOF):
			off = int64(len(b))
		}
		return nil, &SyntaxError{Offset: off, Excerpt: excerpt(b, off), Err: cleanJSONErr(err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		off := dec.InputOffset()
		return nil, &SyntaxError{Offset: off, Excerpt: excerpt(b, off), Err: errors.New("more after the JSON document")}
	}
	switch {
	case o.Schema == nil:
		return nil, errors.New(`no "schema" (want "schema": 1)`)
	case *o.Schema != OutputSchema:
		return nil, fmt.Errorf(`"schema": %d, but this rdmadiag reads schema %d`, *o.Schema, OutputSchema)
	case o.Findings == nil:
		return nil, errors.New(`no "findings" list (an empty list says there is nothing to report)`)
	case len(*o.Findings) > MaxFindings:
		return nil, fmt.Errorf("%d findings, more than %d", len(*o.Findings), MaxFindings)
	}
	return &o, nil
}

// exactKeys refuses what encoding/json would let through: a key given twice in one object (the
// last would win: "severity": "critical" then "severity": "ok") and a key in other case than
// the protocol's lowercase names ("Severity", which the decoder matches without regard to
// case). Output that is not JSON is left to the decoder, which says where.
func exactKeys(b []byte) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		object bool
		keys   map[string]bool
		key    bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return 0, nil
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) == 0 {
					return 0, nil
				}
				continue
			}
			k, _ := tok.(string)
			switch {
			case top.keys[k]:
				return off, fmt.Errorf("the key %q given twice in one object", k)
			case k != strings.ToLower(k):
				return off, fmt.Errorf("the key %q: the protocol's keys are lowercase (%q)", k, strings.ToLower(k))
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		if top != nil && top.object {
			top.key = true // this token is the value; a key comes next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, key: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return 0, nil
			}
		default:
			if len(stack) == 0 {
				return 0, nil // a document that is not an object: the decoder says so
			}
		}
	}
}

// cleanJSONErr drops the decoder's "json: " prefix: the message is the plugin's fault, not a
// decoder's.
func cleanJSONErr(err error) error {
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func invalidUTF8(b []byte) int64 {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return int64(i)
		}
		i += n
	}
	return int64(len(b))
}

// excerpt quotes up to 32 bytes of b around off, as a Go string literal: control characters,
// invalid bytes and quotes come out escaped, so the excerpt acts on no terminal.
func excerpt(b []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	start, end := max(0, off-16), min(int64(len(b)), off+16)
	return fmt.Sprintf("%q", b[start:end])
}

// Inventory is what Validate holds findings' subjects to: the devices of this run (judged or
// excluded) and the built-in check ids a plugin might claim.
type Inventory struct {
	Devices map[string]bool
	Builtin func(id string) bool
}

var (
	subName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	pciAddr = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)
	// kinds are the subject kinds report.Subject documents.
	kinds = map[string]bool{"host": true, "device": true, "port": true, "pci": true, "netdev": true, "module": true,
		"qp": true, "cq": true, "file": true}
)

// Severities a plugin may give.
var severities = map[string]report.Severity{"ok": report.OK, "info": report.Info, "warning": report.Warning,
	"critical": report.Critical, "unknown": report.Unknown, "skipped": report.Skipped}

// Validate checks one finding of plugin id against the protocol's rules and this run's
// inventory, and says every rule it breaks (empty: the finding is valid).
func Validate(id string, f OutputFinding, inv Inventory) []string {
	var bad []string
	add := func(format string, a ...any) { bad = append(bad, fmt.Sprintf(format, a...)) }
	switch c := f.Check; {
	case c == "" || c == id || subName.MatchString(c):
	case inv.Builtin != nil && inv.Builtin(c):
		add("claims the built-in check %s", c)
	case strings.Contains(c, "."):
		add("claims the check id %q, which is not its own (%s)", c, id)
	default:
		add("check %q: want a sub-name of [a-z0-9_], up to 32", c)
	}
	if _, ok := severities[f.Severity]; !ok {
		add("severity %q: want ok, info, warning, critical, unknown or skipped", f.Severity)
	}
	if f.Summary == "" {
		add("no summary")
	} else if err := textField(f.Summary, 300); err != nil {
		add("summary: %v", err)
	}
	if s := f.Subject; s != nil {
		if !kinds[s.Kind] {
			add("subject kind %q: want host, device, port, pci, netdev, module, qp, cq or file", s.Kind)
		}
		for _, x := range []struct{ name, v string }{{"name", s.Name}, {"device", s.Device}, {"pci", s.PCI}} {
			if err := textField(x.v, 128); err != nil {
				add("subject %s: %v", x.name, err)
			}
		}
		if s.Device != "" && !inv.Devices[s.Device] {
			add("subject device %q is not an RDMA device of this host", s.Device)
		}
		if s.PCI != "" && !pciAddr.MatchString(s.PCI) {
			add("subject pci %q: want a PCI address such as 0000:3b:00.0", s.PCI)
		}
	}
	if len(f.Evidence) > MaxEvidence {
		add("%d evidence items, more than %d", len(f.Evidence), MaxEvidence)
	}
	for i, e := range f.Evidence {
		if e.Name == "" {
			add("evidence[%d]: no name", i)
		} else if err := textField(e.Name, 64); err != nil {
			add("evidence[%d] name: %v", i, err)
		}
		for _, x := range []struct {
			name, v string
			max     int
		}{{"observed", e.Observed, 1024}, {"expected", e.Expected, 1024}, {"source", e.Source, 256}} {
			if err := multiLine(x.v, x.max); err != nil {
				add("evidence[%d] %s: %v", i, x.name, err)
			}
		}
	}
	if err := multiLine(f.Remediation, 1024); err != nil {
		add("remediation: %v", err)
	}
	if err := textField(f.Fault, 64); err != nil {
		add("fault: %v", err)
	}
	if f.Action != "" && !validAction(f.Action) {
		add("action %q is not one of the report's actions", f.Action)
	}
	return bad
}

func validAction(a string) bool {
	for _, x := range report.Actions {
		if string(x) == a && x != report.ActionNone {
			return true
		}
	}
	return false
}

// multiLine is textField for text that may span lines (evidence values, remediation).
func multiLine(s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("longer than %d bytes", max)
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return fmt.Errorf("holds the control character %U", r)
		}
	}
	return nil
}
