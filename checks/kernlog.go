package checks

import (
	"errors"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// KernelLogSubject is the subject of a finding about the kernel log as a whole.
var KernelLogSubject = report.Subject{Kind: "host", Name: "kernel log"}

// KernelLogFinding is the finding a check emits for the part of its judgement that needed the
// kernel log, when Env.KernelLog gave an error; part names that part ("RDMA fault signatures").
// A limit of the run (no privilege, a snapshot or tree without a log) makes it skipped, with the
// limit and how to lift it, so that it does not make the verdict unknown; a failure to read or
// parse the log makes it unknown.
func KernelLogFinding(err error, part string) engine.Finding {
	var lu *host.LogUnavailable
	if errors.As(err, &lu) {
		f := engine.Finding{Finding: report.Finding{Subject: KernelLogSubject,
			Summary:     "skipped: " + part + " not searched: " + lu.Reason,
			Evidence:    []report.Evidence{report.EvExp("kernel log", "not available: "+lu.Reason, "readable", lu.Source)},
			Remediation: "To have them judged: " + lu.Lift + "."}}
		kind := report.LimitSource
		if lu.Limit == host.LogLimitPrivilege {
			kind = report.LimitPrivilege
		}
		return f.SkippedBy(kind, lu.Lift)
	}
	return engine.Finding{Finding: report.Finding{Subject: KernelLogSubject, Severity: report.Unknown,
		Summary:     "could not check " + part + ": the kernel log could not be read: " + err.Error(),
		Evidence:    []report.Evidence{report.Ev("kernel log", err.Error(), "kmsg")},
		Remediation: "Read the kernel log by hand (dmesg) for this part; the error says what failed."}}
}

// KernelLogNote is the evidence a finding carries when the kernel log lines it would quote are
// missing: why, and how to have them.
func KernelLogNote(err error) report.Evidence {
	var lu *host.LogUnavailable
	if errors.As(err, &lu) {
		return report.Ev("kernel log", "not available ("+string(lu.Limit)+" limit): "+lu.Reason+"; to have it: "+lu.Lift, lu.Source)
	}
	return report.Ev("kernel log", "unreadable: "+err.Error(), "kmsg")
}

// LogSpan is the span of kernel log records a finding is drawn from (in log order), for
// engine.Finding.LogSpan: a cause drawn from the log explains only findings on its device and,
// among log findings, only those logged near it. nil for no records.
func LogSpan(recs []kmsg.Record) *engine.LogSpan {
	if len(recs) == 0 {
		return nil
	}
	return &engine.LogSpan{First: recs[0].Since(), Last: recs[len(recs)-1].Since()}
}
