package rawctx

import (
	"encoding/binary"
	"fmt"
)

// hns blob lengths; the format is told apart by length alone (the three formats of
// hns_roce_restrack.c listed in doc.go).
const (
	// HNSQP61Size: Linux 6.1-6.5, 34 x u32 fields already extracted with hr_reg_read
	// (K61 hns_roce_restrack.c l.115-169).
	HNSQP61Size = 136
	// HNSQPCSize: ~6.6, the whole struct hns_roce_v2_qp_context. HIP08 fills only the first
	// 256 bytes and this version does not zero the rest; every field read here is below 256.
	HNSQPCSize = 512
	// HNSQPCSCCSize: ~6.9 on (K612 hns_roce_restrack.c l.95-136), QPC then the 64-byte SCCC.
	HNSQPCSCCSize = 576
	// HNSCQ61Size: Linux 6.1-6.5, 15 x u32 fields (K61 hns_roce_restrack.c l.44-79), no CQN.
	HNSCQ61Size = 60
	// HNSCQCSize: ~6.6 on, the whole struct hns_roce_v2_cq_context (K612 l.42-59).
	HNSCQCSize = 64
)

// QPC/CQC bit positions, identical in K61 and K612 hns_roce_hw_v2.h.
var (
	hnsQPCSQShift = leField{139, 136}   // QPC_SQ_SHIFT (139,136): K61 l.499, K612 l.489
	hnsQPCRQShift = leField{143, 140}   // QPC_RQ_SHIFT (143,140): K61 l.500, K612 l.490
	hnsQPCQPST    = leField{479, 477}   // QPC_QP_ST (479,477): K61 l.526, K612 l.516
	hnsQPCSRQEn   = leField{600, 600}   // QPC_SRQ_EN (600,600): K61 l.532, K612 l.522
	hnsQPCRXCQN   = leField{631, 608}   // QPC_RX_CQN (631,608): K61 l.540, K612 l.530
	hnsQPCTXCQN   = leField{2007, 1984} // QPC_TX_CQN (2007,1984): K61 l.665, K612 l.656
	hnsCQCShift   = leField{12, 8}      // CQC_SHIFT (12,8): K61 l.323, K612 l.307
	hnsCQCCQN     = leField{55, 32}     // CQC_CQN (55,32): K61 l.326, K612 l.310
)

// Element indexes of the 6.1 compact formats (K61 hns_roce_restrack.c l.131-164 for QP,
// l.60-74 for CQ); each element carries the named field's value, so its width bounds it.
type hns61Elem struct {
	idx  int
	name string
	f    leField // the QPC/CQC field it was read from, for its width
}

var (
	hns61QPST      = hns61Elem{0, "QP_ST", hnsQPCQPST}
	hns61SRQEn     = hns61Elem{3, "SRQ_EN", hnsQPCSRQEn}
	hns61TXCQN     = hns61Elem{6, "TX_CQN", hnsQPCTXCQN}
	hns61RXCQN     = hns61Elem{7, "RX_CQN", hnsQPCRXCQN}
	hns61SQShift   = hns61Elem{13, "SQ_SHIFT", hnsQPCSQShift}
	hns61RQShift   = hns61Elem{15, "RQ_SHIFT", hnsQPCRQShift}
	hns61CQShift   = hns61Elem{1, "SHIFT", hnsCQCShift}
	hnsRQShiftNone = uint32(15) // ilog2(0) = -1 through FIELD_PREP's 4-bit mask (inferred, see doc.go)
)

const hnsStateRST = 0 // HNS_ROCE_QP_ST_RST (K61 hns_roce_hw_v2.h l.404)

// get reads the element as the host-endian u32 the kernel wrote; hns runs on little-endian
// arm64. A value wider than its field means the blob is not what this code thinks.
func (e hns61Elem) get(b []byte, what string) (uint32, error) {
	v := binary.LittleEndian.Uint32(b[4*e.idx:])
	if v > e.f.mask() {
		return 0, fmt.Errorf("hns raw %s (6.1 format): element %d (%s) is %d, more than its %d-bit field holds",
			what, e.idx, e.name, v, e.f.width())
	}
	return v, nil
}

func (e hns61Elem) put(b []byte, v uint32) { binary.LittleEndian.PutUint32(b[4*e.idx:], v) }

// hnsQPFields are the raw values an hns QP context holds for this package, in either format.
type hnsQPFields struct {
	st, srqEn, tx, rx, sqShift, rqShift uint32
}

func decodeHNSQP(b []byte) (QP, error) {
	var f hnsQPFields
	var format string
	switch len(b) {
	case HNSQP61Size:
		format = FormatHNS61
		for _, x := range []struct {
			e hns61Elem
			v *uint32
		}{{hns61QPST, &f.st}, {hns61SRQEn, &f.srqEn}, {hns61TXCQN, &f.tx}, {hns61RXCQN, &f.rx},
			{hns61SQShift, &f.sqShift}, {hns61RQShift, &f.rqShift}} {
			v, err := x.e.get(b, "QP")
			if err != nil {
				return QP{}, err
			}
			*x.v = v
		}
	case HNSQPCSize, HNSQPCSCCSize:
		format = FormatHNSQPC
		f = hnsQPFields{
			st:      hnsQPCQPST.get(b),
			srqEn:   hnsQPCSRQEn.get(b),
			tx:      hnsQPCTXCQN.get(b),
			rx:      hnsQPCRXCQN.get(b),
			sqShift: hnsQPCSQShift.get(b),
			rqShift: hnsQPCRQShift.get(b),
		}
	default:
		return QP{}, fmt.Errorf("hns raw QP: %d bytes matches no known format (%d = 6.1 fields, %d or %d = whole QPC): %w",
			len(b), HNSQP61Size, HNSQPCSize, HNSQPCSCCSize, ErrUnknownFormat)
	}
	q := QP{Format: format, State: uint8(f.st)}
	if f.st == hnsStateRST {
		// The QPC is written only by MODIFY_QPC (K612 hns_roce_hw_v2.c l.4290): in RESET
		// the rest may be stale or never set.
		q.Reset = true
		return q, nil
	}
	q.SendCQ, q.RecvCQ = f.tx, f.rx
	q.SQ = 1 << f.sqShift // ilog2(sq.wqe_cnt), one WQE per WR (hns_roce_qp.c l.664, l.740)
	switch {
	case f.srqEn == 1:
		q.SRQ = true
	case f.rqShift == hnsRQShiftNone:
		q.RQAmbiguous = true
	default:
		q.RQ = 1 << f.rqShift
	}
	return q, nil
}

func decodeHNSCQ(b []byte) (CQ, error) {
	switch len(b) {
	case HNSCQ61Size:
		s, err := hns61CQShift.get(b, "CQ")
		if err != nil {
			return CQ{}, err
		}
		return CQ{Format: FormatHNS61, Depth: 1 << s}, nil
	case HNSCQCSize:
		// CQC_SHIFT = ilog2(cq_depth), CQC_CQN = hr_cq->cqn (K612 hns_roce_hw_v2.c l.3637-3650).
		return CQ{Format: FormatHNSCQC, CQN: hnsCQCCQN.get(b), HasCQN: true, Depth: 1 << hnsCQCShift.get(b)}, nil
	}
	return CQ{}, fmt.Errorf("hns raw CQ: %d bytes matches no known format (%d = 6.1 fields without CQN, %d = whole CQC): %w",
		len(b), HNSCQ61Size, HNSCQCSize, ErrUnknownFormat)
}

// EncodeHNSQP builds the blob an hns kernel would return for q, size bytes long (HNSQP61Size,
// HNSQPCSize or HNSQPCSCCSize), for tests and synthetic snapshots. q.Format, when set, must
// be the format of size; the derived fields (Reset, RQAmbiguous, SQBlocks) are ignored. A
// Reset QP (State 0) encodes as all zero. RQ 0 without SRQ encodes as RQ_SHIFT 15, like a
// kernel QP without RQ; RQ 32768 is refused because it would decode as that.
func EncodeHNSQP(q QP, size int) ([]byte, error) {
	format := FormatHNSQPC
	switch size {
	case HNSQP61Size:
		format = FormatHNS61
	case HNSQPCSize, HNSQPCSCCSize:
	default:
		return nil, fmt.Errorf("encode hns QP: size %d is not %d, %d or %d", size, HNSQP61Size, HNSQPCSize, HNSQPCSCCSize)
	}
	if q.Format != "" && q.Format != format {
		return nil, fmt.Errorf("encode hns QP: format %q does not match size %d (%s)", q.Format, size, format)
	}
	if q.HasQPN {
		return nil, fmt.Errorf("encode hns QP: hns contexts carry no QPN")
	}
	if uint32(q.State) > hnsQPCQPST.mask() {
		return nil, fmt.Errorf("encode hns QP: state %d does not fit QPC_QP_ST's 3 bits", q.State)
	}
	b := make([]byte, size)
	if q.State == hnsStateRST {
		return b, nil
	}
	f := hnsQPFields{st: uint32(q.State), tx: q.SendCQ, rx: q.RecvCQ}
	var ok bool
	if f.sqShift, ok = log2Exact(q.SQ, 15); !ok {
		return nil, fmt.Errorf("encode hns QP: SQ %d is not a power of two up to 32768", q.SQ)
	}
	switch {
	case q.SRQ:
		if q.RQ != 0 {
			return nil, fmt.Errorf("encode hns QP: RQ %d with SRQ (an SRQ QP has no RQ)", q.RQ)
		}
		f.srqEn, f.rqShift = 1, hnsRQShiftNone
	case q.RQ == 0:
		f.rqShift = hnsRQShiftNone
	default:
		if f.rqShift, ok = log2Exact(q.RQ, 14); !ok {
			return nil, fmt.Errorf("encode hns QP: RQ %d is not a power of two up to 16384 (32768 reads as no RQ)", q.RQ)
		}
	}
	for _, c := range []struct {
		name string
		v    uint32
		f    leField
	}{{"send CQN", f.tx, hnsQPCTXCQN}, {"recv CQN", f.rx, hnsQPCRXCQN}} {
		if c.v > c.f.mask() {
			return nil, fmt.Errorf("encode hns QP: %s %d does not fit %d bits", c.name, c.v, c.f.width())
		}
	}
	if format == FormatHNS61 {
		hns61QPST.put(b, f.st)
		hns61SRQEn.put(b, f.srqEn)
		hns61TXCQN.put(b, f.tx)
		hns61RXCQN.put(b, f.rx)
		hns61SQShift.put(b, f.sqShift)
		hns61RQShift.put(b, f.rqShift)
		return b, nil
	}
	hnsQPCQPST.put(b, f.st)
	hnsQPCSRQEn.put(b, f.srqEn)
	hnsQPCTXCQN.put(b, f.tx)
	hnsQPCRXCQN.put(b, f.rx)
	hnsQPCSQShift.put(b, f.sqShift)
	hnsQPCRQShift.put(b, f.rqShift)
	return b, nil
}

// EncodeHNSCQ builds the blob an hns kernel would return for c, size bytes long (HNSCQ61Size
// or HNSCQCSize). The 6.1 format has no CQN, so c.HasCQN must be false there.
func EncodeHNSCQ(c CQ, size int) ([]byte, error) {
	format := FormatHNSCQC
	switch size {
	case HNSCQ61Size:
		format = FormatHNS61
		if c.HasCQN || c.CQN != 0 {
			return nil, fmt.Errorf("encode hns CQ: the 6.1 format carries no CQN (got %d)", c.CQN)
		}
	case HNSCQCSize:
		if c.CQN > hnsCQCCQN.mask() {
			return nil, fmt.Errorf("encode hns CQ: CQN %d does not fit 24 bits", c.CQN)
		}
	default:
		return nil, fmt.Errorf("encode hns CQ: size %d is not %d or %d", size, HNSCQ61Size, HNSCQCSize)
	}
	if c.Format != "" && c.Format != format {
		return nil, fmt.Errorf("encode hns CQ: format %q does not match size %d (%s)", c.Format, size, format)
	}
	s, ok := log2Exact(c.Depth, 31)
	if !ok {
		return nil, fmt.Errorf("encode hns CQ: depth %d is not a power of two", c.Depth)
	}
	b := make([]byte, size)
	if format == FormatHNS61 {
		hns61CQShift.put(b, s)
		return b, nil
	}
	hnsCQCShift.put(b, s)
	hnsCQCCQN.put(b, c.CQN)
	return b, nil
}
