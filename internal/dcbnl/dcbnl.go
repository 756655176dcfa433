// Package dcbnl asks the kernel's DCB netlink interface (rtnetlink RTM_GETDCB, net/dcb/dcbnl.c)
// for a netdev's IEEE 802.1Qaz configuration: ETS, PFC with its pause counters, the APP table
// (DSCP-to-priority entries) and the trust table, what `dcb ets|pfc|app show dev <if>` (iproute2)
// and NVIDIA's mlnx_qos print. Requests are built and replies decoded here; the socket, recording
// and replay are netlinkraw's, as for RDMA netlink, devlink and ethtool.
package dcbnl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/host"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

var ne = binary.NativeEndian

// Message and attribute numbers (include/uapi/linux/rtnetlink.h, include/uapi/linux/dcbnl.h).
const (
	MsgGetDCB  uint16 = 78 // RTM_GETDCB; the reply has the same type (dcbnl_newmsg in dcb_doit)
	CmdIEEEGet uint8  = 21 // DCB_CMD_IEEE_GET

	AttrIfname uint16 = 1  // DCB_ATTR_IFNAME, string
	AttrIEEE   uint16 = 13 // DCB_ATTR_IEEE, nest (enum ieee_attrs)
	AttrDCBX   uint16 = 14 // DCB_ATTR_DCBX, u8 (DCB_CAP_DCBX_*)

	AttrIEEEETS      uint16 = 1  // DCB_ATTR_IEEE_ETS, struct ieee_ets
	AttrIEEEPFC      uint16 = 2  // DCB_ATTR_IEEE_PFC, struct ieee_pfc
	AttrIEEEAppTable uint16 = 3  // DCB_ATTR_IEEE_APP_TABLE, nest of struct dcb_app
	AttrAppTrust     uint16 = 11 // DCB_ATTR_DCB_APP_TRUST_TABLE, nest of u8 selectors (6.3+)

	AttrAppIEEE uint16 = 1 // DCB_ATTR_IEEE_APP: a dcb_app with an IEEE selector
	AttrAppDCB  uint16 = 2 // DCB_ATTR_DCB_APP: a dcb_app with a non-IEEE selector (PCP)

	// Sizes of the structures as the kernel lays them out (x86-64, arm64: natural alignment).
	SizeETS = 59  // struct ieee_ets: 3 u8, then seven u8[8]
	SizePFC = 136 // struct ieee_pfc: 3 u8, pad, u16 delay, pad to 8, u64 requests[8], indications[8]
	SizeApp = 4   // struct dcb_app: selector, priority, u16 protocol

	dcbmsgLen = 4 // struct dcbmsg: family, cmd, pad
)

// APP selectors (IEEE_8021QAZ_APP_SEL_*, DCB_APP_SEL_PCP).
const (
	SelEthertype uint8 = 1
	SelDSCP      uint8 = 5
	SelPCP       uint8 = 255
)

// ErrMalformed is wrapped by every decoding error the bytes themselves cause.
var ErrMalformed = errors.New("malformed DCB netlink reply")

// ETS is the part of struct ieee_ets rdmadiag reads.
type ETS struct {
	Willing bool
	// TCTxBW is each traffic class's bandwidth share in percent; TSA its algorithm
	// (IEEE_8021QAZ_TSA_STRICT 0, _CB_SHAPER 1, _ETS 2, _VENDOR 255); PrioTC maps each priority
	// to its traffic class.
	TCTxBW, TSA, PrioTC [8]uint8
}

// PFC is struct ieee_pfc: PFC enabled priorities (bit i for priority i), and the pause frames
// sent (Requests) and received (Indications) per priority since the driver counted.
type PFC struct {
	Cap, Enabled, MBC uint8
	Delay             uint16
	Requests          [8]uint64
	Indications       [8]uint64
}

// EnabledOn says whether PFC is on for priority prio.
func (p *PFC) EnabledOn(prio int) bool { return prio >= 0 && prio < 8 && p.Enabled&(1<<prio) != 0 }

// App is one APP table entry: traffic of Protocol (a DSCP value for SelDSCP) goes to Priority.
type App struct {
	Selector, Priority uint8
	Protocol           uint16
}

// IEEE is a netdev's DCB_CMD_IEEE_GET answer. A nil part was not sent (the driver has no such
// operation).
type IEEE struct {
	Ifname string
	ETS    *ETS
	PFC    *PFC
	Apps   []App
	// Trust lists the selectors the port trusts, most trusted first (dcbnl_getapptrust, Linux 6.3,
	// drivers that implement it); nil when not sent.
	Trust []uint8
	DCBX  *uint8
}

// TrustsDSCP says whether the port classifies by DSCP: the trust table says so, or (drivers
// without one: mlx5 through 6.12) the APP table holds DSCP entries, which mlx5 keeps exactly
// while its trust state is DSCP (mlx5e_dcbnl_dscp_app in
// drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c).
func (i *IEEE) TrustsDSCP() bool {
	if i.Trust != nil {
		for _, s := range i.Trust {
			if s == SelDSCP {
				return true
			}
		}
		return false
	}
	for _, a := range i.Apps {
		if a.Selector == SelDSCP {
			return true
		}
	}
	return false
}

// DSCPPriority maps DSCP values to priorities as the APP table says (64 entries at most).
func (i *IEEE) DSCPPriority() map[uint16]uint8 {
	m := map[uint16]uint8{}
	for _, a := range i.Apps {
		if a.Selector == SelDSCP && a.Protocol < 64 {
			m[a.Protocol] = a.Priority
		}
	}
	return m
}

// IEEERequest asks for ifname's IEEE DCB configuration.
func IEEERequest(ifname string) host.Request {
	p := []byte{syscall.AF_UNSPEC, CmdIEEEGet, 0, 0}
	p = netlinkraw.AppendAttr(p, AttrIfname, append([]byte(ifname), 0))
	return host.Request{Type: MsgGetDCB, Payload: p}
}

// Error is a failed request: the netdev and the cause (a syscall.Errno for a refusal:
// EOPNOTSUPP when the netdev has no DCB operations; ErrMalformed; host.ErrNotRecorded).
type Error struct {
	Ifname string
	Err    error
}

func (e *Error) Error() string { return fmt.Sprintf("DCB netlink IEEE_GET %s: %v", e.Ifname, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Client asks one connection.
type Client struct{ conn host.NetlinkConn }

// NewClient returns a client of conn.
func NewClient(conn host.NetlinkConn) *Client { return &Client{conn: conn} }

// IEEE reads ifname's configuration. A netdev without dcbnl operations (virtio_net, rxe's
// netdevs, mlx5 VFs) answers EOPNOTSUPP.
func (c *Client) IEEE(ifname string) (*IEEE, error) {
	if c.conn == nil {
		// A source without the connection (a tree, an older snapshot) holds no answer.
		return nil, &Error{Ifname: ifname, Err: host.ErrNotRecorded}
	}
	b, err := c.conn.Exchange(IEEERequest(ifname))
	if err != nil {
		return nil, &Error{Ifname: ifname, Err: err}
	}
	v, err := DecodeIEEE(b)
	if err != nil {
		return nil, &Error{Ifname: ifname, Err: err}
	}
	if v.Ifname != "" && v.Ifname != ifname {
		return nil, &Error{Ifname: ifname, Err: fmt.Errorf("reply is about %q: %w", v.Ifname, ErrMalformed)}
	}
	return v, nil
}

// DecodeIEEE reads a DCB_CMD_IEEE_GET reply (dcbnl_ieee_fill in net/dcb/dcbnl.c): one RTM_GETDCB
// message with a dcbmsg, DCB_ATTR_IFNAME, the DCB_ATTR_IEEE nest and DCB_ATTR_DCBX. A negative
// errno in NLMSG_ERROR is returned as a syscall.Errno.
func DecodeIEEE(b []byte) (*IEEE, error) {
	var out *IEEE
	n := 0
	for off := 0; off < len(b); {
		h, size, err := netlinkraw.ParseHeader(b[off:])
		if err != nil {
			return nil, fmt.Errorf("message at byte %d: %v: %w", off, err, ErrMalformed)
		}
		payload := b[off+netlinkraw.HdrLen : off+h.Len]
		switch h.Type {
		case netlinkraw.MsgNoop:
		case netlinkraw.MsgOverrun:
			return nil, fmt.Errorf("message at byte %d: NLMSG_OVERRUN: %w", off, ErrMalformed)
		case netlinkraw.MsgError, netlinkraw.MsgDone:
			e, err := netlinkraw.Errno(h, payload)
			if err != nil {
				return nil, fmt.Errorf("message at byte %d: %v: %w", off, err, ErrMalformed)
			}
			if e < 0 {
				return nil, syscall.Errno(-e)
			}
		case MsgGetDCB:
			if n++; n > 1 {
				return nil, fmt.Errorf("message at byte %d: a second reply message: %w", off, ErrMalformed)
			}
			if len(payload) < dcbmsgLen {
				return nil, fmt.Errorf("message at byte %d: %d-byte payload, shorter than a dcbmsg: %w", off, len(payload), ErrMalformed)
			}
			if payload[1] != CmdIEEEGet {
				return nil, fmt.Errorf("message at byte %d: command %d, want %d: %w", off, payload[1], CmdIEEEGet, ErrMalformed)
			}
			v, err := decodeTop(payload[dcbmsgLen:])
			if err != nil {
				return nil, fmt.Errorf("message at byte %d: %w", off, err)
			}
			out = v
		default:
			return nil, fmt.Errorf("message at byte %d: type %#x, want RTM_GETDCB %#x: %w", off, h.Type, MsgGetDCB, ErrMalformed)
		}
		off += size
	}
	if out == nil {
		return nil, fmt.Errorf("reply of %d bytes holds no DCB message: %w", len(b), ErrMalformed)
	}
	return out, nil
}

func eachAttr(b []byte, fn func(t uint16, v []byte) error) error {
	for off := 0; off < len(b); {
		t, v, next, err := netlinkraw.NextAttr(b, off)
		if err != nil {
			return fmt.Errorf("%v: %w", err, ErrMalformed)
		}
		if err := fn(t, v); err != nil {
			return err
		}
		off = next
	}
	return nil
}

func sizeErr(what string, want int, v []byte) error {
	return fmt.Errorf("%s: %d bytes, want %d: %w", what, len(v), want, ErrMalformed)
}

func decodeTop(b []byte) (*IEEE, error) {
	out := &IEEE{}
	err := eachAttr(b, func(t uint16, v []byte) error {
		switch t {
		case AttrIfname:
			for i, c := range v {
				if c == 0 {
					v = v[:i]
					break
				}
			}
			out.Ifname = string(v)
		case AttrDCBX:
			if len(v) != 1 {
				return sizeErr("DCB_ATTR_DCBX", 1, v)
			}
			x := v[0]
			out.DCBX = &x
		case AttrIEEE:
			return decodeIEEENest(v, out)
		}
		return nil
	})
	return out, err
}

func decodeIEEENest(b []byte, out *IEEE) error {
	return eachAttr(b, func(t uint16, v []byte) error {
		switch t {
		case AttrIEEEETS:
			if len(v) < SizeETS {
				return sizeErr("DCB_ATTR_IEEE_ETS", SizeETS, v)
			}
			e := &ETS{Willing: v[0] != 0}
			copy(e.TCTxBW[:], v[3:11])
			copy(e.TSA[:], v[19:27])
			copy(e.PrioTC[:], v[27:35])
			out.ETS = e
		case AttrIEEEPFC:
			if len(v) < SizePFC {
				return sizeErr("DCB_ATTR_IEEE_PFC", SizePFC, v)
			}
			p := &PFC{Cap: v[0], Enabled: v[1], MBC: v[2], Delay: ne.Uint16(v[4:6])}
			for i := 0; i < 8; i++ {
				p.Requests[i] = ne.Uint64(v[8+8*i:])
				p.Indications[i] = ne.Uint64(v[72+8*i:])
			}
			out.PFC = p
		case AttrIEEEAppTable:
			out.Apps = []App{}
			return eachAttr(v, func(t uint16, a []byte) error {
				if t != AttrAppIEEE && t != AttrAppDCB {
					return nil
				}
				if len(a) != SizeApp {
					return sizeErr("DCB APP entry", SizeApp, a)
				}
				if len(out.Apps) >= maxApps {
					return fmt.Errorf("APP table of more than %d entries: %w", maxApps, ErrMalformed)
				}
				out.Apps = append(out.Apps, App{Selector: a[0], Priority: a[1], Protocol: ne.Uint16(a[2:4])})
				return nil
			})
		case AttrAppTrust:
			out.Trust = []uint8{}
			return eachAttr(v, func(t uint16, a []byte) error {
				if len(a) != 1 {
					return sizeErr("DCB trust selector", 1, a)
				}
				if len(out.Trust) >= 256 {
					return fmt.Errorf("trust table of more than 256 selectors: %w", ErrMalformed)
				}
				out.Trust = append(out.Trust, a[0])
				return nil
			})
		}
		return nil
	})
}

// maxApps bounds the APP table read: 64 DSCP entries, 8 PCP, a few ethertypes and ports are what
// drivers keep; a reply claiming thousands is not a host's.
const maxApps = 1024
