package watch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Identity names a device or one of its ports across renames: the PCI function (a bond or a
// udev rule renames mlx5_0 to mlx5_bond_0, the function stays), else the node GUID, and only
// for a device that has neither its name. Port 0 is the device itself.
type Identity struct {
	Key    string `json:"key"`
	Device string `json:"device,omitempty"`
	Port   int    `json:"port,omitempty"`
}

// HostIdentity stands for what is about no one device (a host-wide finding, an unattributed
// kernel log line); AgentIdentity for rdmadiag watch itself (reads that block).
var (
	HostIdentity  = Identity{Key: "host"}
	AgentIdentity = Identity{Key: "agent"}
)

// device is one RDMA device as the rescan found it.
type device struct {
	Name, PCI, GUID string
	ID              Identity
	Ports           []port
}

// port is one port with the files the poll reads.
type port struct {
	ID        Identity
	Device    string
	Num       int
	LinkLayer string
	// Netdev is the Ethernet netdev of a RoCE port, "" for InfiniBand.
	Netdev string
	// Dir is the port's directory, relative to the root.
	Dir string
}

func deviceKey(pci, guid, name string) string {
	switch {
	case pci != "":
		return "pci-" + pci
	case guid != "" && guid != "0000:0000:0000:0000":
		return "guid-" + guid
	}
	return "name-" + name
}

func portIdentity(dev Identity, num int) Identity {
	return Identity{Key: dev.Key + "/" + strconv.Itoa(num), Device: dev.Device, Port: num}
}

// classDir is where ib_core registers devices (drivers/infiniband/core/device.c, the
// "infiniband" class), relative to the root.
const classDir = "sys/class/infiniband"

// discover walks the root's /sys/class/infiniband: every device with its identity and ports.
// It reads a few small files per port (link_layer, the netdev of GID 0) and none of the polled
// ones. A device whose directory vanishes during the walk is left out (it is gone). Every read
// is confined to the root (os.Root: a link out of a --root tree is refused, as check refuses
// it), and every path is relative to it.
func discover(root *os.Root) ([]device, error) {
	ents, err := readDir(root, classDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // no RDMA device, or ib_core not loaded
	}
	if err != nil {
		return nil, fmt.Errorf("/%s: %w", classDir, err)
	}
	var out []device
	for _, name := range ents {
		dir := path.Join(classDir, name)
		d := device{Name: name}
		if t, err := root.Readlink(path.Join(dir, "device")); err == nil {
			if b := path.Base(t); looksBDF(b) {
				d.PCI = b
			}
		}
		d.GUID = readSmall(root, path.Join(dir, "node_guid"))
		d.ID = Identity{Key: deviceKey(d.PCI, d.GUID, name), Device: name}
		pents, err := readDir(root, path.Join(dir, "ports"))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			out = append(out, d) // a device whose ports cannot be listed is still present
			continue
		}
		for _, pe := range pents {
			n, err := strconv.Atoi(pe)
			if err != nil || n <= 0 {
				continue
			}
			pdir := path.Join(dir, "ports", pe)
			p := port{ID: portIdentity(d.ID, n), Device: name, Num: n, Dir: pdir,
				LinkLayer: readSmall(root, path.Join(pdir, "link_layer"))}
			if p.LinkLayer == "Ethernet" {
				p.Netdev = roceNetdev(root, dir, pdir)
			}
			d.Ports = append(d.Ports, p)
		}
		sort.Slice(d.Ports, func(i, j int) bool { return d.Ports[i].Num < d.Ports[j].Num })
		out = append(out, d)
	}
	return out, nil
}

// roceNetdev is the netdev a RoCE port carries traffic on: the one of its GID 0
// (gid_attrs/ndevs/0, drivers/infiniband/core/sysfs.c show_port_gid_attr_ndev), else the PCI
// function's only netdev, else a software device's parent (rxe's "parent" file).
func roceNetdev(root *os.Root, devDir, portDir string) string {
	if s := readSmall(root, path.Join(portDir, "gid_attrs", "ndevs", "0")); s != "" {
		return s
	}
	if ents, err := readDir(root, path.Join(devDir, "device", "net")); err == nil && len(ents) == 1 {
		return ents[0]
	}
	return readSmall(root, path.Join(devDir, "parent"))
}

// readDir lists a directory of the root, sorted.
func readDir(root *os.Root, p string) ([]string, error) {
	f, err := root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// readSmall reads a small file of the root, trimmed; "" when it cannot or it is not small.
func readSmall(root *os.Root, p string) string {
	f, err := root.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "" // a FIFO or a device node would block or never end
	}
	b := smallBufs.Get().(*[4097]byte)
	defer smallBufs.Put(b)
	n, err := io.ReadFull(f, b[:])
	if n > 4096 || (err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)) {
		return ""
	}
	return strings.TrimSpace(string(b[:n]))
}

// smallBufs are readSmall's buffers: the counters are read every --counters, a page each.
var smallBufs = sync.Pool{New: func() any { return new([4097]byte) }}

func looksBDF(s string) bool {
	return len(s) == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.'
}
