package cli

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// judgedReport runs `check` on a scenario as the golden test does and returns the report as
// built, with what the document leaves out of its findings (the events they were drawn from).
func judgedReport(t *testing.T, s scenario) (*report.Report, map[string][]string) {
	t.Helper()
	var out, errb bytes.Buffer
	var rep *report.Report
	events := map[string][]string{}
	app := testApp(&out, &errb)
	app.judged = func(r *report.Report, linked []engine.Finding) {
		rep = r
		for i := range linked {
			events[r.Findings[i].Ref] = linked[i].Events
		}
	}
	app.Execute(context.Background(), append([]string{"check", "--snapshot", s.snapshot, "--format", "json"}, s.args...))
	if rep == nil {
		t.Fatalf("no report built (stderr %q)", errb.String())
	}
	return rep, events
}

// logQuote is how a finding quotes a kernel log line in its evidence: "[<when>] <text>".
var logQuote = regexp.MustCompile(`^\[[^\]]+\] \S`)

// One event is one root cause on every fixture: no event identity is held by two root causes,
// and no two root causes that name no events quote the same kernel log line (which would be one
// event judged twice).
func TestOneEventOneRootCause(t *testing.T) {
	for _, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			rep, events := judgedReport(t, s)
			byEvent := map[string]string{}
			byLine := map[string]string{}
			for _, f := range rep.RootCauses() {
				for _, ev := range events[f.Ref] {
					if other, ok := byEvent[ev]; ok && other != f.Ref {
						t.Errorf("event %s is in two root causes: %s and %s", ev, other, f.Ref)
					}
					byEvent[ev] = f.Ref
				}
				if len(events[f.Ref]) > 0 {
					continue
				}
				seen := map[string]bool{}
				for _, e := range f.Evidence {
					if !logQuote.MatchString(e.Observed) || seen[e.Observed] {
						continue
					}
					seen[e.Observed] = true
					if other, ok := byLine[e.Observed]; ok {
						t.Errorf("root causes %s and %s quote the same kernel log line %q", other, f.Ref, e.Observed)
					}
					byLine[e.Observed] = f.Ref
				}
			}
		})
	}
}
