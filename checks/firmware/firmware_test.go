package firmware

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/optfile"
	"github.com/rdmadiag/rdmadiag/report"
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

// The families the issue names, by firmware major.
func TestFamilies(t *testing.T) {
	for major, name := range map[int]string{12: "ConnectX-4", 14: "ConnectX-4 Lx", 16: "ConnectX-5", 20: "ConnectX-6",
		22: "ConnectX-6 Dx", 26: "ConnectX-6 Lx", 28: "ConnectX-7", 40: "ConnectX-8", 18: "BlueField", 24: "BlueField-2", 32: "BlueField-3"} {
		if f, ok := FamilyOf(major); !ok || f.Name != name {
			t.Errorf("family %d = %+v, want %s", major, f, name)
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
	for _, r := range m.Rows {
		if r.Source == "" {
			t.Errorf("row %s cites no source", rowKey(r))
		}
	}
	row, ok := m.Lookup(16, Driver{Kind: KindOFED, Version: "5.7-1.0.2"})
	if !ok || row.Min != "16.27.2000" {
		t.Fatalf("ConnectX-5 with OFED 5.7-1.0.2: %+v %v; want min 16.27.2000", row, ok)
	}
	if _, ok := m.Lookup(16, Driver{Kind: KindOFED, Version: "4.9-7.1.0"}); ok {
		t.Error("no row for OFED 4.9: Lookup must say so, not pick another series")
	}
	extra, err := ParseMatrix([]byte(`{"rows":[
		{"family":16,"driver":"ofed","driver_version":"5.7","min":"16.28.1002","source":"site qualification"},
		{"family":16,"driver":"ofed","driver_version":"5.7-2","min":"16.33.1048","source":"site"}]}`), "extra.json")
	if err != nil {
		t.Fatal(err)
	}
	merged := m.Merge(extra)
	if r, _ := merged.Lookup(16, Driver{Kind: KindOFED, Version: "5.7-1.0.2"}); r.Min != "16.28.1002" || r.From != "extra.json" {
		t.Errorf("override: %+v", r)
	}
	if r, _ := merged.Lookup(16, Driver{Kind: KindOFED, Version: "5.7-2.0.1"}); r.Min != "16.33.1048" {
		t.Errorf("the longest matching series must win: %+v", r)
	}
	if len(merged.Rows) != len(m.Rows)+1 {
		t.Errorf("merge: %d rows, want %d", len(merged.Rows), len(m.Rows)+1)
	}
	for _, bad := range []string{
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27.2000"}]}`,                        // no source
		`{"rows":[{"family":99,"driver":"ofed","min":"99.1.1","source":"x"}]}`,               // unknown family
		`{"rows":[{"family":16,"driver":"mofed","min":"16.27.2000","source":"x"}]}`,          // driver kind
		`{"rows":[{"family":16,"driver":"ofed","min":"20.27.2000","source":"x"}]}`,           // wrong family
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27","source":"x"}]}`,                // version
		`{"rows":[{"family":16,"driver":"ofed","source":"x"}]}`,                              // nothing to judge
		`{"rows":[{"family":16,"driver":"ofed","min":"16.27.2000","source":"x","max":"1"}]}`, // typo'd field
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
		if r.From != embeddedName || r.Source == "" || (!hasMin && !hasRec) {
			t.Errorf("rows[%d] %+v is not usable", i, r)
		}
	}
	if KindOFED != optfile.DriverOFED || KindInbox != optfile.DriverInbox {
		t.Error("the driver kinds detected and the matrix's driver values must be spelt alike")
	}
}

func find(t *testing.T, fs []report.Finding, id, subject string) report.Finding {
	t.Helper()
	got := checktest.Find(fs, id, subject)
	if len(got) != 1 {
		t.Fatalf("%s@%s: %d findings, want 1: %+v", id, subject, len(got), fs)
	}
	return got[0]
}

// The documented case: ConnectX-5 firmware 16.26.1040 with the mlx5 driver of OFED 5.7-1.0.2.
func TestDocumentedFirmwareCase(t *testing.T) {
	fs := checktest.Run(t, "fw-matrix", checks.Options{}, "firmware")
	f := find(t, fs, "firmware.version", "mlx5_0")
	if f.Severity != report.Critical {
		t.Fatalf("severity %v: %s", f.Severity, f.Summary)
	}
	if v, _ := checktest.Evidence(f, "driver"); !strings.Contains(v, "5.7-1.0.2") {
		t.Errorf("driver evidence %q", v)
	}
	for _, want := range []string{"mlxup", "mlxfwmanager", "16.27.2000 or newer", "16.27.4000", "reset the card"} {
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
}

// --matrix overrides an embedded row: a site that qualified 16.26.1040 with this driver says so.
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

func TestDriftAndPolicy(t *testing.T) {
	policy := filepath.Join("..", "..", "fixtures", "sysfs", "fw-drift", "policy.json")
	pol, err := optfile.LoadPolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	fs := checktest.Run(t, "fw-drift", checks.Options{Policy: pol, PolicyFile: policy}, "firmware")
	g := find(t, fs, "firmware.consistency", "ConnectX-7 15b3:1021")
	if g.Severity != report.Warning || !strings.Contains(g.Summary, "28.39.1002 on mlx5_0 vs 28.41.1000 on mlx5_1,mlx5_2") ||
		!strings.Contains(g.Summary, "MT_0000000891 on mlx5_2") || g.Subject.Device != "mlx5_0" {
		t.Errorf("drift: %v %q %+v", g.Severity, g.Summary, g.Subject)
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
	for _, d := range []string{"mlx5_0", "mlx5_1", "mlx5_2"} {
		if f := find(t, fs, "firmware.version", d); f.Severity != report.OK {
			t.Errorf("version %s: %v %q", d, f.Severity, f.Summary)
		}
	}
	// Without the policy only the drift remains.
	fs = checktest.Run(t, "fw-drift", checks.Options{}, "firmware.consistency")
	if len(fs) != 1 {
		t.Errorf("without --policy: %d findings, want the group's only", len(fs))
	}
}

func TestSoftwareAndVF(t *testing.T) {
	fs := checktest.Run(t, "pcie-gen3x8-slot", checks.Options{}, "firmware")
	if f := find(t, fs, "firmware.version", "mlx5_0"); f.Severity != report.OK {
		t.Errorf("in-box ConnectX-6 on 20.43.2566: %v %q", f.Severity, f.Summary)
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
