package observe_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"slices"
	"testing"

	"golang.org/x/tools/txtar"

	"github.com/rdmadiag/rdmadiag/checks/observe"
)

func TestModules(t *testing.T) {
	for _, tc := range []struct {
		name, tree string
		loaded     []string
		readErr    string // a path the error names; "" for none
		parseErr   string
		unparsed   []string // of nvidia, nvidia_peermem
	}{
		{name: "list", tree: "-- proc/modules --\nib_core 458752 8 mlx5_ib, Live 0x0\nmlx5_ib 479232 0 - Live 0x0\n",
			loaded: []string{"ib_core", "mlx5_ib"}},
		{name: "garbled line kept out, good lines kept", tree: "-- proc/modules --\nib_core 458752 8 - Live 0x0\ngarbled\n",
			loaded: []string{"ib_core"}, parseErr: "/proc/modules"},
		{name: "a needed module's line garbled", tree: "-- proc/modules --\nnvidia 56164352 1 - Live 0x0 (POE)\nnvidia_peermem x 0 - Live 0x0\n",
			loaded: []string{"nvidia"}, parseErr: "/proc/modules", unparsed: []string{"nvidia_peermem"}},
		{name: "absent", tree: "-- proc/version --\nLinux\n", readErr: "/proc/modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := observe.Modules.Get(treeEnv(t, tc.tree))
			wantErr(t, "read", l.ReadErr, tc.readErr)
			wantErr(t, "parse", l.ParseErr, tc.parseErr)
			for _, m := range tc.loaded {
				if !l.Mods.Has(m) {
					t.Errorf("%s not in %v", m, l.Mods)
				}
			}
			if len(l.Mods) != len(tc.loaded) {
				t.Errorf("%d modules, want %d", len(l.Mods), len(tc.loaded))
			}
			if got := l.Unparsed("nvidia", "nvidia_peermem"); !slices.Equal(got, tc.unparsed) {
				t.Errorf("Unparsed = %v, want %v", got, tc.unparsed)
			}
		})
	}
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestKernelConfig(t *testing.T) {
	for _, tc := range []struct {
		name, tree string
		gz         string // /proc/config.gz, compressed when set
		src        string
		infiniband string // CONFIG_INFINIBAND's value
		err        string
		notExist   bool
	}{
		{name: "proc config.gz", gz: "CONFIG_INFINIBAND=m\n", tree: "-- boot/config-6.1.0 --\nCONFIG_INFINIBAND=y\n",
			src: "/proc/config.gz", infiniband: "m"},
		{name: "boot config of the running release", tree: "-- proc/sys/kernel/osrelease --\n6.1.0\n-- boot/config-6.1.0 --\nCONFIG_INFINIBAND=y\n",
			src: "/boot/config-6.1.0", infiniband: "y"},
		{name: "none: the paths tried", tree: "-- proc/sys/kernel/osrelease --\n6.1.0\n-- boot/config-5.0 --\nCONFIG_INFINIBAND=y\n",
			err: "/proc/config.gz, /boot/config-6.1.0", notExist: true},
		{name: "unparsable: its path", tree: "-- proc/sys/kernel/osrelease --\n6.1.0\n-- boot/config-6.1.0 --\nnot a config\n",
			src: "/boot/config-6.1.0", err: "/boot/config-6.1.0: kernel config: no CONFIG_ lines"},
		{name: "corrupt gzip: its path", tree: "-- proc/config.gz --\nnot gzip\n", src: "/proc/config.gz", err: "/proc/config.gz: kernel config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bin []txtar.File
			if tc.gz != "" {
				bin = append(bin, txtar.File{Name: "proc/config.gz", Data: gz(t, tc.gz)})
			}
			c := observe.KernelConfig.Get(treeEnv(t, tc.tree, bin...))
			wantErr(t, "config", c.Err, tc.err)
			if c.Source != tc.src || c.Config.State("CONFIG_INFINIBAND") != tc.infiniband {
				t.Errorf("source %q, CONFIG_INFINIBAND=%q; want %q, %q", c.Source, c.Config.State("CONFIG_INFINIBAND"), tc.src, tc.infiniband)
			}
			if errors.Is(c.Err, fs.ErrNotExist) != tc.notExist {
				t.Errorf("ErrNotExist %v, want %v (%v)", !tc.notExist, tc.notExist, c.Err)
			}
		})
	}
}

func TestInterruptsFact(t *testing.T) {
	const table = "           CPU0       CPU1\n" +
		" 45:         10          5  IR-PCI-MSIX-0000:3b:00.0    0-edge      mlx5_async0@pci:0000:3b:00.0\n" +
		" 46:          1          2  IR-PCI-MSIX-0000:3b:00.0    1-edge      mlx5_comp0@pci:0000:3b:00.0\n"
	for _, tc := range []struct {
		name, tree string
		irqs       int
		err        string
	}{
		{name: "table", tree: "-- proc/interrupts --\n" + table, irqs: 2},
		{name: "no header: the path", tree: "-- proc/interrupts --\n 45: 1 2 x\n", err: "/proc/interrupts"},
		{name: "absent: the path", tree: "-- proc/version --\nLinux\n", err: "/proc/interrupts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := observe.Interrupts.Get(treeEnv(t, tc.tree))
			wantErr(t, "interrupts", it.Err, tc.err)
			if len(it.IRQs) != tc.irqs {
				t.Errorf("%d IRQs, want %d", len(it.IRQs), tc.irqs)
			}
		})
	}
}

func TestAER(t *testing.T) {
	const fn = "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0"
	for _, tc := range []struct {
		name, tree string
		present    bool
		totals     map[string]uint64
		root       map[string]uint64
		bits       []string // of the correctable kind
		err        string
	}{
		{name: "counters", tree: "-- " + fn + "/aer_dev_correctable --\nRxErr 0\nBadTLP 3\nTOTAL_ERR_COR 3\n" +
			"-- " + fn + "/aer_dev_nonfatal --\nUndefined 0\nTOTAL_ERR_NONFATAL 0\n-- " + fn + "/aer_dev_fatal --\nTOTAL_ERR_FATAL 1\n",
			present: true, totals: map[string]uint64{"correctable": 3, "non-fatal": 0, "fatal": 1}, bits: []string{"BadTLP=3"}},
		{name: "root port totals", tree: "-- " + fn + "/aer_dev_correctable --\nTOTAL_ERR_COR 0\n-- " + fn + "/aer_rootport_total_err_cor --\n7\n",
			present: true, totals: map[string]uint64{"correctable": 0}, root: map[string]uint64{"correctable": 7}},
		{name: "no AER files", tree: "-- " + fn + "/vendor --\n0x15b3\n", totals: map[string]uint64{}},
		{name: "garbled: the path", tree: "-- " + fn + "/aer_dev_fatal --\nTOTAL_ERR_FATAL x\n", present: true,
			totals: map[string]uint64{}, err: "/" + fn + "/aer_dev_fatal: AER counter line"},
		{name: "garbled root total: the path", tree: "-- " + fn + "/aer_rootport_total_err_fatal --\nmany\n",
			totals: map[string]uint64{}, err: "/" + fn + "/aer_rootport_total_err_fatal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := observe.AER(treeEnv(t, tc.tree), "/"+fn)
			wantErr(t, "AER", errors.Join(c.Errs...), tc.err)
			if c.Present != tc.present || len(c.Totals) != len(tc.totals) || len(c.Root) != len(tc.root) {
				t.Errorf("present %v totals %v root %v; want %v %v %v", c.Present, c.Totals, c.Root, tc.present, tc.totals, tc.root)
			}
			for k, v := range tc.totals {
				if c.Totals[k] != v {
					t.Errorf("%s total %d, want %d", k, c.Totals[k], v)
				}
			}
			for k, v := range tc.root {
				if c.Root[k] != v {
					t.Errorf("root %s total %d, want %d", k, c.Root[k], v)
				}
			}
			if !slices.Equal(c.Bits["correctable"], tc.bits) {
				t.Errorf("correctable bits %v, want %v", c.Bits["correctable"], tc.bits)
			}
		})
	}
}

func TestNetdev(t *testing.T) {
	const d = "sys/class/net/ens1f0"
	yes, no := true, false
	for _, tc := range []struct {
		name, tree  string
		operstate   string
		mtu, speed  int
		adminUp     *bool
		operational bool
		opErr       string // what OperstateErr names
		mtuErr      string
		speedErr    string
	}{
		{name: "up", tree: "-- " + d + "/operstate --\nup\n-- " + d + "/mtu --\n9000\n-- " + d + "/flags --\n0x1003\n-- " + d + "/speed --\n100000\n",
			operstate: "up", mtu: 9000, speed: 100000, adminUp: &yes, operational: true},
		{name: "set down, speed unknown", tree: "-- " + d + "/operstate --\ndown\n-- " + d + "/mtu --\n1500\n-- " + d + "/flags --\n0x1002\n-- " + d + "/speed --\n-1\n",
			operstate: "down", mtu: 1500, speed: -1, adminUp: &no},
		{name: "unknown operstate on an up interface", tree: "-- " + d + "/operstate --\nunknown\n-- " + d + "/mtu --\n1500\n-- " + d + "/flags --\n0x1003\n",
			operstate: "unknown", mtu: 1500, speed: -1, adminUp: &yes, operational: true, speedErr: "/" + d + "/speed"},
		{name: "garbled mtu and speed: the paths", tree: "-- " + d + "/operstate --\nup\n-- " + d + "/mtu --\nbig\n-- " + d + "/speed --\nfast\n",
			operstate: "up", speed: -1, operational: true, mtuErr: "/" + d + "/mtu: \"big\" is not an MTU", speedErr: "/" + d + "/speed: \"fast\" is not a speed"},
		{name: "absent: the paths", tree: "-- sys/class/net/lo/mtu --\n65536\n", speed: -1,
			opErr: "/" + d + "/operstate", mtuErr: "/" + d + "/mtu", speedErr: "/" + d + "/speed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := observe.Netdev(treeEnv(t, tc.tree), "ens1f0")
			wantErr(t, "operstate", n.OperstateErr, tc.opErr)
			wantErr(t, "mtu", n.MTUErr, tc.mtuErr)
			wantErr(t, "speed", n.SpeedErr, tc.speedErr)
			if n.Operstate != tc.operstate || n.MTU != tc.mtu || n.SpeedMbps != tc.speed || n.Operational() != tc.operational {
				t.Errorf("%+v; want operstate %q mtu %d speed %d operational %v", n, tc.operstate, tc.mtu, tc.speed, tc.operational)
			}
			if (n.AdminUp == nil) != (tc.adminUp == nil) || n.AdminUp != nil && *n.AdminUp != *tc.adminUp {
				t.Errorf("AdminUp %v, want %v", n.AdminUp, tc.adminUp)
			}
			if n.Dir != "/"+d {
				t.Errorf("Dir %q", n.Dir)
			}
		})
	}
}
