package port

import (
	"testing"
)

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
