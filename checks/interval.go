package checks

import (
	"context"
	"fmt"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// SecondReading is the one rule every check that judges growth over --interval follows: it waits
// out the interval and returns true when a second reading can show a change. It returns false
// without --interval, and on a host that holds one reading (a snapshot or a tree), where reading
// again would show "+0" and pass a busy device for a quiet one; such a check judges since-boot
// values and adds IntervalNotApplied.
func (env *Env) SecondReading(ctx context.Context, what string) (bool, error) {
	if env.Opts.Interval <= 0 || env.Host == nil || !env.Host.Repeatable() {
		return false, nil
	}
	if err := env.Sleep(ctx, env.Opts.Interval); err != nil {
		return false, fmt.Errorf("waiting %s for the second %s reading: %w", env.Opts.Interval, what, err)
	}
	return true, nil
}

// IntervalNotApplied is the skipped finding of a check asked for --interval on a host that holds
// one reading (nil otherwise): what is judged since boot only, and how to have the growth judged.
func IntervalNotApplied(env *Env, what string) []engine.Finding {
	if env.Opts.Interval <= 0 || env.Host == nil || env.Host.Repeatable() {
		return nil
	}
	iv := env.Opts.Interval
	f := engine.Finding{Finding: report.Finding{Subject: report.Subject{Kind: "host", Name: "interval"}, Severity: report.Skipped,
		Summary:  fmt.Sprintf("--interval %s not applied to %s: a %s holds one reading, so they are judged since boot only", iv, what, env.Host.Kind()),
		Evidence: []report.Evidence{report.Ev("interval", iv.String(), "--interval")}}}
	return []engine.Finding{f.SkippedBy(report.LimitLiveOnly, "run rdmadiag check --interval on the host itself")}
}
