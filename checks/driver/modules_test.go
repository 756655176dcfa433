package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/report"
)

func parseMods(t *testing.T, s string) kmod.Modules {
	t.Helper()
	m, err := kmod.ParseModules([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTaintFindings(t *testing.T) {
	ofed := parseMods(t, "ib_core 1 1 mlx5_ib, Live 0x0 (OE)\nmlx5_ib 1 0 - Live 0x0 (OE)\nmlx5_core 1 1 mlx5_ib, Live 0x0 (OE)\n")
	fs := taintFindings(ofed, "/proc/modules")
	if len(fs) != 1 || fs[0].Severity != report.Info {
		t.Fatalf("consistent OFED stack: %+v", fs)
	}
	mixed := parseMods(t, "ib_core 1 1 mlx5_ib, Live 0x0\nmlx5_ib 1 0 - Live 0x0 (OE)\nmlx5_core 1 1 mlx5_ib, Live 0x0 (OE)\n")
	fs = taintFindings(mixed, "/proc/modules")
	if len(fs) != 1 || fs[0].Severity != report.Warning || !strings.Contains(fs[0].Summary, "ib_core in-box") {
		t.Fatalf("mixed stack: %+v", fs)
	}
	inbox := parseMods(t, "ib_core 1 0 - Live 0x0\n")
	if fs := taintFindings(inbox, "/proc/modules"); len(fs) != 0 {
		t.Fatalf("in-box stack: %+v", fs)
	}
}

func TestDependencyFindings(t *testing.T) {
	root := t.TempDir()
	// ib_cm and iw_cm built in: /sys/module has them, /proc/modules does not.
	for _, m := range []string{"ib_cm", "iw_cm"} {
		if err := os.MkdirAll(filepath.Join(root, "sys/module", m), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, err := host.New(host.Options{Root: root, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	mods := parseMods(t, "ib_core 1 2 rdma_cm,mlx5_ib, Live 0x0\nrdma_cm 1 0 - Live 0x0\nmlx5_ib 1 0 - Live 0x0\n")
	st := &modState{mods: mods, h: h, builtin: map[string]bool{}}
	fs := dependencyFindings(st, mods, "/proc/modules")
	if len(fs) != 1 || fs[0].Subject.Name != "mlx5_ib" || fs[0].Severity != report.Critical {
		t.Fatalf("want one critical for mlx5_ib without mlx5_core, got %+v", fs)
	}
	if !strings.Contains(fs[0].Summary, "mlx5_core") {
		t.Errorf("summary %q does not name mlx5_core", fs[0].Summary)
	}
}
