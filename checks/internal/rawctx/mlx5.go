package rawctx

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Resource-dump stream framing (mlx5_ifc.h resource_dump_segment_header_bits, K61 l.2226,
// K612 l.2521; resource_dump_resource_segment_bits, K61 l.2276, K612 l.2571).
const (
	mlx5SegHeader = 4  // BE16 length_dw (whole segment, in dwords) + BE16 segment_type
	mlx5ResFrame  = 16 // header, reserved dword, index1 (BE32 at 8), index2 (BE32 at 12)
	// Types from 0xff00 up are control segments; resources are 0x0000-0xfeff (MFT
	// resourcedump_lib/utils/constants.py l.45-54). Resource types themselves are chosen by
	// firmware at run time (diag/rsc_dump.c matches the menu by name), so any is accepted.
	mlx5FirstControl = 0xff00
	mlx5Command      = 0xfffa
	mlx5Terminate    = 0xfffb
)

var mlx5ControlNames = map[uint16]string{
	0xfff9: "notice", 0xfffa: "command", 0xfffb: "terminate", 0xfffc: "error",
	0xfffd: "reference", 0xfffe: "info", 0xffff: "menu",
}

// qpc and cqc fields (mlx5_ifc.h, offsets summed from the field widths in K61 and K612).
var (
	mlx5QPCState     = beField{0x0, 4}    // qpc.state, K61 l.3174
	mlx5QPCLogRQSize = beField{0x49, 4}   // qpc.log_rq_size, K61 l.3198, K612 l.3535
	mlx5QPCNoSQ      = beField{0x50, 1}   // qpc.no_sq, K61 l.3200
	mlx5QPCLogSQSize = beField{0x51, 4}   // qpc.log_sq_size, K61 l.3201, K612 l.3538
	mlx5QPCCQNSnd    = beField{0x3e8, 24} // qpc.cqn_snd, K61 l.3241, K612 l.3579
	mlx5QPCCQNRcv    = beField{0x4e8, 24} // qpc.cqn_rcv, K61 l.3277, K612 l.3615
	mlx5QPCRQType    = beField{0x565, 3}  // qpc.rq_type, K61 l.3284
	mlx5CQCLogCQSize = beField{0x63, 5}   // cqc.log_cq_size, K61 l.4247, K612 l.4616
)

const (
	mlx5QPCSize = 0x740 / 8 // qpc_bits: 232 bytes
	mlx5CQCSize = 0x200 / 8 // cqc_bits: 64 bytes
	// Bytes of context the fields above need: up to the end of rq_type's dword.
	mlx5QPCNeed = 4 * (0x565/32 + 1)
	mlx5CQCNeed = 4 * (0x63/32 + 1)
	// Where the context starts in query_qp_out (bit 0xc0, K61 l.5341) and query_cq_out
	// (bit 0x80, K61 l.6612).
	mlx5QueryQPOutCtx = 0xc0 / 8
	mlx5QueryCQOutCtx = 0x80 / 8
	// rq_type values (K61 include/linux/mlx5/qp.h l.125-130), set by the kernel in K612
	// mlx5/qp.c l.1229-1238: SRQ_RQ for SRQ, XRC_TGT, DCI, XRC_INI; ZERO_LEN_RQ for no RQ.
	mlx5NonZeroRQ = 0
	mlx5SRQRQ     = 1
	mlx5ZeroLenRQ = 3
	mlx5StateRST  = 0 // MLX5_QPC_STATE_RST
)

// mlx5Resource is the first resource segment of a stream.
type mlx5Resource struct {
	typ            uint16
	index1, index2 uint32
	payload        []byte
}

// mlx5FirstResource walks the stream by length_dw and returns the first resource segment.
// The kernel copies the firmware's chunks back to back and stops before 1024 bytes
// (restrack.c MAX_DUMP_SIZE), so what follows the first resource may be cut off; it is not
// read. Every step advances at least one dword, so the walk ends.
func mlx5FirstResource(b []byte, what string) (mlx5Resource, error) {
	var seen []string
	off := 0
	for off < len(b) {
		if len(b)-off < mlx5SegHeader {
			return mlx5Resource{}, fmt.Errorf("mlx5 raw %s: %d stray bytes at byte %d, too few for a segment header", what, len(b)-off, off)
		}
		ldw := binary.BigEndian.Uint16(b[off:])
		typ := binary.BigEndian.Uint16(b[off+2:])
		if ldw == 0 {
			return mlx5Resource{}, fmt.Errorf("mlx5 raw %s: segment at byte %d (type 0x%04x) has length_dw 0", what, off, typ)
		}
		n := 4 * int(ldw)
		if n > len(b)-off {
			return mlx5Resource{}, fmt.Errorf("mlx5 raw %s: segment at byte %d (type 0x%04x) is %d bytes, only %d left in the %d-byte blob",
				what, off, typ, n, len(b)-off, len(b))
		}
		if typ < mlx5FirstControl {
			if n < mlx5ResFrame {
				return mlx5Resource{}, fmt.Errorf("mlx5 raw %s: resource segment at byte %d (type 0x%04x) is %d bytes, less than its %d-byte framing",
					what, off, typ, n, mlx5ResFrame)
			}
			return mlx5Resource{
				typ:     typ,
				index1:  binary.BigEndian.Uint32(b[off+8:]),
				index2:  binary.BigEndian.Uint32(b[off+12:]),
				payload: b[off+mlx5ResFrame : off+n],
			}, nil
		}
		name, ok := mlx5ControlNames[typ]
		if !ok {
			name = fmt.Sprintf("0x%04x", typ)
		}
		seen = append(seen, name)
		off += n
		if typ == mlx5Terminate {
			break
		}
	}
	hint := ""
	for _, s := range seen {
		if s == "error" {
			hint = "; the firmware returned an error segment"
		}
	}
	return mlx5Resource{}, fmt.Errorf("mlx5 raw %s: no resource segment in the %d-byte stream (segments: %s)%s: %w",
		what, len(b), orNone(seen), hint, ErrUnknownFormat)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// mlx5Context returns the context bytes of the first resource segment under layout l.
func mlx5Context(l Layout, b []byte, what string, queryOutOff, need int) (mlx5Resource, []byte, error) {
	seg, err := mlx5FirstResource(b, what)
	if err != nil {
		return seg, nil, err
	}
	off := 0
	if l == LayoutQueryOut {
		off = queryOutOff
	}
	if len(seg.payload) < off+need {
		return seg, nil, fmt.Errorf("mlx5 raw %s: resource payload is %d bytes; layout %v needs %d (context at payload byte %d, fields to context byte %d)",
			what, len(seg.payload), l, off+need, off, need)
	}
	return seg, seg.payload[off:], nil
}

func decodeMLX5QP(l Layout, b []byte) (QP, error) {
	seg, ctx, err := mlx5Context(l, b, "QP", mlx5QueryQPOutCtx, mlx5QPCNeed)
	if err != nil {
		return QP{}, err
	}
	st := mlx5QPCState.get(ctx)
	q := QP{
		Format:   FormatMLX5,
		State:    uint8(st),
		Reset:    st == mlx5StateRST,
		QPN:      seg.index1, // the kernel asks for index1 = ibqp->qp_num (K612 restrack.c l.188)
		HasQPN:   true,
		SendCQ:   mlx5QPCCQNSnd.get(ctx), // hardware mcq.cqn (K612 qp.c l.2380-2384)
		RecvCQ:   mlx5QPCCQNRcv.get(ctx),
		SQBlocks: true, // sq.wqe_cnt = wq_size/MLX5_SEND_WQE_BB (K612 qp.c calc_sq_size l.612-628)
	}
	if mlx5QPCNoSQ.get(ctx) == 0 {
		q.SQ = 1 << mlx5QPCLogSQSize.get(ctx)
	}
	switch t := mlx5QPCRQType.get(ctx); t {
	case mlx5NonZeroRQ:
		q.RQ = 1 << mlx5QPCLogRQSize.get(ctx)
	case mlx5SRQRQ:
		q.SRQ = true
	case mlx5ZeroLenRQ:
	default:
		// MLX5_CRQ_RQ (2) and the unnamed value are never set by mlx5_ib: reading one
		// suggests the wrong layout rather than a QP to count.
		return QP{}, fmt.Errorf("mlx5 raw QP %d: rq_type %d under layout %v is not one mlx5_ib sets (0, 1, 3)", seg.index1, t, l)
	}
	return q, nil
}

func decodeMLX5CQ(l Layout, b []byte) (CQ, error) {
	seg, ctx, err := mlx5Context(l, b, "CQ", mlx5QueryCQOutCtx, mlx5CQCNeed)
	if err != nil {
		return CQ{}, err
	}
	// The kernel keys the dump by index1 = cq->mcq.cqn (K612 restrack.c l.156); log_cq_size is
	// ilog2(entries), entries = roundup_pow_of_two(cqe+1) (K612 mlx5/cq.c l.978-982).
	return CQ{Format: FormatMLX5, CQN: seg.index1, HasCQN: true, Depth: 1 << mlx5CQCLogCQSize.get(ctx)}, nil
}

// Segment types the encoder uses for the resource segments. Firmware picks the real ones
// (see mlx5FirstControl); these are arbitrary values below 0xff00.
const (
	mlx5EncQPType = 0x0100
	mlx5EncCQType = 0x0101
)

// EncodeMLX5QP builds the RES_RAW stream an mlx5 kernel would return for q if layout l were
// the firmware's: a command segment, one resource segment (index1 = q.QPN) holding the
// context at l's offset in a zeroed full-size struct, and a terminate segment. For tests and
// synthetic snapshots. SQ 0 encodes no_sq; RQ 0 encodes rq_type 1 with q.SRQ, else 3.
// Derived fields (Reset, SQBlocks, HasQPN, RQAmbiguous) are ignored.
func EncodeMLX5QP(q QP, l Layout) ([]byte, error) {
	if err := checkLayout(MLX5, l); err != nil {
		return nil, err
	}
	if q.Format != "" && q.Format != FormatMLX5 {
		return nil, fmt.Errorf("encode mlx5 QP: format %q is not %s", q.Format, FormatMLX5)
	}
	if uint32(q.State) > mlx5QPCState.mask() {
		return nil, fmt.Errorf("encode mlx5 QP: state %d does not fit qpc.state's 4 bits", q.State)
	}
	if q.SendCQ > mlx5QPCCQNSnd.mask() || q.RecvCQ > mlx5QPCCQNRcv.mask() {
		return nil, fmt.Errorf("encode mlx5 QP: CQNs %d/%d do not fit 24 bits", q.SendCQ, q.RecvCQ)
	}
	off, size := 0, mlx5QPCSize
	if l == LayoutQueryOut {
		off, size = mlx5QueryQPOutCtx, mlx5QueryQPOutCtx+mlx5QPCSize
	}
	payload := make([]byte, size)
	ctx := payload[off:]
	mlx5QPCState.put(ctx, uint32(q.State))
	mlx5QPCCQNSnd.put(ctx, q.SendCQ)
	mlx5QPCCQNRcv.put(ctx, q.RecvCQ)
	if q.SQ == 0 {
		mlx5QPCNoSQ.put(ctx, 1)
	} else {
		s, ok := log2Exact(q.SQ, 15)
		if !ok {
			return nil, fmt.Errorf("encode mlx5 QP: SQ %d is not a power of two up to 32768", q.SQ)
		}
		mlx5QPCLogSQSize.put(ctx, s)
	}
	switch {
	case q.SRQ:
		if q.RQ != 0 {
			return nil, fmt.Errorf("encode mlx5 QP: RQ %d with SRQ (an SRQ QP has no RQ)", q.RQ)
		}
		mlx5QPCRQType.put(ctx, mlx5SRQRQ)
	case q.RQ == 0:
		mlx5QPCRQType.put(ctx, mlx5ZeroLenRQ)
	default:
		s, ok := log2Exact(q.RQ, 15)
		if !ok {
			return nil, fmt.Errorf("encode mlx5 QP: RQ %d is not a power of two up to 32768", q.RQ)
		}
		mlx5QPCRQType.put(ctx, mlx5NonZeroRQ)
		mlx5QPCLogRQSize.put(ctx, s)
	}
	return mlx5Stream(mlx5EncQPType, q.QPN, payload), nil
}

// EncodeMLX5CQ builds the RES_RAW stream an mlx5 kernel would return for c if layout l were
// the firmware's; see EncodeMLX5QP. index1 is c.CQN.
func EncodeMLX5CQ(c CQ, l Layout) ([]byte, error) {
	if err := checkLayout(MLX5, l); err != nil {
		return nil, err
	}
	if c.Format != "" && c.Format != FormatMLX5 {
		return nil, fmt.Errorf("encode mlx5 CQ: format %q is not %s", c.Format, FormatMLX5)
	}
	s, ok := log2Exact(c.Depth, 31)
	if !ok {
		return nil, fmt.Errorf("encode mlx5 CQ: depth %d is not a power of two", c.Depth)
	}
	off, size := 0, mlx5CQCSize
	if l == LayoutQueryOut {
		off, size = mlx5QueryCQOutCtx, mlx5QueryCQOutCtx+mlx5CQCSize
	}
	payload := make([]byte, size)
	mlx5CQCLogCQSize.put(payload[off:], s)
	return mlx5Stream(mlx5EncCQType, c.CQN, payload), nil
}

// mlx5Stream frames payload as command, resource and terminate segments. The command
// segment's body is left zero: its field layout is not encoded because decoding skips it.
func mlx5Stream(typ uint16, index1 uint32, payload []byte) []byte {
	const cmdLen = 16
	out := make([]byte, 0, cmdLen+mlx5ResFrame+len(payload)+mlx5SegHeader)
	out = segHeader(out, cmdLen, mlx5Command)
	out = append(out, make([]byte, cmdLen-mlx5SegHeader)...)
	out = segHeader(out, mlx5ResFrame+len(payload), typ)
	out = binary.BigEndian.AppendUint32(out, 0) // reserved (MFT: aggregate flag)
	out = binary.BigEndian.AppendUint32(out, index1)
	out = binary.BigEndian.AppendUint32(out, 0) // index2
	out = append(out, payload...)
	return segHeader(out, mlx5SegHeader, mlx5Terminate)
}

func segHeader(b []byte, bytes int, typ uint16) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(bytes/4))
	return binary.BigEndian.AppendUint16(b, typ)
}
