// Package dltest builds devlink generic netlink replies the way the kernel's net/devlink lays
// them out (devlink_nl_fill, devlink_nl_info_fill, devlink_nl_health_reporter_fill,
// devlink_fmsg_snd) and serves them through nltest.Conn, a fake host.NetlinkConn. Tests and the
// synthetic fixture generator describe devlink instances, info and reporters as devlink values
// and get the bytes a kernel (or a snapshot) would hand to the decoder.
package dltest

import (
	"encoding/binary"
	"fmt"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/devlink"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

// Encoder lays out replies. The zero value matches x86_64 kernel output: no PAD attributes,
// nests without NLA_F_NESTED, a diagnosis in one message.
type Encoder struct {
	// PadU64 puts a zero-length DEVLINK_ATTR_PAD before every 64-bit value, as
	// nla_put_u64_64bit does where 8-byte alignment is needed.
	PadU64 bool
	// Nested sets NLA_F_NESTED on nests.
	Nested bool
	// Extra is appended to every message's top-level attributes: unknown attributes a newer
	// kernel might send.
	Extra []byte
	// FmsgItems cuts a diagnosis into messages of at most this many fmsg items, as the kernel
	// does when a message fills up; 0 means one message.
	FmsgItems int
	// Seq and PortID fill the headers.
	Seq, PortID uint32
}

var ne = binary.NativeEndian

const (
	nlmsgError = 2
	nlmsgDone  = 3
	nlmFMulti  = 2
	// Reply commands: the kernel answers CMD_GET with DEVLINK_CMD_NEW and GETFAMILY with
	// CTRL_CMD_NEWFAMILY; decoders do not check them.
	devlinkCmdNew   = 3
	ctrlCmdNewFam   = 1
	ctrlAttrFamID   = 1
	ctrlAttrFamName = 2
)

// attrBuf appends attributes with the encoder's layout options.
type attrBuf struct{ netlinkraw.AttrWriter }

func newBuf(e *Encoder) attrBuf {
	return attrBuf{netlinkraw.AttrWriter{PadU64: e.PadU64, PadType: devlink.AttrPad, Nested: e.Nested}}
}

func (w *attrBuf) handle(h devlink.Handle) {
	w.Str(devlink.AttrBusName, h.Bus)
	w.Str(devlink.AttrDevName, h.Dev)
}

// message appends a generic netlink message: the genlmsghdr (command, version 1) and attrs.
func (e Encoder) message(out []byte, typ, flags uint16, cmd uint8, attrs []byte) []byte {
	return e.raw(out, typ, flags, append([]byte{cmd, 1, 0, 0}, attrs...))
}

// raw appends a netlink message with payload as given (padded to 4 bytes).
func (e Encoder) raw(out []byte, typ, flags uint16, payload []byte) []byte {
	return netlinkraw.AppendMessage(out, typ, flags, e.Seq, e.PortID, payload)
}

// done ends a dump: NLMSG_DONE carrying errno 0.
func (e Encoder) done(out []byte) []byte { return e.raw(out, nlmsgDone, nlmFMulti, []byte{0, 0, 0, 0}) }

// FamilyReply is nlctrl's answer to CTRL_CMD_GETFAMILY: the family's id and name (the kernel
// adds version, header size, ops and multicast groups, which the decoder skips; Extra stands
// for them).
func (e Encoder) FamilyReply(name string, id uint16) []byte {
	w := newBuf(&e)
	w.Str(ctrlAttrFamName, name)
	w.U16(ctrlAttrFamID, id)
	w.U32(3, 1) // CTRL_ATTR_VERSION
	w.B = append(w.B, e.Extra...)
	return e.message(nil, devlink.CtrlType, 0, ctrlCmdNewFam, w.B)
}

// DevDump is the DEVLINK_CMD_GET dump listing hs.
func (e Encoder) DevDump(fam uint16, hs []devlink.Handle) []byte {
	var out []byte
	for _, h := range hs {
		w := newBuf(&e)
		w.handle(h)
		w.B = append(w.B, e.Extra...)
		out = e.message(out, fam, nlmFMulti, devlinkCmdNew, w.B)
	}
	return e.done(out)
}

// InfoReply is the DEVLINK_CMD_INFO_GET answer for one instance.
func (e Encoder) InfoReply(fam uint16, info devlink.Info) []byte {
	w := newBuf(&e)
	w.handle(info.Handle)
	if info.Driver != "" {
		w.Str(devlink.AttrInfoDriverName, info.Driver)
	}
	if info.Serial != "" {
		w.Str(devlink.AttrInfoSerialNumber, info.Serial)
	}
	for _, group := range []struct {
		t  uint16
		vs []devlink.Version
	}{{devlink.AttrInfoVersionFixed, info.Fixed}, {devlink.AttrInfoVersionRunning, info.Running}, {devlink.AttrInfoVersionStored, info.Stored}} {
		for _, v := range group.vs {
			w.Nest(group.t, func() {
				w.Str(devlink.AttrInfoVersionName, v.Name)
				w.Str(devlink.AttrInfoVersionValue, v.Value)
			})
		}
	}
	w.B = append(w.B, e.Extra...)
	return e.message(nil, fam, 0, devlink.CmdInfoGet, w.B)
}

// ReporterDump is the DEVLINK_CMD_HEALTH_REPORTER_GET dump listing rs, in the attribute order
// of devlink_nl_health_reporter_fill.
func (e Encoder) ReporterDump(fam uint16, rs []devlink.Reporter) []byte {
	var out []byte
	for _, r := range rs {
		w := newBuf(&e)
		w.handle(r.Handle)
		if r.HasPort {
			w.U32(devlink.AttrPortIndex, r.Port)
		}
		w.Nest(devlink.AttrHealthReporter, func() {
			w.Str(devlink.AttrHealthReporterName, r.Name)
			w.U8(devlink.AttrHealthReporterState, r.State)
			w.U64(devlink.AttrHealthReporterErrCount, r.ErrCount)
			w.U64(devlink.AttrHealthReporterRecoverCount, r.RecoverCount)
			if r.HasGracePeriod {
				w.U64(devlink.AttrHealthReporterGracePeriod, r.GracePeriod)
				w.U8(devlink.AttrHealthReporterAutoRecover, b2u8(r.AutoRecover))
			}
			if r.DumpTSNs != 0 {
				w.U64(devlink.AttrHealthReporterDumpTS, r.DumpTSNs/1e6)
				w.U64(devlink.AttrHealthReporterDumpTSNs, r.DumpTSNs)
			}
			if r.HasAutoDump {
				w.U8(devlink.AttrHealthReporterAutoDump, b2u8(r.AutoDump))
			}
		})
		w.B = append(w.B, e.Extra...)
		out = e.message(out, fam, nlmFMulti, devlink.CmdHealthReporterGet, w.B)
	}
	return e.done(out)
}

// DiagnoseReply is the DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE answer carrying obj as an fmsg:
// devlink_health_diagnose wraps the reporter's output in one more object, devlink_fmsg_snd sends
// the items in NLM_F_MULTI messages, each with its own FMSG nest, then an empty NLMSG_DONE.
func (e Encoder) DiagnoseReply(fam uint16, obj devlink.Object) []byte {
	var items []item
	items = append(items, item{t: devlink.AttrFmsgObjNestStart})
	items = appendFields(items, obj)
	items = append(items, item{t: devlink.AttrFmsgNestEnd})
	per := e.FmsgItems
	if per <= 0 {
		per = len(items)
	}
	var out []byte
	for i := 0; i < len(items); i += per {
		w := newBuf(&e)
		w.Nest(devlink.AttrFmsg, func() {
			for _, it := range items[i:min(i+per, len(items))] {
				switch {
				case it.t == devlink.AttrFmsgObjValueType:
					w.U8(it.t, it.typ)
				case it.t == devlink.AttrFmsgObjValueData && it.typ == devlink.TypeU64:
					w.U64(it.t, ne.Uint64(it.v))
				case it.v == nil:
					w.Flag(it.t)
				default:
					w.Put(it.t, it.v)
				}
			}
		})
		w.B = append(w.B, e.Extra...)
		out = e.message(out, fam, nlmFMulti, devlink.CmdHealthReporterDiagnose, w.B)
	}
	return e.raw(out, nlmsgDone, nlmFMulti, nil)
}

type item struct {
	t   uint16
	typ uint8
	v   []byte
}

func appendFields(items []item, obj devlink.Object) []item {
	for _, f := range obj {
		items = append(items, item{t: devlink.AttrFmsgPairNestStart}, item{t: devlink.AttrFmsgObjName, v: append([]byte(f.Name), 0)})
		if f.Value != nil {
			items = appendValue(items, f.Value)
		}
		items = append(items, item{t: devlink.AttrFmsgNestEnd})
	}
	return items
}

func appendValue(items []item, v any) []item {
	scalar := func(typ uint8, data []byte) []item {
		return append(items, item{t: devlink.AttrFmsgObjValueType, typ: typ}, item{t: devlink.AttrFmsgObjValueData, typ: typ, v: data})
	}
	switch x := v.(type) {
	case devlink.Object:
		items = append(items, item{t: devlink.AttrFmsgObjNestStart})
		items = appendFields(items, x)
		return append(items, item{t: devlink.AttrFmsgNestEnd})
	case devlink.Array:
		items = append(items, item{t: devlink.AttrFmsgArrNestStart})
		for _, e := range x {
			items = appendValue(items, e)
		}
		return append(items, item{t: devlink.AttrFmsgNestEnd})
	case bool:
		// devlink_fmsg_item_fill_data always sends a flag's value as a u8.
		return scalar(devlink.TypeFlag, []byte{b2u8(x)})
	case uint8:
		return scalar(devlink.TypeU8, []byte{x})
	case uint32:
		return scalar(devlink.TypeU32, ne.AppendUint32(nil, x))
	case uint64:
		return scalar(devlink.TypeU64, ne.AppendUint64(nil, x))
	case string:
		return scalar(devlink.TypeNulString, append([]byte(x), 0))
	case []byte:
		return scalar(devlink.TypeBinary, x)
	}
	panic(fmt.Sprintf("dltest: fmsg value of type %T", v))
}

// ErrorReply is the NLMSG_ERROR message the kernel sends when it refuses a request.
func (e Encoder) ErrorReply(errno syscall.Errno) []byte {
	payload := ne.AppendUint32(nil, uint32(-int32(errno)))
	payload = append(payload, make([]byte, 16)...)
	return e.raw(nil, nlmsgError, 0, payload)
}

func b2u8(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Diagnosis is one reporter's diagnose answer in a Model: an object, or a kernel error (EPERM
// for a caller without CAP_NET_ADMIN).
type Diagnosis struct {
	Handle   devlink.Handle
	Reporter string
	Object   devlink.Object
	Errno    syscall.Errno
}

// Model describes a host's devlink instances; Conn turns it into the answers a kernel gives.
type Model struct {
	// Family is the devlink family id; 0 means the kernel has no devlink (ENOENT).
	Family uint16
	// Devices are the instances; each with an entry in Infos answers INFO_GET with it, the
	// others with EOPNOTSUPP (a driver without an info operation).
	Devices []devlink.Handle
	Infos   []devlink.Info
	// Reporters are dumped in this order; GlobalDumpEINVAL makes the global reporter dump fail
	// with EINVAL so that callers must dump per instance.
	Reporters        []devlink.Reporter
	GlobalDumpEINVAL bool
	Diagnoses        []Diagnosis
	Encoder          Encoder
}

// Conn returns a fake connection answering every request a devlink.Client sends about the model.
func (m Model) Conn() *nltest.Conn {
	c := nltest.NewConn()
	e := m.Encoder
	if m.Family == 0 {
		c.Fail(devlink.FamilyRequest(devlink.FamilyName), syscall.ENOENT)
		return c
	}
	f := m.Family
	c.Reply(devlink.FamilyRequest(devlink.FamilyName), e.FamilyReply(devlink.FamilyName, f))
	c.Reply(devlink.DevicesRequest(f), e.DevDump(f, m.Devices))
	hasInfo := map[devlink.Handle]bool{}
	for _, info := range m.Infos {
		hasInfo[info.Handle] = true
		c.Reply(devlink.InfoRequest(f, info.Handle), e.InfoReply(f, info))
	}
	for _, h := range m.Devices {
		if !hasInfo[h] {
			c.Fail(devlink.InfoRequest(f, h), syscall.EOPNOTSUPP)
		}
		var rs []devlink.Reporter
		for _, r := range m.Reporters {
			if r.Handle == h {
				rs = append(rs, r)
			}
		}
		c.Reply(devlink.DeviceReportersRequest(f, h), e.ReporterDump(f, rs))
	}
	if m.GlobalDumpEINVAL {
		c.Fail(devlink.ReportersRequest(f), syscall.EINVAL)
	} else {
		c.Reply(devlink.ReportersRequest(f), e.ReporterDump(f, m.Reporters))
	}
	for _, d := range m.Diagnoses {
		req := devlink.DiagnoseRequest(f, d.Handle, d.Reporter)
		if d.Errno != 0 {
			c.Fail(req, d.Errno)
			continue
		}
		c.Reply(req, e.DiagnoseReply(f, d.Object))
	}
	return c
}
