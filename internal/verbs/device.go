package verbs

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NoDeviceError explains why no device could be opened.
type NoDeviceError struct {
	Reason string
	Fix    string
	Err    error // the underlying verb error, if any
}

func (e *NoDeviceError) Error() string {
	s := e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		s += "; " + e.Fix
	}
	return s
}

// Remedy is the operator action that fixes the error.
func (e *NoDeviceError) Remedy() string { return e.Fix }

// Is makes errors.Is(err, ErrNoDevice) true.
func (e *NoDeviceError) Is(target error) bool { return target == ErrNoDevice }

func (e *NoDeviceError) Unwrap() error { return e.Err }

// DeviceInfo is what libibverbs knows about a device before opening it.
type DeviceInfo struct {
	Name      string // kernel IB device, e.g. "rxe0"
	Uverbs    string // user-verbs char device, e.g. "uverbs0"
	DevPath   string // sysfs infiniband_verbs class path
	IBDevPath string // sysfs infiniband class path
	NodeType  int32
}

// withDeviceList runs fn over the device list and frees it afterwards.
func (l *Lib) withDeviceList(fn func(devs []uintptr) error) error {
	num, err := NewArena(64)
	if err != nil {
		return err
	}
	defer num.Free()
	n, err := New[int32](num)
	if err != nil {
		return err
	}
	list, e := l.call(l.getDeviceList, uintptr(unsafe.Pointer(n)))
	if list == 0 {
		verr := &Error{Verb: "ibv_get_device_list", Errno: e}
		if e == syscall.ENOSYS {
			return &NoDeviceError{
				Reason: "the running kernel has no RDMA user-verbs support (no /sys/class/infiniband_verbs/abi_version)",
				Fix:    "load ib_uverbs and the RDMA driver for the NIC (modprobe ib_uverbs mlx5_ib / rdma_rxe), or use a kernel built with CONFIG_INFINIBAND_USER_ACCESS",
				Err:    verr,
			}
		}
		return &NoDeviceError{Reason: "libibverbs returned no device list", Err: verr}
	}
	defer callRet(l.freeDeviceList, list)
	if *n < 0 || *n > 4096 {
		return fmt.Errorf("ibv_get_device_list: implausible device count %d", *n)
	}
	devs := unsafe.Slice((*uintptr)(cptr(list)), int(*n))
	return fn(devs)
}

func deviceInfo(dev uintptr) DeviceInfo {
	d := (*deviceHead)(cptr(dev))
	return DeviceInfo{
		Name:      cbytes(d.Name[:]),
		Uverbs:    cbytes(d.DevName[:]),
		DevPath:   cbytes(d.DevPath[:]),
		IBDevPath: cbytes(d.IBDevPath[:]),
		NodeType:  d.NodeType,
	}
}

// Devices lists the devices libibverbs can open.
func (l *Lib) Devices() ([]DeviceInfo, error) {
	var out []DeviceInfo
	err := l.withDeviceList(func(devs []uintptr) error {
		for _, d := range devs {
			out = append(out, deviceInfo(d))
		}
		return nil
	})
	return out, err
}

// Context is an open device (struct ibv_context).
type Context struct {
	lib  *Lib
	p    unsafe.Pointer
	info DeviceInfo

	// mu serialises use of scratch, the C memory for attribute structs.
	mu      sync.Mutex
	scratch *Arena
}

// OpenDevice opens the named device through its uverbs node.
func (l *Lib) OpenDevice(name string) (*Context, error) {
	var c *Context
	err := l.withDeviceList(func(devs []uintptr) error {
		var names []string
		for _, d := range devs {
			info := deviceInfo(d)
			names = append(names, info.Name)
			if info.Name != name {
				continue
			}
			var err error
			c, err = l.open(d, info)
			return err
		}
		if len(names) == 0 {
			return &NoDeviceError{Reason: "libibverbs finds no RDMA device",
				Fix: "load the NIC's RDMA driver and check that its user-space provider (ibverbs-providers) is installed"}
		}
		return &NoDeviceError{Reason: fmt.Sprintf("device %q not found (libibverbs lists %s)", name, strings.Join(names, ", "))}
	})
	return c, err
}

// open opens one device of a device list.
func (l *Lib) open(d uintptr, info DeviceInfo) (*Context, error) {
	scratch, err := NewArena(8192)
	if err != nil {
		return nil, err
	}
	p, e := l.call(l.openDevice, d)
	if p == 0 {
		_ = scratch.Free()
		return nil, &Error{Verb: "ibv_open_device", Object: info.Name + " (/dev/infiniband/" + info.Uverbs + ")", Errno: e}
	}
	return &Context{lib: l, p: cptr(p), info: info, scratch: scratch}, nil
}

// EachDevice opens every device of one device list in turn and hands it to fn, which must close
// it; a device that would not open comes with its error instead. ibv_get_device_list rescans
// the devices on every call, so one list for all of them saves a scan per device over
// Devices and OpenDevice.
func (l *Lib) EachDevice(fn func(info DeviceInfo, c *Context, err error)) error {
	return l.withDeviceList(func(devs []uintptr) error {
		for _, d := range devs {
			info := deviceInfo(d)
			c, err := l.open(d, info)
			fn(info, c, err)
		}
		return nil
	})
}

// Info is the device as listed before opening.
func (c *Context) Info() DeviceInfo { return c.info }

// Lib is the library the context was opened with.
func (c *Context) Lib() *Lib { return c.lib }

func (c *Context) head() *contextHead { return (*contextHead)(c.p) }

// CmdFD is the file descriptor of the uverbs node the context talks to.
func (c *Context) CmdFD() int { return int(c.head().CmdFD) }

// AsyncFD is the file descriptor async events are read from.
func (c *Context) AsyncFD() int { return int(c.head().AsyncFD) }

// Close closes the device. It is idempotent.
func (c *Context) Close() error {
	if c == nil || c.p == nil {
		return nil
	}
	r := callRet(c.lib.closeDevice, uintptr(c.p))
	c.p = nil
	ferr := c.scratch.Free()
	if r != 0 {
		return &Error{Verb: "ibv_close_device", Object: c.info.Name, Errno: retErrno(r)}
	}
	return ferr
}

// withScratch runs fn with a cleared scratch arena.
func (c *Context) withScratch(fn func(a *Arena) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return fmt.Errorf("device %s: context is closed", c.info.Name)
	}
	c.scratch.Reset()
	return fn(c.scratch)
}

// QueryDevice is ibv_query_device.
func (c *Context) QueryDevice() (DeviceAttr, error) {
	var out DeviceAttr
	err := c.withScratch(func(a *Arena) error {
		attr, err := New[DeviceAttr](a)
		if err != nil {
			return err
		}
		if r := callRet(c.lib.queryDevice, uintptr(c.p), uintptr(unsafe.Pointer(attr))); r != 0 {
			return &Error{Verb: "ibv_query_device", Object: c.info.Name, Errno: retErrno(r)}
		}
		out = *attr
		return nil
	})
	return out, err
}

// FWVer is the firmware version string of a DeviceAttr.
func (d *DeviceAttr) FWVersion() string { return cbytes(d.FWVer[:]) }

// QueryPort re-implements the inline ___ibv_query_port of verbs.h: use the
// provider's extended query_port when the context is a verbs_context that
// has it, otherwise the exported compat entry point on a zeroed struct.
func (c *Context) QueryPort(port uint8) (PortAttr, error) {
	var out PortAttr
	err := c.withScratch(func(a *Arena) error {
		attr, err := New[PortAttr](a)
		if err != nil {
			return err
		}
		var r int32
		if fn := c.extQueryPort(); fn != 0 {
			r = callRet(fn, uintptr(c.p), uintptr(port), uintptr(unsafe.Pointer(attr)), unsafe.Sizeof(*attr))
		} else {
			r = callRet(c.lib.queryPortCompat, uintptr(c.p), uintptr(port), uintptr(unsafe.Pointer(attr)))
		}
		if r != 0 {
			return &Error{Verb: "ibv_query_port", Object: fmt.Sprintf("%s port %d", c.info.Name, port), Errno: retErrno(r)}
		}
		out = *attr
		return nil
	})
	return out, err
}

func (c *Context) extQueryPort() uintptr {
	if c.head().ABICompat != abiIsExtended {
		return 0
	}
	sz := *(*uintptr)(unsafe.Add(c.p, vctxSzOff))
	if sz < vctxQueryPortNeed {
		return 0
	}
	return *(*uintptr)(unsafe.Add(c.p, vctxQueryPortOff))
}

// GIDTypeUnknown marks entries read with the legacy ibv_query_gid, which
// does not report the GID type.
const GIDTypeUnknown = ^uint32(0)

// GIDs returns the non-zero GID entries of a port. gidTblLen bounds the
// walk (PortAttr.GIDTblLen); maxEntries bounds the whole-device table query.
func (c *Context) GIDs(port uint8, gidTblLen, maxEntries int) ([]GIDEntry, error) {
	if gidTblLen <= 0 || gidTblLen > 1<<16 || maxEntries <= 0 || maxEntries > 1<<20 {
		return nil, fmt.Errorf("%s port %d: implausible GID table size %d/%d", c.info.Name, port, gidTblLen, maxEntries)
	}
	if c.lib.queryGIDTable != 0 {
		return c.gidTable(port, maxEntries)
	}
	var out []GIDEntry
	err := c.withScratch(func(a *Arena) error {
		gid, err := New[[16]byte](a)
		if err != nil {
			return err
		}
		for i := 0; i < gidTblLen; i++ {
			*gid = [16]byte{}
			if r := callRet(c.lib.queryGID, uintptr(c.p), uintptr(port), uintptr(i), uintptr(unsafe.Pointer(gid))); r != 0 {
				return &Error{Verb: "ibv_query_gid", Object: fmt.Sprintf("%s port %d index %d", c.info.Name, port, i), Errno: retErrno(r)}
			}
			if *gid != ([16]byte{}) {
				out = append(out, GIDEntry{GID: *gid, GIDIndex: uint32(i), PortNum: uint32(port), GIDType: GIDTypeUnknown})
			}
		}
		return nil
	})
	return out, err
}

// ErrNoGIDTable is returned by GIDTable when libibverbs predates ibv_query_gid_table
// (rdma-core v32).
var ErrNoGIDTable = errors.New("libibverbs has no ibv_query_gid_table")

// GIDTable returns the valid entries of every port's GID table in one ibv_query_gid_table call
// (one ioctl, UVERBS_METHOD_QUERY_GID_TABLE): maxEntries must cover them all, the sum of the
// ports' gid_tbl_len, or the kernel refuses the call.
func (c *Context) GIDTable(maxEntries int) ([]GIDEntry, error) {
	if c.lib.queryGIDTable == 0 {
		return nil, ErrNoGIDTable
	}
	if maxEntries <= 0 || maxEntries > 1<<20 {
		return nil, fmt.Errorf("%s: implausible GID table size %d", c.info.Name, maxEntries)
	}
	return c.gidTable(0, maxEntries)
}

// gidTable queries the whole table and keeps port's non-zero entries (every port's with port 0).
func (c *Context) gidTable(port uint8, maxEntries int) ([]GIDEntry, error) {
	m, err := NewMem(maxEntries * int(unsafe.Sizeof(GIDEntry{})))
	if err != nil {
		return nil, err
	}
	defer m.Free()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p == nil {
		return nil, errors.New("context is closed")
	}
	r, _, _ := purego.SyscallN(c.lib.queryGIDTable, uintptr(c.p), m.Addr(), uintptr(maxEntries), 0, unsafe.Sizeof(GIDEntry{}))
	n := int64(r)
	if n < 0 {
		return nil, &Error{Verb: "ibv_query_gid_table", Object: c.info.Name, Errno: syscall.Errno(-n)}
	}
	if n > int64(maxEntries) {
		return nil, fmt.Errorf("ibv_query_gid_table on %s: %d entries for room of %d", c.info.Name, n, maxEntries)
	}
	all := unsafe.Slice((*GIDEntry)(unsafe.Pointer(&m.Bytes()[0])), int(n))
	var out []GIDEntry
	for _, e := range all {
		if (port == 0 || e.PortNum == uint32(port)) && e.GID != ([16]byte{}) {
			out = append(out, e)
		}
	}
	return out, nil
}
