package kmod

import (
	"bytes"
	"compress/gzip"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseModules(t *testing.T) {
	in := `mlx5_ib 479232 0 - Live 0x0000000000000000
ib_core 458752 8 rdma_ucm,ib_uverbs,ib_ipoib,ib_umad,rdma_cm,iw_cm,ib_cm,mlx5_ib, Live 0x0000000000000000
mlx5_core 2326528 1 mlx5_ib, Live 0xffffffffc0a00000 (OE)
configs 16384 0 [permanent], Live 0x0000000000000000
rdma_rxe 131072 0 - Loading 0x0000000000000000
builtin_like 4096 - - Live 0x0000000000000000
`
	m, err := ParseModules([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, state, taints string
		refcnt, usedBy      int
	}{
		{"mlx5_ib", "Live", "", 0, 0},
		{"ib_core", "Live", "", 8, 8},
		{"mlx5_core", "Live", "OE", 1, 1},
		{"configs", "Live", "", 0, 0},
		{"rdma_rxe", "Loading", "", 0, 0},
		{"builtin_like", "Live", "", -1, 0},
	}
	for _, c := range cases {
		got, ok := m[c.name]
		if !ok {
			t.Errorf("%s missing", c.name)
			continue
		}
		if got.State != c.state || got.Taints != c.taints || got.Refcnt != c.refcnt || len(got.UsedBy) != c.usedBy {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
	if m["ib_core"].UsedBy[7] != "mlx5_ib" {
		t.Errorf("trailing comma handling: %v", m["ib_core"].UsedBy)
	}
}

func TestParseModulesKeepsGoodLines(t *testing.T) {
	m, err := ParseModules([]byte("ib_core 1 0 - Live 0x0\ngarbage\nmlx5_ib x 0 - Live 0x0\nib_uverbs 2 0 - Live 0x0\n"))
	if err == nil || !strings.Contains(err.Error(), "2 line(s)") {
		t.Errorf("want an error counting 2 bad lines, got %v", err)
	}
	if !m.Has("ib_core") || !m.Has("ib_uverbs") || m.Has("mlx5_ib") {
		t.Errorf("good lines lost: %v", m)
	}
}

func TestParseConfig(t *testing.T) {
	text := "#\n# Automatically generated file\nCONFIG_INFINIBAND=m\n# CONFIG_RDMA_SIW is not set\nCONFIG_LOCALVERSION=\"-fc\"\nCONFIG_HZ=250\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	for name, c := range map[string]struct {
		b  []byte
		gz bool
	}{"plain": {[]byte(text), false}, "gz": {gz.Bytes(), true}} {
		cfg, err := ParseConfig(c.b, c.gz)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if cfg.State("CONFIG_INFINIBAND") != "m" || cfg.State("CONFIG_RDMA_SIW") != "" || cfg["CONFIG_LOCALVERSION"] != "-fc" {
			t.Errorf("%s: %v", name, cfg)
		}
	}
	if _, err := ParseConfig([]byte("not a config\n"), false); err == nil {
		t.Error("garbage accepted as a config")
	}
	if _, err := ParseConfig([]byte(text), true); err == nil {
		t.Error("plain text accepted as gzip")
	}
}

// The lines that did not parse are kept, so that a judgement of one module can tell whether its
// line was among them; a line that names no module (no fields) attributes nothing.
func TestUnparsedNames(t *testing.T) {
	_, err := ParseModules([]byte("nvidia 1 0 - Live 0x0\nnvidia_peermem 16384\ngarbled\nib_core x 0 - Live 0x0\n"))
	if err == nil || err.Error() != `/proc/modules: 3 line(s) not in the kernel's format, first: "nvidia_peermem 16384"` {
		t.Fatalf("error %v", err)
	}
	for _, tc := range []struct {
		names, want []string
	}{
		{[]string{"nvidia", "nvidia_peermem", "nv_peer_mem"}, []string{"nvidia_peermem"}},
		{[]string{"ib_core", "garbled"}, []string{"ib_core", "garbled"}},
		{[]string{"mlx5_ib"}, nil},
	} {
		if got := UnparsedNames(err, tc.names...); !slices.Equal(got, tc.want) {
			t.Errorf("UnparsedNames(%v) = %v, want %v", tc.names, got, tc.want)
		}
	}
	if got := UnparsedNames(errors.New("other"), "nvidia"); got != nil {
		t.Errorf("another error: %v", got)
	}
}

func FuzzParseModules(f *testing.F) {
	f.Add([]byte("ib_core 458752 8 rdma_ucm,ib_uverbs, Live 0x0000000000000000\n"))
	f.Add([]byte("mlx5_core 2326528 1 mlx5_ib, Live 0x0 (OE)\n\n\n"))
	f.Add([]byte("a - - - -"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseModules(b)
		var le *LinesError
		if errors.As(err, &le) && len(le.Lines) == 0 {
			t.Fatal("a LinesError without lines")
		}
		for name, mod := range m {
			if name == "" || mod.Name != name {
				t.Fatalf("bad entry %q %+v", name, mod)
			}
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("CONFIG_INFINIBAND=m\n"), false)
	f.Add([]byte("# CONFIG_X is not set\n"), false)
	f.Fuzz(func(t *testing.T, b []byte, gz bool) {
		cfg, _ := ParseConfig(b, gz)
		for k := range cfg {
			if !strings.HasPrefix(k, "CONFIG_") {
				t.Fatalf("key %q", k)
			}
		}
	})
}
