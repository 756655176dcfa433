package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/report"
)

// volatileRef matches what changes when a process or the tool restarts and so must never be
// part of a finding's ref: a PID, an order suffix ("#2"), a CQ size ("cqe 128").
var volatileRef = regexp.MustCompile(`(?i)\bpid\b|#[0-9]+|cqe[ =]?[0-9]+`)

// TestRefsStable checks the refs of every fixture's report: none holds a PID, an order number
// or a size, and each names one finding, so that a ticket quoting a ref stays valid.
func TestRefsStable(t *testing.T) {
	for _, s := range scenarios(t) {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			out, _, _ := checkReport(t, s)
			var rep report.Report
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, f := range rep.Findings {
				if volatileRef.MatchString(f.Ref) {
					t.Errorf("ref %q holds a PID, an order suffix or a size", f.Ref)
				}
				if !strings.HasPrefix(f.Ref, f.CheckID) {
					t.Errorf("ref %q does not start with its check id %s", f.Ref, f.CheckID)
				}
				if seen[f.Ref] {
					t.Errorf("ref %q names two findings", f.Ref)
				}
				seen[f.Ref] = true
			}
			for _, f := range rep.Findings {
				for _, c := range f.ExplainedBy {
					if !seen[c] {
						t.Errorf("%s is explained by %q, which names no finding", f.Ref, c)
					}
				}
			}
		})
	}
}

func TestRefVolatilePattern(t *testing.T) {
	for ref, bad := range map[string]bool{
		"cq.depth@mlx5_0 pid 4242 (trainer) cqe 128":  true,
		"driver.kernel_log@mlx5_0#2":                  true,
		"cq.depth@mlx5_0/cq:trainer/declared":         false,
		"driver.kernel_log@mlx5_0/page-alloc/order-5": false,
		"qp.state@mlx5_0/1/qp:[ib_core]/ERR":          false,
	} {
		if volatileRef.MatchString(ref) != bad {
			t.Errorf("%q: volatile = %v, want %v", ref, !bad, bad)
		}
	}
}
