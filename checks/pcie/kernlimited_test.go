package pcie

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/kmsg"
	"github.com/rdmadiag/rdmadiag/report"
)

// A tree without link files (ibstat laid out as /sys) whose kernel log says the card's link is
// limited: the kernel's report is the only word on the link, and it names a problem, for both
// functions of the card, which share one link. The same tree without the log line is a skip by
// the source's limit, not a claim that the function has no PCIe link.
func TestLinkFromKernelReportWithoutLinkFiles(t *testing.T) {
	fs := checktest.Run(t, "real-l2fwd-nv-6-pcie-limited", checks.Options{}, "pcie.link")
	for _, bdf := range []string{"0000:b3:00.0", "0000:b3:00.1"} {
		f := checktest.One(t, fs, "pcie.link", bdf)
		checktest.WantSeverity(t, f, report.Warning)
		for _, want := range []string{"limited by 8 GT/s x8 at 0000:b2:00.0", "63.008 Gb/s available, capable of 252.048 Gb/s"} {
			if !strings.Contains(f.Summary, want) {
				t.Errorf("%s: summary %q lacks %q", bdf, f.Summary, want)
			}
		}
		checktest.WantEvidence(t, f, "kernel link report", "mlx5_core 0000:b3:00.1: 63.008 Gb/s available PCIe bandwidth")
	}
	checktest.WantEvidence(t, checktest.One(t, fs, "pcie.link", "0000:b3:00.0"), "shares the PCIe link with", "0000:b3:00.1")

	fs = checktest.Run(t, "real-l2fwd-nv-6-cx6dx-roce", checks.Options{}, "pcie.link")
	for _, f := range checktest.Find(fs, "pcie.link", "") {
		if f.Severity != report.Skipped || f.Limit == nil || f.Limit.Kind != report.LimitSource {
			t.Errorf("%s: %s %q limit %+v, want skipped by the source", f.Subject.Name, f.Severity, f.Summary, f.Limit)
		}
	}
}

func TestKernelLimited(t *testing.T) {
	rec := func(s string) kmsg.Record { return kmsg.Record{Text: s} }
	limited := rec("mlx5_core 0000:3b:00.1: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
	full := rec("mlx5_core 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)")
	other := rec("mlx5_core 0000:5e:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 link at 0000:5d:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)")
	for _, tc := range []struct {
		recs []kmsg.Record
		bdf  string
		want bool
	}{
		{[]kmsg.Record{limited}, "0000:3b:00.1", true},
		{[]kmsg.Record{limited}, "0000:3b:00.0", true}, // another function of the device
		{[]kmsg.Record{full}, "0000:3b:00.0", false},   // "available" without "limited by": the full link
		{[]kmsg.Record{other}, "0000:3b:00.0", false},  // another device's link
		{nil, "0000:3b:00.0", false},
		{[]kmsg.Record{limited}, "no-dot", false},
	} {
		ke, err := checks.NewKernelEvents(&kmsg.Log{Records: tc.recs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, got := kernelLimited(ke, tc.bdf); got != tc.want {
			t.Errorf("%s in %v: %v, want %v", tc.bdf, kmsg.Texts(tc.recs), got, tc.want)
		}
	}
	ke, err := checks.NewKernelEvents(&kmsg.Log{Records: []kmsg.Record{limited}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := kernelLimited(ke, "0000:3b:00.1"); r.avail != "63.008 Gb/s" || r.capable != "252.048 Gb/s" || r.hop != "0000:3a:00.0" || r.speed != "8.0 GT/s PCIe" || r.width != "8" {
		t.Errorf("report %+v", r)
	}
}
