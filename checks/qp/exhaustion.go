package qp

import (
	"context"
	"fmt"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/internal/rdmares"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func init() {
	checks.Register(checks.Check{
		ID:          "qp.exhaustion",
		Description: "QP count against the device's max_qp (ibv_query_device, recorded in snapshots)",
		Fault:       "qp-context",
		Run:         runExhaustion,
		// Asks Host.VerbsDevices for the device's limits.
		VerbsDevices: true,
	})
}

// Exhaustion thresholds in percent of max_qp. Above 95 % a burst of connections (a job start,
// an MPI all-to-all setup) takes the rest, and ibv_create_qp fails with ENOMEM; above 80 % the
// device has less headroom than one job's worth on a typical node, worth a warning.
const (
	warnPct = 80
	critPct = 95
)

// Level judges count against limit: Critical above critPct, Warning above warnPct, else OK.
func Level(count, limit int64) report.Severity {
	switch {
	case count*100 > critPct*limit:
		return report.Critical
	case count*100 > warnPct*limit:
		return report.Warning
	}
	return report.OK
}

func runExhaustion(_ context.Context, env *checks.Env) ([]engine.Finding, error) {
	t := rdmares.QPs(env)
	if t.Err != nil {
		return netlinkUnavailable(env, t.Err), nil
	}
	if len(t.Devices) == 0 {
		return noDevices(), nil
	}
	limits := map[string]host.VerbsDevice{}
	verbsNote := "no verbs query recorded"
	if devs, why, err := env.Host.VerbsDevices(); err == nil {
		for _, v := range devs {
			limits[v.Name] = v
		}
		if why != "" {
			verbsNote = "verbs query failed: " + why
		}
	} else {
		verbsNote = "host facts unavailable: " + err.Error()
	}
	sums, sumErr := rdmares.Summary(env)
	var out []engine.Finding
	for _, d := range t.Devices {
		subj := devSubject(env, d.Dev.Name)
		src := rdmares.Source("QP", d.Dev.Name)
		// The summary counts every tracked QP; the dump can lag it by QPs created meanwhile.
		// The larger of the two is the safer count against a hard limit.
		count := int64(len(d.Objs))
		countEv := report.Ev("QPs (dump)", fmt.Sprint(len(d.Objs)), src)
		if d.Err != nil {
			countEv = report.Ev("QPs (dump)", "unreadable: "+d.Err.Error(), src)
			count = -1
		}
		ev := []report.Evidence{countEv}
		if sumErr == nil {
			if n, ok := sums[d.Dev.Index]["qp"]; ok {
				ev = append(ev, report.Ev("QPs (resource summary)", fmt.Sprint(n), "netlink:RES_GET "+d.Dev.Name))
				count = max(count, int64(n))
			}
		}
		if count < 0 {
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Unknown, Evidence: ev,
				Summary: d.Dev.Name + ": QP count unknown: " + d.Err.Error()}})
			continue
		}
		lim, ok := limits[d.Dev.Name]
		switch {
		case !ok:
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Skipped, Evidence: ev,
				Summary: fmt.Sprintf("%s: %d QP(s); device limits unknown (%s), so exhaustion is not judged", d.Dev.Name, count, verbsNote)}})
			continue
		case lim.Error != "" || lim.MaxQP <= 0:
			why := lim.Error
			if why == "" {
				why = fmt.Sprintf("max_qp reported as %d", lim.MaxQP)
			}
			out = append(out, engine.Finding{Finding: report.Finding{Subject: subj, Severity: report.Skipped,
				Evidence: append(ev, report.Ev("verbs query", why, "verbs:ibv_query_device "+d.Dev.Name)),
				Summary:  fmt.Sprintf("%s: %d QP(s); device limits unknown (%s)", d.Dev.Name, count, why)}})
			continue
		}
		ev = append(ev, report.EvExp("QPs / max_qp", fmt.Sprintf("%d / %d (%s)", count, lim.MaxQP, pct(count, lim.MaxQP)),
			fmt.Sprintf("at most %d%% (warning), %d%% (critical)", warnPct, critPct), "verbs:ibv_query_device "+d.Dev.Name))
		f := engine.Finding{Finding: report.Finding{Subject: subj, Severity: Level(count, lim.MaxQP), Evidence: ev}}
		switch f.Severity {
		case report.OK:
			f.Summary = fmt.Sprintf("%s: %d of %d QPs in use (%s)", d.Dev.Name, count, lim.MaxQP, pct(count, lim.MaxQP))
		default:
			f.Summary = fmt.Sprintf("%s: %d of %d QPs in use (%s): new QPs fail with ENOMEM once the rest is taken", d.Dev.Name, count, lim.MaxQP, pct(count, lim.MaxQP))
			if f.Severity == report.Critical {
				f.Summary = fmt.Sprintf("%s: QPs nearly exhausted, %d of %d in use (%s): ibv_create_qp fails with ENOMEM at the limit", d.Dev.Name, count, lim.MaxQP, pct(count, lim.MaxQP))
			}
			f.Remediation = "Find the owners holding most QPs (rdma res show qp dev " + d.Dev.Name + " | awk '{print $NF}' | sort | uniq -c | sort -n), " +
				"look for leaks (QPs in ERR or RESET that are never destroyed), use shared receive queues / DC or UD transports for " +
				"all-to-all jobs, or spread jobs over more devices."
		}
		out = append(out, f)
	}
	return out, nil
}
