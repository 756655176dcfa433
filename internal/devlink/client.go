// Package devlink speaks the devlink generic netlink family: it lists devlink instances, reads
// `devlink dev info` (driver, serial, fixed/running/stored versions kept apart) and `devlink
// health` (reporter state and counts, and a reporter's diagnose output), as the kernel's
// net/devlink reports them, the same source iproute2's devlink tool reads.
//
// The transport is a host.NetlinkConn over NETLINK_GENERIC: a live socket (Dial), a recorder that
// saves every raw reply next to a snapshot, or a replay of one (netlinkraw.NewRecorder/NewReplay,
// which are protocol-neutral). The devlink family's message type is assigned by the kernel when
// the family registers, so it differs between machines; the Client resolves it through the same
// connection (CTRL_CMD_GETFAMILY to the fixed nlctrl type), which a recording stores like any
// other answer. Replayed on another machine, a snapshot therefore answers with the recorded
// family id, and every later request carries it and finds its recorded reply.
//
// It is written here because no maintained Go library has devlink health support, and
// vishvananda/netlink's info call merges running and stored versions (collectInfoData in its
// devlink_linux.go).
package devlink

import (
	"errors"
	"fmt"
	"sync"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// ErrNoDevlink means the kernel has no devlink family (nlctrl answered ENOENT): a kernel built
// without NET_DEVLINK, as on the machine this package was written on.
var ErrNoDevlink = errors.New("no devlink generic netlink family in this kernel")

// Client issues devlink queries over a NETLINK_GENERIC connection.
type Client struct {
	conn host.NetlinkConn

	once   sync.Once
	family uint16
	famErr error
}

// NewClient returns a client over conn. A nil conn (a host without recorded devlink answers)
// makes every query fail with host.ErrNotRecorded.
func NewClient(conn host.NetlinkConn) *Client { return &Client{conn: conn} }

// FamilyRequest asks nlctrl for the id of the generic netlink family called name.
func FamilyRequest(name string) host.Request {
	return host.Request{Type: CtrlType, Payload: putStr(genlHdr(CtrlCmdGetFamily, ctrlVersion), ctrlAttrFamilyName, name)}
}

func handleAttrs(b []byte, h Handle) []byte {
	b = putStr(b, AttrBusName, h.Bus)
	return putStr(b, AttrDevName, h.Dev)
}

// DevicesRequest dumps every devlink instance (`devlink dev`).
func DevicesRequest(fam uint16) host.Request {
	return host.Request{Type: fam, Flags: netlinkraw.FlagDump, Payload: genlHdr(CmdGet, devlinkVersion)}
}

// InfoRequest asks one instance for its info (`devlink dev info pci/<BDF>`).
func InfoRequest(fam uint16, h Handle) host.Request {
	return host.Request{Type: fam, Payload: handleAttrs(genlHdr(CmdInfoGet, devlinkVersion), h)}
}

// ReportersRequest dumps the health reporters of every instance (`devlink health show`).
func ReportersRequest(fam uint16) host.Request {
	return host.Request{Type: fam, Flags: netlinkraw.FlagDump, Payload: genlHdr(CmdHealthReporterGet, devlinkVersion)}
}

// DeviceReportersRequest dumps the reporters of one instance (device and port reporters), as
// `devlink health show pci/<BDF>` does.
func DeviceReportersRequest(fam uint16, h Handle) host.Request {
	return host.Request{Type: fam, Flags: netlinkraw.FlagDump, Payload: handleAttrs(genlHdr(CmdHealthReporterGet, devlinkVersion), h)}
}

// DiagnoseRequest asks a device reporter for its diagnosis (`devlink health diagnose pci/<BDF>
// reporter <name>`). The kernel requires CAP_NET_ADMIN for it and answers EPERM otherwise.
func DiagnoseRequest(fam uint16, h Handle, reporter string) host.Request {
	return host.Request{Type: fam, Payload: putStr(handleAttrs(genlHdr(CmdHealthReporterDiagnose, devlinkVersion), h), AttrHealthReporterName, reporter)}
}

func (c *Client) exchange(req host.Request) ([]byte, error) {
	if c.conn == nil {
		return nil, fmt.Errorf("no generic netlink connection: %w", host.ErrNotRecorded)
	}
	return c.conn.Exchange(req)
}

// Resolve returns the id of any generic netlink family ("nlctrl" is always there, which the
// live tests use). An unknown family is syscall.ENOENT.
func (c *Client) Resolve(name string) (uint16, error) {
	b, err := c.exchange(FamilyRequest(name))
	if err != nil {
		return 0, err
	}
	id, err := DecodeFamily(b)
	if err != nil {
		return 0, fmt.Errorf("generic netlink family %q: %w", name, err)
	}
	return id, nil
}

// Family returns the devlink family id, resolved once per Client. A kernel without devlink
// gives an error wrapping ErrNoDevlink and ENOENT.
func (c *Client) Family() (uint16, error) {
	c.once.Do(func() {
		c.family, c.famErr = c.Resolve(FamilyName)
		if errors.Is(c.famErr, syscall.ENOENT) {
			c.famErr = fmt.Errorf("resolve generic netlink family %q: %w (%w)", FamilyName, ErrNoDevlink, c.famErr)
		} else if c.famErr != nil {
			c.famErr = fmt.Errorf("resolve generic netlink family %q: %w", FamilyName, c.famErr)
		}
	})
	return c.family, c.famErr
}

// Devices lists the devlink instances.
func (c *Client) Devices() ([]Handle, error) {
	fam, err := c.Family()
	if err != nil {
		return nil, err
	}
	b, err := c.exchange(DevicesRequest(fam))
	if err != nil {
		return nil, fmt.Errorf("devlink dev: %w", err)
	}
	out, err := DecodeDevices(b, fam)
	if err != nil {
		return nil, fmt.Errorf("devlink dev: %w", err)
	}
	return out, nil
}

// Info reads one instance's info. A driver without an info operation answers EOPNOTSUPP.
func (c *Client) Info(h Handle) (*Info, error) {
	fam, err := c.Family()
	if err != nil {
		return nil, err
	}
	b, err := c.exchange(InfoRequest(fam, h))
	if err != nil {
		return nil, fmt.Errorf("devlink dev info %s: %w", h, err)
	}
	info, err := DecodeInfo(b, fam)
	if err != nil {
		return nil, fmt.Errorf("devlink dev info %s: %w", h, err)
	}
	return info, nil
}

// Reporters lists every health reporter. Should a kernel refuse the global dump with EINVAL (a
// defensive fallback: no kernel source that does so was found) it dumps instance by instance.
func (c *Client) Reporters() ([]Reporter, error) {
	fam, err := c.Family()
	if err != nil {
		return nil, err
	}
	b, err := c.exchange(ReportersRequest(fam))
	if errors.Is(err, syscall.EINVAL) {
		return c.reportersByDevice()
	}
	if err != nil {
		return nil, fmt.Errorf("devlink health show: %w", err)
	}
	out, err := DecodeReporters(b, fam)
	if err != nil {
		return nil, fmt.Errorf("devlink health show: %w", err)
	}
	return out, nil
}

func (c *Client) reportersByDevice() ([]Reporter, error) {
	devs, err := c.Devices()
	if err != nil {
		return nil, err
	}
	var out []Reporter
	for _, h := range devs {
		rs, err := c.DeviceReporters(h)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

// DeviceReporters lists the health reporters of one instance.
func (c *Client) DeviceReporters(h Handle) ([]Reporter, error) {
	fam, err := c.Family()
	if err != nil {
		return nil, err
	}
	b, err := c.exchange(DeviceReportersRequest(fam, h))
	if err != nil {
		return nil, fmt.Errorf("devlink health show %s: %w", h, err)
	}
	out, err := DecodeReporters(b, fam)
	if err != nil {
		return nil, fmt.Errorf("devlink health show %s: %w", h, err)
	}
	return out, nil
}

// Diagnose runs a device reporter's diagnose and returns its output. Without CAP_NET_ADMIN the
// error wraps syscall.EPERM.
func (c *Client) Diagnose(h Handle, reporter string) (Object, error) {
	fam, err := c.Family()
	if err != nil {
		return nil, err
	}
	b, err := c.exchange(DiagnoseRequest(fam, h, reporter))
	if err != nil {
		return nil, fmt.Errorf("devlink health diagnose %s reporter %s: %w", h, reporter, err)
	}
	obj, err := DecodeDiagnose(b, fam)
	if err != nil {
		return nil, fmt.Errorf("devlink health diagnose %s reporter %s: %w", h, reporter, err)
	}
	return obj, nil
}
