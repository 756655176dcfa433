package cli

import (
	"encoding/json"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

// TestEveryProblemHasAnAction: in every fixture's report each warning, critical and unknown
// finding carries an action of the vocabulary other than none, so automation never meets a
// problem it cannot route; the others carry none or an action only when a limit held them back.
func TestEveryProblemHasAnAction(t *testing.T) {
	for _, s := range scenarios(t) {
		out, _, _ := checkReport(t, s)
		var rep report.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, f := range rep.Findings {
			switch {
			case f.Severity.Problem() && (!f.Action.Valid() || f.Action == report.ActionNone):
				t.Errorf("%s: %s (%s) has action %q", s.name, f.Ref, f.Severity, f.Action)
			case !f.Severity.Problem() && f.Action != "" && f.Action != report.ActionNone && f.Limit == nil:
				t.Errorf("%s: %s (%s) carries action %q although nothing is wrong", s.name, f.Ref, f.Severity, f.Action)
			case f.Limit != nil && f.Limit.Kind == report.LimitPrivilege && f.Action != report.ActionFixConfiguration:
				t.Errorf("%s: %s skipped for privilege has action %q", s.name, f.Ref, f.Action)
			}
		}
	}
}
