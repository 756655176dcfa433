// Package nltest builds RDMA netlink replies the way the kernel's nldev.c lays them out, and
// serves them through a fake host.NetlinkConn. It exists for tests and benchmarks in any
// package: a check's test describes QPs and CQs as nldev values and gets the exact bytes a
// live kernel (or a snapshot) would hand to the decoder.
package nltest

import (
	"encoding/binary"
	"fmt"
	"sort"
	"syscall"

	"github.com/rdmadiag/rdmadiag/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev"
)

// Encoder lays out replies. The zero value matches x86_64 kernel output: no PAD attributes,
// NLA_F_NESTED clear on resource tables, dump messages of up to 32 KiB.
type Encoder struct {
	// MaxMsg is the largest message payload; longer resource tables continue in another
	// message carrying the device handle again, as the kernel's dump does. 0 means 32 KiB.
	MaxMsg int
	// PadU64 puts a zero-length PAD attribute before every 64-bit value, which
	// nla_put_u64_64bit does on architectures that need 8-byte alignment.
	PadU64 bool
	// Nested sets NLA_F_NESTED on nests, as nla_nest_start (unlike nla_nest_start_noflag) does.
	Nested bool
	// Extra is appended to every object entry and device message: unknown attributes a newer
	// kernel might send.
	Extra []byte
	// Seq and PortID fill the headers.
	Seq, PortID uint32
}

// ne is the kernel's byte order for netlink: the host's.
var ne = binary.NativeEndian

const (
	nlmsgError = 2
	nlmsgDone  = 3
	nlmFMulti  = 2
)

func (e Encoder) maxMsg() int {
	if e.MaxMsg > 0 {
		// nla_len is 16 bits, so a table nest cannot grow past 64 KiB.
		return min(e.MaxMsg, 60<<10)
	}
	return 32 << 10
}

// attrBuf appends attributes.
type attrBuf struct {
	b []byte
	e *Encoder
}

func (w *attrBuf) put(t uint16, v []byte) { w.b = netlinkraw.AppendAttr(w.b, t, v) }

func (w *attrBuf) u8(t uint16, v uint8)   { w.put(t, []byte{v}) }
func (w *attrBuf) u32(t uint16, v uint32) { w.put(t, ne.AppendUint32(nil, v)) }
func (w *attrBuf) u64(t uint16, v uint64) {
	if w.e.PadU64 {
		w.put(nldev.AttrPad, nil)
	}
	w.put(t, ne.AppendUint64(nil, v))
}
func (w *attrBuf) str(t uint16, s string) { w.put(t, append([]byte(s), 0)) }

// nest wraps what fill appends in a nest attribute of type t.
func (w *attrBuf) nest(t uint16, fill func()) {
	start := len(w.b)
	if w.e.Nested {
		t |= netlinkraw.AttrFNested
	}
	w.b = ne.AppendUint16(w.b, 0)
	w.b = ne.AppendUint16(w.b, t)
	fill()
	putU16(w.b[start:], uint16(len(w.b)-start))
}

func putU16(b []byte, v uint16) { ne.PutUint16(b, v) }

// message appends a whole netlink message of type typ with the given payload.
func (e Encoder) message(out []byte, typ uint16, flags uint16, payload []byte) []byte {
	out = ne.AppendUint32(out, uint32(16+len(payload)))
	out = ne.AppendUint16(out, typ)
	out = ne.AppendUint16(out, flags)
	out = ne.AppendUint32(out, e.Seq)
	out = ne.AppendUint32(out, e.PortID)
	out = append(out, payload...)
	for len(out)%4 != 0 {
		out = append(out, 0)
	}
	return out
}

func (e Encoder) done(out []byte) []byte {
	return e.message(out, nlmsgDone, nlmFMulti, []byte{0, 0, 0, 0})
}

// DevDump is the RDMA_NLDEV_CMD_GET dump listing devs.
func (e Encoder) DevDump(devs []nldev.Device) []byte {
	var out []byte
	for _, d := range devs {
		w := attrBuf{e: &e}
		w.u32(nldev.AttrDevIndex, d.Index)
		w.str(nldev.AttrDevName, d.Name)
		w.u32(nldev.AttrPortIndex, d.NumPorts)
		w.u64(nldev.AttrCapFlags, d.CapFlags)
		if d.FWVersion != "" {
			w.str(nldev.AttrFWVersion, d.FWVersion)
		}
		w.u64(nldev.AttrNodeGUID, uint64(d.NodeGUID))
		w.u64(nldev.AttrSysImageGUID, uint64(d.SysImageGUID))
		w.u8(nldev.AttrDevNodeType, d.NodeType)
		if d.HasDIM {
			w.u8(nldev.AttrDevDIM, b2u8(d.DIM))
		}
		if d.Protocol != "" {
			w.str(nldev.AttrDevProtocol, d.Protocol)
		}
		w.b = append(w.b, e.Extra...)
		out = e.message(out, nldev.MsgType(nldev.CmdGet), nlmFMulti, w.b)
	}
	return e.done(out)
}

// PortDump is the RDMA_NLDEV_CMD_PORT_GET dump listing ports.
func (e Encoder) PortDump(ports []nldev.Port) []byte {
	var out []byte
	for _, p := range ports {
		w := attrBuf{e: &e}
		w.u32(nldev.AttrDevIndex, p.DevIndex)
		w.str(nldev.AttrDevName, p.DevName)
		w.u32(nldev.AttrPortIndex, p.Index)
		w.u64(nldev.AttrCapFlags, p.CapFlags)
		if p.HasIB {
			w.u64(nldev.AttrSubnetPrefix, uint64(p.SubnetPrefix))
			w.u32(nldev.AttrLID, p.LID)
			w.u32(nldev.AttrSMLID, p.SMLID)
			w.u8(nldev.AttrLMC, p.LMC)
		}
		w.u8(nldev.AttrPortState, p.State)
		w.u8(nldev.AttrPortPhysState, p.PhysState)
		if p.NetdevName != "" {
			w.u32(nldev.AttrNdevIndex, p.NetdevIndex)
			w.str(nldev.AttrNdevName, p.NetdevName)
		}
		w.b = append(w.b, e.Extra...)
		out = e.message(out, nldev.MsgType(nldev.CmdPortGet), nlmFMulti, w.b)
	}
	return e.done(out)
}

// ResSummaryDump is the RDMA_NLDEV_CMD_RES_GET dump. Counts are written in name order.
func (e Encoder) ResSummaryDump(sums []nldev.ResSummary) []byte {
	var out []byte
	for _, s := range sums {
		w := attrBuf{e: &e}
		w.u32(nldev.AttrDevIndex, s.DevIndex)
		w.str(nldev.AttrDevName, s.DevName)
		names := make([]string, 0, len(s.Counts))
		for n := range s.Counts {
			names = append(names, n)
		}
		sort.Strings(names)
		w.nest(nldev.AttrResSummary, func() {
			for _, n := range names {
				w.nest(nldev.AttrResSummaryEntry, func() {
					w.str(nldev.AttrResSummaryName, n)
					w.u64(nldev.AttrResSummaryCurr, s.Counts[n])
				})
			}
		})
		out = e.message(out, nldev.MsgType(nldev.CmdResGet), nlmFMulti, w.b)
	}
	return e.done(out)
}

// table writes a per-device resource dump: entries are packed into messages of at most
// MaxMsg payload bytes, each starting with the device handle and a table nest.
func table[T any](e Encoder, cmd, tab, ent uint16, devIndex uint32, devName string, objs []T, fill func(w *attrBuf, o *T)) []byte {
	var out []byte
	for i := 0; i < len(objs); {
		w := attrBuf{e: &e}
		w.u32(nldev.AttrDevIndex, devIndex)
		w.str(nldev.AttrDevName, devName)
		w.nest(tab, func() {
			for n := 0; i < len(objs); i, n = i+1, n+1 {
				mark := len(w.b)
				w.nest(ent, func() {
					fill(&w, &objs[i])
					w.b = append(w.b, e.Extra...)
				})
				// Like the kernel, stop before the entry that does not fit; an entry alone in
				// its message still goes out so the dump always progresses.
				if n > 0 && len(w.b) > e.maxMsg() {
					w.b = w.b[:mark]
					break
				}
			}
		})
		out = e.message(out, nldev.MsgType(cmd), nlmFMulti, w.b)
	}
	return e.done(out)
}

func owner(w *attrBuf, pid uint32, kern string) {
	if kern != "" {
		w.str(nldev.AttrResKernName, kern)
	} else {
		w.u32(nldev.AttrResPID, pid)
	}
}

func fillQP(w *attrBuf, q *nldev.QP) {
	if q.Port != 0 {
		w.u32(nldev.AttrPortIndex, q.Port)
	}
	w.u32(nldev.AttrResLQPN, q.LQPN)
	if q.HasPDN {
		w.u32(nldev.AttrResPDN, q.PDN)
	}
	if q.HasRQPN {
		w.u32(nldev.AttrResRQPN, q.RQPN)
	}
	if q.HasRQPSN {
		w.u32(nldev.AttrResRQPSN, q.RQPSN)
	}
	w.u32(nldev.AttrResSQPSN, q.SQPSN)
	if q.HasPathMig {
		w.u8(nldev.AttrResPathMigState, q.PathMig)
	}
	w.u8(nldev.AttrResType, q.Type)
	w.u8(nldev.AttrResState, q.State)
	owner(w, q.PID, q.KernName)
	if q.Subtype != "" {
		w.str(nldev.AttrResSubtype, q.Subtype)
	}
}

func fillCQ(w *attrBuf, c *nldev.CQ) {
	w.u32(nldev.AttrResCQE, c.CQE)
	w.u64(nldev.AttrResUseCnt, c.Users)
	if c.HasPollCtx {
		w.u8(nldev.AttrResPollCtx, c.PollCtx)
	}
	if c.HasDIM {
		w.u8(nldev.AttrDevDIM, b2u8(c.DIM))
	}
	w.u32(nldev.AttrResCQN, c.CQN)
	if c.HasCtxN {
		w.u32(nldev.AttrResCtxN, c.CtxN)
	}
	owner(w, c.PID, c.KernName)
}

func fillMR(w *attrBuf, m *nldev.MR) {
	if m.HasKeys {
		w.u32(nldev.AttrResRKey, m.RKey)
		w.u32(nldev.AttrResLKey, m.LKey)
		w.u64(nldev.AttrResIOVA, m.IOVA)
	}
	w.u64(nldev.AttrResMRLen, m.Len)
	w.u32(nldev.AttrResMRN, m.MRN)
	w.u32(nldev.AttrResPDN, m.PDN)
	owner(w, m.PID, m.KernName)
}

func fillPD(w *attrBuf, p *nldev.PD) {
	w.u32(nldev.AttrResLocalDMALKey, p.LocalDMALKey)
	if p.HasUnsafeRKey {
		w.u32(nldev.AttrResUnsafeGlobalR, p.UnsafeGlobalRKey)
	}
	w.u64(nldev.AttrResUseCnt, p.Users)
	w.u32(nldev.AttrResPDN, p.PDN)
	if p.HasCtxN {
		w.u32(nldev.AttrResCtxN, p.CtxN)
	}
	owner(w, p.PID, p.KernName)
}

// QPDump is the RDMA_NLDEV_CMD_RES_QP_GET dump of one device. The QPs' own DevIndex and
// DevName are ignored; the dump's device handle is what the decoder reports.
func (e Encoder) QPDump(devIndex uint32, devName string, qps []nldev.QP) []byte {
	return table(e, nldev.CmdResQPGet, nldev.AttrResQP, nldev.AttrResQPEntry, devIndex, devName, qps, fillQP)
}

// CQDump is the RDMA_NLDEV_CMD_RES_CQ_GET dump of one device.
func (e Encoder) CQDump(devIndex uint32, devName string, cqs []nldev.CQ) []byte {
	return table(e, nldev.CmdResCQGet, nldev.AttrResCQ, nldev.AttrResCQEntry, devIndex, devName, cqs, fillCQ)
}

// MRDump is the RDMA_NLDEV_CMD_RES_MR_GET dump of one device.
func (e Encoder) MRDump(devIndex uint32, devName string, mrs []nldev.MR) []byte {
	return table(e, nldev.CmdResMRGet, nldev.AttrResMR, nldev.AttrResMREntry, devIndex, devName, mrs, fillMR)
}

// PDDump is the RDMA_NLDEV_CMD_RES_PD_GET dump of one device.
func (e Encoder) PDDump(devIndex uint32, devName string, pds []nldev.PD) []byte {
	return table(e, nldev.CmdResPDGet, nldev.AttrResPD, nldev.AttrResPDEntry, devIndex, devName, pds, fillPD)
}

func fillRaw(w *attrBuf, r *nldev.Raw) { w.put(nldev.AttrResRaw, r.Data) }

// QPRawDump is the RDMA_NLDEV_CMD_RES_QP_GET_RAW dump of one device: entries that hold only
// the driver's RES_RAW bytes, as the kernel sends them.
func (e Encoder) QPRawDump(devIndex uint32, devName string, raws []nldev.Raw) []byte {
	return table(e, nldev.CmdResQPGetRaw, nldev.AttrResQP, nldev.AttrResQPEntry, devIndex, devName, raws, fillRaw)
}

// CQRawDump is the RDMA_NLDEV_CMD_RES_CQ_GET_RAW dump of one device.
func (e Encoder) CQRawDump(devIndex uint32, devName string, raws []nldev.Raw) []byte {
	return table(e, nldev.CmdResCQGetRaw, nldev.AttrResCQ, nldev.AttrResCQEntry, devIndex, devName, raws, fillRaw)
}

// ErrorReply is the NLMSG_ERROR message the kernel sends when it refuses a request.
func (e Encoder) ErrorReply(errno syscall.Errno) []byte {
	payload := ne.AppendUint32(nil, uint32(-int32(errno)))
	// The kernel echoes the offending request's header after the error code.
	payload = append(payload, make([]byte, 16)...)
	return e.message(nil, nlmsgError, 0, payload)
}

// DevDump encodes with the zero Encoder.
func DevDump(devs []nldev.Device) []byte { return Encoder{}.DevDump(devs) }

// PortDump encodes with the zero Encoder.
func PortDump(ports []nldev.Port) []byte { return Encoder{}.PortDump(ports) }

// ResSummaryDump encodes with the zero Encoder.
func ResSummaryDump(sums []nldev.ResSummary) []byte { return Encoder{}.ResSummaryDump(sums) }

// QPDump encodes with the zero Encoder.
func QPDump(devIndex uint32, devName string, qps []nldev.QP) []byte {
	return Encoder{}.QPDump(devIndex, devName, qps)
}

// CQDump encodes with the zero Encoder.
func CQDump(devIndex uint32, devName string, cqs []nldev.CQ) []byte {
	return Encoder{}.CQDump(devIndex, devName, cqs)
}

// MRDump encodes with the zero Encoder.
func MRDump(devIndex uint32, devName string, mrs []nldev.MR) []byte {
	return Encoder{}.MRDump(devIndex, devName, mrs)
}

// PDDump encodes with the zero Encoder.
func PDDump(devIndex uint32, devName string, pds []nldev.PD) []byte {
	return Encoder{}.PDDump(devIndex, devName, pds)
}

// QPRawDump encodes with the zero Encoder.
func QPRawDump(devIndex uint32, devName string, raws []nldev.Raw) []byte {
	return Encoder{}.QPRawDump(devIndex, devName, raws)
}

// CQRawDump encodes with the zero Encoder.
func CQRawDump(devIndex uint32, devName string, raws []nldev.Raw) []byte {
	return Encoder{}.CQRawDump(devIndex, devName, raws)
}

// ErrorReply encodes with the zero Encoder.
func ErrorReply(errno syscall.Errno) []byte { return Encoder{}.ErrorReply(errno) }

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Conn is a fake host.NetlinkConn answering from prepared replies. It records the requests it
// was asked, so tests can assert what a caller queried.
type Conn struct {
	replies  map[string][]byte
	errs     map[string]syscall.Errno
	Requests []host.Request
}

// NewConn returns a Conn with no answers.
func NewConn() *Conn {
	return &Conn{replies: map[string][]byte{}, errs: map[string]syscall.Errno{}}
}

// Reply makes req answer with reply.
func (c *Conn) Reply(req host.Request, reply []byte) { c.replies[req.Key()] = reply }

// Fail makes req fail with a kernel error.
func (c *Conn) Fail(req host.Request, errno syscall.Errno) { c.errs[req.Key()] = errno }

// Exchange answers req; an unprepared request fails with host.ErrNotRecorded.
func (c *Conn) Exchange(req host.Request) ([]byte, error) {
	c.Requests = append(c.Requests, req)
	k := req.Key()
	if e, ok := c.errs[k]; ok {
		return nil, e
	}
	if r, ok := c.replies[k]; ok {
		return r, nil
	}
	return nil, fmt.Errorf("nltest: request %s: %w", k, host.ErrNotRecorded)
}

// Model describes a host's RDMA objects; Conn turns it into the replies a kernel would give.
type Model struct {
	Devices []nldev.Device
	Ports   []nldev.Port // by DevIndex; DevName is taken from Devices
	QPs     []nldev.QP   // by DevIndex
	CQs     []nldev.CQ
	MRs     []nldev.MR
	PDs     []nldev.PD
	// Summary overrides the resource counts; nil derives them from the objects above.
	Summary []nldev.ResSummary
	// Encoder lays the replies out.
	Encoder Encoder
}

// Conn returns a connection answering the device, summary, port, QP, CQ, MR and PD dumps of
// every device in the model (empty dumps for devices without such objects).
func (m Model) Conn() *Conn {
	c := NewConn()
	e := m.Encoder
	c.Reply(nldev.DevicesRequest(), e.DevDump(m.Devices))
	sums := m.Summary
	for _, d := range m.Devices {
		var ports []nldev.Port
		for _, p := range m.Ports {
			if p.DevIndex == d.Index {
				p.DevName = d.Name
				ports = append(ports, p)
			}
		}
		c.Reply(nldev.PortsRequest(d.Index), e.PortDump(ports))
		qps := byDev(m.QPs, d.Index, func(q nldev.QP) uint32 { return q.DevIndex })
		cqs := byDev(m.CQs, d.Index, func(q nldev.CQ) uint32 { return q.DevIndex })
		mrs := byDev(m.MRs, d.Index, func(q nldev.MR) uint32 { return q.DevIndex })
		pds := byDev(m.PDs, d.Index, func(q nldev.PD) uint32 { return q.DevIndex })
		c.Reply(nldev.QPsRequest(d.Index), e.QPDump(d.Index, d.Name, qps))
		c.Reply(nldev.CQsRequest(d.Index), e.CQDump(d.Index, d.Name, cqs))
		c.Reply(nldev.MRsRequest(d.Index), e.MRDump(d.Index, d.Name, mrs))
		c.Reply(nldev.PDsRequest(d.Index), e.PDDump(d.Index, d.Name, pds))
		if m.Summary == nil {
			sums = append(sums, nldev.ResSummary{DevIndex: d.Index, DevName: d.Name, Counts: map[string]uint64{
				"pd": uint64(len(pds)), "cq": uint64(len(cqs)), "qp": uint64(len(qps)), "cm_id": 0,
				"mr": uint64(len(mrs)), "ctx": 0, "srq": 0,
			}})
		}
	}
	c.Reply(nldev.ResSummaryRequest(), e.ResSummaryDump(sums))
	return c
}

func byDev[T any](objs []T, dev uint32, idx func(T) uint32) []T {
	var out []T
	for _, o := range objs {
		if idx(o) == dev {
			out = append(out, o)
		}
	}
	return out
}
