package driver

import "testing"

// Every record of the kernel log is tried against every signature: one without a literal
// prefilter runs the backtracker on all of them (docs/speed.md).
func TestSignaturesHaveLiteralPrefilter(t *testing.T) {
	for _, s := range signatures {
		if len(s.re.Literals()) == 0 {
			t.Errorf("signature %s (%s) has no literal every match contains", s.id, s.re)
		}
	}
}
