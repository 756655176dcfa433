package driver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/kmod"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
	"github.com/rdmadiag/rdmadiag/report"
	"github.com/rdmadiag/rdmadiag/report/engine"
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
	// ib_cm and iw_cm built in: /sys/module has them, /proc/modules does not.
	env := treeEnv(t, map[string]string{
		"/proc/modules":              "ib_core 1 2 rdma_cm,mlx5_ib, Live 0x0\nrdma_cm 1 0 - Live 0x0\nmlx5_ib 1 0 - Live 0x0\n",
		"/sys/module/ib_cm/":         "",
		"/sys/module/iw_cm/":         "",
		"/proc/sys/kernel/osrelease": "6.8.0-test",
	}, nil, nil)
	p := newPresence(env)
	fs := dependencyFindings(p, p.mods, "/proc/modules")
	if len(fs) != 1 || fs[0].Subject.Name != "mlx5_ib" || fs[0].Severity != report.Critical {
		t.Fatalf("want one critical for mlx5_ib without mlx5_core, got %+v", fs)
	}
	if !strings.Contains(fs[0].Summary, "mlx5_core") {
		t.Errorf("summary %q does not name mlx5_core", fs[0].Summary)
	}
}

// treeEnv lays out a host root: a path ending in "/" is a directory, a value starting with "-> "
// a symlink, anything else a file with that content. The host is a recording of that machine, so
// that what the tree lacks (/proc/modules, /dev) is the machine's own absence; a --root tree
// that lacks them says nothing about the host (TestTreeWithoutParts).
func treeEnv(t *testing.T, tree map[string]string, facts *host.Facts, nl host.NetlinkConn) *checks.Env {
	t.Helper()
	root := t.TempDir()
	for p, v := range tree {
		full := filepath.Join(root, filepath.FromSlash(p))
		var err error
		switch {
		case strings.HasSuffix(p, "/"):
			err = os.MkdirAll(full, 0o755)
		case strings.HasPrefix(v, "-> "):
			if err = os.MkdirAll(filepath.Dir(full), 0o755); err == nil {
				err = os.Symlink(strings.TrimPrefix(v, "-> "), full)
			}
		default:
			if err = os.MkdirAll(filepath.Dir(full), 0o755); err == nil {
				err = os.WriteFile(full, []byte(v), 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	o := host.Options{Root: root, Kind: host.KindSnapshot, Netlink: nl}
	if facts != nil {
		o.Facts = func() (*host.Facts, error) { return facts, nil }
	}
	h, err := host.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return checks.NewEnv(h, checks.Options{})
}

// mlx5Devices adds n registered ConnectX-7 devices, bound to mlx5_core, with one InfiniBand port
// and a uverbs device each, laid out as drivers/infiniband/core/sysfs.c and uverbs_main.c do.
func mlx5Devices(tree map[string]string, n int) {
	for i := 0; i < n; i++ {
		bdf := fmt.Sprintf("0000:%02x:00.0", 0x3b+i)
		fn := "/sys/devices/pci0000:00/" + bdf
		dev := fmt.Sprintf("mlx5_%d", i)
		tree[fn+"/vendor"] = "0x15b3"
		tree[fn+"/device"] = "0x1021"
		tree[fn+"/driver"] = "-> ../../../bus/pci/drivers/mlx5_core"
		tree["/sys/bus/pci/devices/"+bdf] = "-> ../../../devices/pci0000:00/" + bdf
		tree[fn+"/infiniband/"+dev+"/node_type"] = "1: CA"
		tree[fn+"/infiniband/"+dev+"/device"] = "-> ../../../" + bdf
		tree[fn+"/infiniband/"+dev+"/ports/1/link_layer"] = "InfiniBand"
		tree["/sys/class/infiniband/"+dev] = "-> ../../devices/pci0000:00/" + bdf + "/infiniband/" + dev
		uv := fmt.Sprintf("uverbs%d", i)
		tree[fn+"/infiniband_verbs/"+uv+"/ibdev"] = dev
		tree["/sys/class/infiniband_verbs/"+uv] = "-> ../../devices/pci0000:00/" + bdf + "/infiniband_verbs/" + uv
	}
}

func runModulesCheck(t *testing.T, env *checks.Env) []engine.Finding {
	t.Helper()
	cs, err := checks.Default.Select([]string{"driver.modules"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(context.Background(), env, cs, 1)
}

// noModprobe fails the test if any finding asks for modprobe, which cannot work on the host.
func noModprobe(t *testing.T, fs []engine.Finding) {
	t.Helper()
	for _, f := range fs {
		if strings.Contains(f.Remediation, "modprobe") {
			t.Errorf("%s@%s suggests modprobe on a host that cannot load modules: %q", f.CheckID, f.Subject.Name, f.Remediation)
		}
	}
}

// TestModulesWithoutModuleList: no /proc/modules and no kernel config. Three registered devices
// prove ib_core (and mlx5_ib, ib_uverbs) are built in; nothing registered leaves ib_core
// missing, with a fix that fits a kernel that cannot load modules.
func TestModulesWithoutModuleList(t *testing.T) {
	t.Run("devices registered", func(t *testing.T) {
		tree := map[string]string{"/proc/sys/kernel/osrelease": "6.8.0-appliance"}
		mlx5Devices(tree, 3)
		facts := &host.Facts{CharDevs: []host.CharDev{{Path: "/dev/infiniband/rdma_cm"}, {Path: "/dev/infiniband/uverbs0"}}}
		fs := runModulesCheck(t, treeEnv(t, tree, facts, nil))
		noModprobe(t, fs)
		list := checktest.One(t, fs, "driver.modules", "/proc/modules")
		checktest.WantSeverity(t, list, report.Info)
		f := checktest.One(t, fs, "driver.modules", "ib_core")
		checktest.WantSeverity(t, f, report.Info)
		if !strings.Contains(f.Summary, "ib_core is built in: /sys/class/infiniband lists 3 device(s) (mlx5_0, mlx5_1, mlx5_2)") {
			t.Errorf("ib_core summary %q", f.Summary)
		}
		checktest.WantEvidence(t, f, "/sys/class/infiniband", "3 device(s): mlx5_0, mlx5_1, mlx5_2")
		for _, e := range f.Evidence {
			if e.Name == "/sys/class/infiniband" && !strings.Contains(e.Source, "drivers/infiniband/core/device.c") {
				t.Errorf("class evidence does not cite the kernel: %q", e.Source)
			}
		}
		checktest.WantEvidence(t, f, "/proc/modules", "absent")
		f = checktest.One(t, fs, "driver.modules", "mlx5_ib")
		checktest.WantSeverity(t, f, report.Info)
		checktest.WantEvidence(t, f, "RDMA devices", "registered on mlx5_core functions")
		f = checktest.One(t, fs, "driver.modules", "ib_uverbs")
		checktest.WantSeverity(t, f, report.Info)
		checktest.WantEvidence(t, f, "/sys/class/infiniband_verbs", "uverbs0, uverbs1, uverbs2")
		checktest.WantEvidence(t, f, "/dev/infiniband/uverbs*", "uverbs0")
		checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", "rdma_ucm"), report.Info)
		f = checktest.One(t, fs, "driver.modules", "rdma_cm")
		checktest.WantSeverity(t, f, report.Info)
		if !strings.Contains(f.Summary, "rdma_ucm, which cannot run without it") {
			t.Errorf("rdma_cm summary %q", f.Summary)
		}
		// Nothing shows ib_umad, and the ports are InfiniBand: a warning whose fix is a kernel.
		f = checktest.One(t, fs, "driver.modules", "ib_umad")
		checktest.WantSeverity(t, f, report.Warning)
		if !strings.Contains(f.Remediation, "CONFIG_INFINIBAND_USER_MAD=y") || !strings.Contains(f.Remediation, "record it again") {
			t.Errorf("ib_umad fix %q", f.Remediation)
		}
		checktest.WantEvidence(t, f, "/sys/class/infiniband_mad", "absent")
		checktest.WantEvidence(t, f, "kernel config", "not available")
	})
	t.Run("nothing registered", func(t *testing.T) {
		fs := runModulesCheck(t, treeEnv(t, map[string]string{"/proc/sys/kernel/osrelease": "6.8.0-appliance"}, nil, nil))
		noModprobe(t, fs)
		if len(fs) != 2 {
			t.Errorf("want the list note and ib_core only, got %+v", fs)
		}
		f := checktest.One(t, fs, "driver.modules", "ib_core")
		checktest.WantSeverity(t, f, report.Critical)
		if !strings.Contains(f.Summary, "not in this kernel") || !strings.Contains(f.Remediation, "CONFIG_INFINIBAND=y") {
			t.Errorf("ib_core: %q / %q", f.Summary, f.Remediation)
		}
		// What was checked, and what could not be.
		checktest.WantEvidence(t, f, "/proc/modules", "absent")
		checktest.WantEvidence(t, f, "/sys/module/ib_core", "absent")
		checktest.WantEvidence(t, f, "/sys/class/infiniband", "absent")
		checktest.WantEvidence(t, f, "kernel config", "not available")
		checktest.WantEvidence(t, f, "RDMA netlink", "not recorded")
	})
	t.Run("netlink answers", func(t *testing.T) {
		// A tree without sysfs classes, but RDMA netlink answered: only ib_core opens that socket.
		nl := nltest.Model{Devices: []nldev.Device{{Index: 0, Name: "mlx5_0"}}}.Conn()
		env := treeEnv(t, map[string]string{"/proc/sys/kernel/osrelease": "6.8.0-appliance"}, nil, nl)
		f := checktest.One(t, runModulesCheck(t, env), "driver.modules", "ib_core")
		checktest.WantSeverity(t, f, report.Info)
		checktest.WantEvidence(t, f, "RDMA netlink", "answered, 1 device(s)")
	})
}

// TestModulesBuiltInSingleProof: one source alone shows ib_core built in on a kernel that loads
// modules and does not list it.
func TestModulesBuiltInSingleProof(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tree     map[string]string
		evidence string
		observed string
	}{
		{"/sys/module entry only", map[string]string{
			"/sys/module/ib_core/parameters/send_queue_size": "128",
		}, "/sys/module/ib_core", "present"},
		{"config =y only", map[string]string{
			"/boot/config-6.8.0-test": "CONFIG_MODULES=y\nCONFIG_INFINIBAND=y\nCONFIG_INFINIBAND_USER_ACCESS=m\n",
		}, "CONFIG_INFINIBAND", "y"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.tree["/proc/modules"] = "configs 16384 0 - Live 0x0000000000000000\n"
			tc.tree["/proc/sys/kernel/osrelease"] = "6.8.0-test"
			fs := runModulesCheck(t, treeEnv(t, tc.tree, nil, nil))
			f := checktest.One(t, fs, "driver.modules", "ib_core")
			checktest.WantSeverity(t, f, report.OK)
			if !strings.HasPrefix(f.Summary, "ib_core is built in: ") {
				t.Errorf("summary %q", f.Summary)
			}
			checktest.WantEvidence(t, f, tc.evidence, tc.observed)
			if len(checktest.Find(fs, "driver.modules", "/proc/modules")) != 0 {
				t.Errorf("a note about the module list although it was read")
			}
			// ib_uverbs is judged on the same evidence: nothing shows it, and the list was read.
			u := checktest.One(t, fs, "driver.modules", "ib_uverbs")
			checktest.WantSeverity(t, u, report.Warning)
			checktest.WantEvidence(t, u, "ib_uverbs", "absent")
		})
	}
}

// TestModuleFixes: modprobe only where it can work.
func TestModuleFixes(t *testing.T) {
	const modules = "ib_core 1 1 ib_uverbs, Live 0x0\nib_uverbs 1 0 - Live 0x0\nrdma_cm 1 1 rdma_ucm, Live 0x0\nrdma_ucm 1 0 - Live 0x0\n"
	for _, tc := range []struct {
		name    string
		tree    map[string]string
		facts   *host.Facts
		sev     report.Severity
		want    string
		wantNot string
	}{
		{"module support, option not built", map[string]string{
			"/proc/modules":           modules,
			"/boot/config-6.8.0-test": "CONFIG_MODULES=y\nCONFIG_INFINIBAND=m\n# CONFIG_INFINIBAND_USER_MAD is not set\n",
		}, nil, report.Info, "built without CONFIG_INFINIBAND_USER_MAD", "modprobe"},
		{"module support, option a module", map[string]string{
			"/proc/modules":           modules,
			"/boot/config-6.8.0-test": "CONFIG_MODULES=y\nCONFIG_INFINIBAND=m\nCONFIG_INFINIBAND_USER_MAD=m\n",
		}, nil, report.Info, "modprobe ib_umad", "container"},
		{"container", map[string]string{"/proc/modules": modules},
			&host.Facts{InContainer: true}, report.Info, "On the host, not in this container", ""},
		{"no module support", map[string]string{
			"/sys/class/infiniband/":  "",
			"/boot/config-6.8.0-test": "# CONFIG_MODULES is not set\nCONFIG_INFINIBAND=y\n",
		}, nil, report.Info, "boot a kernel built with CONFIG_INFINIBAND_USER_MAD=y", "modprobe"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.tree["/proc/sys/kernel/osrelease"] = "6.8.0-test"
			fs := runModulesCheck(t, treeEnv(t, tc.tree, tc.facts, nil))
			f := checktest.One(t, fs, "driver.modules", "ib_umad")
			checktest.WantSeverity(t, f, tc.sev)
			if !strings.Contains(f.Remediation, tc.want) || (tc.wantNot != "" && strings.Contains(f.Remediation, tc.wantNot)) {
				t.Errorf("fix %q: want %q, not %q", f.Remediation, tc.want, tc.wantNot)
			}
		})
	}
}

// TestModuleListNotCaptured: a capture without /proc/modules of a kernel that loads modules says
// what it could not judge instead of calling modules missing.
func TestModuleListNotCaptured(t *testing.T) {
	env := treeEnv(t, map[string]string{
		"/proc/sys/kernel/osrelease": "6.8.0-test",
		"/boot/config-6.8.0-test":    "CONFIG_MODULES=y\nCONFIG_INFINIBAND=m\n",
	}, nil, nil)
	fs := runModulesCheck(t, env)
	for _, subj := range []string{"/proc/modules", "ib_core"} {
		f := checktest.One(t, fs, "driver.modules", subj)
		checktest.WantSeverity(t, f, report.Skipped)
		if f.Limit == nil || f.Limit.Kind != report.LimitSource || !strings.Contains(f.Limit.Lift, "rdmadiag record") {
			t.Errorf("%s: limit %+v", subj, f.Limit)
		}
	}
	checktest.WantEvidence(t, checktest.One(t, fs, "driver.modules", "ib_core"), "CONFIG_INFINIBAND", "m")
}

// TestModuleListNotCapturedFixture: the same from a snapshot (drv-no-module-list), where
// registered devices still show ib_core, mlx5_ib and ib_uverbs present.
func TestModuleListNotCapturedFixture(t *testing.T) {
	fs := checktest.Run(t, "drv-no-module-list", checks.Options{}, "driver.modules")
	for _, subj := range []string{"/proc/modules", "ib_umad", "rdma_cm", "rdma_ucm"} {
		f := checktest.One(t, fs, "driver.modules", subj)
		checktest.WantSeverity(t, f, report.Skipped)
		if f.Limit == nil || f.Limit.Kind != report.LimitSource || !strings.Contains(f.Limit.Lift, "rdmadiag record") {
			t.Errorf("%s: limit %+v", subj, f.Limit)
		}
	}
	for _, subj := range []string{"ib_core", "mlx5_ib", "ib_uverbs"} {
		checktest.WantSeverity(t, checktest.One(t, fs, "driver.modules", subj), report.Info)
	}
}

// TestDriverFixesWithoutModuleSupport: on a kernel that cannot load modules, the registration,
// device and user-verbs fixes ask for another kernel or explain why nothing can be reloaded,
// never for modprobe.
func TestDriverFixesWithoutModuleSupport(t *testing.T) {
	cs, err := checks.Default.Select([]string{"driver.registration", "driver.devices", "driver.user_verbs"}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("nothing registered, function unbound", func(t *testing.T) {
		env := treeEnv(t, map[string]string{
			"/proc/sys/kernel/osrelease":                  "6.6.30-appliance",
			"/boot/config-6.6.30-appliance":               "# CONFIG_MODULES is not set\nCONFIG_PCI=y\n",
			"/sys/devices/pci0000:3a/0000:3b:00.0/vendor": "0x15b3",
			"/sys/devices/pci0000:3a/0000:3b:00.0/device": "0x101b",
			"/sys/bus/pci/devices/0000:3b:00.0":           "-> ../../../devices/pci0000:3a/0000:3b:00.0",
		}, nil, nil)
		fs := checks.Run(context.Background(), env, cs, 1)
		noModprobe(t, fs)
		f := checktest.One(t, fs, "driver.registration", "0000:3b:00.0")
		checktest.WantSeverity(t, f, report.Critical)
		if !strings.Contains(f.Summary, "mlx5_core is not loaded") || !strings.Contains(f.Remediation, "CONFIG_MLX5_CORE=y and CONFIG_MLX5_INFINIBAND=y") {
			t.Errorf("registration: %q / %q", f.Summary, f.Remediation)
		}
		f = checktest.One(t, fs, "driver.devices", "")
		if !strings.Contains(f.Remediation, "CONFIG_INFINIBAND=y") || !strings.Contains(f.Remediation, "CONFIG_MLX5_INFINIBAND=y") {
			t.Errorf("devices fix %q", f.Remediation)
		}
	})
	t.Run("built-in ib_uverbs without a device for mlx5_1", func(t *testing.T) {
		tree := map[string]string{
			"/proc/sys/kernel/osrelease":    "6.6.30-appliance",
			"/boot/config-6.6.30-appliance": "# CONFIG_MODULES is not set\nCONFIG_INFINIBAND=y\nCONFIG_INFINIBAND_USER_ACCESS=y\n",
		}
		mlx5Devices(tree, 2)
		delete(tree, "/sys/class/infiniband_verbs/uverbs1")
		delete(tree, "/sys/devices/pci0000:00/0000:3c:00.0/infiniband_verbs/uverbs1/ibdev")
		fs := checks.Run(context.Background(), treeEnv(t, tree, &host.Facts{}, nil), cs, 1)
		noModprobe(t, fs)
		f := checktest.One(t, fs, "driver.user_verbs", "mlx5_1 uverbs")
		checktest.WantSeverity(t, f, report.Critical)
		if !strings.Contains(f.Remediation, "built into this kernel, so it cannot be reloaded") {
			t.Errorf("user verbs fix %q", f.Remediation)
		}
	})
}
