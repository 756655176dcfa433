package fleet

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// parseBoth decodes b with parseDoc and with encoding/json into doc and reduces both.
func parseBoth(b []byte) (ours, std hostRecord, oursErr, stdErr error) {
	var d1, d2 doc
	oursErr = parseDoc(b, &d1)
	stdErr = json.Unmarshal(b, &d2)
	if oursErr == nil {
		ours = normal(reduce(&d1, "in"))
	}
	if stdErr == nil {
		std = normal(reduce(&d2, "in"))
	}
	return
}

// normal orders what comes from map iteration.
func normal(r hostRecord) hostRecord {
	sort.Slice(r.counters, func(i, j int) bool {
		a, b := r.counters[i], r.counters[j]
		if a.where != b.where {
			return a.where < b.where
		}
		return a.name < b.name
	})
	return r
}

// duplicateNames reports whether an object of b has two members that match the same field
// under encoding/json's matching; RFC 8259 leaves such documents' meaning open, and parseDoc
// does not promise to merge them as encoding/json does.
func duplicateNames(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type frame struct {
		obj   bool
		seen  map[string]bool
		isKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.obj && top.isKey {
			if k, ok := tok.(string); ok {
				var buf [32]byte
				if f := fold([]byte(k), buf[:0]); f != nil {
					if top.seen[string(f)] {
						return true
					}
					top.seen[string(f)] = true
				}
				top.isKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{obj: true, seen: map[string]bool{}, isKey: true})
			continue
		case json.Delim('['):
			if top != nil && top.obj {
				top.isKey = true
			}
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].obj {
			stack[len(stack)-1].isKey = true
		}
	}
}

// addSeeds adds small documents: the goldens are checked by TestParseMatchesEncodingJSON, and
// inputs of tens of kilobytes make the fuzzer minimise for minutes.
func addSeeds(f *testing.F) {
	for _, s := range []string{
		`{"schema_version":"1.2","host":{"hostname":"a"},"summary":{"verdict":"healthy"}}`,
		`{"Schema_Version":"1.2","HOST":{"hostName":"\u0061b"},"summary":{"verdict":"critical"},"findings":[{"check_id":"port.state","severity":"critical","subject":{"kind":"port","name":"mlx5_0/1"},"fault":"port-link","summary":"down","explained_by":[]}]}`,
		`{"schema_version":"1.2","findings":[{"severity":"warn\u0069ng","explained_by":null},{"severity":"critical","explained_by":["x"]}]}`,
		`{"schema_version":"1.2","host":{"inventory":{"devices":[{"name":"mlx5_0","ports":[{"port":1,"rate_gbps":1e2,"state":"ACTIVE","error_counters":{"symbol_error":3}}]}]}}}`,
		`{"schema_version":"1.2","tool":{"started":"2026-01-02T03:04:05Z"}}`,
		`{"schema_version":"1.2","tool":{"started":"2026-13-02T03:04:05Z"}}`,
		`{"schema_version":"1.2","findings":[{"evidence":[{"observed":"\"}]"}]}]}`,
		`{"schema_version":"1.3","tool":{"name":"rdmadiag"},"error":"open snapshot: EOF","exit_code":3}`,
		`null`, `[]`, `{"a":1}{"b":2}`, "not json at all", `{"a":1} trailing`,
		`{"schema_version":"1.2","host":{"hostname":"a-very-long-name","inventory":{"devices":[{"ports":[{"port":123456,"error_counters":{"a":1,"b":2,"c":3}},{},{}]},{},{}]}}}`, `{"schema_version":"1.2"`, `{"s\u212ahema":1}`,
	} {
		f.Add([]byte(s))
	}
}

// FuzzParse checks the report reader against encoding/json: whatever encoding/json accepts,
// parseDoc accepts and reduces to the same host record; nothing panics or hangs, whatever
// the input, and a stream of reports is read to its end.
func FuzzParse(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		ours, std, oursErr, stdErr := parseBoth(b)
		var le *limitError
		if stdErr == nil && !duplicateNames(b) && !errors.As(oursErr, &le) {
			if oursErr != nil {
				t.Fatalf("encoding/json reads %q, parseDoc fails: %v", b, oursErr)
			}
			if !reflect.DeepEqual(ours, std) {
				t.Fatalf("%q:\nparseDoc      %+v\nencoding/json %+v", b, ours, std)
			}
		}
		// Read whole, and in pieces that end anywhere in a report: the same records.
		var whole, pieces []hostRecord
		var fr framer
		fr.decodeStream("in", bytes.NewReader(b), func(r hostRecord) { whole = append(whole, normal(r)) })
		small := framer{initial: 3}
		small.decodeStream("in", oneByte{bytes.NewReader(b)}, func(r hostRecord) { pieces = append(pieces, normal(r)) })
		if len(whole) == 0 {
			t.Fatalf("%q: a stream yields at least one record (a report or why none)", b)
		}
		if !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("%q: read whole %+v, in pieces %+v", b, whole, pieces)
		}
		// Under tiny limits too (every field of a small input can then be over one).
		whole, pieces = nil, nil
		tight := framer{lim: tinyLimits}
		tight.decodeStream("in", bytes.NewReader(b), func(r hostRecord) { whole = append(whole, normal(r)) })
		tight = framer{lim: tinyLimits, initial: 3}
		tight.decodeStream("in", oneByte{bytes.NewReader(b)}, func(r hostRecord) { pieces = append(pieces, normal(r)) })
		if len(whole) == 0 || !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("%q under tiny limits: read whole %+v, in pieces %+v", b, whole, pieces)
		}
	})
}

var tinyLimits = limits{str: 16, number: 4, devices: 2, ports: 2, counters: 2}

// Every field the reader decodes is bounded: a report over a limit is one failed report that
// names the field and the limit, and the reports beside it are read.
func TestLimits(t *testing.T) {
	ok := `{"schema_version":"1.2","host":{"hostname":"ok"},"summary":{"verdict":"healthy"}}`
	dev := `{"name":"d","ports":[{"port":1,"error_counters":{"a":1}}]}`
	for _, tc := range []struct{ in, want string }{
		{`{"schema_version":"1.2","host":{"hostname":"a-very-long-name"}}`, "host.hostname at offset 43: a string of 18 bytes, more than the 16 fleet reads in one field"},
		{`{"schema_version":"1.2","findings":[{"severity":"critical","summary":"a summary far too long"}]}`, "findings.summary at offset"},
		{`{"schema_version":"1.2","findings":[{"severity":"ok","check_id":"also far too long"}]}`, "findings.check_id at offset"},
		{`{"schema_version":"1.2","tool":{"started":"2026-01-02T03:04:05Z"}}`, "tool.started at offset"},
		{`{"schema_version":"1.2","a-very-long-member":1}`, "over fleet's limits, not read: offset 24: a string of 20 bytes"},
		{`{"schema_version":"1.2","host":{"inventory":{"devices":[{"ports":[{"port":123456}]}]}}}`, "host.inventory.devices.ports.port at offset 74: a number of 6 bytes, more than the 4"},
		{`{"schema_version":"1.2","host":{"inventory":{"devices":[` + dev + `,` + dev + `,` + dev + `]}}}`, "host.inventory.devices at offset 174: more than 2 devices"},
		{`{"schema_version":"1.2","host":{"inventory":{"devices":[{"ports":[{},{},{}]}]}}}`, "host.inventory.devices.ports at offset 72: more than 2 ports in all"},
		{`{"schema_version":"1.2","host":{"inventory":{"devices":[{"ports":[{"error_counters":{"a":1,"b":2,"c":3}}]}]}}}`,
			"host.inventory.devices.ports.error_counters at offset 101: more than 2 error counters in all"},
	} {
		var got []hostRecord
		fr := framer{lim: tinyLimits}
		fr.decodeStream("in", strings.NewReader(ok+tc.in+ok), func(r hostRecord) { got = append(got, r) })
		if len(got) != 3 || got[0].failed != "" || got[2].failed != "" || !strings.HasPrefix(got[1].failed, "over fleet's limits, not read: ") ||
			!strings.Contains(got[1].failed, tc.want) {
			t.Errorf("%s: %+v, want the second failed with %q", tc.in, got, tc.want)
		}
	}
	// At the default limits: a 60 MB summary in one report of a stream.
	huge := `{"schema_version":"1.2","host":{"hostname":"h"},"summary":{"verdict":"critical"},"findings":[{"check_id":"port.state",` +
		`"severity":"critical","subject":{"kind":"port","name":"p"},"summary":"` + strings.Repeat("x", 60<<20) + `"}]}`
	var got []hostRecord
	var fr framer
	fr.decodeStream("-", strings.NewReader(ok+huge+ok), func(r hostRecord) { got = append(got, r) })
	if len(got) != 3 || got[0].failed != "" || got[2].failed != "" ||
		!strings.Contains(got[1].failed, "findings.summary at offset 187: a string of 62914562 bytes, more than the 16384 fleet reads in one field") {
		t.Errorf("a 60 MB summary: %.500v", got)
	}
}

func TestParseMatchesEncodingJSON(t *testing.T) {
	golden, err := filepath.Glob("../../fixtures/sysfs/*/check.golden.json")
	if err != nil || len(golden) == 0 {
		t.Fatal("no goldens", err)
	}
	for _, g := range golden {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		ours, std, oursErr, stdErr := parseBoth(b)
		if oursErr != nil || stdErr != nil {
			t.Fatalf("%s: %v / %v", g, oursErr, stdErr)
		}
		if !reflect.DeepEqual(ours, std) {
			t.Errorf("%s:\nparseDoc      %+v\nencoding/json %+v", g, ours, std)
		}
		if ours.verdict == "" || ours.failed != "" {
			t.Errorf("%s: nothing read: %+v", g, ours)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema_version": 1}`, "want a string"},
		{`{"schema_version": "1.2", "findings": {}}`, "want an array"},
		{`{"schema_version": "1.2", "host": {"inventory": {"devices": [{"ports": [{"port": 1.5}]}]}}}`, "not an integer"},
		{`{"schema_version": "1.2", "host": {"inventory": {"devices": [{"ports": [{"rate_gbps": 1e999}]}]}}}`, "out of range"},
		{`{"schema_version": "1.2", "host": {"inventory": {"devices": [{"ports": [{"error_counters": {"x": -1}}]}]}}}`, "not an unsigned"},
		{`{"schema_version": "1.2", "host": {"inventory": {"devices": [{"ports": [{"port": 01}]}]}}}`, "not a JSON number"},
		{`{"schema_version": "1.2", "tool": {"started": "yesterday"}}`, "cannot parse"},
		{`{"schema_version": "1.2", "findings": [{"severity": "critical", "summary": "\x"}]}`, "invalid character"},
		{`{"schema_version": "1.2" "x": 1}`, "want ',' or '}'"},
		{`{"schema_version": "1.2"} x`, "data after the report"},
		{`[1, 2]`, "want a report"},
		{`{"a": [}`, "unexpected"},
	} {
		var d doc
		err := parseDoc([]byte(tc.in), &d)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.in, err, tc.want)
		}
	}
}

// A stream holds several reports; a report that is no report is failed and the stream goes
// on; one that cannot be framed ends it; a truncated one says so.
func TestStream(t *testing.T) {
	in := `{"schema_version":"1.2","host":{"hostname":"a"},"summary":{"verdict":"healthy"}}
{"schema_version":"1.2","host":{"hostname":5},"summary":{"verdict":"healthy"}}
{"schema_version":"1.2","host":{"hostname":"c"},"summary":{"verdict":"healthy"}}
{"schema_version":"1.2","host":{"hostname":"d"}`
	var got []hostRecord
	var fr framer
	fr.limit = 1 << 20
	fr.decodeStream("-", strings.NewReader(in), func(r hostRecord) { got = append(got, r) })
	if len(got) != 4 || got[0].host != "a" || got[1].failed == "" || got[1].source != "-#2" || got[2].host != "c" ||
		!strings.Contains(got[3].failed, "truncated") {
		t.Fatalf("%+v", got)
	}

	got = nil
	fr.decodeStream("x.json", strings.NewReader(`{"a": [}`+"\n"+`{"schema_version":"1.2"}`), func(r hostRecord) { got = append(got, r) })
	if len(got) != 1 || !strings.Contains(got[0].failed, "unexpected") {
		t.Fatalf("an unframeable value ends the stream: %+v", got)
	}

	got = nil
	fr.decodeStream("e.json", strings.NewReader(" \n"), func(r hostRecord) { got = append(got, r) })
	if len(got) != 1 || !strings.Contains(got[0].failed, "empty") {
		t.Fatalf("%+v", got)
	}
}

// A file that is not JSON, or whose values are not objects, is one failed report with one
// reason, not one per word or number of it.
func TestStreamNotJSON(t *testing.T) {
	rep := `{"schema_version":"1.2","host":{"hostname":"a"},"summary":{"verdict":"healthy"}}`
	for _, tc := range []struct {
		in   string
		want []string // the failures, in order ("" for a report read)
	}{
		{"this is not json at all\n", []string{`at byte 0: not a report: a report is a JSON object, and this begins with 't'`}},
		{"42 is the answer", []string{`begins with '4'`}},
		{"  [1, 2] [3]", []string{`at byte 2: not a report`}},
		{rep + "\ntrailing words", []string{"", `at byte 81: not a report: a report is a JSON object, and this begins with 't' (the rest of the stream is not read)`}},
	} {
		var got []hostRecord
		var fr framer
		fr.decodeStream("g.json", strings.NewReader(tc.in), func(r hostRecord) { got = append(got, r) })
		if len(got) != len(tc.want) {
			t.Errorf("%q: %d record(s), want %d: %+v", tc.in, len(got), len(tc.want), got)
			continue
		}
		for i, w := range tc.want {
			if w == "" && got[i].failed != "" || !strings.Contains(got[i].failed, w) {
				t.Errorf("%q: record %d failed %q, want %q", tc.in, i, got[i].failed, w)
			}
		}
	}
}

// Wherever a read ends in a stream of reports, the same reports come out: the reader asks
// for more input rather than calling a report cut short.
func TestStreamBoundaries(t *testing.T) {
	var in bytes.Buffer
	for _, h := range []string{"a", "b", "c"} {
		in.WriteString(`{"schema_version": "1.2", "host": {"hostname": "` + h + `", "inventory": {"devices": [{"name": "mlx5_0",
			"ports": [{"port": 1, "state": "ACTIVE", "rate_gbps": 100, "error_counters": {"symbol_error": 12}}]}]}},
			"summary": {"verdict": "warning"}, "findings": [{"check_id": "port.counters", "severity": "warning",
			"subject": {"kind": "port", "name": "mlx5_0/1"}, "fault": "port-link", "summary": "s", "evidence": [{"observed": "}]\""}]}]}` + "\n")
	}
	var want []hostRecord
	var fr framer
	fr.decodeStream("in", bytes.NewReader(in.Bytes()), func(r hostRecord) { want = append(want, normal(r)) })
	if len(want) != 3 || want[2].host != "c" || want[2].failed != "" || len(want[2].roots) != 1 || len(want[2].counters) != 1 {
		t.Fatalf("%+v", want)
	}
	for size := 1; size <= 64; size++ {
		var got []hostRecord
		fr := framer{initial: size}
		fr.decodeStream("in", oneByte{bytes.NewReader(in.Bytes())}, func(r hostRecord) { got = append(got, normal(r)) })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("first buffer of %d bytes: %+v", size, got)
		}
	}
}

// A report larger than the limit is refused without reading it whole, and one read in tiny
// pieces is still read.
func TestStreamLimits(t *testing.T) {
	big := `{"schema_version":"1.2","x":"` + strings.Repeat("a", 3000) + `"}`
	var got []hostRecord
	fr := framer{limit: 1000}
	fr.decodeStream("big.json", strings.NewReader(big), func(r hostRecord) { got = append(got, r) })
	if len(got) != 1 || !strings.Contains(got[0].failed, "larger than 1000 bytes") {
		t.Fatalf("%+v", got)
	}
	got = nil
	fr = framer{}
	fr.decodeStream("slow", io.MultiReader(oneByte{strings.NewReader(big)}), func(r hostRecord) { got = append(got, r) })
	if len(got) != 1 || got[0].failed != "" {
		t.Fatalf("%+v", got)
	}
}

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// Member names match as encoding/json matches them: exactly, or under case folding, which
// maps KELVIN SIGN onto k and LONG S onto s.
func TestNamesFold(t *testing.T) {
	in := `{"SCHEMA_VERSION":"1.2","Host":{"HostName":"x"},"summary":{"verdict":"warning"},
		"findings":[{"chec\u212a_id":"port.state","\u017feverity":"warning","subject":{"KIND":"port","name":"p"},"fault":"f"}]}`
	ours, std, oursErr, stdErr := parseBoth([]byte(in))
	if oursErr != nil || stdErr != nil || !reflect.DeepEqual(ours, std) {
		t.Fatalf("%v %v\n%+v\n%+v", oursErr, stdErr, ours, std)
	}
	if ours.host != "x" || len(ours.roots) != 1 || ours.roots[0].key != (rootKey{"port.state", "f", "port", ""}) {
		t.Errorf("%+v", ours)
	}
}
