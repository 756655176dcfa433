package inventory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

type tree struct {
	t *testing.T
	r string
}

func (tr tree) w(p, s string) {
	p = filepath.Join(tr.r, p)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr tree) l(p, target string) {
	p = filepath.Join(tr.r, p)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Symlink(target, p); err != nil {
		tr.t.Fatal(err)
	}
}

// A PF and its VF behind a switch, an rxe device on a netdev, and a device with a garbled file.
func build(t *testing.T) *host.Host {
	tr := tree{t, t.TempDir()}
	pf := "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0"
	vf := "sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.1"
	for _, fn := range []string{pf, vf} {
		tr.w(fn+"/vendor", "0x15b3\n")
		tr.w(fn+"/numa_node", "1\n")
		tr.l(fn+"/driver", "../../../../../../bus/pci/drivers/mlx5_core")
	}
	tr.w(pf+"/device", "0x101b\n")
	tr.w(vf+"/device", "0x101c\n")
	tr.l(vf+"/physfn", "../0000:03:00.0")
	tr.w(pf+"/infiniband/mlx5_0/node_type", "1: CA\n")
	tr.w(pf+"/infiniband/mlx5_0/fw_ver", "20.43.2566\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand\n")
	tr.l(pf+"/infiniband/mlx5_0/device", "../../../0000:03:00.0")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/state", "4: ACTIVE\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/phys_state", "5: LinkUp\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/lid", "0x1a\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/sm_lid", "0x1\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/counters/symbol_error", "7\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/counters/link_downed", "1\n")
	tr.w(pf+"/infiniband/mlx5_0/ports/1/counters/port_rcv_errors", "garbled\n")
	tr.w("sys/module/mlx5_core/version", "24.10-1.1.4\n")
	tr.w(vf+"/infiniband/mlx5_10/node_type", "1: CA\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/link_layer", "Ethernet\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/gid_attrs/ndevs/0", "ens1f0v0\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/gid_attrs/ndevs/1", "ens1f0v0\n")
	tr.l(vf+"/infiniband/mlx5_10/device", "../../../0000:03:00.1")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/lid", "0x0\n") // RoCE: not an InfiniBand address
	tr.w(vf+"/infiniband/mlx5_10/ports/1/counters/symbol_error", "N/A (no PMA)\n")
	tr.w("sys/class/net/ens1f0v0/mtu", "9000\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/node_type", "1: CA\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/parent", "eth0\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/ports/1/state", "ACTIVE\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/ports/1/rate", "2500 Mb/sec\n")
	tr.w("sys/devices/virtual/infiniband/bad0/ports/1/link_layer", "Ethernet\n") // no node_type
	tr.l("sys/class/infiniband/mlx5_0", "../../"+strings.TrimPrefix(pf, "sys/")+"/infiniband/mlx5_0")
	tr.l("sys/class/infiniband/mlx5_10", "../../"+strings.TrimPrefix(vf, "sys/")+"/infiniband/mlx5_10")
	tr.l("sys/class/infiniband/rxe0", "../../devices/virtual/infiniband/rxe0")
	tr.l("sys/class/infiniband/bad0", "../../devices/virtual/infiniband/bad0")
	tr.w("sys/devices/virtual/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n")
	tr.l("sys/class/infiniband_verbs/uverbs0", "../../devices/virtual/infiniband_verbs/uverbs0")
	h, err := host.New(host.Options{Root: tr.r, Kind: host.KindRoot})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestDiscover(t *testing.T) {
	inv := Discover(build(t))
	if inv.Absent != nil {
		t.Fatal(inv.Absent)
	}
	if got := strings.Join(inv.Names(), ","); got != "bad0,mlx5_0,mlx5_10,rxe0" {
		t.Errorf("names %s (natural order wanted)", got)
	}
	pf := inv.Device("mlx5_0")
	if pf.PCI == nil || pf.PCI.BDF != "0000:03:00.0" || pf.PCI.Driver != "mlx5_core" || pf.PCI.NUMANode != 1 || pf.PCI.DeviceID != 0x101b || pf.PCI.IsVF() {
		t.Errorf("PF: %+v", pf.PCI)
	}
	if got := strings.Join(pf.PCI.Path, " "); got != "0000:02:00.0 0000:01:00.0 0000:00:01.0" {
		t.Errorf("upstream path %q", got)
	}
	if pf.UverbsDev != "uverbs0" || pf.FWVer != "20.43.2566" || pf.Ports[0].LinkLayer != "InfiniBand" {
		t.Errorf("PF details: %+v", pf)
	}
	vf := inv.Device("mlx5_10")
	if vf.PCI == nil || vf.PCI.PF != "0000:03:00.0" || strings.Join(vf.Ports[0].Netdevs, ",") != "ens1f0v0" {
		t.Errorf("VF: %+v %+v", vf.PCI, vf.Ports[0])
	}
	rxe := inv.Device("rxe0")
	if !rxe.Software() || rxe.Parent != "eth0" || rxe.Driver != "rdma_rxe" {
		t.Errorf("rxe: %+v", rxe)
	}
	if bad := inv.Device("bad0"); len(bad.Errors) == 0 || !strings.Contains(bad.Errors[0].Error(), "/sys/class/infiniband/bad0/node_type") {
		t.Errorf("a missing file must be named on its device: %v", bad.Errors)
	}
}

// The attributes that describe a port and its driver, and the error counters read on demand.
func TestPortAttributes(t *testing.T) {
	h := build(t)
	inv := Discover(h)
	pf := inv.Device("mlx5_0")
	p := pf.Ports[0]
	if p.State != "" || p.Rate != "" {
		t.Errorf("Discover read the descriptive attributes itself: %+v", p)
	}
	p.ReadAttrs(h, pf.Name)
	if p.State != "ACTIVE" || p.PhysState != "LinkUp" || p.Rate != "200 Gb/sec (4X HDR)" || p.LID == nil || *p.LID != 0x1a ||
		p.SMLID == nil || *p.SMLID != 1 {
		t.Errorf("IB port: %+v", p)
	}
	if pf.DriverVersion != "24.10-1.1.4" {
		t.Errorf("driver version %q", pf.DriverVersion)
	}
	if len(pf.Errors) != 0 {
		t.Errorf("descriptive reads must not add device errors: %v", pf.Errors)
	}
	got := ErrorCounters(h, pf, p)
	if len(got) != 2 || got["symbol_error"] != 7 || got["link_downed"] != 1 {
		t.Errorf("counters (garbled and absent ones left out): %v", got)
	}
	vf := inv.Device("mlx5_10")
	vp := vf.Ports[0]
	vp.ReadAttrs(h, vf.Name)
	if vp.LID != nil || vp.State != "" {
		t.Errorf("RoCE port: %+v", vp)
	}
	if c := ErrorCounters(h, vf, vp); c != nil {
		t.Errorf("a VF without PMA has no counters: %v", c)
	}
	if rxe := inv.Device("rxe0"); rxe.DriverVersion != "" {
		t.Errorf("rdma_rxe declares no version: %q", rxe.DriverVersion)
	}
}

// The checks read state and rate at check time through the same parsers, typed; a malformed or
// missing file is an error naming it, and the malformed rate comes back as printed.
func TestPortTypedReads(t *testing.T) {
	h := build(t)
	inv := Discover(h)
	p := inv.Device("mlx5_0").Ports[0]
	if st, err := p.ReadState(h, "mlx5_0"); err != nil || st != (PortState{Num: 4, Name: "ACTIVE"}) {
		t.Errorf("state %+v %v", st, err)
	}
	if ph, err := p.ReadPhysState(h, "mlx5_0"); err != nil || ph != (PortState{Num: 5, Name: "LinkUp"}) {
		t.Errorf("phys_state %+v %v", ph, err)
	}
	if r, raw, err := p.ReadRate(h, "mlx5_0"); err != nil || r != (Rate{200, 4, "HDR"}) || raw != "200 Gb/sec (4X HDR)" {
		t.Errorf("rate %+v %q %v", r, raw, err)
	}
	rp := inv.Device("rxe0").Ports[0]
	if _, err := rp.ReadState(h, "rxe0"); err == nil || !strings.Contains(err.Error(), "/sys/class/infiniband/rxe0/ports/1/state") {
		t.Errorf("malformed state: %v", err)
	}
	if _, raw, err := rp.ReadRate(h, "rxe0"); err == nil || raw != "2500 Mb/sec" || !strings.Contains(err.Error(), "/sys/class/infiniband/rxe0/ports/1/rate") {
		t.Errorf("malformed rate: %q %v", raw, err)
	}
	vp := inv.Device("mlx5_10").Ports[0]
	if _, raw, err := vp.ReadRate(h, "mlx5_10"); err == nil || raw != "" || !strings.Contains(err.Error(), "rate") {
		t.Errorf("missing rate: %q %v", raw, err)
	}
	if _, err := vp.ReadPhysState(h, "mlx5_10"); err == nil || !strings.Contains(err.Error(), "phys_state") {
		t.Errorf("missing phys_state: %v", err)
	}
}

func TestDiscoverAbsent(t *testing.T) {
	h, _ := host.New(host.Options{Root: t.TempDir(), Kind: host.KindRoot})
	inv := Discover(h)
	if inv.Absent == nil || len(inv.Devices) != 0 {
		t.Errorf("want Absent, got %+v", inv)
	}
}

// Discovery ends with its context: once the run has ended no device is read, the inventory says
// how many of how many were, and a port's files not read yet are not read either.
func TestDiscoverContextEnds(t *testing.T) {
	h := build(t)
	whole := DiscoverContext(context.Background(), h, Options{})
	if whole.Cut != nil || len(whole.Devices) != 4 {
		t.Fatalf("%d devices, cut %v", len(whole.Devices), whole.Cut)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("--timeout 1s reached"))
	inv := DiscoverContext(ctx, h, Options{})
	if len(inv.Devices) != 0 || inv.Cut == nil || inv.Cut.Error() != "the inventory was cut short: 0 of 4 RDMA devices read: --timeout 1s reached" {
		t.Errorf("%d devices, cut %v", len(inv.Devices), inv.Cut)
	}

	// A port discovered before the end, whose state no check had read yet.
	ctx, cancel = context.WithCancelCause(context.Background())
	inv = DiscoverContext(ctx, h, Options{})
	p := inv.Device("mlx5_0").Ports[0]
	if _, _, err := p.ReadRate(h, "mlx5_0"); err != nil {
		t.Fatal(err)
	}
	cancel(errors.New("interrupted by SIGINT"))
	if _, err := p.ReadState(h, "mlx5_0"); err == nil || !strings.HasSuffix(err.Error(), "/ports/1/state: not read: interrupted by SIGINT") {
		t.Errorf("state read after the end: %v", err)
	}
	if r, _, err := p.ReadRate(h, "mlx5_0"); err != nil || r.Gbps != 200 {
		t.Errorf("a file read before the end keeps its reading: %+v %v", r, err)
	}
}
