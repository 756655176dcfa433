package fleet

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// No field of a report reaches the fleet's text view as a control character, a bidirectional
// override or a byte that is not UTF-8, whichever section shows it.
func TestTextViewNeutralisesHostileStrings(t *testing.T) {
	const evil = "\u202eevil\u2066 \x1b[2J\u009b\u200f\ttab"
	a := host("node-1"+evil, problem("port.state", "port", "mlx5_0/1"+evil, "critical", "down"+evil),
		func(r *report.Report) { r.Host.Inventory.Devices[0].FirmwareVersion = "22.43.2026" + evil })
	b := host("node-2", problem("port.state", "port", "mlx5_0/1", "critical", "down"))
	c := host("node-3")
	// A raw document can hold what encoding/json would not write: a byte that is not UTF-8.
	raw := bytes.Replace(encode(t, host("node-4")), []byte(`"node-4"`), []byte("\"node-4\xff\xfe\""), 1)
	r := run(t, Options{}, a, b, c, raw)
	var out bytes.Buffer
	if err := WriteTable(&out, r); err != nil {
		t.Fatal(err)
	}
	if !utf8.Valid(out.Bytes()) {
		t.Errorf("invalid UTF-8:\n%q", out.String())
	}
	for i, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if words.HasUnprintable(l) {
			t.Errorf("line %d holds a raw control or bidi character: %q", i+1, l)
		}
	}
	if !strings.Contains(out.String(), `\u202eevil\u2066`) {
		t.Errorf("the hostile host name is not shown escaped:\n%s", out.String())
	}
}
