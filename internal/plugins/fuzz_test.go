package plugins

import (
	"errors"
	"testing"
)

// FuzzDecode: whatever a plugin prints, Decode and Validate return (never panic), a decoded
// document holds to the protocol's bounds, and a syntax error points into the output.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"schema": 1, "findings": []}`,
		`{"schema": 1, "findings": [{"check": "bios", "subject": {"kind": "port", "name": "mlx5_0/1", "device": "mlx5_0"}, "severity": "warning", "summary": "x", "evidence": [{"name": "a", "observed": "b"}], "remediation": "r", "fault": "port-link", "action": "fix-configuration"}]}`,
		`{"schema": 1, "findings": [}`,
		`{"schema": 2}`,
		`{"schema": 1, "findings": null}`,
		`{"schema": 1, "findings": [{"severity": "ok", "summary": "\u0000"}]} trailing`,
		"\xff\xfe",
		``,
		`[1, 2, 3]`,
		`{"schema": "1", "findings": [{"unknown": true}]}`,
	} {
		f.Add([]byte(s))
	}
	inv := Inventory{Devices: map[string]bool{"mlx5_0": true}, Builtin: func(id string) bool { return id == "port.pkeys" }}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := Decode(b)
		var se *SyntaxError
		if errors.As(err, &se) && (se.Offset < 0 || se.Offset > int64(len(b))) {
			t.Fatalf("offset %d outside %d bytes", se.Offset, len(b))
		}
		if err != nil {
			return
		}
		if o.Schema == nil || *o.Schema != OutputSchema || o.Findings == nil || len(*o.Findings) > MaxFindings {
			t.Fatalf("accepted %+v", o)
		}
		for _, x := range *o.Findings {
			Validate("plugin.f", x, inv)
		}
	})
}
