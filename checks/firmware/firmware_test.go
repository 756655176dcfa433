package firmware

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/inventory"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		ok   bool
	}{
		{"16.26.1040", Version{16, 26, 1040}, true},
		{"28.41.1000\n", Version{28, 41, 1000}, true},
		{"20.43.0066", Version{20, 43, 66}, true},
		{"0.0.0", Version{}, true},
		{"14.32.1010 (MT_2420110034)", Version{}, false},
		{"16.26", Version{}, false},
		{"16.26.1040.1", Version{}, false},
		{"16.-1.1040", Version{}, false},
		{"16.26.99999", Version{}, false},
		{"", Version{}, false},
		{"a.b.c", Version{}, false},
	} {
		got, err := ParseVersion(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if (Version{16, 26, 1040}).String() != "16.26.1040" || (Version{20, 43, 66}).String() != "20.43.0066" {
		t.Error("String must print like fw_ver (zero-padded build number)")
	}
	if !(Version{16, 26, 1040}).Less(Version{16, 27, 2000}) || (Version{16, 27, 4000}).Less(Version{16, 27, 2000}) {
		t.Error("Less")
	}
}

func TestHCAType(t *testing.T) {
	if id, err := ParseHCAType("MT4119"); err != nil || id != 0x1017 {
		t.Errorf("MT4119 = %x, %v; want 0x1017 (ConnectX-5)", id, err)
	}
	for _, bad := range []string{"4119", "MTx", "MT99999999"} {
		if _, err := ParseHCAType(bad); err == nil {
			t.Errorf("ParseHCAType(%q): want an error", bad)
		}
	}
}

// Firmware majors as NVIDIA's MFT "Supported Adapter Cards Firmware Versions" tables give them, and
// the PF device ids of mlx5_core_pci_table (drivers/net/ethernet/mellanox/mlx5/core/main.c).
func TestFamilies(t *testing.T) {
	for major, name := range map[int]string{12: "ConnectX-4", 14: "ConnectX-4 Lx", 16: "ConnectX-5", 20: "ConnectX-6",
		22: "ConnectX-6 Dx", 26: "ConnectX-6 Lx", 28: "ConnectX-7", 40: "ConnectX-8", 18: "BlueField", 24: "BlueField-2", 32: "BlueField-3"} {
		if f, ok := FamilyOf(major); !ok || f.Name != name {
			t.Errorf("family %d = %+v, want %s", major, f, name)
		}
	}
	for id, major := range map[uint16]int{0x1015: 14, 0x1017: 16, 0x1019: 16, 0x101b: 20, 0x101d: 22, 0xa2d6: 24,
		0x101f: 26, 0x1021: 28, 0xa2dc: 32, 0x1023: 40} {
		if f, ok := familyOfPCI(id); !ok || f.Major != major {
			t.Errorf("PCI id %04x = %+v, want firmware major %d", id, f, major)
		}
	}
}

func TestSeriesMatch(t *testing.T) {
	for _, tc := range []struct {
		series, version string
		want            bool
	}{
		{"5.7", "5.7-1.0.2", true}, {"5.7", "5.7", true}, {"5.7", "5.70-1.0", false}, {"5.7", "5.8-1.0.1", false},
		{"6.1", "6.1.0-27-amd64", true}, {"6.1", "6.10.3", false}, {"", "anything", true},
	} {
		if got := seriesMatch(tc.series, tc.version); got != tc.want {
			t.Errorf("seriesMatch(%q, %q) = %v", tc.series, tc.version, got)
		}
	}
}

func TestMatrix(t *testing.T) {
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		family int
		drv    Driver
		rec    string
	}{
		{22, Driver{Kind: KindInbox, Version: "6.8.0-45-generic"}, "22.48.1000"},
		{28, Driver{Kind: KindOFED, Version: "23.10-0.5.5"}, "28.39.1002"},
		// The LTS update row wins over the series row.
		{28, Driver{Kind: KindOFED, Version: "23.10-1.1.9"}, "28.39.2048"},
		{16, Driver{Kind: KindOFED, Version: "24.10-1.1.4"}, "16.35.4030"},
		{22, Driver{Kind: KindOFED, Version: "25.07-0.9.7"}, "22.46.1006"},
		{16, Driver{Kind: KindOFED, Version: "5.8-7.0.6"}, "16.35.4554"},
	} {
		row, ok := m.Lookup(tc.family, tc.drv)
		if !ok || row.Recommended != tc.rec || row.Min != "" {
			t.Errorf("family %d on %s: %+v %v; want recommended %s and no minimum", tc.family, tc.drv, row, ok, tc.rec)
		}
	}
	if r, ok := m.Lookup(28, Driver{Kind: KindOFED, Version: "4.9-7.1.0"}); !ok || !r.Unsupported {
		t.Errorf("ConnectX-7 on MLNX_OFED 4.9: %+v %v; want an unsupported row", r, ok)
	}
	if _, ok := m.Lookup(16, Driver{Kind: KindOFED, Version: "4.9-7.1.0"}); ok {
		t.Error("no ConnectX-5 row for OFED 4.9: Lookup must say so, not pick another series")
	}
	// MLNX_OFED 5.7-1.0.2.0 was validated with ConnectX-5 firmware 16.34.1002 (DPDK v20.11.6
	// and v21.11.2 release notes, "Tested Platforms").
	if r, ok := m.Lookup(16, Driver{Kind: KindOFED, Version: "5.7-1.0.2"}); !ok || r.Recommended != "16.34.1002" {
		t.Errorf("ConnectX-5 on OFED 5.7: %+v %v; want 16.34.1002", r, ok)
	}
	extra, err := ParseMatrix([]byte(`{"rows":[
		{"family":16,"driver":"ofed","driver_version":"24.10","min":"16.28.1002","source":"site qualification"},
		{"family":16,"driver":"ofed","driver_version":"24.10-2","min":"16.33.1048","source":"site"},
		{"family":40,"driver":"ofed","driver_version":"5.8","unsupported":true,"source":"site"}]}`), "extra.json")
	if err != nil {
		t.Fatal(err)
	}
	merged := m.Merge(extra)
	if r, _ := merged.Lookup(16, Driver{Kind: KindOFED, Version: "24.10-0.7.0"}); r.Min != "16.28.1002" || r.Recommended != "" || r.From != "extra.json" {
		t.Errorf("override: %+v", r)
	}
	if r, _ := merged.Lookup(16, Driver{Kind: KindOFED, Version: "24.10-2.1.8"}); r.Min != "16.33.1048" {
		t.Errorf("the longest matching series must win: %+v", r)
	}
	// The embedded matrix has its own 24.10-2 row for ConnectX-5, which the site's replaces.
	if len(merged.Rows) != len(m.Rows)+1 {
		t.Errorf("merge: %d rows, want %d", len(merged.Rows), len(m.Rows)+1)
	}
	for _, bad := range []string{
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27.2000"}]}`,                                         // no source
		`{"rows":[{"family":99,"driver":"ofed","min":"99.1.1","source":"x"}]}`,                                // unknown family
		`{"rows":[{"family":16,"driver":"mofed","min":"16.27.2000","source":"x"}]}`,                           // driver kind
		`{"rows":[{"family":16,"driver":"ofed","min":"20.27.2000","source":"x"}]}`,                            // wrong family
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27","source":"x"}]}`,                                 // version
		`{"rows":[{"family":16,"driver":"ofed","source":"x"}]}`,                                               // nothing to judge
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27.2000","source":"x","max":"1"}]}`,                  // typo'd field
		`{"rows":[{"family":16,"driver":"ofed","recommended":"16.35.2000","unsupported":true,"source":"x"}]}`, // both
		`not json`,
	} {
		if _, err := ParseMatrix([]byte(bad), "bad.json"); err == nil || !strings.Contains(err.Error(), "bad.json") {
			t.Errorf("ParseMatrix(%s): err %v, want an error naming the file", bad, err)
		}
	}
}

// The embedded matrix goes through the decoder --matrix files do: strict, every row usable.
func TestEmbeddedMatrixDecodesStrictly(t *testing.T) {
	rows, err := optfile.DecodeMatrix(defaultMatrix, embeddedName, KnownFamily)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		_, hasMin := r.MinVersion()
		_, hasRec := r.RecommendedVersion()
		if r.From != embeddedName || r.Source == "" || (!hasMin && !hasRec && !r.Unsupported) {
			t.Errorf("rows[%d] %+v is not usable", i, r)
		}
	}
	if KindOFED != optfile.DriverOFED || KindInbox != optfile.DriverInbox {
		t.Error("the driver kinds detected and the matrix's driver values must be spelt alike")
	}
}

// Every embedded row is printed as evidence to operators: its source must name a public
// document (title with version and the section in quotes), never private notes or how the
// work is organised.
var (
	docTitle   = regexp.MustCompile(`(Documentation|Release Notes) (Rev |v)?[0-9]`)
	docSection = regexp.MustCompile(`"[A-Z][^"]+"`)
	// A Markdown file is a repository's text, not a vendor document a user can look up.
	notPublic = regexp.MustCompile(`(?i)\.md\b`)
)

// sourceProblem says what is wrong with a row's source, or "".
func sourceProblem(source, note string) string {
	for _, text := range []string{source, note} {
		if bad := notPublic.FindString(text); bad != "" {
			return fmt.Sprintf("cites %q, not a public document", bad)
		}
	}
	if !docTitle.MatchString(source) || !docSection.MatchString(source) {
		return "names no document title with its version and the section"
	}
	return ""
}

func TestMatrixSourcesArePublic(t *testing.T) {
	for _, bad := range []string{
		"MLNX_OFED 23.10-0.5.5.0 bundles xx.39.1002, design.md §6.2 (NVIDIA release notes)",
		`NVIDIA Firmware Tools (MFT) Documentation v4.35.0, "Supported Adapter Cards Firmware Versions", see docs/firmware.md`,
		"MLNX_OFED 5.9-0.5.6.0 bundles xx.36.1010; no documented minimum",
		`MFT Documentation v4.23.0 lists 16.35.2000`,
	} {
		if sourceProblem(bad, "") == "" {
			t.Errorf("source accepted: %s", bad)
		}
	}
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Rows {
		if p := sourceProblem(r.Source, r.Note); p != "" {
			t.Errorf("row %s: %s: %s", rowKey(r), p, r.Source)
		}
	}
	var raw map[string]any
	if err := json.Unmarshal(defaultMatrix, &raw); err != nil {
		t.Fatal(err)
	}
	if c, _ := raw["comment"].(string); notPublic.FindString(c) != "" {
		t.Errorf("matrix comment mentions %q", notPublic.FindString(c))
	}
}

// The current families have a row for the in-box driver and for the MLNX_OFED/DOCA-OFED
// releases in use; a release that does not support a family says so.
func TestMatrixCoverage(t *testing.T) {
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range []int{14, 16, 20, 22, 24, 26, 28, 32, 40} {
		if r, ok := m.Lookup(fam, Driver{Kind: KindInbox, Version: "6.8.0-45-generic"}); !ok || r.rec == nil || r.min != nil {
			t.Errorf("family %d in-box: %+v %v; want the newest firmware and no minimum", fam, r, ok)
		}
	}
	for _, series := range []string{"23.04", "23.07", "23.10", "24.01", "24.04", "24.07", "24.10", "25.01", "25.04", "25.07"} {
		for _, fam := range []int{20, 22, 24, 26, 28} {
			if r, ok := m.Lookup(fam, Driver{Kind: KindOFED, Version: series + "-0.1.2"}); !ok || r.rec == nil {
				t.Errorf("family %d on %s: %+v %v", fam, series, r, ok)
			}
		}
	}
	// MLNX_OFED 5.0 to 5.8, from DPDK's "Tested Platforms" (the GA of each, or the update DPDK
	// tested: 5.0-2, 5.2-2, 5.6-2).
	for _, v := range []string{"5.0-2.1.8", "5.1-0.6.6", "5.2-2.2.0", "5.3-1.0.0", "5.4-3.5.8", "5.5-1.0.3", "5.6-2.0.9", "5.7-1.0.2", "5.8-1.0.1"} {
		for _, fam := range []int{16, 22} {
			if r, ok := m.Lookup(fam, Driver{Kind: KindOFED, Version: v}); !ok || r.rec == nil || !strings.Contains(r.Source, "DPDK Release Notes") {
				t.Errorf("family %d on %s: %+v %v", fam, v, r, ok)
			}
		}
	}
	// Updates and an earlier series that only DPDK stable releases' "Validation" sections list,
	// for the two families NVIDIA tested there (ConnectX-4 Lx, ConnectX-5).
	for _, tc := range []struct{ version, lx, cx5 string }{
		{"4.7-1.0.0", "14.26.1040", "16.26.292"},
		{"4.7-3.2.9", "14.26.4012", "16.26.4012"},
		{"5.0-1.0.0", "14.27.1016", "16.27.1016"},
		{"5.1-2.5.8", "14.28.2006", "16.28.2006"},
		{"5.2-1.0.4", "14.29.1016", "16.29.1016"},
	} {
		for fam, want := range map[int]string{14: tc.lx, 16: tc.cx5} {
			if r, ok := m.Lookup(fam, Driver{Kind: KindOFED, Version: tc.version}); !ok || r.Recommended != want || !strings.Contains(r.Source, "DPDK Release Notes v1") || !strings.Contains(r.Source, `"Validation"`) {
				t.Errorf("family %d on %s: %+v %v; want %s from a DPDK stable release", fam, tc.version, r, ok, want)
			}
		}
	}
	// DPDK v20.05 gives MLNX_OFED 5.0-2.1.8.0 with ConnectX-4 Lx 14.27.2008, v19.11.3 and
	// v18.11.9 with 14.27.1016: the lower.
	if r, ok := m.Lookup(14, Driver{Kind: KindOFED, Version: "5.0-2.1.8"}); !ok || r.Recommended != "14.27.1016" {
		t.Errorf("ConnectX-4 Lx on 5.0-2: %+v %v; want 14.27.1016", r, ok)
	}
	if r, ok := m.Lookup(12, Driver{Kind: KindOFED, Version: "25.01-0.6.0"}); !ok || !r.Unsupported {
		t.Errorf("ConnectX-4 on DOCA-OFED 25.01: %+v %v; want unsupported", r, ok)
	}
	for _, fam := range []int{24, 26, 28, 32, 40} {
		if r, ok := m.Lookup(fam, Driver{Kind: KindOFED, Version: "4.9-7.1.0"}); !ok || !r.Unsupported {
			t.Errorf("family %d on MLNX_OFED 4.9: %+v %v; want unsupported", fam, r, ok)
		}
	}
	if r, ok := m.Lookup(40, Driver{Kind: KindOFED, Version: "24.10-3.2.5"}); !ok || !r.Unsupported {
		t.Errorf("ConnectX-8 on 24.10: %+v %v; want unsupported", r, ok)
	}
}

func find(t *testing.T, fs []engine.Finding, id, subject string) engine.Finding {
	t.Helper()
	got := checktest.Find(fs, id, subject)
	if len(got) != 1 {
		t.Fatalf("%s@%s: %d findings, want 1: %+v", id, subject, len(got), fs)
	}
	return got[0]
}

// siteMatrix is the fw-matrix scenario's own firmware rule (a minimum NVIDIA does not document).
var siteMatrix = filepath.Join("..", "..", "fixtures", "sysfs", "fw-matrix", "site-matrix.json")

// A site minimum: ConnectX-5 firmware 16.26.1040 with the mlx5 driver of OFED 5.7-1.0.2, which the
// site's --matrix requires to be at least 16.27.2000.
func TestSiteMinimum(t *testing.T) {
	rows, err := optfile.LoadMatrix(siteMatrix, KnownFamily)
	if err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, "fw-matrix", checks.Options{MatrixAdditions: rows, MatrixFile: siteMatrix}, "firmware")
	f := find(t, fs, "firmware.version", "mlx5_0")
	if f.Severity != report.Critical {
		t.Fatalf("severity %v: %s", f.Severity, f.Summary)
	}
	if v, _ := checktest.Evidence(f, "driver"); !strings.Contains(v, "5.7-1.0.2") {
		t.Errorf("driver evidence %q", v)
	}
	for _, want := range []string{"mlxup", "mlxfwmanager", "16.27.2000 or newer", "reset the card"} {
		if !strings.Contains(f.Remediation, want) {
			t.Errorf("remediation %q lacks %q", f.Remediation, want)
		}
	}
	bad := find(t, fs, "firmware.version", "mlx5_1")
	if bad.Severity != report.Unknown || !strings.Contains(bad.Summary, "not a number") {
		t.Errorf("unparseable fw_ver: %v %q", bad.Severity, bad.Summary)
	}
	fam := find(t, fs, "firmware.version", "mlx5_2")
	if fam.Severity != report.Unknown || !strings.Contains(fam.Summary, "family 60 is not in the matrix") {
		t.Errorf("unknown family: %v %q", fam.Severity, fam.Summary)
	}
	// Without the site's file the embedded matrix judges it: 16.26.1040 predates what even
	// MLNX_OFED 5.6 was validated with.
	fs = checktest.Run(t, "fw-matrix", checks.Options{}, "firmware.version")
	if f := find(t, fs, "firmware.version", "mlx5_0"); f.Severity != report.Critical || !strings.Contains(f.Remediation, "16.34.1002 or newer") {
		t.Errorf("OFED 5.7 without the site's row: %v %q %q", f.Severity, f.Summary, f.Remediation)
	}
}

// --matrix overrides a row: a site that qualified 16.26.1040 with this driver says so.
func TestMatrixFileOverride(t *testing.T) {
	p := filepath.Join(t.TempDir(), "site.json")
	doc := `{"rows":[{"family":16,"driver":"ofed","driver_version":"5.7","min":"16.26.1040","recommended":"16.26.1040","source":"site qualification"}]}`
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := optfile.LoadMatrix(p, KnownFamily)
	if err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, "fw-matrix", checks.Options{MatrixAdditions: rows, MatrixFile: p}, "firmware.version")
	f := find(t, fs, "firmware.version", "mlx5_0")
	if f.Severity != report.OK {
		t.Errorf("with the override: %v %q", f.Severity, f.Summary)
	}
	if v, _ := checktest.Evidence(f, "matrix"); !strings.Contains(v, "min 16.26.1040") {
		t.Errorf("matrix evidence %q", v)
	}
	named := false
	for _, e := range f.Evidence {
		named = named || (e.Name == "matrix" && e.Source == p+": site qualification")
	}
	if !named {
		t.Errorf("the matrix evidence must name the file the row came from: %+v", f.Evidence)
	}
}

// A healthy ConnectX-6 Dx on a distribution's in-box mlx5_core: NVIDIA documents no minimum, so
// the finding compares with the newest published firmware and is never unknown.
func TestInboxDriver(t *testing.T) {
	fs := checktest.Run(t, "fw-inbox-cx6dx", checks.Options{}, "firmware")
	f := find(t, fs, "firmware.version", "mlx5_0")
	if f.Severity != report.OK || !strings.Contains(f.Summary, "newest firmware NVIDIA publishes for ConnectX-6 Dx") ||
		!strings.Contains(f.Summary, "no minimum is documented") {
		t.Errorf("%v: %s", f.Severity, f.Summary)
	}
	if v, _ := checktest.Evidence(f, "matrix"); !strings.Contains(v, "no minimum documented, newest 22.48.1000") {
		t.Errorf("matrix evidence %q", v)
	}
	// An older in-box ConnectX-6 Dx (22.39.1002) is information, not a fault.
	fs = checktest.Run(t, "port-roce", checks.Options{}, "firmware.version")
	for _, d := range []string{"mlx5_0", "mlx5_1"} {
		f := find(t, fs, "firmware.version", d)
		if f.Severity != report.Info || !strings.Contains(f.Summary, "the newest firmware it publishes for ConnectX-6 Dx is 22.48.1000") ||
			!strings.HasPrefix(f.Remediation, "Optional: ") {
			t.Errorf("%s: %v %q %q", d, f.Severity, f.Summary, f.Remediation)
		}
	}
}

// A release that does not support the card, read from a snapshot: the OFED version file and the
// card's family select the matrix's "unsupported" row, a warning whose fix names a release that
// does, and no firmware update is proposed for it.
func TestUnsupportedRelease(t *testing.T) {
	f := find(t, checktest.Run(t, "fw-ofed-unsupported", checks.Options{}, "firmware.version"), "firmware.version", "mlx5_0")
	if f.Severity != report.Warning || f.Summary != "mlx5_0: ConnectX-8 is not supported by mlx5_core 24.10-1.1.4 (MLNX_OFED/DOCA-OFED)" {
		t.Errorf("%v: %s", f.Severity, f.Summary)
	}
	checktest.WantEvidence(t, f, "driver", "mlx5_core 24.10-1.1.4 (MLNX_OFED/DOCA-OFED)")
	checktest.WantEvidence(t, f, "matrix", "not supported")
	if !strings.Contains(f.Remediation, "DOCA-OFED 25.01") || strings.Contains(f.Remediation, "mlxfwmanager") {
		t.Errorf("fix %q", f.Remediation)
	}
}

func dev(vendor, id uint16, fw string) *inventory.Device {
	return &inventory.Device{Name: "dev0", FWVer: fw, Driver: "drv", HCAType: "",
		PCI: &inventory.PCIFunction{BDF: "0000:3b:00.0", Vendor: vendor, DeviceID: id, SysPath: "/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"}}
}

// No matrix exists for other vendors and --matrix cannot add one: that is information, never
// "could not check" (which would make every host with such a NIC exit 3).
func TestOtherVendor(t *testing.T) {
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	f := judgeVersion(&checks.Env{}, m, dev(0x14e4, 0x1750, "227.0.131.0"))
	if f.Severity != report.Info || !strings.Contains(f.Summary, "vendor 14e4") || f.Remediation == "" {
		t.Errorf("%v %q %q", f.Severity, f.Summary, f.Remediation)
	}
}

func TestJudgeRow(t *testing.T) {
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	site, err := ParseMatrix([]byte(`{"rows":[{"family":22,"driver":"inbox","driver_version":"6.8","min":"22.40.1000","recommended":"22.48.1000","source":"site"}]}`), "site.json")
	if err != nil {
		t.Fatal(err)
	}
	inbox := Driver{Module: "mlx5_core", Kind: KindInbox, Version: "6.1.0-56-amd64"}
	ofed := func(v string) Driver { return Driver{Module: "mlx5_core", Kind: KindOFED, Version: v} }
	for _, tc := range []struct {
		name     string
		m        *Matrix
		id       uint16
		fw       string
		drv      Driver
		mismatch string
		sev      report.Severity
		summary  string
	}{
		{"in-box newest", m, 0x101d, "22.48.1000", inbox, "", report.OK, "at or past 22.48.1000, the newest firmware NVIDIA publishes"},
		{"in-box newer than the matrix", m, 0x101d, "22.49.1000", inbox, "", report.OK, "no minimum is documented"},
		{"in-box behind", m, 0x101d, "22.39.1002", inbox, "", report.Info, "no minimum firmware for the in-box driver"},
		{"in-box family without a row", m, 0x1011, "10.16.1200", inbox, "", report.Info, "lists no newest firmware for Connect-IB"},
		{"in-box site minimum", m.Merge(site), 0x101d, "22.39.1002", Driver{Module: "mlx5_core", Kind: KindInbox, Version: "6.8.0-45-generic"}, "", report.Critical, "older than 22.40.1000, the minimum"},
		{"OFED bundled", m, 0x1021, "28.43.2026", ofed("24.10-1.1.4"), "", report.OK, "bundled with MLNX_OFED/DOCA-OFED 24.10-1 (running mlx5_core 24.10-1.1.4); no minimum is documented"},
		{"OFED behind", m, 0x1021, "28.39.1002", ofed("23.10-1.1.9"), "", report.Info, "older than 28.39.2048, bundled with MLNX_OFED/DOCA-OFED 23.10-1"},
		// Behind this release's firmware and behind what the earlier 5.6-2 was validated with.
		{"OFED behind an earlier release", m, 0x1017, "16.26.1040", ofed("5.7-1.0.2"), "", report.Critical,
			"older than 16.33.1048, the firmware MLNX_OFED/DOCA-OFED 5.6-2 (a release earlier than this one) was already validated with; the running mlx5_core 5.7-1.0.2 (MLNX_OFED/DOCA-OFED) was validated with 16.34.1002"},
		// 5.9 follows the 5.8-7 LTS update in version order, not in time: 5.8's first row bounds it.
		{"OFED behind, LTS update of the earlier series", m, 0x1017, "16.35.1012", ofed("5.9-0.5.6"), "", report.Info, "older than 16.35.2000"},
		{"OFED release without a row, at the later one's", m, 0x1017, "16.35.3006", ofed("23.10-0.5.5"), "", report.Info,
			"at or past 16.35.3006, which MLNX_OFED/DOCA-OFED 23.10-1 (later than this one) was validated with: very likely compatible"},
		{"OFED release without a row, behind the earlier one's", m, 0x1017, "16.35.1012", ofed("23.10-0.5.5"), "", report.Critical,
			"older than 16.35.3006, the firmware MLNX_OFED/DOCA-OFED 23.07 (a release earlier than this one) was already validated with; the matrix has no row for mlx5_core 23.10-0.5.5"},
		{"OFED release without a row, between", m, 0x1017, "16.35.3006", ofed("24.04-0.6.6"), "", report.Unknown,
			"no row for mlx5_core 24.04-0.6.6 (MLNX_OFED/DOCA-OFED), compatibility not judged; it is not older than 16.35.3006 (MLNX_OFED/DOCA-OFED 24.01, earlier) but older than 16.35.4030 (MLNX_OFED/DOCA-OFED 24.10, later)"},
		{"OFED release newer than the matrix", m, 0x1021, "28.99.1000", ofed("26.01-0.1.2"), "", report.Unknown, "not older than 28.46.1006 (MLNX_OFED/DOCA-OFED 25.07, the newest earlier release the matrix knows)"},
		{"OFED update without a row, at the later update's", m, 0x1017, "16.33.1048", ofed("5.6-1.0.3"), "", report.Info, "at or past 16.33.1048, which MLNX_OFED/DOCA-OFED 5.6-2 (later than this one)"},
		// No DPDK release lists MLNX_OFED 4.9; firmware older than what 4.7 was already
		// validated with is outdated for it, and firmware 5.0 was validated with very likely fits.
		{"OFED 4.9, behind the earlier 4.7", m, 0x1017, "16.25.1020", ofed("4.9-7.1.0"), "", report.Critical,
			"older than 16.26.0292, the firmware MLNX_OFED/DOCA-OFED 4.7 (a release earlier than this one) was already validated with; the matrix has no row for mlx5_core 4.9-7.1.0"},
		{"OFED 4.9, at the later 5.0-1", m, 0x1017, "16.27.1016", ofed("4.9-4.1.7"), "", report.Info,
			"at or past 16.27.1016, which MLNX_OFED/DOCA-OFED 5.0-1 (later than this one) was validated with"},
		{"OFED unsupported", m, 0x1021, "28.39.1002", ofed("4.9-7.1.0"), "", report.Warning, "ConnectX-7 is not supported by mlx5_core 4.9-7.1.0"},
		{"mismatch without a row", m, 0x1017, "16.35.3006", ofed("23.10-0.5.5"), "PCI id mismatch", report.Warning, "PCI id mismatch"},
		{"mismatch with a row", m, 0x101d, "22.48.1000", inbox, "PCI id mismatch", report.Warning, "PCI id mismatch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := ParseVersion(tc.fw)
			if err != nil {
				t.Fatal(err)
			}
			fam, _ := FamilyOf(v.Major)
			row, ok := tc.m.Lookup(fam.Major, tc.drv)
			var f engine.Finding
			var matched *Entry
			if ok {
				matched = &row
			}
			e, l := tc.m.Neighbours(fam.Major, tc.drv, matched)
			judgeRow(&f, dev(nvidiaVendor, tc.id, tc.fw), v, fam, tc.drv, row, ok, tc.mismatch, bounds{e, l})
			if f.Severity != tc.sev || !strings.Contains(f.Summary, tc.summary) {
				t.Errorf("%v %q; want %v containing %q", f.Severity, f.Summary, tc.sev, tc.summary)
			}
			if (f.Severity == report.Warning || f.Severity == report.Critical || f.Severity == report.Unknown) && f.Remediation == "" {
				t.Error("a problem needs a remediation")
			}
		})
	}
}

func TestDriftAndPolicy(t *testing.T) {
	policy := filepath.Join("..", "..", "fixtures", "sysfs", "fw-drift", "policy.json")
	pol, err := optfile.LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, "fw-drift", checks.Options{Policy: pol, PolicyFile: policy}, "firmware")
	// mlx5_2 is another board (PSID MT_0000000891): not identical to the other two.
	g := find(t, fs, "firmware.consistency", "ConnectX-7 15b3:1021 MT_0000000838")
	if g.Severity != report.Warning || !strings.Contains(g.Summary, "2 identical cards differ: firmware 28.39.1002 on mlx5_0 vs 28.41.1000 on mlx5_1") ||
		g.Subject.Device != "mlx5_0" {
		t.Errorf("drift: %v %q %+v", g.Severity, g.Summary, g.Subject)
	}
	if g := find(t, fs, "firmware.consistency", "ConnectX-7 15b3:1021 MT_0000000891"); g.Severity != report.OK || !strings.Contains(g.Summary, "one card (mlx5_2)") {
		t.Errorf("other board: %v %q", g.Severity, g.Summary)
	}
	for dev, sev := range map[string]report.Severity{"mlx5_0": report.Critical, "mlx5_1": report.OK, "mlx5_2": report.Warning} {
		if f := find(t, fs, "firmware.consistency", dev+" policy"); f.Severity != sev {
			t.Errorf("policy %s: %v, want %v (%s)", dev, f.Severity, sev, f.Summary)
		}
	}
	named := false
	for _, e := range find(t, fs, "firmware.consistency", "mlx5_0 policy").Evidence {
		named = named || (e.Name == "firmware vs fleet minimum" && e.Source == policy && e.Expected == ">= 28.41.1000")
	}
	if !named {
		t.Error("the fleet minimum's evidence must name the policy file it came from")
	}
	// 28.39.1002 is behind the 28.39.2048 bundled with MLNX_OFED 23.10-1.1.9.0: information.
	for d, sev := range map[string]report.Severity{"mlx5_0": report.Info, "mlx5_1": report.OK, "mlx5_2": report.OK} {
		if f := find(t, fs, "firmware.version", d); f.Severity != sev {
			t.Errorf("version %s: %v %q, want %v", d, f.Severity, f.Summary, sev)
		}
	}
	// Without the policy only the drift remains.
	fs = checktest.Run(t, "fw-drift", checks.Options{}, "firmware.consistency")
	if len(fs) != 2 {
		t.Errorf("without --policy: %d findings, want the two groups' only", len(fs))
	}
}

func TestSoftwareAndVF(t *testing.T) {
	fs := checktest.Run(t, "pcie-gen3x8-slot", checks.Options{}, "firmware")
	if f := find(t, fs, "firmware.version", "mlx5_0"); f.Severity != report.Info || !strings.Contains(f.Summary, "20.43.8004") {
		t.Errorf("in-box ConnectX-6 on 20.43.2566 (newest 20.43.8004): %v %q", f.Severity, f.Summary)
	}
	// The VF reports its PF's firmware; it is not a second card of the group.
	g := find(t, fs, "firmware.consistency", "ConnectX-6 15b3:101b")
	if g.Severity != report.OK || len(g.Evidence) != 1 {
		t.Errorf("group: %v %+v", g.Severity, g.Evidence)
	}
	fs = checktest.Run(t, filepath.Join("..", "pcie", "testdata", "soft-roce.txtar"), checks.Options{}, "firmware")
	if f := find(t, fs, "firmware.version", "rxe0"); f.Severity != report.Skipped {
		t.Errorf("rxe0: %v %q", f.Severity, f.Summary)
	}
	if f := find(t, fs, "firmware.pending", "rxe0"); f.Severity != report.Skipped {
		t.Errorf("pending: %v", f.Severity)
	}
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"16.26.1040", "0.0.0", "14.32.1010 (MT_2420110034)", "1.2", "99999.1.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		w, err := ParseVersion(v.String())
		if err != nil || w != v {
			t.Fatalf("%q -> %v does not round-trip: %v %v", s, v, w, err)
		}
	})
}

// The two PFs of one dual-port card share one flash: they are one card, not "2 identical
// cards", and there is nothing to compare them with.
func TestConsistencyCountsCardsNotFunctions(t *testing.T) {
	fs := checktest.Run(t, "pcie-dual-pf-shared", checks.Options{}, "firmware.consistency")
	f := checktest.One(t, fs, "firmware.consistency", "")
	if f.Severity != report.OK || !strings.Contains(f.Summary, "one card with 2 PCI functions (mlx5_0, mlx5_1)") {
		t.Errorf("%s: %s", f.Severity, f.Summary)
	}
}

// Before Linux 5.11 the in-box mlx5_core declared a fixed MODULE_VERSION ("5.0-0", earlier
// "3.0-1"): that is the kernel's driver, judged by the kernel release, not an OFED 5.0 release.
func TestInboxDriverOfOlderKernels(t *testing.T) {
	for v, want := range map[string]string{"5.0-0": KindInbox, "3.0-1": KindInbox, "5.8-1.0.1": KindOFED, "24.10-1.1.4": KindOFED} {
		root := t.TempDir()
		os.MkdirAll(filepath.Join(root, "sys/module/mlx5_core"), 0o755)
		os.MkdirAll(filepath.Join(root, "proc/sys/kernel"), 0o755)
		os.WriteFile(filepath.Join(root, "sys/module/mlx5_core/version"), []byte(v+"\n"), 0o644)
		os.WriteFile(filepath.Join(root, "proc/sys/kernel/osrelease"), []byte("5.4.0-150-generic\n"), 0o644)
		h, err := host.New(host.Options{Root: root, Kind: host.KindRoot})
		if err != nil {
			t.Fatal(err)
		}
		d, err := detectDriver(h, "mlx5_core")
		if err != nil || d.Kind != want {
			t.Errorf("version %q: %+v %v, want %s", v, d, err, want)
		}
	}
}

// The case firmware.version was designed around: ConnectX-5 16.26.1040 under MLNX_OFED
// 5.7-1.0.2 is critical, and the fix names the firmware 5.7 was validated with.
func TestCX5OnOFED57(t *testing.T) {
	f := find(t, checktest.Run(t, "fw-cx5-ofed57", checks.Options{}, "firmware.version"), "firmware.version", "mlx5_0")
	if f.Severity != report.Critical || !strings.Contains(f.Summary, "older than 16.33.1048") || !strings.Contains(f.Summary, "was validated with 16.34.1002") {
		t.Errorf("%v: %s", f.Severity, f.Summary)
	}
	checktest.WantEvidence(t, f, "matrix (earlier release)", "MLNX_OFED/DOCA-OFED 5.6-2: validated with 16.33.1048")
	if !strings.Contains(f.Remediation, "to 16.34.1002 or newer") {
		t.Errorf("fix %q", f.Remediation)
	}
}

// A release without a row is judged from its neighbours: at or past the later release's
// firmware is very likely fine (information), older than the earlier release's is critical.
func TestNeighbourInference(t *testing.T) {
	fs := checktest.Run(t, "fw-ofed-neighbours", checks.Options{}, "firmware.version")
	if f := find(t, fs, "firmware.version", "mlx5_0"); f.Severity != report.Info || !strings.Contains(f.Summary, "5.6-2 (later than this one)") {
		t.Errorf("mlx5_0: %v %s", f.Severity, f.Summary)
	}
	f := find(t, fs, "firmware.version", "mlx5_1")
	if f.Severity != report.Critical || !strings.Contains(f.Summary, "older than 14.32.1010, the firmware MLNX_OFED/DOCA-OFED 5.5 (a release earlier than this one)") {
		t.Errorf("mlx5_1: %v %s", f.Severity, f.Summary)
	}
	if !strings.Contains(f.Remediation, "to 14.32.1010 or newer") || !strings.Contains(f.Remediation, "5.7 was validated with 14.32.1010") {
		t.Errorf("mlx5_1 fix %q", f.Remediation)
	}
}

// Neighbours orders updates within a series and only each series' first row across series.
func TestNeighbours(t *testing.T) {
	m, err := DefaultMatrix()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		family         int
		version        string
		earlier, later string
	}{
		{16, "5.6-1.0.3", "5.5", "5.6-2"},
		{16, "5.9-0.5.6", "5.8", "23.04"}, // not 5.8-7, an LTS update shipped after 5.9
		{28, "23.10-4.0.9", "23.10-1", "24.01"},
		{16, "4.9-7.1.0", "4.7", "5.0-1"}, // 4.7's first row, not its 4.7-3 update
		{16, "5.0-2.1.8", "5.0-1", "5.1"},
		{28, "26.01-0.1.2", "25.07", ""},
		{28, "not-a-version", "", ""},
	} {
		e, l := m.Neighbours(tc.family, Driver{Kind: KindOFED, Version: tc.version}, nil)
		got := func(n *Neighbour) string {
			if n == nil {
				return ""
			}
			return n.DriverVersion
		}
		if got(e) != tc.earlier || got(l) != tc.later {
			t.Errorf("family %d on %s: earlier %q later %q; want %q %q", tc.family, tc.version, got(e), got(l), tc.earlier, tc.later)
		}
	}
	if e, l := m.Neighbours(22, Driver{Kind: KindInbox, Version: "6.8.0"}, nil); e != nil || l != nil {
		t.Error("the in-box driver has no release neighbours")
	}
}

// Every ConnectX VF is 15b3:101e: VFs of a ConnectX-6 Dx and a ConnectX-7 in one guest are two
// groups told apart by the firmware major, not three "identical cards" that differ.
func TestConsistencyMixedVFs(t *testing.T) {
	fs := checktest.Run(t, "fw-vf-mixed", checks.Options{}, "firmware.consistency")
	if len(fs) != 2 {
		t.Fatalf("%d findings, want one per family: %+v", len(fs), fs)
	}
	if f := find(t, fs, "firmware.consistency", "ConnectX-6 Dx 15b3:101e"); f.Severity != report.OK || !strings.Contains(f.Summary, "one card (mlx5_0)") {
		t.Errorf("ConnectX-6 Dx VF: %v %s", f.Severity, f.Summary)
	}
	if f := find(t, fs, "firmware.consistency", "ConnectX-7 15b3:101e"); f.Severity != report.OK || !strings.Contains(f.Summary, "2 identical cards run the same firmware 28.39.2048") {
		t.Errorf("ConnectX-7 VFs: %v %s", f.Severity, f.Summary)
	}
}

// A driver version comes from the host and a series from a --matrix file: parseRelease must
// never panic, and what it accepts orders consistently.
func FuzzParseRelease(f *testing.F) {
	for _, s := range []string{"5.7-1.0.2", "23.10-1", "24.10", "5.8-", "-1", "5..7", "99999999999999999999.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := parseRelease(s)
		if !ok {
			return
		}
		if r.major < 0 || r.minor < 0 || r.update < 0 {
			t.Fatalf("%q -> %+v", s, r)
		}
		if seriesLess(r.series(), r.series()) {
			t.Fatalf("%q: a series is less than itself", s)
		}
	})
}
