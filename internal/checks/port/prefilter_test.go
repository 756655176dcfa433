package port

import "testing"

// Every kernel-log record is tried against every link family: each needs a literal prefilter.
func TestLinkFamiliesHaveLiteralPrefilter(t *testing.T) {
	for _, f := range linkFamilies {
		if len(f.re.Literals()) == 0 {
			t.Errorf("link family %s (%s) has no literal every match contains", f.id, f.re)
		}
	}
}
