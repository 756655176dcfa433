// Package dcbtest builds DCB netlink replies the way net/dcb/dcbnl.c lays them out
// (dcbnl_newmsg, dcbnl_ieee_fill) and serves them through nltest.Conn, for tests and the
// synthetic fixture generators.
package dcbtest

import (
	"encoding/binary"
	"syscall"

	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/devlink/dltest"
	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
	"github.com/rdmadiag/rdmadiag/internal/nldev/nltest"
)

var ne = binary.NativeEndian

// ETSBytes lays out struct ieee_ets.
func ETSBytes(e dcbnl.ETS) []byte {
	b := make([]byte, dcbnl.SizeETS)
	if e.Willing {
		b[0] = 1
	}
	b[1] = 8 // ets_cap: traffic classes the port supports (mlx5: 8)
	copy(b[3:11], e.TCTxBW[:])
	copy(b[19:27], e.TSA[:])
	copy(b[27:35], e.PrioTC[:])
	return b
}

// PFCBytes lays out struct ieee_pfc.
func PFCBytes(p dcbnl.PFC) []byte {
	b := make([]byte, dcbnl.SizePFC)
	b[0], b[1], b[2] = p.Cap, p.Enabled, p.MBC
	ne.PutUint16(b[4:], p.Delay)
	for i := 0; i < 8; i++ {
		ne.PutUint64(b[8+8*i:], p.Requests[i])
		ne.PutUint64(b[72+8*i:], p.Indications[i])
	}
	return b
}

// IEEEReply is the DCB_CMD_IEEE_GET answer for v, as dcbnl_ieee_fill writes it: the ifname, the
// IEEE nest (ETS, PFC, the APP table, an empty rewrite table, the trust table when v has one;
// the IEEE and APP nests without NLA_F_NESTED, nla_nest_start_noflag), then the DCBX mode.
func IEEEReply(v dcbnl.IEEE) []byte {
	w := &netlinkraw.AttrWriter{}
	w.Str(dcbnl.AttrIfname, v.Ifname)
	w.Nest(dcbnl.AttrIEEE, func() {
		if v.ETS != nil {
			w.Put(dcbnl.AttrIEEEETS, ETSBytes(*v.ETS))
		}
		if v.PFC != nil {
			w.Put(dcbnl.AttrIEEEPFC, PFCBytes(*v.PFC))
		}
		w.Nest(dcbnl.AttrIEEEAppTable, func() {
			for _, a := range v.Apps {
				t := dcbnl.AttrAppIEEE
				if a.Selector == dcbnl.SelPCP {
					t = dcbnl.AttrAppDCB
				}
				w.Put(t, []byte{a.Selector, a.Priority, byte(a.Protocol), byte(a.Protocol >> 8)})
			}
		})
		w.Nest(12|netlinkraw.AttrFNested, func() {}) // DCB_ATTR_DCB_REWR_TABLE (6.7+, nla_nest_start), empty
		if v.Trust != nil {
			w.Nest(dcbnl.AttrAppTrust|netlinkraw.AttrFNested, func() {
				for _, s := range v.Trust {
					t := dcbnl.AttrAppIEEE
					if s == dcbnl.SelPCP {
						t = dcbnl.AttrAppDCB
					}
					w.U8(t, s)
				}
			})
		}
	})
	if v.DCBX != nil {
		w.U8(dcbnl.AttrDCBX, *v.DCBX)
	}
	payload := append([]byte{syscall.AF_UNSPEC, dcbnl.CmdIEEEGet, 0, 0}, w.B...)
	return netlinkraw.AppendMessage(nil, dcbnl.MsgGetDCB, 0, 0, 0, payload)
}

// Model answers IEEE_GET for each netdev it holds; any other netdev gets EOPNOTSUPP (no dcbnl
// operations), as virtio_net and rxe's netdevs answer.
type Model struct {
	Netdevs []dcbnl.IEEE
	// Refuse lists netdevs answered with EOPNOTSUPP explicitly (recorded in a fixture).
	Refuse []string
}

// Conn serves the model.
func (m Model) Conn() *nltest.Conn {
	c := nltest.NewConn()
	for _, n := range m.Netdevs {
		c.Reply(dcbnl.IEEERequest(n.Ifname), IEEEReply(n))
	}
	for _, n := range m.Refuse {
		c.Fail(dcbnl.IEEERequest(n), syscall.EOPNOTSUPP)
	}
	return c
}

// ErrorReply is the NLMSG_ERROR the kernel sends for a refusal.
func ErrorReply(errno syscall.Errno) []byte { return dltest.Encoder{}.ErrorReply(errno) }
