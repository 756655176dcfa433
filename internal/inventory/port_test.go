package inventory

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Rate
		wantErr bool
	}{
		{"100 Gb/sec (4X EDR)", Rate{100, 4, "EDR"}, false},
		{"400 Gb/sec (4X NDR)", Rate{400, 4, "NDR"}, false},
		{"2.5 Gb/sec (1X SDR)", Rate{2.5, 1, "SDR"}, false}, // rxe on a netdev without speed (lab)
		{"56 Gb/sec (4X FDR)", Rate{56, 4, "FDR"}, false},
		{"10 Gb/sec (4X)", Rate{10, 4, ""}, false}, // pre-HDR kernels: SDR without a name
		{"40 Gb/sec (4X QDR)\n", Rate{40, 4, "QDR"}, false},
		{"800 Gb/sec (8X NDR)", Rate{800, 8, "NDR"}, false},
		{"25 Gb/sec", Rate{25, 0, ""}, false},
		{"25", Rate{}, true},         // no unit: not known to be Gb/s
		{"200 Mb/sec", Rate{}, true}, // another unit
		{"x Gb/sec", Rate{}, true},
		{"fast", Rate{}, true},
		{"Gb/sec (4X EDR)", Rate{}, true},
		{"100 Gb/sec (4 EDR)", Rate{}, true},
		{"100 Gb/sec (4X EDR", Rate{}, true},
		{"-5 Gb/sec (1X SDR)", Rate{}, true},
		{"NaN Gb/sec", Rate{}, true},
		{"", Rate{}, true},
	} {
		got, err := ParseRate(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseRate(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && got != tc.want {
			t.Errorf("ParseRate(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestRateStringRoundTrip(t *testing.T) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "10 Gb/sec (4X)"} {
		r, err := ParseRate(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRate(%q).String() = %q, %v", s, r.String(), err)
		}
	}
}

// The routable GID: zero and link-local entries are passed over, a RoCE v2 entry wins over the
// RoCE v1 entry of the same address, and a port with only link-local entries has none.
func TestRoutableGID(t *testing.T) {
	tr := tree{t, t.TempDir()}
	d := "sys/devices/virtual/infiniband/rxe0/ports/1"
	for i, g := range []struct{ gid, typ string }{
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "IB/RoCE v1"},
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", "RoCE v2"},
		{"0000:0000:0000:0000:0000:ffff:c000:0202", "IB/RoCE v1"},
		{"0000:0000:0000:0000:0000:0000:0000:0000", ""},
		{"0000:0000:0000:0000:0000:ffff:c000:0202", "RoCE v2"},
	} {
		tr.w(fmt.Sprintf("%s/gids/%d", d, i), g.gid+"\n")
		tr.w(fmt.Sprintf("%s/gid_attrs/types/%d", d, i), g.typ+"\n")
	}
	tr.w(d+"/gids/10", "fe80:0000:0000:0000:0000:0000:0000:0001\n")
	tr.w(d+"/link_layer", "Ethernet\n")
	tr.l("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0")
	h, err := host.New(host.Options{Root: tr.r, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	p := &Port{Num: 1, LinkLayer: "Ethernet"}
	p.ReadAttrs(h, "rxe0")
	if p.GID == nil || p.GID.Index != 4 || p.GID.Type != "RoCE v2" || p.GID.Addr != "0000:0000:0000:0000:0000:ffff:c000:0202" {
		t.Errorf("GID %+v, want index 4 (RoCE v2, 192.0.2.2)", p.GID)
	}
	// Without the v2 entry the v1 entry of the address is the one.
	os.Remove(filepath.Join(tr.r, d, "gids/4"))
	p = &Port{Num: 1, LinkLayer: "Ethernet"}
	p.ReadAttrs(h, "rxe0")
	if p.GID == nil || p.GID.Index != 2 || p.GID.Type != "IB/RoCE v1" {
		t.Errorf("GID %+v, want index 2 (RoCE v1)", p.GID)
	}
	os.Remove(filepath.Join(tr.r, d, "gids/2"))
	p = &Port{Num: 1, LinkLayer: "Ethernet"}
	p.ReadAttrs(h, "rxe0")
	if p.GID != nil {
		t.Errorf("link-local entries only: GID %+v, want none", p.GID)
	}
}

func TestParseState(t *testing.T) {
	for _, tc := range []struct {
		in      string
		num     int
		name    string
		wantErr bool
	}{
		{"4: ACTIVE", 4, "ACTIVE", false},
		{"1: DOWN\n", 1, "DOWN", false},
		{"5: LinkUp", 5, "LinkUp", false},
		{"0: <unknown>", 0, "<unknown>", false},
		{"4: ACTIVE_DEFER", 4, "ACTIVE_DEFER", false},
		{"ACTIVE", 0, "", true},
		{"x: ACTIVE", 0, "", true},
		{"4:", 0, "", true},
		{"-1: DOWN", 0, "", true},
		{"256: DOWN", 0, "", true},
		{"", 0, "", true},
	} {
		got, err := ParseState(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseState(%q) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if err == nil && (got.Num != tc.num || got.Name != tc.name) {
			t.Errorf("ParseState(%q) = %+v, want %d %q", tc.in, got, tc.num, tc.name)
		}
	}
	if s := (PortState{4, "ACTIVE"}).String(); s != "4: ACTIVE" {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)", "(", "1 (", "1 (X)", "1e400 Gb/sec", "200 Mb/sec"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRate(s)
		if err == nil && (r.Gbps < 0 || r.Width < 0 || r.Width > 32) {
			t.Fatalf("ParseRate(%q) = %+v", s, r)
		}
	})
}

func FuzzParseState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", ":", "9999: X", "1:", "ACTIVE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err == nil && (st.Num < 0 || st.Num > 255 || st.Name == "") {
			t.Fatalf("ParseState(%q) = %+v", s, st)
		}
	})
}
