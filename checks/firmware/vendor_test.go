package firmware

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
)

// TestVendorFirmwareVersion: a device of another vendor is information, and an empty fw_ver
// (efa has no get_dev_fw_str) is said to be empty rather than shown as a version "none".
func TestVendorFirmwareVersion(t *testing.T) {
	for _, tc := range []struct{ fixture, device, want string }{
		{"vendor-efa", "rdmap0s6", "fw_ver empty"},
		{"vendor-irdma", "rocep59s0f0", "firmware 1.71 not judged"},
		{"vendor-hns", "hns_0", "firmware 1.20.0022 not judged"},
	} {
		fs := checktest.Run(t, tc.fixture, checks.Options{}, "firmware.version")
		f := checktest.One(t, fs, "firmware.version", tc.device)
		checktest.WantSeverity(t, f, report.Info)
		if !strings.Contains(f.Summary, tc.want) {
			t.Errorf("%s: summary %q, want %q in it", tc.fixture, f.Summary, tc.want)
		}
	}
}
