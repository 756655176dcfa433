package watch

import (
	"testing"
	"time"

	portchk "github.com/rdmadiag/rdmadiag/checks/port"
	"github.com/rdmadiag/rdmadiag/report"
)

// The growth watch judges is port.counters' judgement of --interval, through its export.
func TestWatchCounterRules(t *testing.T) {
	idx := map[string]int{}
	for i, c := range portchk.CounterFiles() {
		idx[c.Dir+"/"+c.Name] = i
	}
	for _, tc := range []struct {
		counter string
		a, b    uint64
		iv      time.Duration
		inc     uint64
		sev     report.Severity
		ok      bool
	}{
		{"counters/link_downed", 1, 2, 10 * time.Second, 1, report.Critical, true},
		{"counters/link_downed", 2, 2, 10 * time.Second, 0, report.OK, true},
		// 3 symbol errors in 10 s is 1080 an hour, above the 120/h line: a warning.
		{"counters/symbol_error", 0, 3, 10 * time.Second, 3, report.Warning, true},
		// 1 in an hour is below it: information.
		{"counters/symbol_error", 0, 1, time.Hour, 1, report.Info, true},
		// A 16-bit PMA counter saturated at the first reading: no increase can be known.
		{"counters/symbol_error", 65535, 65535, 10 * time.Second, 0, report.Unknown, false},
		// A 32-bit mlx5 Q counter wraps.
		{"hw_counters/out_of_sequence", 1<<32 - 2, 3, 10 * time.Second, 5, report.Warning, true},
		// A PMA counter that went back (perfquery -R): unknown.
		{"counters/port_rcv_errors", 9, 2, 10 * time.Second, 0, report.Unknown, false},
		{"hw_counters/np_cnp_sent", 0, 100, 10 * time.Second, 100, report.Info, true},
	} {
		i, found := idx[tc.counter]
		if !found {
			t.Fatalf("%s is not a port.counters counter", tc.counter)
		}
		inc, sev, why, ok := portchk.CounterGrowth(i, tc.a, tc.b, tc.iv)
		if inc != tc.inc || sev != tc.sev || ok != tc.ok || why == "" {
			t.Errorf("%s %d -> %d over %s: +%d %s ok=%v (%q), want +%d %s ok=%v", tc.counter, tc.a, tc.b, tc.iv, inc, sev, ok, why, tc.inc, tc.sev, tc.ok)
		}
	}
	wc, ww, bc, bw := portchk.FlapThresholds()
	if DefaultRules.FlapWarnDowns != wc || DefaultRules.FlapWarnWindow != ww || DefaultRules.FlapDowns != bc || DefaultRules.FlapWindow != bw {
		t.Errorf("DefaultRules %+v do not carry port.flaps' lines %d/%s %d/%s", DefaultRules, wc, ww, bc, bw)
	}
}
