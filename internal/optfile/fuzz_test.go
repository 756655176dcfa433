package optfile

import (
	"encoding/json"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// addExample seeds a fuzz target with the documented example file.
func addExample(f *testing.F, name string) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", name))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
}

// decoded checks what every decoder promises whatever the input: an error is an *Error naming
// the file, and nothing that is not JSON is accepted.
func decoded(t *testing.T, b []byte, err error) bool {
	t.Helper()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.File != "fuzz.json" || !strings.HasPrefix(err.Error(), "fuzz.json: ") {
			t.Fatalf("error %v does not name the file", err)
		}
		return false
	}
	if !json.Valid(b) {
		t.Fatalf("accepted invalid JSON %q", b)
	}
	return true
}

func FuzzPolicy(f *testing.F) {
	addExample(f, "policy.json")
	for _, s := range []string{
		`{"ports": {"expect_rate_gbps": 400, "by_board_id": {"MT_0000000838": 400}, "link_layer": "InfiniBand"}}`,
		`{"firmware": {"allowed_psids": ["MT_0000000838"], "min_version": {"MT_0000000838": "28.39.1002"}}}`,
		`{"ports": {"by_board_id": {"": 1e308}}}`,
		`{"ports": [], "ports": {}}`,
		`{"prots": {}}`,
		`{} {}`,
		`{"firmware": {"min_version": {"X": "1.2.99999"}}}`,
		`{"topology": {"devices": 8, "ports": {"InfiniBand": {"active": 8, "min_rate_gbps": 400}}, "ignore": ["eno*"]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePolicy(b, "fuzz.json")
		if !decoded(t, b, err) {
			return
		}
		if pp := p.Ports; pp != nil {
			if pp.ExpectRateGbps < 0 || pp.ExpectRateGbps > MaxRateGbps {
				t.Errorf("accepted rate %g", pp.ExpectRateGbps)
			}
			for id, v := range pp.ByBoardID {
				if id == "" || strings.TrimSpace(id) != id || v <= 0 || v > MaxRateGbps {
					t.Errorf("accepted board rate %q: %g", id, v)
				}
			}
			if pp.LinkLayer != "" && pp.LinkLayer != "InfiniBand" && pp.LinkLayer != "Ethernet" {
				t.Errorf("accepted link layer %q", pp.LinkLayer)
			}
		}
		if fp := p.Firmware; fp != nil {
			if fp.AllowedPSIDs != nil && len(fp.AllowedPSIDs) == 0 {
				t.Error("accepted an empty allowed list")
			}
			for id, v := range fp.MinVersion {
				if id == "" || v.Major > 0xffff || v.Minor > 0xffff || v.Sub > 0xffff {
					t.Errorf("accepted minimum %q: %v", id, v)
				}
			}
		}
		if tp := p.Topology; tp != nil {
			if tp.Devices < 0 || tp.Devices > MaxTopologyCount {
				t.Errorf("accepted device count %d", tp.Devices)
			}
			for ll, e := range tp.Ports {
				if (ll != "InfiniBand" && ll != "Ethernet") || (e.Active == 0 && e.MinRateGbps == 0) || e.MinRateGbps < 0 || e.MinRateGbps > MaxRateGbps {
					t.Errorf("accepted port expectation %q: %+v", ll, e)
				}
			}
			for _, g := range tp.Ignore {
				if _, err := path.Match(g, ""); err != nil || g == "" {
					t.Errorf("accepted ignore glob %q", g)
				}
			}
		}
	})
}

func FuzzMatrix(f *testing.F) {
	addExample(f, "matrix.json")
	if b, err := os.ReadFile(filepath.Join("..", "..", "checks", "firmware", "matrix.json")); err == nil {
		f.Add(b)
	}
	for _, s := range []string{
		`{"rows": [{"family": 16, "driver": "ofed", "min": "16.27.2000", "source": "x"}]}`,
		`{"rows": [{"family": 16, "driver": "inbox", "min": "16.35.2000", "recommended": "16.27.1000", "source": "x"}]}`,
		`{"rows": [{"family": 16.5, "driver": "ofed", "source": ""}]}`,
		`{"_comment": "", "rows": [{}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, err := DecodeMatrix(b, "fuzz.json", families)
		if !decoded(t, b, err) {
			return
		}
		if len(rows) == 0 {
			t.Fatal("accepted a matrix without rows")
		}
		for _, r := range rows {
			minV, hasMin := r.MinVersion()
			rec, hasRec := r.RecommendedVersion()
			switch {
			case !families(r.Family), r.Driver != DriverOFED && r.Driver != DriverInbox, strings.TrimSpace(r.Source) == "",
				!hasMin && !hasRec, hasMin && minV.Major != r.Family, hasRec && rec.Major != r.Family,
				hasMin && hasRec && rec.older(minV), r.From != "fuzz.json":
				t.Fatalf("accepted an unusable row %+v", r)
			}
		}
	})
}

func FuzzWRProfile(f *testing.F) {
	addExample(f, "wr-profile.json")
	for _, s := range []string{
		`{"applications": {"a": 1}}`,
		`{"applications": {"[nvme_rdma]": 4096, "[": 1}}`,
		`{"applications": {"a": 1.0e2}}`,
		`{"applications": {"a": 2147483648}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodeWRProfile(b, "fuzz.json")
		if !decoded(t, b, err) {
			return
		}
		if len(p.Applications) == 0 {
			t.Fatal("accepted a profile without applications")
		}
		for k, v := range p.Applications {
			if strings.TrimSpace(k) == "" || v < 1 || v > maxWR {
				t.Fatalf("accepted %q=%d", k, v)
			}
		}
	})
}
