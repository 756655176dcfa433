package verbs

// Mirrors of the libibverbs ABI (LP64 Linux). They are declared here rather
// than generated from <infiniband/verbs.h> so that building needs neither the
// header nor a C toolchain; layout_test.go compiles a C program against the
// real header and compares every size and offset below with it.
//
// Pointer members of structs that live in C memory are uintptr, not Go
// pointers: the structs are only ever allocated off the Go heap (see Arena),
// and the garbage collector must never see them as Go references.

// QPCap mirrors struct ibv_qp_cap.
type QPCap struct {
	MaxSendWR     uint32 `json:"max_send_wr"`
	MaxRecvWR     uint32 `json:"max_recv_wr"`
	MaxSendSGE    uint32 `json:"max_send_sge"`
	MaxRecvSGE    uint32 `json:"max_recv_sge"`
	MaxInlineData uint32 `json:"max_inline_data"`
}

// QPInitAttr mirrors struct ibv_qp_init_attr.
type QPInitAttr struct {
	QPContext uintptr
	SendCQ    uintptr
	RecvCQ    uintptr
	SRQ       uintptr
	Cap       QPCap
	QPType    uint32
	SQSigAll  int32
}

// GlobalRoute mirrors struct ibv_global_route.
// union ibv_gid contains 64-bit members, so the C struct is 8-byte aligned.
type GlobalRoute struct {
	_            [0]uint64
	DGID         [16]byte
	FlowLabel    uint32
	SGIDIndex    uint8
	HopLimit     uint8
	TrafficClass uint8
}

// AHAttr mirrors struct ibv_ah_attr.
type AHAttr struct {
	GRH         GlobalRoute
	DLID        uint16
	SL          uint8
	SrcPathBits uint8
	StaticRate  uint8
	IsGlobal    uint8
	PortNum     uint8
}

// QPAttr mirrors struct ibv_qp_attr.
type QPAttr struct {
	QPState          uint32
	CurQPState       uint32
	PathMTU          uint32
	PathMigState     uint32
	QKey             uint32
	RQPSN            uint32
	SQPSN            uint32
	DestQPNum        uint32
	QPAccessFlags    uint32
	Cap              QPCap
	AH               AHAttr
	AltAH            AHAttr
	PKeyIndex        uint16
	AltPKeyIndex     uint16
	EnSQDAsyncNotify uint8
	SQDraining       uint8
	MaxRdAtomic      uint8
	MaxDestRdAtomic  uint8
	MinRNRTimer      uint8
	PortNum          uint8
	Timeout          uint8
	RetryCnt         uint8
	RNRRetry         uint8
	AltPortNum       uint8
	AltTimeout       uint8
	RateLimit        uint32
}

// SGE mirrors struct ibv_sge.
type SGE struct {
	Addr   uint64
	Length uint32
	LKey   uint32
}

// SendWR mirrors struct ibv_send_wr for the RDMA and SEND opcodes; the
// trailing unions this binding never fills are kept as padding.
type SendWR struct {
	WRID       uint64
	Next       uintptr
	SGList     uintptr
	NumSGE     int32
	Opcode     uint32
	SendFlags  uint32
	ImmData    uint32
	RemoteAddr uint64 // wr.rdma.remote_addr
	RKey       uint32 // wr.rdma.rkey
	_          [76]byte
}

// RecvWR mirrors struct ibv_recv_wr.
type RecvWR struct {
	WRID   uint64
	Next   uintptr
	SGList uintptr
	NumSGE int32
}

// WC mirrors struct ibv_wc.
type WC struct {
	WRID         uint64
	Status       uint32
	Opcode       uint32
	VendorErr    uint32
	ByteLen      uint32
	ImmData      uint32
	QPNum        uint32
	SrcQP        uint32
	WCFlags      uint32
	PKeyIndex    uint16
	SLID         uint16
	SL           uint8
	DLIDPathBits uint8
}

// DeviceAttr mirrors struct ibv_device_attr.
type DeviceAttr struct {
	FWVer                 [64]byte
	NodeGUID              uint64 // big endian on the wire, as the kernel reports it
	SysImageGUID          uint64
	MaxMRSize             uint64
	PageSizeCap           uint64
	VendorID              uint32
	VendorPartID          uint32
	HWVer                 uint32
	MaxQP                 int32
	MaxQPWR               int32
	DeviceCapFlags        uint32
	MaxSGE                int32
	MaxSGERd              int32
	MaxCQ                 int32
	MaxCQE                int32
	MaxMR                 int32
	MaxPD                 int32
	MaxQPRdAtom           int32
	MaxEERdAtom           int32
	MaxResRdAtom          int32
	MaxQPInitRdAtom       int32
	MaxEEInitRdAtom       int32
	AtomicCap             uint32
	MaxEE                 int32
	MaxRDD                int32
	MaxMW                 int32
	MaxRawIPv6QP          int32
	MaxRawEthyQP          int32
	MaxMcastGrp           int32
	MaxMcastQPAttach      int32
	MaxTotalMcastQPAttach int32
	MaxAH                 int32
	MaxFMR                int32
	MaxMapPerFMR          int32
	MaxSRQ                int32
	MaxSRQWR              int32
	MaxSRQSGE             int32
	MaxPKeys              uint16
	LocalCAAckDelay       uint8
	PhysPortCnt           uint8
}

// PortAttr mirrors struct ibv_port_attr as of rdma-core 44 (52 bytes).
// Newer headers append fields (active_speed_ex); the size passed to the
// extended query_port tells the library how much of it this binding knows.
type PortAttr struct {
	State         uint32
	MaxMTU        uint32
	ActiveMTU     uint32
	GIDTblLen     int32
	PortCapFlags  uint32
	MaxMsgSz      uint32
	BadPKeyCntr   uint32
	QKeyViolCntr  uint32
	PKeyTblLen    uint16
	LID           uint16
	SMLID         uint16
	LMC           uint8
	MaxVLNum      uint8
	SMSL          uint8
	SubnetTimeout uint8
	InitTypeReply uint8
	ActiveWidth   uint8
	ActiveSpeed   uint8
	PhysState     uint8
	LinkLayer     uint8
	Flags         uint8
	PortCapFlags2 uint16
}

// GIDEntry mirrors struct ibv_gid_entry.
type GIDEntry struct {
	_           [0]uint64 // union ibv_gid alignment
	GID         [16]byte
	GIDIndex    uint32
	PortNum     uint32
	GIDType     uint32
	NdevIfindex uint32
}

// asyncEvent mirrors struct ibv_async_event.
type asyncEvent struct {
	Element   uintptr // union of cq/qp/srq/wq pointers and port_num
	EventType uint32
}

// contextOps mirrors struct ibv_context_ops, an ABI-frozen table of 32
// function pointers. Only the data-path slots the binding calls are named.
type contextOps struct {
	_           [11]uintptr
	PollCQ      uintptr
	ReqNotifyCQ uintptr
	_           [12]uintptr
	PostSend    uintptr
	PostRecv    uintptr
	_           [5]uintptr
}

// contextHead mirrors struct ibv_context. The pthread mutex is opaque here.
type contextHead struct {
	Device         uintptr
	Ops            contextOps
	CmdFD          int32
	AsyncFD        int32
	NumCompVectors int32
	_              [40]byte // pthread_mutex_t (glibc, LP64)
	ABICompat      uintptr
}

// deviceHead mirrors struct ibv_device.
type deviceHead struct {
	_             [2]uintptr // _ops
	NodeType      int32
	TransportType int32
	Name          [64]byte
	DevName       [64]byte
	DevPath       [256]byte
	IBDevPath     [256]byte
}

// cqHead mirrors the leading members of struct ibv_cq.
type cqHead struct {
	Context   uintptr
	Channel   uintptr
	CQContext uintptr
	Handle    uint32
	CQE       int32
}

// qpHead mirrors the leading members of struct ibv_qp.
type qpHead struct {
	Context   uintptr
	QPContext uintptr
	PD        uintptr
	SendCQ    uintptr
	RecvCQ    uintptr
	SRQ       uintptr
	Handle    uint32
	QPNum     uint32
	State     uint32
	QPType    uint32
}

// mrHead mirrors the leading members of struct ibv_mr.
type mrHead struct {
	Context uintptr
	PD      uintptr
	Addr    uintptr
	Length  uintptr
	Handle  uint32
	LKey    uint32
	RKey    uint32
}

// struct verbs_context is laid out in front of struct ibv_context and grows
// towards lower addresses, so its members sit at fixed negative offsets from
// the ibv_context pointer that every verb receives. These are those offsets.
const (
	// vctxSzOff is verbs_context.sz: how many bytes of verbs_context the
	// provider filled in, counted back from the end of ibv_context.
	vctxSzOff = -8
	// vctxQueryPortOff is verbs_context.query_port.
	vctxQueryPortOff = -320
	// vctxQueryPortNeed is the sz a provider must report for query_port to
	// be present: the distance from query_port to the end of verbs_context.
	vctxQueryPortNeed = 648
)

// abiIsExtended is __VERBS_ABI_IS_EXTENDED: ibv_context.abi_compat holds it
// when the context is embedded in a verbs_context.
const abiIsExtended = ^uintptr(0)

// Enumerations and flags of the verbs ABI used by this binding.
const (
	QPTypeRC = 2

	QPStateReset = 0
	QPStateInit  = 1
	QPStateRTR   = 2
	QPStateRTS   = 3
	QPStateSQD   = 4
	QPStateSQE   = 5
	QPStateErr   = 6

	PortDown        = 1
	PortInit        = 2
	PortArmed       = 3
	PortActive      = 4
	PortActiveDefer = 5

	LinkLayerUnspecified = 0
	LinkLayerInfiniBand  = 1
	LinkLayerEthernet    = 2

	MTU256  = 1
	MTU512  = 2
	MTU1024 = 3
	MTU2048 = 4
	MTU4096 = 5

	GIDTypeIB     = 0
	GIDTypeRoCEv1 = 1
	GIDTypeRoCEv2 = 2

	AccessLocalWrite  = 1 << 0
	AccessRemoteWrite = 1 << 1
	AccessRemoteRead  = 1 << 2

	WROpRDMAWrite = 0
	WROpSend      = 2

	SendSignaled = 1 << 1

	WCStatusSuccess = 0
	WCOpSend        = 0
	WCOpRDMAWrite   = 1
	WCOpRecv        = 128

	QPAttrState         = 1 << 0
	QPAttrAccessFlags   = 1 << 3
	QPAttrPKeyIndex     = 1 << 4
	QPAttrPort          = 1 << 5
	QPAttrAV            = 1 << 7
	QPAttrPathMTU       = 1 << 8
	QPAttrTimeout       = 1 << 9
	QPAttrRetryCnt      = 1 << 10
	QPAttrRNRRetry      = 1 << 11
	QPAttrRQPSN         = 1 << 12
	QPAttrMaxQPRdAtomic = 1 << 13
	QPAttrMinRNRTimer   = 1 << 15
	QPAttrSQPSN         = 1 << 16
	QPAttrMaxDestRdAtom = 1 << 17
	QPAttrCap           = 1 << 19
	QPAttrDestQPN       = 1 << 20

	EventCQErr         = 0
	EventQPFatal       = 1
	EventQPReqErr      = 2
	EventQPAccessErr   = 3
	EventCommEst       = 4
	EventSQDrained     = 5
	EventPathMig       = 6
	EventPathMigErr    = 7
	EventDeviceFatal   = 8
	EventPortActive    = 9
	EventPortErr       = 10
	EventLIDChange     = 11
	EventPKeyChange    = 12
	EventSMChange      = 13
	EventSRQErr        = 14
	EventSRQLimit      = 15
	EventQPLastWQE     = 16
	EventClientReregis = 17
	EventGIDChange     = 18
	EventWQFatal       = 19
)
