package pcie

import (
	"slices"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
	"github.com/rdmadiag/rdmadiag/report"
)

// The identities of the events the pcie findings are drawn from (engine.Finding.Events): two
// findings drawn from one event are one root cause, whichever function or check reports them.

// linkEvent is a PCIe link's identity: its downstream port (root or switch downstream port),
// which every function below the link shares (the functions of one multi-function device, or
// a card and the ports of the switch on it).
func linkEvent(downstreamPort string) string { return "pcie-link:" + downstreamPort }

// aerEvent is an AER error class reported to a root port: the root port counts the messages of
// each class (aer_rootport_total_err_*) without saying which function sent them, so the
// function's count and the root port's of one class are one event as far as the host can tell.
func aerEvent(rootPort, class string) string { return "aer:" + rootPort + ":" + class }

// linkLayerBits are the AER status bits of errors of the link the reporting function receives
// on: physical and data link layer errors (drivers/pci/pcie/aer.c AER_PHYSICAL_LAYER_ERROR_MASK
// and AER_DATA_LINK_LAYER_ERROR_MASK: RxErr; BadTLP, BadDLLP, Rollover, Timeout; DLP), named as
// the aer_dev_* files print them (aer_correctable_error_string, aer_uncorrectable_error_string).
var linkLayerBits = []string{"RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "DLP"}

// linkPort is the downstream port of the link node i of a target's path receives on: a
// function facing up (the judged function, a switch upstream port) receives from the port
// above it, a downstream port (root or switch) from the link below it, which it is the
// downstream port of. Port types follow the alternation pairLinks assumes (function,
// downstream port, upstream port, ..., root port).
func linkPort(nodes []node, i int) string {
	if i%2 == 0 && i+1 < len(nodes) {
		return nodes[i+1].BDF
	}
	return nodes[i].BDF
}

// aerEvents are the events a function's AER counters were drawn from: each class counted
// (uncorrectable: fatal or non-fatal, the root port's totals included), and the link of its
// physical and data link layer errors.
func aerEvents(t *target, s aerSnap) []string {
	i := slices.IndexFunc(t.Nodes, func(n node) bool { return n.BDF == s.BDF })
	if i < 0 || len(t.Nodes) == 0 {
		return nil
	}
	root := t.Nodes[len(t.Nodes)-1].BDF
	var out []string
	if s.Totals["fatal"]+s.Totals["non-fatal"]+s.Root["fatal"]+s.Root["non-fatal"] > 0 {
		out = append(out, aerEvent(root, "uncorrectable"))
	}
	if s.Totals["correctable"] > 0 {
		out = append(out, aerEvent(root, "correctable"))
	}
	for _, kind := range []string{"fatal", "non-fatal", "correctable"} {
		for _, b := range s.Bits[kind] {
			name, _, _ := strings.Cut(b, "=")
			if slices.Contains(linkLayerBits, name) {
				return append(out, linkEvent(linkPort(t.Nodes, i)))
			}
		}
	}
	return out
}

// aerLogEvents are the events of AER log lines about a function without counters: each line's
// own record, and the class of error it reports, reported to the target's root port. A
// corrected error is one the table rates information (signatures/pcie.json); every other line,
// a failed recovery included, is the handling of an uncorrectable error.
func aerLogEvents(t *target, lines []kevent.Event) []string {
	if len(t.Nodes) == 0 {
		return nil
	}
	root := t.Nodes[len(t.Nodes)-1].BDF
	var out []string
	for _, e := range lines {
		class := "uncorrectable"
		if e.Sig.Sev <= report.Info {
			class = "correctable"
		}
		if ev := aerEvent(root, class); !slices.Contains(out, ev) {
			out = append(out, ev)
		}
		out = append(out, e.Key())
	}
	return out
}
