// Package ethtooltest builds ethtool generic netlink replies the way the kernel's net/ethtool
// lays them out (ethnl_fill_reply_header, fec_fill_reply, linkmodes_fill_reply,
// eeprom_fill_reply) and serves them through nltest.Conn, a fake host.NetlinkConn. Tests and the
// synthetic fixture generators describe netdevs as ethtoolnl values and get the bytes a kernel
// (or a snapshot) would hand to the decoders.
package ethtooltest

import (
	"encoding/binary"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

var ne = binary.NativeEndian

// Encoder lays out replies. The zero value matches x86_64 kernel output: nests with
// NLA_F_NESTED (nla_nest_start), no PAD before 64-bit arrays, verbose bitsets.
type Encoder struct {
	// PadU64 puts a zero-length ETHTOOL_A_FEC_STAT_PAD before every statistic, as
	// nla_put_64bit does where 8-byte alignment is needed.
	PadU64 bool
	// NoNestedFlag leaves NLA_F_NESTED off the nests.
	NoNestedFlag bool
	// Extra is appended to every message's top-level attributes: unknown attributes a newer
	// kernel might send.
	Extra []byte
	// Seq and PortID fill the headers.
	Seq, PortID uint32
}

func (e Encoder) writer() *netlinkraw.AttrWriter {
	return &netlinkraw.AttrWriter{PadU64: e.PadU64, PadType: ethtoolnl.AttrFECStatPad, Nested: !e.NoNestedFlag}
}

// message appends a generic netlink message: the genlmsghdr (command, version 1) and attrs.
func (e Encoder) message(typ uint16, cmd uint8, attrs []byte) []byte {
	attrs = append(attrs, e.Extra...)
	return netlinkraw.AppendMessage(nil, typ, 0, e.Seq, e.PortID, append([]byte{cmd, 1, 0, 0}, attrs...))
}

func header(w *netlinkraw.AttrWriter, ifindex uint32, ifname string) {
	w.Nest(ethtoolnl.AttrHeader, func() {
		w.U32(ethtoolnl.AttrHeaderDevIndex, ifindex)
		w.Str(ethtoolnl.AttrHeaderDevName, ifname)
	})
}

// bitset appends a verbose ETHTOOL_A_BITSET without a mask, listing the set bits by index and
// name (ethnl_put_bitset32 with a NULL mask).
func bitset(w *netlinkraw.AttrWriter, t uint16, size uint32, bits map[uint32]string) {
	w.Nest(t, func() {
		w.Flag(ethtoolnl.AttrBitsetNoMask)
		w.U32(ethtoolnl.AttrBitsetSize, size)
		w.Nest(ethtoolnl.AttrBitsetBits, func() {
			for i := uint32(0); i < size; i++ {
				if name, ok := bits[i]; ok {
					w.Nest(ethtoolnl.AttrBitsetBitsBit, func() {
						w.U32(ethtoolnl.AttrBitsetBitIndex, i)
						w.Str(ethtoolnl.AttrBitsetBitName, name)
					})
				}
			}
		})
	})
}

// linkModeBits is __ETHTOOL_LINK_MODE_MASK_NBITS of 6.1 (ETHTOOL_LINK_MODE_10baseT1L_Full_BIT + 1
// in include/uapi/linux/ethtool.h), the size the kernel gives its link mode bitsets; the lab's
// 6.1 sends 93 (fixtures/sysfs/ethtool-netdevsim).
const linkModeBits = 93

var fecNames = map[ethtoolnl.FECMode]string{ethtoolnl.FECOff: "None", ethtoolnl.FECRS: "RS", ethtoolnl.FECBaseR: "BASER", ethtoolnl.FECLLRS: "LLRS"}

// FamilyReply is nlctrl's answer resolving "ethtool" to id.
func (e Encoder) FamilyReply(id uint16) []byte {
	return dltest.Encoder{Extra: e.Extra, Seq: e.Seq, PortID: e.PortID}.FamilyReply(ethtoolnl.FamilyName, id)
}

// FECReply is the FEC_GET answer (with ETHTOOL_FLAG_STATS) for f; configured lists the modes
// `ethtool --show-fec` calls "Configured FEC encodings".
func (e Encoder) FECReply(fam uint16, f ethtoolnl.FEC, configured ...ethtoolnl.FECMode) []byte {
	w := e.writer()
	header(w, f.Ifindex, f.Ifname)
	bits := map[uint32]string{}
	for _, m := range configured {
		bits[uint32(m)] = fecNames[m]
	}
	bitset(w, ethtoolnl.AttrFECModes, linkModeBits, bits)
	auto := uint8(0)
	if f.Auto {
		auto = 1
	}
	w.U8(ethtoolnl.AttrFECAuto, auto)
	if f.Active != 0 {
		w.U32(ethtoolnl.AttrFECActive, uint32(f.Active))
	}
	w.Nest(ethtoolnl.AttrFECStats, func() {
		for _, s := range []struct {
			t uint16
			v *ethtoolnl.FECStat
		}{{ethtoolnl.AttrFECStatCorrected, f.Corrected}, {ethtoolnl.AttrFECStatUncorr, f.Uncorrectable}, {ethtoolnl.AttrFECStatCorrBits, f.CorrectedBits}} {
			// nla_put_64bit with cnt 0 still puts the attribute, empty.
			var v []byte
			if s.v != nil {
				v = ne.AppendUint64(v, s.v.Total)
				for _, l := range s.v.Lanes {
					v = ne.AppendUint64(v, l)
				}
			}
			if e.PadU64 {
				w.Put(ethtoolnl.AttrFECStatPad, nil)
			}
			w.Put(s.t, v)
		}
	})
	return e.message(fam, 30, w.B) // ETHTOOL_MSG_FEC_GET_REPLY
}

// LinkModesReply is the LINKMODES_GET answer for l.
func (e Encoder) LinkModesReply(fam uint16, l ethtoolnl.LinkModes) []byte {
	w := e.writer()
	header(w, l.Ifindex, l.Ifname)
	an := uint8(0)
	if l.Autoneg {
		an = 1
	}
	w.U8(ethtoolnl.AttrLinkModesAutoneg, an)
	speed := l.SpeedMbps
	if speed == 0 {
		speed = 0xffffffff // SPEED_UNKNOWN
	}
	w.U32(ethtoolnl.AttrLinkModesSpeed, speed)
	w.U8(ethtoolnl.AttrLinkModesDuplex, l.Duplex)
	if l.Lanes != 0 {
		w.U32(ethtoolnl.AttrLinkModesLanes, l.Lanes)
	}
	return e.message(fam, 4, w.B) // ETHTOOL_MSG_LINKMODES_GET_REPLY
}

// LinkStateReply is the LINKSTATE_GET answer for l (linkstate_fill_reply: the link always, the
// extended state and substate when the driver gave them, the link-down count when reported).
func (e Encoder) LinkStateReply(fam uint16, l ethtoolnl.LinkState) []byte {
	w := e.writer()
	header(w, l.Ifindex, l.Ifname)
	up := uint8(0)
	if l.Link != nil && *l.Link {
		up = 1
	}
	w.U8(ethtoolnl.AttrLinkStateLink, up)
	if l.ExtState != nil {
		w.U8(ethtoolnl.AttrLinkStateExtState, uint8(*l.ExtState))
		if l.ExtSubstate != 0 {
			w.U8(ethtoolnl.AttrLinkStateExtSubstate, l.ExtSubstate)
		}
	}
	if l.DownCount != nil {
		w.U32(ethtoolnl.AttrLinkStateExtDownCnt, *l.DownCount)
	}
	return e.message(fam, 6, w.B) // ETHTOOL_MSG_LINKSTATE_GET_REPLY
}

// EEPROMReply is the MODULE_EEPROM_GET answer carrying data.
func (e Encoder) EEPROMReply(fam uint16, ifindex uint32, ifname string, data []byte) []byte {
	w := e.writer()
	header(w, ifindex, ifname)
	w.Put(ethtoolnl.AttrEEPROMData, data)
	return e.message(fam, 32, w.B) // ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY
}

// ErrorReply is the NLMSG_ERROR message the kernel sends when it refuses a request.
func (e Encoder) ErrorReply(errno syscall.Errno) []byte {
	return dltest.Encoder{Seq: e.Seq, PortID: e.PortID}.ErrorReply(errno)
}

// Netdev is one netdev of a Model.
type Netdev struct {
	Ifindex uint32
	Ifname  string
	// FEC answers FEC_GET; nil makes it fail with FECErrno (EOPNOTSUPP when unset).
	FEC        *ethtoolnl.FEC
	Configured []ethtoolnl.FECMode
	FECErrno   syscall.Errno
	// LinkModes answers LINKMODES_GET; nil makes it fail with EOPNOTSUPP.
	LinkModes *ethtoolnl.LinkModes
	// LinkState answers LINKSTATE_GET; nil makes it fail with EOPNOTSUPP.
	LinkState *ethtoolnl.LinkState
	// EEPROM holds module memory as 256-byte page views keyed by PageKey(i2c address, page): the
	// lower half of a read comes from page 0's view, the upper half from the page's own. Reads
	// of ethtoolnl.RecordedPages that no view holds fail with EEPROMErrno (EOPNOTSUPP when unset).
	EEPROM      map[uint16][]byte
	EEPROMErrno syscall.Errno
}

// PageKey keys Netdev.EEPROM.
func PageKey(i2cAddr, page uint8) uint16 { return uint16(i2cAddr)<<8 | uint16(page) }

// Model describes a host's netdevs; Conn turns it into the answers a kernel gives.
type Model struct {
	// Family is the ethtool family id; 0 means the kernel has none (ENOENT).
	Family  uint16
	Netdevs []Netdev
	Encoder Encoder
}

// RecordRequests lists every request `rdmadiag record` sends about ifname (after the family
// resolution, ethtoolnl.FamilyRequest): what a fixture must hold to replay a recording.
func RecordRequests(fam uint16, ifname string) []host.Request {
	out := []host.Request{ethtoolnl.FECRequest(fam, ifname), ethtoolnl.LinkModesRequest(fam, ifname), ethtoolnl.LinkStateRequest(fam, ifname)}
	for _, p := range ethtoolnl.RecordedPages {
		out = append(out, ethtoolnl.ModuleEEPROMRequest(fam, ifname, p))
	}
	return out
}

// Conn returns a fake connection answering every request a Client sends about the model.
func (m Model) Conn() *nltest.Conn {
	c := nltest.NewConn()
	e := m.Encoder
	if m.Family == 0 {
		c.Fail(ethtoolnl.FamilyRequest(), syscall.ENOENT)
		return c
	}
	f := m.Family
	c.Reply(ethtoolnl.FamilyRequest(), e.FamilyReply(f))
	for _, n := range m.Netdevs {
		if n.FEC != nil {
			fec := *n.FEC
			fec.Ifindex, fec.Ifname = n.Ifindex, n.Ifname
			c.Reply(ethtoolnl.FECRequest(f, n.Ifname), e.FECReply(f, fec, n.Configured...))
		} else {
			c.Fail(ethtoolnl.FECRequest(f, n.Ifname), orErrno(n.FECErrno))
		}
		if n.LinkModes != nil {
			l := *n.LinkModes
			l.Ifindex, l.Ifname = n.Ifindex, n.Ifname
			c.Reply(ethtoolnl.LinkModesRequest(f, n.Ifname), e.LinkModesReply(f, l))
		} else {
			c.Fail(ethtoolnl.LinkModesRequest(f, n.Ifname), syscall.EOPNOTSUPP)
		}
		if n.LinkState != nil {
			l := *n.LinkState
			l.Ifindex, l.Ifname = n.Ifindex, n.Ifname
			c.Reply(ethtoolnl.LinkStateRequest(f, n.Ifname), e.LinkStateReply(f, l))
		} else {
			c.Fail(ethtoolnl.LinkStateRequest(f, n.Ifname), syscall.EOPNOTSUPP)
		}
		for _, p := range ethtoolnl.RecordedPages {
			req := ethtoolnl.ModuleEEPROMRequest(f, n.Ifname, p)
			page := p.Page
			if p.Offset < 128 {
				page = 0
			}
			view, ok := n.EEPROM[PageKey(p.I2CAddr, page)]
			if !ok || len(view) < int(p.Offset+p.Length) {
				c.Fail(req, orErrno(n.EEPROMErrno))
				continue
			}
			c.Reply(req, e.EEPROMReply(f, n.Ifindex, n.Ifname, view[p.Offset:p.Offset+p.Length]))
		}
	}
	return c
}

func orErrno(e syscall.Errno) syscall.Errno {
	if e == 0 {
		return syscall.EOPNOTSUPP
	}
	return e
}
