package pcie

import (
	"slices"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// One degraded link below a switch, with its AER errors reported to the root port: the root
// port's and the function's counts of one class are one event, the link-layer errors and the
// bandwidth limit name the link, so the report has one root cause however many findings judge it.
func TestSignalIntegrityEvents(t *testing.T) {
	fs := checktest.Run(t, "pcie-signal-integrity", checks.Options{}, "pcie")
	for _, c := range []struct{ check, subject, events string }{
		{"pcie.aer", "0000:16:01.0", "aer:0000:16:01.0:uncorrectable"},
		// Correctable BadTLP/BadDLLP at a downstream port are errors of the link below it.
		{"pcie.aer", "0000:18:00.0", "aer:0000:16:01.0:correctable,pcie-link:0000:18:00.0"},
		// A fatal DLP at the endpoint is an error of its link to the port above.
		{"pcie.aer", "0000:19:00.0", "aer:0000:16:01.0:uncorrectable,pcie-link:0000:18:00.0"},
		{"pcie.bandwidth", "0000:19:00.0", "pcie-link:0000:18:00.0"},
		{"pcie.link", "0000:19:00.0", "pcie-link:0000:18:00.0"},
	} {
		if got := strings.Join(checktest.One(t, fs, c.check, c.subject).Events, ","); got != c.events {
			t.Errorf("%s %s: events %s, want %s", c.check, c.subject, got, c.events)
		}
	}
	r := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	if !slices.Equal(r.Summary.RootCauses, []string{"pcie.aer@0000:16:01.0"}) {
		t.Errorf("root causes %v", r.Summary.RootCauses)
	}
}

// The lines of an endpoint without AER counters are the handling of the error its root port
// counted: one event, so the endpoint's finding is that error's consequence.
func TestLogOnlyAERIsTheRootPortsEvent(t *testing.T) {
	fs := checktest.Run(t, "aer", checks.Options{}, "pcie.aer")
	ep := checktest.One(t, fs, "pcie.aer", "0000:01:00.0")
	// The root port's error class, and the record itself.
	if got := strings.Join(ep.Events, ","); got != "aer:0000:00:02.0:uncorrectable,kmsg:383" {
		t.Errorf("events %s", got)
	}
	r := engine.Build(fs, engine.DefaultFaults(), report.Tool{}, report.HostInfo{})
	if !slices.Equal(r.Summary.RootCauses, []string{"pcie.aer@0000:00:02.0"}) {
		t.Errorf("root causes %v", r.Summary.RootCauses)
	}
}

func TestLinkPort(t *testing.T) {
	path := []node{{BDF: "ep"}, {BDF: "dsp"}, {BDF: "usp"}, {BDF: "rp"}}
	for i, want := range []string{"dsp", "dsp", "rp", "rp"} {
		if got := linkPort(path, i); got != want {
			t.Errorf("node %d: %s, want %s", i, got, want)
		}
	}
	if got := linkPort([]node{{BDF: "rciep"}}, 0); got != "rciep" {
		t.Errorf("alone: %s", got)
	}
}
