package port

import (
	"testing"
)

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
}

func TestParseLID(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint32
		wantErr bool
	}{
		{"0x0", 0, false}, {"0x1a", 0x1a, false}, {"0xBFFF\n", 0xbfff, false},
		{"26", 0, true}, {"0x", 0, true}, {"0xzz", 0, true}, {"", 0, true},
	} {
		got, err := ParseLID(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseLID(%q) = %d, %v", tc.in, got, err)
		}
	}
}

func TestParseCounter(t *testing.T) {
	if v, err := ParseCounter("18446744073709551615\n"); err != nil || v != 1<<64-1 {
		t.Errorf("max uint64: %d %v", v, err)
	}
	if _, err := ParseCounter("N/A (no PMA)"); err != ErrNoPMA {
		t.Errorf("no PMA: %v", err)
	}
	for _, bad := range []string{"", "-1", "12a", "1.5"} {
		if _, err := ParseCounter(bad); err == nil {
			t.Errorf("ParseCounter(%q) accepted", bad)
		}
	}
}

func TestGID(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		zero, ip bool
		v4       string
	}{
		{"0000:0000:0000:0000:0000:ffff:0a00:020f", false, true, "10.0.2.15"}, // lab rxe0 gids/1
		{"fe80:0000:0000:0000:5054:00ff:fe12:3456", false, false, ""},         // lab rxe0 gids/0
		{"fec0:0000:0000:0000:5054:00ff:fe12:3456", false, true, ""},          // lab rxe0 gids/2
		{"0000:0000:0000:0000:0000:0000:0000:0000", true, false, ""},
	} {
		g := GID{Addr: tc.addr}
		if g.Zero() != tc.zero || g.IPBased() != tc.ip || g.IPv4() != tc.v4 {
			t.Errorf("%s: zero %v ip %v v4 %q", tc.addr, g.Zero(), g.IPBased(), g.IPv4())
		}
		if !ValidGID(tc.addr) {
			t.Errorf("ValidGID(%q) = false", tc.addr)
		}
	}
	for _, bad := range []string{"fe80::1", "", "fe80:0000:0000:0000:5054:00ff:fe12", "zzzz:0000:0000:0000:0000:0000:0000:0000"} {
		if ValidGID(bad) {
			t.Errorf("ValidGID(%q) = true", bad)
		}
	}
}

func TestRoCEMTU(t *testing.T) {
	for _, tc := range []struct{ netdev, want int }{
		{1500, 1024}, // the lab's rxe0 on a 1500-byte netdev shows active_mtu 1024 in ibv_devinfo
		{4096, 2048}, {4191, 2048}, {4192, 4096}, {4200, 4096}, {9000, 4096},
		{2144, 2048}, {2143, 1024}, {1000, 512}, {300, 0},
	} {
		if got := RoCEMTU(tc.netdev); got != tc.want {
			t.Errorf("RoCEMTU(%d) = %d, want %d", tc.netdev, got, tc.want)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100 Gb/sec (4X EDR)", "10 Gb/sec (4X)", "2.5 Gb/sec (1X SDR)", "(", "1 (", "1 (X)", "1e400 Gb/sec"} {
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
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", ":", "9999: X", "1:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParseState(s)
		if err == nil && (st.Num < 0 || st.Num > 255 || st.Name == "") {
			t.Fatalf("ParseState(%q) = %+v", s, st)
		}
	})
}

func FuzzParseCounterAndLID(f *testing.F) {
	for _, s := range []string{"0", "18446744073709551616", "N/A (no PMA)", "0x1a", "0x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = ParseCounter(s)
		_, _ = ParseLID(s)
		g := GID{Addr: s}
		_ = g.IPv4()
		_ = g.IPBased()
		_ = ValidGID(s)
	})
}
