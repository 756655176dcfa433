// Package qptest builds check environments for the qp and cq layer tests: a host whose RDMA
// netlink answers come from an nltest.Model, with a small sysfs tree, facts and a kernel log.
package qptest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Host describes a test host.
type Host struct {
	Kind host.Kind
	// Model answers netlink; nil means the host has no netlink connection.
	Model *nltest.Model
	// Conn, when set, answers netlink instead of Model.
	Conn  host.NetlinkConn
	Facts *host.Facts
	Kmsg  string
	// Files are written under the root ("/proc/812/comm" -> "labqp\n"); a value starting with
	// "-> " makes a symlink.
	Files map[string]string
	// SoftDevices get a minimal /sys/class/infiniband/<name> with port 1 so the inventory sees them.
	SoftDevices []string
}

// Env builds the check environment.
func (hd Host) Env(t testing.TB, o checks.Options) *checks.Env {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{}
	for _, d := range hd.SoftDevices {
		files["/sys/class/infiniband/"+d+"/node_type"] = "1: CA\n"
		files["/sys/class/infiniband/"+d+"/parent"] = "eth0\n"
		files["/sys/class/infiniband/"+d+"/ports/1/link_layer"] = "Ethernet\n"
		files["/sys/class/infiniband/"+d+"/ports/1/state"] = "4: ACTIVE\n"
	}
	for k, v := range hd.Files {
		files[k] = v
	}
	for p, v := range files {
		dst := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if len(v) > 3 && v[:3] == "-> " {
			if err := os.Symlink(v[3:], dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(dst, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var nl host.NetlinkConn
	if hd.Model != nil {
		nl = hd.Model.Conn()
	}
	if hd.Conn != nil {
		nl = hd.Conn
	}
	kind := hd.Kind
	if kind == "" {
		kind = host.KindSnapshot
	}
	facts := hd.Facts
	h, err := host.New(host.Options{Root: root, Kind: kind, Netlink: nl,
		KernelLog: func() ([]byte, error) {
			if hd.Kmsg == "" {
				return nil, host.ErrNotRecorded
			}
			return []byte(hd.Kmsg), nil
		},
		Facts: func() (*host.Facts, error) {
			if facts == nil {
				return nil, host.ErrNotRecorded
			}
			return facts, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	env := checks.NewEnv(h, o)
	env.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	env.Sleep = func(context.Context, time.Duration) error { return nil }
	return env
}

// Run runs the named checks on the host.
func (hd Host) Run(t testing.TB, o checks.Options, ids ...string) []engine.Finding {
	t.Helper()
	cs, err := checks.Default.Select(ids, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return checks.Run(context.Background(), hd.Env(t, o), cs, 1)
}

// RXE is one software device with index 0, like the lab's rxe0.
func RXE() nldev.Device {
	return nldev.Device{Index: 0, Name: "rxe0", NumPorts: 1, NodeType: 1, Protocol: "roce"}
}

// QP builds a user or kernel RC QP on port 1.
func QP(lqpn uint32, state uint8, pid uint32, kern string) nldev.QP {
	q := nldev.QP{Port: 1, LQPN: lqpn, Type: nldev.QPTypeRC, State: state, PID: pid, KernName: kern}
	if kern == "" {
		q.PDN, q.HasPDN = 1, true
	}
	return q
}

// GSI is the kernel's QP1 of port 1, owned by ib_core, in RTS as on a healthy host.
func GSI() nldev.QP {
	return nldev.QP{Port: 1, LQPN: 1, Type: nldev.QPTypeGSI, State: nldev.QPStateRTS, KernName: "ib_core"}
}
