// Package nldev speaks the RDMA netlink "nldev" protocol: it lists RDMA devices, their ports and
// their resources (QPs, CQs, MRs, PDs) as the kernel's drivers/infiniband/core/nldev.c reports
// them, the same source iproute2's rdma tool reads.
//
// The transport is a host.NetlinkConn: a live NETLINK_RDMA socket (Dial), a recorder that saves
// every reply next to a snapshot (NewRecorder), or a replay of such a recording (NewReplay). The
// Client decodes identically from all three.
package nldev

import (
	"fmt"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// Client issues typed nldev queries over a NetlinkConn.
type Client struct {
	conn host.NetlinkConn
}

// NewClient returns a client over conn. A nil conn (a host without recorded netlink answers)
// makes every query fail with host.ErrNotRecorded.
func NewClient(conn host.NetlinkConn) *Client { return &Client{conn: conn} }

// The request builders below are the only requests the Client sends; a snapshot recorded
// through the Client holds exactly these keys.

func dumpRequest(cmd uint16, attrs []byte) host.Request {
	return host.Request{Type: MsgType(cmd), Flags: NLMFDump, Payload: attrs}
}

func devIndexAttr(idx uint32) []byte {
	return netlinkraw.AppendAttr(nil, AttrDevIndex, ne.AppendUint32(nil, idx))
}

// DevicesRequest dumps every RDMA device in the caller's network namespace.
func DevicesRequest() host.Request { return dumpRequest(CmdGet, nil) }

// PortsRequest dumps every port of one device.
func PortsRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdPortGet, devIndexAttr(devIndex))
}

// ResSummaryRequest dumps the per-device resource counts.
func ResSummaryRequest() host.Request { return dumpRequest(CmdResGet, nil) }

// QPsRequest dumps the QPs of one device; the kernel refuses a QP dump without a device.
func QPsRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResQPGet, devIndexAttr(devIndex))
}

// CQsRequest dumps the CQs of one device.
func CQsRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResCQGet, devIndexAttr(devIndex))
}

// QPsRawRequest dumps the raw hardware contexts of one device's QPs (admin only).
func QPsRawRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResQPGetRaw, devIndexAttr(devIndex))
}

// CQsRawRequest dumps the raw hardware contexts of one device's CQs (admin only).
func CQsRawRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResCQGetRaw, devIndexAttr(devIndex))
}

// MRsRequest dumps the MRs of one device.
func MRsRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResMRGet, devIndexAttr(devIndex))
}

// PDsRequest dumps the PDs of one device.
func PDsRequest(devIndex uint32) host.Request {
	return dumpRequest(CmdResPDGet, devIndexAttr(devIndex))
}

func (c *Client) exchange(req host.Request) ([]byte, error) {
	if c.conn == nil {
		return nil, fmt.Errorf("no RDMA netlink connection: %w", host.ErrNotRecorded)
	}
	return c.conn.Exchange(req)
}

// Devices lists the RDMA devices.
func (c *Client) Devices() ([]Device, error) {
	return query(c, DevicesRequest(), "nldev device dump", decodeDevices)
}

// Ports lists the ports of device devIndex.
func (c *Client) Ports(devIndex uint32) ([]Port, error) {
	return query(c, PortsRequest(devIndex), ofDevice("port", devIndex), decodePorts)
}

// ResourceSummary returns every device's resource counts.
func (c *Client) ResourceSummary() ([]ResSummary, error) {
	return query(c, ResSummaryRequest(), "nldev resource summary dump", decodeResSummary)
}

// QPs lists the QPs of device devIndex.
func (c *Client) QPs(devIndex uint32) ([]QP, error) {
	return query(c, QPsRequest(devIndex), ofDevice("QP", devIndex), decodeQPs)
}

// CQs lists the CQs of device devIndex.
func (c *Client) CQs(devIndex uint32) ([]CQ, error) {
	return query(c, CQsRequest(devIndex), ofDevice("CQ", devIndex), decodeCQs)
}

// QPsRaw returns the raw hardware context of every QP of device devIndex, in the order of the
// kernel's resource table (the order QPs lists them in, though objects created or destroyed
// between the two dumps shift it). The kernel answers EPERM without CAP_NET_ADMIN, EINVAL when
// the driver has no raw contexts (most drivers; mlx5 and hns have them), EOPNOTSUPP when mlx5
// firmware lacks the resource dump; one object that fails aborts the whole dump.
func (c *Client) QPsRaw(devIndex uint32) ([]Raw, error) {
	return query(c, QPsRawRequest(devIndex), ofDevice("raw QP", devIndex), decodeQPsRaw)
}

// CQsRaw returns the raw hardware context of every CQ of device devIndex (see QPsRaw).
func (c *Client) CQsRaw(devIndex uint32) ([]Raw, error) {
	return query(c, CQsRawRequest(devIndex), ofDevice("raw CQ", devIndex), decodeCQsRaw)
}

// MRs lists the MRs of device devIndex. Keys are filled only for a caller with CAP_NET_ADMIN.
func (c *Client) MRs(devIndex uint32) ([]MR, error) {
	return query(c, MRsRequest(devIndex), ofDevice("MR", devIndex), decodeMRs)
}

// PDs lists the PDs of device devIndex.
func (c *Client) PDs(devIndex uint32) ([]PD, error) {
	return query(c, PDsRequest(devIndex), ofDevice("PD", devIndex), decodePDs)
}

func ofDevice(what string, devIndex uint32) string {
	return fmt.Sprintf("nldev %s dump of device %d", what, devIndex)
}

func query[T any](c *Client, req host.Request, what string, decode func([]byte) ([]T, error)) ([]T, error) {
	b, err := c.exchange(req)
	if err == nil {
		var out []T
		if out, err = decode(b); err == nil {
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", what, err)
}
