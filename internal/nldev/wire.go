package nldev

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmadiag/rdmadiag/internal/netlinkraw"
)

// ErrMalformed is wrapped by every decoding error caused by the bytes themselves (as opposed to a
// kernel error code), so callers can tell a garbled snapshot from a refusing kernel.
var ErrMalformed = errors.New("malformed RDMA netlink reply")

// ne is the byte order of netlink headers and nldev integers: the kernel writes both in host
// order. A snapshot is therefore readable only on a machine of the same endianness, which all
// RDMA hosts in practice (x86_64, arm64, ppc64le) share.
var ne = binary.NativeEndian

// walkDump calls fn with the attribute payload of every message of a dump reply, whose framing
// netlinkraw.Walk checks (as for devlink): every message must be of type want, the reply must end
// with NLMSG_DONE, and a negative errno in NLMSG_ERROR or NLMSG_DONE comes back as a
// syscall.Errno.
func walkDump(b []byte, want uint16, fn func(payload []byte) error) error {
	return netlinkraw.Walk(b, want, true, ErrMalformed, fn)
}

// attrs iterates over a run of netlink attributes. PAD (type 0) is skipped and the nesting and
// byte-order flags are masked off. A framing error stops the iteration and stays in err.
type attrs struct {
	b   []byte
	off int
	err error
}

func (a *attrs) next() (typ uint16, val []byte, ok bool) {
	for a.err == nil && a.off < len(a.b) {
		t, v, next, err := netlinkraw.NextAttr(a.b, a.off)
		if err != nil {
			a.err = attrErr(err)
			return 0, nil, false
		}
		a.off = next
		if t == AttrPad {
			continue
		}
		return t, v, true
	}
	return 0, nil, false
}

// attrErr names the attribute of a framing error and marks it ErrMalformed.
func attrErr(err error) error {
	var ae *netlinkraw.AttrError
	if errors.As(err, &ae) && !ae.Stray {
		return fmt.Errorf("attribute %s at offset %d: nla_len %d outside [%d, %d]: %w",
			attrName(ae.Type), ae.Off, ae.Len, netlinkraw.AttrHdrLen, ae.Left, ErrMalformed)
	}
	return fmt.Errorf("%v: %w", err, ErrMalformed)
}

var attrNames = map[uint16]string{
	AttrDevIndex: "DEV_INDEX", AttrDevName: "DEV_NAME", AttrPortIndex: "PORT_INDEX",
	AttrCapFlags: "CAP_FLAGS", AttrFWVersion: "FW_VERSION", AttrNodeGUID: "NODE_GUID",
	AttrSysImageGUID: "SYS_IMAGE_GUID", AttrSubnetPrefix: "SUBNET_PREFIX", AttrLID: "LID",
	AttrSMLID: "SM_LID", AttrLMC: "LMC", AttrPortState: "PORT_STATE",
	AttrPortPhysState: "PORT_PHYS_STATE", AttrDevNodeType: "DEV_NODE_TYPE",
	AttrResSummary: "RES_SUMMARY", AttrResSummaryEntry: "RES_SUMMARY_ENTRY",
	AttrResSummaryName: "RES_SUMMARY_ENTRY_NAME", AttrResSummaryCurr: "RES_SUMMARY_ENTRY_CURR",
	AttrResQP: "RES_QP", AttrResQPEntry: "RES_QP_ENTRY", AttrResLQPN: "RES_LQPN",
	AttrResRQPN: "RES_RQPN", AttrResRQPSN: "RES_RQ_PSN", AttrResSQPSN: "RES_SQ_PSN",
	AttrResPathMigState: "RES_PATH_MIG_STATE", AttrResType: "RES_TYPE", AttrResState: "RES_STATE",
	AttrResPID: "RES_PID", AttrResKernName: "RES_KERN_NAME", AttrResCQ: "RES_CQ",
	AttrResCQEntry: "RES_CQ_ENTRY", AttrResCQE: "RES_CQE", AttrResUseCnt: "RES_USECNT",
	AttrResPollCtx: "RES_POLL_CTX", AttrResMR: "RES_MR", AttrResMREntry: "RES_MR_ENTRY",
	AttrResRKey: "RES_RKEY", AttrResLKey: "RES_LKEY", AttrResIOVA: "RES_IOVA",
	AttrResMRLen: "RES_MRLEN", AttrResPD: "RES_PD", AttrResPDEntry: "RES_PD_ENTRY",
	AttrResLocalDMALKey: "RES_LOCAL_DMA_LKEY", AttrResUnsafeGlobalR: "RES_UNSAFE_GLOBAL_RKEY",
	AttrNdevIndex: "NDEV_INDEX", AttrNdevName: "NDEV_NAME", AttrResPDN: "RES_PDN",
	AttrResCQN: "RES_CQN", AttrResMRN: "RES_MRN", AttrResCtxN: "RES_CTXN",
	AttrDevProtocol: "DEV_PROTOCOL", AttrDevDIM: "DEV_DIM", AttrResSubtype: "RES_SUBTYPE", AttrResRaw: "RES_RAW",
}

func attrName(t uint16) string {
	if n, ok := attrNames[t]; ok {
		return n
	}
	return fmt.Sprintf("%d", t)
}

// values reads fixed-size attribute values. The first size mismatch is kept in err so that a
// decoding loop checks once per object instead of once per attribute.
type values struct {
	err     error
	strings map[string]string
}

func (d *values) bad(t uint16, want int, v []byte) {
	if d.err == nil {
		d.err = fmt.Errorf("attribute %s: %d bytes, want %d: %w", attrName(t), len(v), want, ErrMalformed)
	}
}

func (d *values) u8(t uint16, v []byte) uint8 {
	if len(v) != 1 {
		d.bad(t, 1, v)
		return 0
	}
	return v[0]
}

func (d *values) u32(t uint16, v []byte) uint32 {
	if len(v) != 4 {
		d.bad(t, 4, v)
		return 0
	}
	return ne.Uint32(v)
}

func (d *values) u64(t uint16, v []byte) uint64 {
	if len(v) != 8 {
		d.bad(t, 8, v)
		return 0
	}
	return ne.Uint64(v)
}

// str returns a NUL-terminated string value, interned: a dump repeats the same device and
// kernel owner names for thousands of objects, and each would otherwise be its own allocation.
func (d *values) str(v []byte) string {
	for i, c := range v {
		if c == 0 {
			v = v[:i]
			break
		}
	}
	if s, ok := d.strings[string(v)]; ok {
		return s
	}
	if d.strings == nil {
		d.strings = make(map[string]string)
	}
	s := string(v)
	d.strings[s] = s
	return s
}
