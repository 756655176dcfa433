package port

import (
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// CounterFile is one port counter port.counters reads: its directory under the port
// ("counters" for PMA counters, "hw_counters" for the driver's) and its file name.
type CounterFile struct{ Dir, Name string }

// CounterFiles lists the counters port.counters judges, in the order of its table, for a
// reader that samples them itself (rdmadiag watch) and judges each growth with CounterGrowth.
func CounterFiles() []CounterFile {
	out := make([]CounterFile, len(counterDefs))
	for i, d := range counterDefs {
		out[i] = CounterFile{Dir: d.dir, Name: d.name}
	}
	return out
}

// CounterGrowth judges counter i of CounterFiles growing from a to b over iv exactly as
// `check --interval` does (the same table, wrap and saturation rules): the increase, its
// severity and what it means; ok is false when the increase cannot be known (a reset, a
// counter saturated at the first reading).
func CounterGrowth(i int, a, b uint64, iv time.Duration) (inc uint64, sev report.Severity, why string, ok bool) {
	d := counterDefs[i]
	k := d.key()
	c := judgeDelta(portRef{}, d, reading{vals: map[string]uint64{k: a}}, reading{vals: map[string]uint64{k: b}}, iv)
	if c.unknown {
		return 0, report.Unknown, d.why, false
	}
	inc, _ = delta(d, a, b)
	return inc, c.sev, d.why, true
}

// FlapThresholds are port.flaps' lines, for a reader that counts link downs itself (rdmadiag
// watch): warnCount downs within warnWindow warn, burstCount within burstWindow are critical.
func FlapThresholds() (warnCount int, warnWindow time.Duration, burstCount int, burstWindow time.Duration) {
	return flapWarnCount, flapWindowUsec * time.Microsecond, flapBurstCritical, flapBurstUsec * time.Microsecond
}
