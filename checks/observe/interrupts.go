package observe

import (
	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/procirq"
)

// InterruptTable is /proc/interrupts as a run first read it: the parsed table, or why it could
// not be read or parsed (Err wraps the host's error, which names the path).
type InterruptTable struct {
	procirq.Table
	Err error
}

// Interrupts is the interrupt table of the run, read and parsed once for every check that
// judges vectors (driver.interrupts, cq.vectors), so that they count the same lines. A check
// that compares two readings (--interval) takes its second one with ReadInterrupts.
var Interrupts = checks.NewFact("interrupt table", func(e *checks.Env) InterruptTable {
	t, err := ReadInterrupts(e.Host)
	return InterruptTable{Table: t, Err: err}
})

// ReadInterrupts reads and parses /proc/interrupts now, without sharing the result: for the
// second reading of an interval only.
func ReadInterrupts(h *host.Host) (procirq.Table, error) {
	b, err := h.ReadFile(procirq.Path)
	if err != nil {
		return procirq.Table{}, err
	}
	return procirq.Parse(b)
}
