package rawctx

import (
	"errors"
	"fmt"
)

// Driver names the decoder family; the caller picks it from the device's kernel driver.
type Driver string

const (
	HNS  Driver = "hns"  // HiSilicon hns_roce (PCI driver hns3)
	MLX5 Driver = "mlx5" // mlx5_ib (PCI driver mlx5_core)
)

// ForPCIDriver maps a PCI driver name (mlx5_core, hns3) to a Driver; ok=false for others,
// whose kernels either have no raw ops (-EINVAL) or an opaque blob with no public layout.
func ForPCIDriver(name string) (Driver, bool) {
	switch name {
	case "mlx5_core":
		return MLX5, true
	case "hns3":
		return HNS, true
	}
	return "", false
}

// Layout is one way to read a driver's blobs. The zero value is no layout.
type Layout int

const (
	// LayoutByLength is hns's only layout: the blob length tells the kernel's format apart
	// (QP 136 / 512 / 576, CQ 60 / 64).
	LayoutByLength Layout = iota + 1
	// LayoutQueryOut reads an mlx5 resource segment's payload as the PRM command output:
	// qpc at byte 24 of query_qp_out (mlx5_ifc.h query_qp_out_bits, bit 0xc0), cq_context at
	// byte 16 of query_cq_out (query_cq_out_bits, bit 0x80). Unverified; see the package doc.
	LayoutQueryOut
	// LayoutContext reads an mlx5 resource segment's payload as the qpc / cqc itself.
	// Unverified; see the package doc.
	LayoutContext
)

func (l Layout) String() string {
	switch l {
	case LayoutByLength:
		return "hns-by-length"
	case LayoutQueryOut:
		return "mlx5-query-out"
	case LayoutContext:
		return "mlx5-context"
	}
	return fmt.Sprintf("layout(%d)", int(l))
}

// Layouts lists the candidate layouts for a driver, most likely first; nil for an unknown one.
func Layouts(d Driver) []Layout {
	switch d {
	case HNS:
		return []Layout{LayoutByLength}
	case MLX5:
		// The commit that added the segments says "PRM query format", which reads most
		// naturally as the command output, so it is tried first.
		return []Layout{LayoutQueryOut, LayoutContext}
	}
	return nil
}

// Format names of decoded blobs.
const (
	FormatHNS61  = "hns-6.1"  // hns compact format of Linux 6.1-6.5: extracted fields, u32 each
	FormatHNSQPC = "hns-qpc"  // whole hns QPC (512 B, Linux ~6.6) or QPC+SCCC (576 B, ~6.9 on)
	FormatHNSCQC = "hns-cqc"  // whole hns CQC (64 B, Linux ~6.6 on)
	FormatMLX5   = "mlx5-prm" // mlx5 resource-dump stream with a PRM_QUERY_QP/CQ segment
)

// ErrUnknownFormat is wrapped by decode errors for a blob whose length or framing matches no
// format this package knows: a kernel newer than this code, not a corrupt read.
var ErrUnknownFormat = errors.New("unknown raw context format")

// QP is what one raw QP context says about the QP's queues.
type QP struct {
	Format string // FormatHNS61, FormatHNSQPC, FormatMLX5
	// State is the driver's own state encoding (hns enum hns_roce_v2_qp_state, mlx5 qpc.state);
	// IBState and StateName translate it.
	State uint8
	// Reset: the QP is in RESET and can hold no work requests; skip it. On hns the context is
	// only written on modify, so in RESET nothing else in it is valid and the decoder leaves
	// the other fields zero; on mlx5 they are decoded as read.
	Reset bool
	// QPN is the QP number; only mlx5 carries it (resource segment index1), hns has none.
	QPN    uint32
	HasQPN bool
	// SendCQ and RecvCQ are hardware CQ numbers, as in CQ.CQN (not nldev's restrack CQN).
	SendCQ, RecvCQ uint32
	SQ             uint32 // send queue entries (1<<log); 0 when the QP has no send queue (mlx5 no_sq)
	// SQBlocks (mlx5): SQ counts 64-byte WQE basic blocks, an upper bound on work requests.
	SQBlocks bool
	// RQ is receive queue entries; 0 when the QP has no RQ of its own: SRQ, XRC, zero-length
	// RQ, or the hns RQ_SHIFT 15 artifact.
	RQ uint32
	// SRQ: receives come from a shared receive queue (hns QPC_SRQ_EN, mlx5 rq_type 1); RQ is 0.
	SRQ bool
	// RQAmbiguous (hns): RQ_SHIFT read 15, which is both what a QP without an RQ gets
	// (ilog2(0) masked to 4 bits) and a legal 32768-entry RQ (HNS_ROCE_V2_MAX_WQE_NUM 0x8000,
	// hns_roce_hw_v2.h l.40 in 6.1). RQ is 0: the QP is counted as having no RQ.
	RQAmbiguous bool
}

// CQ is what one raw CQ context says about the CQ.
type CQ struct {
	Format string // FormatHNS61, FormatHNSCQC, FormatMLX5
	CQN    uint32 // hardware CQ number
	HasCQN bool   // false for the hns 6.1 format (no CQN in the blob)
	Depth  uint32 // entries (1<<log_cq_size); the non-raw cqe is Depth-1 on both drivers
}

// DecodeQP decodes one RES_RAW blob of a QP. Errors name the driver, layout and what was read.
func DecodeQP(d Driver, l Layout, b []byte) (QP, error) {
	if err := checkLayout(d, l); err != nil {
		return QP{}, err
	}
	if d == HNS {
		return decodeHNSQP(b)
	}
	return decodeMLX5QP(l, b)
}

// DecodeCQ decodes one RES_RAW blob of a CQ.
func DecodeCQ(d Driver, l Layout, b []byte) (CQ, error) {
	if err := checkLayout(d, l); err != nil {
		return CQ{}, err
	}
	if d == HNS {
		return decodeHNSCQ(b)
	}
	return decodeMLX5CQ(l, b)
}

func checkLayout(d Driver, l Layout) error {
	ls := Layouts(d)
	if ls == nil {
		return fmt.Errorf("raw context of driver %q: no decoder (known: %s, %s)", d, HNS, MLX5)
	}
	for _, x := range ls {
		if x == l {
			return nil
		}
	}
	return fmt.Errorf("raw context of driver %s: layout %v is not one of its layouts %v", d, l, ls)
}

// IB QP states as nldev reports them (enum ib_qp_state).
const (
	ibReset = 0
	ibInit  = 1
	ibRTR   = 2
	ibRTS   = 3
	ibSQD   = 4
	ibSQE   = 5
	ibErr   = 6
)

var ibNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// IBState maps the decoded driver state to the IB QP state numbering nldev uses
// (RESET=0, INIT=1, RTR=2, RTS=3, SQD=4, SQE=5, ERR=6); ok=false when it has no IB equivalent.
// The maps are the drivers' own query paths, which is what the non-raw RES_STATE comes from.
func IBState(q QP) (uint8, bool) {
	switch q.Format {
	case FormatHNS61, FormatHNSQPC:
		// hns to_ib_qp_st (K61 hns_roce_hw_v2.c l.5439-5453) over enum hns_roce_v2_qp_state
		// (K61 hns_roce_hw_v2.h l.403-413): RST, INIT, RTR, RTS, SQD, SQER, ERR, SQ_DRAINING.
		m := [...]uint8{ibReset, ibInit, ibRTR, ibRTS, ibSQD, ibSQE, ibErr, ibSQD}
		if int(q.State) < len(m) {
			return m[q.State], true
		}
	case FormatMLX5:
		// mlx5 to_ib_qp_state (K61 mlx5/qp.c l.4728-4741), applied to qpc.state by
		// mlx5_ib_query_qp (l.4916), over enum mlx5_qp_state (K61 include/linux/mlx5/qp.h
		// l.78-91): RST 0, INIT 1, RTR 2, RTS 3, SQER 4, SQD 5, ERR 6, SQ_DRAINING 7,
		// SUSPENDED 9. (mlx5_ifc.h MLX5_QPC_STATE_* names 7 SQD and has no 5; both map to SQD.)
		switch q.State {
		case 0:
			return ibReset, true
		case 1:
			return ibInit, true
		case 2:
			return ibRTR, true
		case 3:
			return ibRTS, true
		case 4:
			return ibSQE, true
		case 5, 7:
			return ibSQD, true
		case 6:
			return ibErr, true
		}
	}
	return 0, false
}

// StateName names the decoded state: the IB name (as rdma-tool prints it) when there is one,
// else the driver's name for it, else "state N".
func StateName(q QP) string {
	if s, ok := IBState(q); ok {
		return ibNames[s]
	}
	if q.Format == FormatMLX5 && q.State == 9 {
		return "SUSPENDED"
	}
	return fmt.Sprintf("state %d", q.State)
}

// EncodeQP is EncodeHNSQP or EncodeMLX5QP by driver, for fixture generators that iterate
// over drivers. hns picks the blob length from q.Format: FormatHNS61 gives the 136-byte 6.1
// format, anything else the 576-byte QPC+SCCC of current kernels.
func EncodeQP(d Driver, l Layout, q QP) ([]byte, error) {
	if err := checkLayout(d, l); err != nil {
		return nil, err
	}
	if d == HNS {
		size := HNSQPCSCCSize
		if q.Format == FormatHNS61 {
			size = HNSQP61Size
		}
		return EncodeHNSQP(q, size)
	}
	return EncodeMLX5QP(q, l)
}

// EncodeCQ is EncodeHNSCQ or EncodeMLX5CQ by driver. hns picks the length from c.Format:
// FormatHNS61 gives the 60-byte 6.1 format, anything else the 64-byte CQC.
func EncodeCQ(d Driver, l Layout, c CQ) ([]byte, error) {
	if err := checkLayout(d, l); err != nil {
		return nil, err
	}
	if d == HNS {
		size := HNSCQCSize
		if c.Format == FormatHNS61 {
			size = HNSCQ61Size
		}
		return EncodeHNSCQ(c, size)
	}
	return EncodeMLX5CQ(c, l)
}

// WorthAsking reports whether a device's raw contexts should be requested at all: yes for the
// drivers decoded here, and for software devices (rxe, siw), whose refusal costs nothing and is
// the kernel's own word; no for other hardware, where a raw dump can cost a firmware command
// per object (bnxt_re) for blobs nobody here can read. The check and the recorder share it.
func WorthAsking(driver string, software bool) bool {
	_, ok := ForPCIDriver(driver)
	return ok || software
}
