package render

import (
	"fmt"
	"sort"

	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/words"
)

// Decisive returns the finding a one-line format names first: the first of RootCauses, or for an
// unknown verdict the first finding that could not be judged (under an "UNKNOWN" status the
// operator needs what could not be checked first, not a warning found besides). It is nil for a
// healthy or interrupted run and for one that judged nothing.
func Decisive(r *report.Report) *report.Finding {
	if d := named(r); len(d) > 0 {
		return d[0]
	}
	return nil
}

// named is what the one-line formats name, in order: every root cause (RootCauses), under an
// unknown verdict those that could not be checked first; a report whose problems all explain
// each other names its first finding of the verdict's severity.
func named(r *report.Report) []*report.Finding {
	var want report.Severity
	switch r.Summary.Verdict {
	case "critical":
		want = report.Critical
	case "warning":
		want = report.Warning
	case "unknown":
		want = report.Unknown
	default:
		return nil
	}
	if roots := r.RootCauses(); len(roots) > 0 {
		if want == report.Unknown {
			// Under "UNKNOWN" what could not be checked comes first, not a warning found besides.
			sort.SliceStable(roots, func(i, j int) bool { return roots[i].Severity == report.Unknown && roots[j].Severity != report.Unknown })
		}
		return roots
	}
	for i := range r.Findings {
		if r.Findings[i].Severity == want {
			return []*report.Finding{&r.Findings[i]}
		}
	}
	return nil
}

// judgedChecks counts the checks that passed (a report built by an older version, without
// check counts, counts its passing and informational findings).
func judgedChecks(r *report.Report) int {
	if c := r.Summary.Checks; c != nil {
		return c.Passed
	}
	return r.Summary.Counts["ok"] + r.Summary.Counts["info"]
}

// statusText says in at most max bytes why the verdict is what it is, for one-line formats: every
// root cause, or as many as fit followed by "+N more", each led by its action unless it is the
// one before it ("[reseat-or-clean-cable] mlx5_0/1 is DOWN; mlx5_1/1 is DOWN; [fix-configuration]
// mlx5_2/1 is INIT"): the action applies up to the next one.
func statusText(r *report.Report, max int) string {
	s := r.Summary
	switch s.Verdict {
	case "healthy":
		return words.Truncate(fmt.Sprintf("healthy (%d checks)", judgedChecks(r)), max)
	case "interrupted":
		return words.Truncate(fmt.Sprintf("interrupted before every check finished (%d critical, %d warning, %d unknown so far)",
			s.Counts["critical"], s.Counts["warning"], s.Counts["unknown"]), max)
	}
	named := named(r)
	if len(named) == 0 {
		return words.Truncate(fmt.Sprintf("could not check: nothing was judged (%d finding(s) skipped)", s.Counts["skipped"]), max)
	}
	items := make([]string, len(named))
	for i, f := range named {
		items[i] = words.Short(f)
		if f.Severity == report.Unknown {
			items[i] = "could not check " + items[i]
		}
	}
	return words.JoinTagged(actionTags(named), items, "; ", max)
}

// actionTags are the tags of the named findings: each one's action (words.Tag), left out where
// the finding before it has the same.
func actionTags(fs []*report.Finding) []string {
	tags := make([]string, len(fs))
	for i, f := range fs {
		if i == 0 || f.Action != fs[i-1].Action {
			tags[i] = words.Tag(f)
		}
	}
	return tags
}
