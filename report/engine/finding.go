package engine

import (
	"time"

	"github.com/rdmadiag/rdmadiag/report"
)

// Finding is what a check reports: the document's finding and what only the engine reads to
// link it, which the document does not carry.
type Finding struct {
	report.Finding
	// Key is the subject's identity for Ref when Subject.Name holds values that change from run
	// to run (a process id, a CQ size) or several findings of one check share a subject (kernel
	// log message families): "mlx5_0/cq:trainer", "mlx5_0/page-alloc". Empty means Subject.Name.
	Key string
	// LogSpan is set on a finding drawn from kernel log lines: when the first and the last of
	// them were logged. A cause with one links only to consequences on its device, and to those
	// that are log lines too only within LogLinkWindow (see link).
	LogSpan *LogSpan
	// Observation, when set, is what the check saw where that changes what the finding can
	// explain or what explains it: an observation of report/engine/faults.json for this check
	// ("link-downed-only"). The check states it; the fault table says what it links.
	Observation string
	// Events are the identities of the events the finding was drawn from: "kmsg:<seq>" for a
	// kernel log record, "pcie-link:<bdf of the link's downstream port>" for a PCIe link,
	// "aer:<bdf of the root port>:<correctable|uncorrectable>" for AER errors reported to it.
	// Two problem findings drawn from one event are one root cause (see linkEvents).
	Events []string
	// Probe is set by the runner for findings of a probe (a check that creates verbs resources):
	// they are evidence and never causes.
	Probe bool
}

// SkippedBy turns f into a skipped finding held back by a limit.
func (f Finding) SkippedBy(kind, lift string) Finding {
	f.Finding = f.Finding.SkippedBy(kind, lift)
	return f
}

// LogSpan is when a finding's kernel log lines were logged, as time since boot (the kernel's
// clock, comparable between the lines of one boot whether or not the wall-clock time is known).
type LogSpan struct {
	First, Last time.Duration
}
