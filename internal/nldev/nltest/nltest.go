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

	"github.com/rdmadiag/rdmadiag/internal/host"
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

// attrBuf appends attributes with the encoder's layout options.
type attrBuf struct{ netlinkraw.AttrWriter }

func newBuf(e *Encoder) attrBuf {
	return attrBuf{netlinkraw.AttrWriter{PadU64: e.PadU64, PadType: nldev.AttrPad, Nested: e.Nested}}
}

// message appends a whole netlink message of type typ with the given payload.
func (e Encoder) message(out []byte, typ uint16, flags uint16, payload []byte) []byte {
	return netlinkraw.AppendMessage(out, typ, flags, e.Seq, e.PortID, payload)
}

func (e Encoder) done(out []byte) []byte {
	return e.message(out, nlmsgDone, nlmFMulti, []byte{0, 0, 0, 0})
}

// DevDump is the RDMA_NLDEV_CMD_GET dump listing devs.
func (e Encoder) DevDump(devs []nldev.Device) []byte {
	var out []byte
	for _, d := range devs {
		w := newBuf(&e)
		w.U32(nldev.AttrDevIndex, d.Index)
		w.Str(nldev.AttrDevName, d.Name)
		w.U32(nldev.AttrPortIndex, d.NumPorts)
		w.U64(nldev.AttrCapFlags, d.CapFlags)
		if d.FWVersion != "" {
			w.Str(nldev.AttrFWVersion, d.FWVersion)
		}
		w.U64(nldev.AttrNodeGUID, uint64(d.NodeGUID))
		w.U64(nldev.AttrSysImageGUID, uint64(d.SysImageGUID))
		w.U8(nldev.AttrDevNodeType, d.NodeType)
		if d.HasDIM {
			w.U8(nldev.AttrDevDIM, b2u8(d.DIM))
		}
		if d.Protocol != "" {
			w.Str(nldev.AttrDevProtocol, d.Protocol)
		}
		w.B = append(w.B, e.Extra...)
		out = e.message(out, nldev.MsgType(nldev.CmdGet), nlmFMulti, w.B)
	}
	return e.done(out)
}

// PortDump is the RDMA_NLDEV_CMD_PORT_GET dump listing ports.
func (e Encoder) PortDump(ports []nldev.Port) []byte {
	var out []byte
	for _, p := range ports {
		w := newBuf(&e)
		w.U32(nldev.AttrDevIndex, p.DevIndex)
		w.Str(nldev.AttrDevName, p.DevName)
		w.U32(nldev.AttrPortIndex, p.Index)
		w.U64(nldev.AttrCapFlags, p.CapFlags)
		if p.HasIB {
			w.U64(nldev.AttrSubnetPrefix, uint64(p.SubnetPrefix))
			w.U32(nldev.AttrLID, p.LID)
			w.U32(nldev.AttrSMLID, p.SMLID)
			w.U8(nldev.AttrLMC, p.LMC)
		}
		w.U8(nldev.AttrPortState, p.State)
		w.U8(nldev.AttrPortPhysState, p.PhysState)
		if p.NetdevName != "" {
			w.U32(nldev.AttrNdevIndex, p.NetdevIndex)
			w.Str(nldev.AttrNdevName, p.NetdevName)
		}
		w.B = append(w.B, e.Extra...)
		out = e.message(out, nldev.MsgType(nldev.CmdPortGet), nlmFMulti, w.B)
	}
	return e.done(out)
}

// ResSummaryDump is the RDMA_NLDEV_CMD_RES_GET dump. Counts are written in name order.
func (e Encoder) ResSummaryDump(sums []nldev.ResSummary) []byte {
	var out []byte
	for _, s := range sums {
		w := newBuf(&e)
		w.U32(nldev.AttrDevIndex, s.DevIndex)
		w.Str(nldev.AttrDevName, s.DevName)
		names := make([]string, 0, len(s.Counts))
		for n := range s.Counts {
			names = append(names, n)
		}
		sort.Strings(names)
		w.Nest(nldev.AttrResSummary, func() {
			for _, n := range names {
				w.Nest(nldev.AttrResSummaryEntry, func() {
					w.Str(nldev.AttrResSummaryName, n)
					w.U64(nldev.AttrResSummaryCurr, s.Counts[n])
				})
			}
		})
		out = e.message(out, nldev.MsgType(nldev.CmdResGet), nlmFMulti, w.B)
	}
	return e.done(out)
}

// table writes a per-device resource dump: entries are packed into messages of at most
// MaxMsg payload bytes, each starting with the device handle and a table nest.
func table[T any](e Encoder, cmd, tab, ent uint16, devIndex uint32, devName string, objs []T, fill func(w *attrBuf, o *T)) []byte {
	var out []byte
	for i := 0; i < len(objs); {
		w := newBuf(&e)
		w.U32(nldev.AttrDevIndex, devIndex)
		w.Str(nldev.AttrDevName, devName)
		w.Nest(tab, func() {
			for n := 0; i < len(objs); i, n = i+1, n+1 {
				mark := len(w.B)
				w.Nest(ent, func() {
					fill(&w, &objs[i])
					w.B = append(w.B, e.Extra...)
				})
				// Like the kernel, stop before the entry that does not fit; an entry alone in
				// its message still goes out so the dump always progresses.
				if n > 0 && len(w.B) > e.maxMsg() {
					w.B = w.B[:mark]
					break
				}
			}
		})
		out = e.message(out, nldev.MsgType(cmd), nlmFMulti, w.B)
	}
	return e.done(out)
}

func owner(w *attrBuf, pid uint32, kern string) {
	if kern != "" {
		w.Str(nldev.AttrResKernName, kern)
	} else {
		w.U32(nldev.AttrResPID, pid)
	}
}

func fillQP(w *attrBuf, q *nldev.QP) {
	if q.Port != 0 {
		w.U32(nldev.AttrPortIndex, q.Port)
	}
	w.U32(nldev.AttrResLQPN, q.LQPN)
	if q.HasPDN {
		w.U32(nldev.AttrResPDN, q.PDN)
	}
	if q.HasRQPN {
		w.U32(nldev.AttrResRQPN, q.RQPN)
	}
	if q.HasRQPSN {
		w.U32(nldev.AttrResRQPSN, q.RQPSN)
	}
	w.U32(nldev.AttrResSQPSN, q.SQPSN)
	if q.HasPathMig {
		w.U8(nldev.AttrResPathMigState, q.PathMig)
	}
	w.U8(nldev.AttrResType, q.Type)
	w.U8(nldev.AttrResState, q.State)
	owner(w, q.PID, q.KernName)
	if q.Subtype != "" {
		w.Str(nldev.AttrResSubtype, q.Subtype)
	}
}

func fillCQ(w *attrBuf, c *nldev.CQ) {
	w.U32(nldev.AttrResCQE, c.CQE)
	w.U64(nldev.AttrResUseCnt, c.Users)
	if c.HasPollCtx {
		w.U8(nldev.AttrResPollCtx, c.PollCtx)
	}
	if c.HasDIM {
		w.U8(nldev.AttrDevDIM, b2u8(c.DIM))
	}
	w.U32(nldev.AttrResCQN, c.CQN)
	if c.HasCtxN {
		w.U32(nldev.AttrResCtxN, c.CtxN)
	}
	owner(w, c.PID, c.KernName)
}

func fillMR(w *attrBuf, m *nldev.MR) {
	if m.HasKeys {
		w.U32(nldev.AttrResRKey, m.RKey)
		w.U32(nldev.AttrResLKey, m.LKey)
		w.U64(nldev.AttrResIOVA, m.IOVA)
	}
	w.U64(nldev.AttrResMRLen, m.Len)
	w.U32(nldev.AttrResMRN, m.MRN)
	w.U32(nldev.AttrResPDN, m.PDN)
	owner(w, m.PID, m.KernName)
}

func fillPD(w *attrBuf, p *nldev.PD) {
	w.U32(nldev.AttrResLocalDMALKey, p.LocalDMALKey)
	if p.HasUnsafeRKey {
		w.U32(nldev.AttrResUnsafeGlobalR, p.UnsafeGlobalRKey)
	}
	w.U64(nldev.AttrResUseCnt, p.Users)
	w.U32(nldev.AttrResPDN, p.PDN)
	if p.HasCtxN {
		w.U32(nldev.AttrResCtxN, p.CtxN)
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

func fillRaw(w *attrBuf, r *nldev.Raw) { w.Put(nldev.AttrResRaw, r.Data) }

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
