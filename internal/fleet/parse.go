package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// A report is mostly text fleet does not read: evidence, remediations and the fault rows. The
// reader below walks a report once, decodes the few fields fleet needs and skips everything else
// at the speed of a byte search, where encoding/json passes every byte twice (once to find the
// end of the value, once to decode it) through its state machine. For every document that
// json.Unmarshal accepts into doc and that repeats no member name, it yields the same host
// record (FuzzParse checks that against encoding/json); inside skipped values it checks only
// that strings end and brackets match.

var errShort = errors.New("unexpected end of input")

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type parser struct {
	b []byte
	i int
	// lim bounds what one report may make the parser decode; devices, ports and counters count
	// what it decoded so far.
	lim                      limits
	devices, ports, counters int
}

// limits bound every field the reader decodes, so that a hostile or broken report (a string of
// 60 MB, a million devices) costs fleet no more than the report's bytes (maxReport) and is a
// failed report saying which limit: a report is a few hundred strings of at most a few hundred
// bytes, up to a few dozen devices with a few ports each, and seven PMA error counters a port.
type limits struct {
	str      int // bytes of one decoded string or member name, as written
	number   int // bytes of one number
	devices  int // host.inventory.devices of one report
	ports    int // ports of one report, all its devices together
	counters int // error counters of one report, all its ports together
}

// The counts leave room for a host with every SR-IOV function an RDMA device (16 cards of 1,000
// VFs) and then some; a report beyond them is a generator's or an attacker's.
var defaultLimits = limits{str: 16 << 10, number: 64, devices: 16384, ports: 32768, counters: 8 * 32768}

// limitError is a report over one of the limits; field is the member path to it, filled in as
// the error returns through the objects that hold it (object).
type limitError struct {
	at    int
	field string
	msg   string
}

func (e *limitError) Error() string {
	if e.field == "" {
		return fmt.Sprintf("offset %d: %s", e.at, e.msg)
	}
	return fmt.Sprintf("%s at offset %d: %s", e.field, e.at, e.msg)
}

func (p *parser) overLimit(at int, format string, a ...any) error {
	return &limitError{at: at, msg: fmt.Sprintf(format, a...)}
}

// longString refuses a string of n bytes (as written) that starts at offset at.
func (p *parser) longString(at, n int) error {
	if n <= p.lim.str {
		return nil
	}
	return p.overLimit(at, "a string of %d bytes, more than the %d fleet reads in one field", n, p.lim.str)
}

// errorf reports a syntax error at p.i; at the end of the input the input is short instead
// (the rest of a stream may not have been read yet).
func (p *parser) errorf(format string, a ...any) error {
	if p.i >= len(p.b) {
		return errShort
	}
	return fmt.Errorf("offset %d: %s", p.i, fmt.Sprintf(format, a...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, 0 at the end.
func (p *parser) peek() byte {
	p.ws()
	if p.i >= len(p.b) {
		return 0
	}
	return p.b[p.i]
}

// skipString moves past the string that starts at p.i.
func (p *parser) skipString() error {
	i := p.i + 1
	for {
		j := bytes.IndexByte(p.b[i:], '"')
		if j < 0 {
			p.i = len(p.b)
			return errShort
		}
		k := i + j
		n := 0
		for m := k - 1; m >= i && p.b[m] == '\\'; m-- {
			n++
		}
		if n%2 == 0 {
			p.i = k + 1
			return nil
		}
		i = k + 1
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
		return true
	}
	return false
}

// token moves past a literal or number and returns it.
func (p *parser) token() ([]byte, error) {
	start := p.i
	for p.i < len(p.b) && !isDelim(p.b[p.i]) {
		p.i++
	}
	if p.i == start {
		return nil, p.errorf("unexpected %q", p.b[p.i])
	}
	return p.b[start:p.i], nil
}

// skip moves past one value. In objects and arrays it checks only that strings end and that
// brackets match.
func (p *parser) skip() error {
	switch c := p.peek(); c {
	case 0:
		return errShort
	case '"':
		return p.skipString()
	case '{', '[':
	default:
		if _, err := p.token(); err != nil {
			return err
		}
		if p.i == len(p.b) {
			// A number may continue in input not read yet; framing asks for more.
			return errShort
		}
		return nil
	}
	var stackArr [64]byte
	stack := stackArr[:0]
	for p.i < len(p.b) {
		// Most bytes between strings are indentation: pass them without a switch.
		for p.i < len(p.b) && !structural[p.b[p.i]] {
			p.i++
		}
		if p.i == len(p.b) {
			break
		}
		switch c := p.b[p.i]; c {
		case '"':
			if err := p.skipString(); err != nil {
				return err
			}
			continue
		case '{', '[':
			if len(stack) >= maxDepth {
				return p.errorf("nested more than %d deep", maxDepth)
			}
			stack = append(stack, c+2) // '{'+2 is '}', '['+2 is ']'
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return p.errorf("unexpected %q", c)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				p.i++
				return nil
			}
		}
		p.i++
	}
	return errShort
}

// structural marks the bytes skip must look at inside objects and arrays.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// raw moves past one value and returns its bytes.
func (p *parser) raw() ([]byte, error) {
	p.ws()
	start := p.i
	if err := p.skip(); err != nil {
		return nil, err
	}
	return p.b[start:p.i], nil
}

// null consumes a null literal if one is next.
func (p *parser) null() bool {
	if p.peek() == 'n' && bytes.HasPrefix(p.b[p.i:], []byte("null")) && (p.i+4 == len(p.b) || isDelim(p.b[p.i+4])) {
		p.i += 4
		return true
	}
	return false
}

// unquote decodes the string at p.i as encoding/json does (escapes, and invalid UTF-8 replaced).
func (p *parser) unquote() (string, error) {
	start := p.i
	if err := p.skipString(); err != nil {
		return "", err
	}
	if err := p.longString(start, p.i-start); err != nil {
		return "", err
	}
	s := p.b[start+1 : p.i-1]
	simple := true
	for _, c := range s {
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple || (bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) && !hasControl(s)) {
		return string(s), nil
	}
	var out string
	if err := json.Unmarshal(p.b[start:p.i], &out); err != nil {
		return "", fmt.Errorf("offset %d: %w", start, err)
	}
	return out, nil
}

func hasControl(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// str decodes a string into dst; null leaves dst as it is, as encoding/json does.
func (p *parser) str(dst *string) error {
	if p.null() {
		return nil
	}
	if p.peek() != '"' {
		return p.typeError("a string")
	}
	s, err := p.unquote()
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

func (p *parser) typeError(want string) error {
	at := p.i
	if err := p.skip(); err != nil {
		return err
	}
	return fmt.Errorf("offset %d: want %s", at, want)
}

// number returns a number token after checking its JSON syntax (RFC 8259 section 6).
func (p *parser) number(want string) ([]byte, error) {
	c := p.peek()
	if c != '-' && (c < '0' || c > '9') {
		return nil, p.typeError(want)
	}
	at := p.i
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	if len(tok) > p.lim.number {
		// Not quoted into the message: the token may be megabytes long.
		return nil, p.overLimit(at, "a number of %d bytes, more than the %d fleet reads", len(tok), p.lim.number)
	}
	if !validNumber(tok) {
		return nil, fmt.Errorf("offset %d: %q is not a JSON number", at, tok)
	}
	return tok, nil
}

func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

func (p *parser) intInto(dst *int) error {
	if p.null() {
		return nil
	}
	tok, err := p.number("an integer")
	if err != nil {
		return err
	}
	v, err := strconv.ParseInt(string(tok), 10, 0)
	if err != nil {
		return fmt.Errorf("offset %d: %q is not an integer", p.i-len(tok), tok)
	}
	*dst = int(v)
	return nil
}

func (p *parser) uintValue() (uint64, error) {
	tok, err := p.number("an unsigned integer")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(string(tok), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("offset %d: %q is not an unsigned integer", p.i-len(tok), tok)
	}
	return v, nil
}

func (p *parser) floatPtr(dst **float64) error {
	if p.null() {
		*dst = nil
		return nil
	}
	tok, err := p.number("a number")
	if err != nil {
		return err
	}
	v, err := strconv.ParseFloat(string(tok), 64)
	if err != nil || math.IsInf(v, 0) {
		return fmt.Errorf("offset %d: %q is out of range", p.i-len(tok), tok)
	}
	if *dst == nil {
		*dst = new(float64)
	}
	**dst = v
	return nil
}

// object calls member for each member with its name folded (see fold); member must consume
// the value. null is no object and leaves the destination as it is.
func (p *parser) object(member func(name []byte) error) error {
	var buf [32]byte
	return p.members(func(key []byte) error {
		err := member(fold(key, buf[:0]))
		if le, ok := err.(*limitError); ok {
			le.field = joinField(string(key), le.field)
		}
		return err
	})
}

func joinField(outer, inner string) string {
	if inner == "" {
		return outer
	}
	return outer + "." + inner
}

// members calls member for each member with its name as written (unescaped).
func (p *parser) members(member func(key []byte) error) error {
	if p.null() {
		return nil
	}
	if p.peek() != '{' {
		return p.typeError("an object")
	}
	p.i++
	if p.peek() == '}' {
		p.i++
		return nil
	}
	for {
		if p.peek() != '"' {
			return p.errorf("want a member name")
		}
		key, err := p.key()
		if err != nil {
			return err
		}
		if p.peek() != ':' {
			return p.errorf("want ':' after a member name")
		}
		p.i++
		if err := member(key); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return nil
		case 0:
			return errShort
		default:
			return p.errorf("want ',' or '}'")
		}
	}
}

// key reads a member name. Names are short: one loop finds the end and whether the name
// needs unescaping.
func (p *parser) key() ([]byte, error) {
	start := p.i
	for i := p.i + 1; i < len(p.b); i++ {
		c := p.b[i]
		if c == '"' {
			p.i = i + 1
			if err := p.longString(start, p.i-start); err != nil {
				return nil, err
			}
			return p.b[start+1 : i], nil
		}
		if c == '\\' || c >= utf8.RuneSelf || c < 0x20 {
			break
		}
	}
	if err := p.skipString(); err != nil {
		return nil, err
	}
	if err := p.longString(start, p.i-start); err != nil {
		return nil, err
	}
	var s string
	if err := json.Unmarshal(p.b[start:p.i], &s); err != nil {
		return nil, fmt.Errorf("offset %d: %w", start, err)
	}
	return []byte(s), nil
}

// fold maps a member name onto the lower-case name it matches as encoding/json matches names
// (exactly, or else under Unicode simple case folding, bytes.EqualFold): ASCII letters are
// lowered, and the two non-ASCII letters that fold onto ASCII ones, KELVIN SIGN onto k and
// LATIN SMALL LETTER LONG S onto s, are mapped. A name with any other non-ASCII letter can
// match none of the (ASCII) names fleet reads and folds to nothing.
func fold(k []byte, buf []byte) []byte {
	plain := true
	for _, c := range k {
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return k
	}
	for len(k) > 0 {
		r, n := utf8.DecodeRune(k)
		k = k[n:]
		switch {
		case r == '\u212a':
			r = 'k'
		case r == '\u017f':
			r = 's'
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		case r >= utf8.RuneSelf:
			return nil
		}
		buf = append(buf, byte(r))
	}
	return buf
}

// array decodes into a slice as encoding/json does: elements already there are decoded into,
// the slice is cut to the elements read, and an empty array gives an empty, non-nil slice.
func array[T any](p *parser, s *[]T, elem func(*T) error) error {
	if p.null() {
		*s = nil
		return nil
	}
	if p.peek() != '[' {
		return p.typeError("an array")
	}
	p.i++
	v := *s
	i := 0
	if p.peek() != ']' {
		for {
			if i >= cap(v) {
				v = slices.Grow(v, 1)
			}
			if i >= len(v) {
				v = v[:i+1]
			}
			if err := elem(&v[i]); err != nil {
				*s = v
				return err
			}
			i++
			c := p.peek()
			if c == ',' {
				p.i++
				continue
			}
			if c == ']' {
				break
			}
			*s = v
			if c == 0 {
				return errShort
			}
			return p.errorf("want ',' or ']'")
		}
	}
	p.i++
	if i < len(v) {
		v = v[:i]
	}
	if i == 0 {
		v = []T{}
	}
	*s = v
	return nil
}

// parseDoc decodes one report value (b holds exactly it, and white space) into d.
func parseDoc(b []byte, d *doc) error {
	p := &parser{b: b, lim: defaultLimits}
	if err := p.document(d); err != nil {
		return err
	}
	if p.peek() != 0 {
		return p.errorf("data after the report")
	}
	return nil
}

// document decodes the report value at p.i into d and stops after it. Findings are reduced as
// they are read: only the root causes are kept (d.roots), and a finding's text is decoded only
// when it is one.
func (p *parser) document(d *doc) error {
	if p.null() {
		return nil // as encoding/json: null leaves d empty, and reduce says it is no report
	}
	if c := p.peek(); c != '{' {
		return p.typeError("a report (a JSON object)")
	}
	return p.object(func(k []byte) error {
		switch string(k) {
		case "schema_version":
			return p.str(&d.SchemaVersion)
		case "tool":
			return p.object(func(k []byte) error {
				if string(k) == "started" {
					return p.time(&d.Tool.Started)
				}
				return p.skip()
			})
		case "host":
			return p.object(func(k []byte) error {
				switch string(k) {
				case "hostname":
					return p.str(&d.Host.Hostname)
				case "inventory":
					if p.null() {
						d.Host.Inventory = nil
						return nil
					}
					if d.Host.Inventory == nil {
						d.Host.Inventory = &invDoc{}
					}
					return p.inventory(d.Host.Inventory)
				}
				return p.skip()
			})
		case "error":
			return p.str(&d.Error)
		case "exit_code":
			return p.intInto(&d.ExitCode)
		case "summary":
			return p.object(func(k []byte) error {
				if string(k) == "verdict" {
					return p.str(&d.Summary.Verdict)
				}
				return p.skip()
			})
		case "findings":
			d.roots = rootSet{}
			if p.null() {
				return nil
			}
			if p.peek() != '[' {
				return p.typeError("an array")
			}
			p.i++
			if p.peek() == ']' {
				p.i++
				return nil
			}
			for {
				if err := p.finding(d); err != nil {
					return err
				}
				switch p.peek() {
				case ',':
					p.i++
				case ']':
					p.i++
					return nil
				case 0:
					return errShort
				default:
					return p.errorf("want ',' or ']'")
				}
			}
		}
		return p.skip()
	})
}

// time decodes tool.started with time.Time's own UnmarshalJSON, as encoding/json does.
func (p *parser) time(dst **time.Time) error {
	if p.null() {
		*dst = nil
		return nil
	}
	at := p.i
	raw, err := p.raw()
	if err != nil {
		return err
	}
	if err := p.longString(at, len(raw)); err != nil {
		return err
	}
	if *dst == nil {
		*dst = new(time.Time)
	}
	return (*dst).UnmarshalJSON(raw)
}

// rawStr moves past a string member and returns it still quoted, or nil for null; anything
// else is an error, as it is for encoding/json decoding into a string.
func (p *parser) rawStr(dst *[]byte) error {
	if p.null() {
		return nil
	}
	if p.peek() != '"' {
		return p.typeError("a string")
	}
	start := p.i
	if err := p.skipString(); err != nil {
		return err
	}
	if err := p.longString(start, p.i-start); err != nil {
		return err
	}
	*dst = p.b[start:p.i]
	return nil
}

// decodeRaw decodes a string rawStr kept; "" for nil.
func decodeRaw(raw []byte) (string, error) {
	if raw == nil {
		return "", nil
	}
	p := parser{b: raw, lim: defaultLimits}
	return p.unquote()
}

// rawIs reports whether a quoted string kept by rawStr decodes to s.
func rawIs(raw []byte, s string) bool {
	if len(raw) < 2 {
		return false
	}
	in := raw[1 : len(raw)-1]
	if bytes.IndexByte(in, '\\') < 0 && utf8.Valid(in) && !hasControl(in) {
		return string(in) == s
	}
	v, err := decodeRaw(raw)
	return err == nil && v == s
}

// finding reads one finding and keeps it in d.roots when it is a root cause: a problem that
// no other finding explains (report.summarize), one per key with the worst severity.
func (p *parser) finding(d *doc) error {
	var checkID, kind, name, device, severity, summary, fault, action []byte
	var explained nonEmpty
	err := p.object(func(k []byte) error {
		switch string(k) {
		case "check_id":
			return p.rawStr(&checkID)
		case "subject":
			return p.object(func(k []byte) error {
				switch string(k) {
				case "kind":
					return p.rawStr(&kind)
				case "name":
					return p.rawStr(&name)
				case "device":
					return p.rawStr(&device)
				}
				return p.skip()
			})
		case "severity":
			return p.rawStr(&severity)
		case "summary":
			return p.rawStr(&summary)
		case "fault":
			return p.rawStr(&fault)
		case "action":
			return p.rawStr(&action)
		case "explained_by":
			raw, err := p.raw()
			if err != nil {
				return err
			}
			return explained.UnmarshalJSON(raw)
		}
		return p.skip()
	})
	if err != nil || explained {
		return err
	}
	var sev string
	for _, s := range []string{"critical", "warning", "unknown"} {
		if rawIs(severity, s) {
			sev = s
		}
	}
	if sev == "" {
		return nil
	}
	var f findingDoc
	f.Severity = sev
	for _, x := range []struct {
		raw []byte
		dst *string
	}{{checkID, &f.CheckID}, {kind, &f.Subject.Kind}, {name, &f.Subject.Name}, {device, &f.Subject.Device}, {summary, &f.Summary}, {fault, &f.Fault}, {action, &f.Action}} {
		v, err := decodeRaw(x.raw)
		if err != nil {
			return err
		}
		*x.dst = v
	}
	d.roots.add(&f)
	return nil
}

func (p *parser) inventory(inv *invDoc) error {
	return p.object(func(k []byte) error {
		if string(k) != "devices" {
			return p.skip()
		}
		return array(p, &inv.Devices, p.device)
	})
}

func (p *parser) device(d *invDevice) error {
	if p.devices++; p.devices > p.lim.devices {
		return p.overLimit(p.i, "more than %d devices", p.lim.devices)
	}
	return p.object(func(k []byte) error {
		switch string(k) {
		case "name":
			return p.str(&d.Name)
		case "vendor_id":
			return p.str(&d.VendorID)
		case "device_id":
			return p.str(&d.DeviceID)
		case "hca_type":
			return p.str(&d.HCAType)
		case "firmware_version":
			return p.str(&d.FirmwareVersion)
		case "board_id":
			return p.str(&d.BoardID)
		case "driver":
			return p.str(&d.Driver)
		case "driver_version":
			return p.str(&d.DriverVersion)
		case "ports":
			return array(p, &d.Ports, p.port)
		}
		return p.skip()
	})
}

func (p *parser) port(pt *invPort) error {
	if p.ports++; p.ports > p.lim.ports {
		return p.overLimit(p.i, "more than %d ports in all", p.lim.ports)
	}
	return p.object(func(k []byte) error {
		switch string(k) {
		case "port":
			return p.intInto(&pt.Port)
		case "state":
			return p.str(&pt.State)
		case "link_layer":
			return p.str(&pt.LinkLayer)
		case "rate_gbps":
			return p.floatPtr(&pt.RateGbps)
		case "netdev_mtu":
			return p.intInto(&pt.NetdevMTU)
		case "error_counters":
			if p.null() {
				pt.ErrorCounters = nil
				return nil
			}
			if p.peek() != '{' {
				return p.typeError("an object of counters")
			}
			if pt.ErrorCounters == nil {
				pt.ErrorCounters = map[string]uint64{}
			}
			return p.members(func(k []byte) error {
				if p.counters++; p.counters > p.lim.counters {
					return p.overLimit(p.i, "more than %d error counters in all", p.lim.counters)
				}
				v, err := p.uintValue()
				if err != nil {
					return err
				}
				pt.ErrorCounters[string(k)] = v
				return nil
			})
		}
		return p.skip()
	})
}
