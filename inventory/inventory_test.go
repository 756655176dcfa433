package inventory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/host"
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
	tr.w(vf+"/infiniband/mlx5_10/node_type", "1: CA\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/link_layer", "Ethernet\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/gid_attrs/ndevs/0", "ens1f0v0\n")
	tr.w(vf+"/infiniband/mlx5_10/ports/1/gid_attrs/ndevs/1", "ens1f0v0\n")
	tr.l(vf+"/infiniband/mlx5_10/device", "../../../0000:03:00.1")
	tr.w("sys/devices/virtual/infiniband/rxe0/node_type", "1: CA\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/parent", "eth0\n")
	tr.w("sys/devices/virtual/infiniband/rxe0/ports/1/link_layer", "Ethernet\n")
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

func TestDiscoverAbsent(t *testing.T) {
	h, _ := host.New(host.Options{Root: t.TempDir(), Kind: host.KindRoot})
	inv := Discover(h)
	if inv.Absent == nil || len(inv.Devices) != 0 {
		t.Errorf("want Absent, got %+v", inv)
	}
}
