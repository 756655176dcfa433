// Package watchtest lays out trees that look like a host's sysfs to watch, for its benchmark
// and the soak test of the binary: n RoCE devices as mlx5 shows them, whose ports a test can
// take down and bring up and whose counters it can make grow.
package watchtest

import (
	"fmt"
	"os"
	"path/filepath"
)

// Device is one device of a Tree: its name, PCI function and its ports' netdevs.
type Device struct {
	Name, PCI string
	Netdevs   []string // port 1 first
}

// Tree is a tree of RoCE devices under Root.
type Tree struct {
	Root    string
	Devices []Device
}

// NewTree lays out n devices of two RoCE ports each under root: the class link to the PCI
// function's device directory, node_guid, each port's state, phys_state, link_layer, the
// netdev of GID 0 and two PMA counters (drivers/infiniband/core/sysfs.c), and each netdev's
// operstate and carrier (net/core/net-sysfs.c).
func NewTree(root string, n int) (*Tree, error) {
	t := &Tree{Root: root}
	for d := 0; d < n; d++ {
		dev := Device{Name: fmt.Sprintf("mlx5_%d", d), PCI: fmt.Sprintf("0000:%02x:00.0", 0x10+d)}
		dir := t.devDir(dev)
		if err := t.link("../../../"+dev.PCI, dir+"/device"); err != nil {
			return nil, err
		}
		if err := t.link("../../"+dir[len("sys/"):], "sys/class/infiniband/"+dev.Name); err != nil {
			return nil, err
		}
		if err := t.put(dir+"/node_guid", fmt.Sprintf("b8ce:f603:00%02x:0000\n", d)); err != nil {
			return nil, err
		}
		for p := 1; p <= 2; p++ {
			nd := fmt.Sprintf("ens%df%dnp%d", d, p-1, p-1)
			dev.Netdevs = append(dev.Netdevs, nd)
			pd := fmt.Sprintf("%s/ports/%d", dir, p)
			for _, f := range [][2]string{{"link_layer", "Ethernet\n"}, {"gid_attrs/ndevs/0", nd + "\n"},
				{"counters/symbol_error", "0\n"}, {"counters/port_rcv_errors", "0\n"}} {
				if err := t.put(pd+"/"+f[0], f[1]); err != nil {
					return nil, err
				}
			}
		}
		t.Devices = append(t.Devices, dev)
		for p := 1; p <= 2; p++ {
			if err := t.SetPort(d, p, true); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

func (t *Tree) devDir(d Device) string {
	return fmt.Sprintf("sys/devices/pci0000:00/%s/infiniband/%s", d.PCI, d.Name)
}

// SetPort takes port p (1-based) of device d up (ACTIVE, LinkUp, netdev up with carrier) or
// down (DOWN, Disabled, netdev down without carrier), in place, as sysfs changes under a
// reader holding the files open.
func (t *Tree) SetPort(d, p int, up bool) error {
	dev := t.Devices[d]
	pd := fmt.Sprintf("%s/ports/%d", t.devDir(dev), p)
	nd := "sys/class/net/" + dev.Netdevs[p-1]
	vals := [][2]string{{pd + "/state", "1: DOWN\n"}, {pd + "/phys_state", "3: Disabled\n"}, {nd + "/operstate", "down\n"}, {nd + "/carrier", "0\n"}}
	if up {
		vals = [][2]string{{pd + "/state", "4: ACTIVE\n"}, {pd + "/phys_state", "5: LinkUp\n"}, {nd + "/operstate", "up\n"}, {nd + "/carrier", "1\n"}}
	}
	for _, v := range vals {
		if err := t.put(v[0], v[1]); err != nil {
			return err
		}
	}
	return nil
}

// SetCounter writes a value into a PMA counter (symbol_error, port_rcv_errors) of port p.
func (t *Tree) SetCounter(d, p int, name string, v uint64) error {
	return t.put(fmt.Sprintf("%s/ports/%d/counters/%s", t.devDir(t.Devices[d]), p, name), fmt.Sprintf("%d\n", v))
}

// put writes a file in place (truncated, not replaced), as a sysfs attribute changes.
func (t *Tree) put(p, v string) error {
	p = filepath.Join(t.Root, p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(v), 0o644)
}

func (t *Tree) link(target, p string) error {
	p = filepath.Join(t.Root, p)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, p)
}
