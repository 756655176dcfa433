package nldev

import "fmt"

// GUID is a 64-bit InfiniBand GUID or subnet prefix in host order, as nldev reports it.
type GUID uint64

// String formats the GUID the way sysfs node_guid and iproute2 do: "0002:c903:0031:7c2e".
func (g GUID) String() string {
	return fmt.Sprintf("%04x:%04x:%04x:%04x", uint16(g>>48), uint16(g>>32), uint16(g>>16), uint16(g))
}

// MarshalText makes JSON reports carry the sysfs spelling rather than a number.
func (g GUID) MarshalText() ([]byte, error) { return []byte(g.String()), nil }

// Device is one RDMA device from the RDMA_NLDEV_CMD_GET dump.
type Device struct {
	Index        uint32
	Name         string
	NumPorts     uint32
	CapFlags     uint64
	FWVersion    string // empty when the driver reports none
	NodeGUID     GUID
	SysImageGUID GUID
	NodeType     uint8  // NodeTypeName gives iproute2's spelling
	Protocol     string // "ib", "roce", "iw", "opa", "usnic"; empty on kernels before 5.x
	DIM          bool   // adaptive interrupt moderation
	HasDIM       bool
}

// Port is one port from the RDMA_NLDEV_CMD_PORT_GET dump of a device.
type Port struct {
	DevIndex  uint32
	DevName   string
	Index     uint32
	CapFlags  uint64
	State     uint8 // PortStateName
	PhysState uint8 // PortPhysStateName
	// The InfiniBand addressing attributes are sent only for an IB link layer; HasIB says whether
	// they were.
	HasIB        bool
	SubnetPrefix GUID
	LID          uint32
	SMLID        uint32
	LMC          uint8
	// The bound netdev, only when one is bound in the caller's network namespace.
	NetdevIndex uint32
	NetdevName  string
}

// ResSummary is one device's resource counts from RDMA_NLDEV_CMD_RES_GET.
type ResSummary struct {
	DevIndex uint32
	DevName  string
	// Counts maps the kernel's resource names ("pd", "cq", "qp", "cm_id", "mr", "ctx", "srq")
	// to the number of objects.
	Counts map[string]uint64
}

// QP is one queue pair from RDMA_NLDEV_CMD_RES_QP_GET. The kernel sends some attributes only for
// some QP types; the Has* fields say which optional ones were present. Strings are shared
// between QPs of one dump.
type QP struct {
	DevIndex uint32
	Port     uint32 // 0 when the QP has no port yet
	LQPN     uint32
	RQPN     uint32 // RC/UC only
	RQPSN    uint32 // RC/UC only
	SQPSN    uint32 // sent for every QP
	PDN      uint32 // user QPs only
	PID      uint32 // 0 for kernel-owned QPs
	Type     uint8  // QPTypeName
	State    uint8  // QPStateName
	PathMig  uint8  // PathMigStateName; RC/UC/XRC only

	HasRQPN    bool
	HasRQPSN   bool
	HasPDN     bool
	HasPathMig bool

	DevName  string
	KernName string // kernel owner ("ib_core", "rdma_cm"); empty for user QPs
	Subtype  string // driver subtype (mlx5 "REG_UMR", "DCT"); usually empty
}

// CQ is one completion queue from RDMA_NLDEV_CMD_RES_CQ_GET.
type CQ struct {
	DevIndex uint32
	CQN      uint32 // restrack id, not the hardware CQ number
	CQE      uint32 // depth
	CtxN     uint32 // user CQs with a ucontext only
	PID      uint32 // 0 for kernel-owned CQs
	Users    uint64 // objects (QPs, SRQs) attached
	PollCtx  uint8  // PollCtxName; kernel CQs only
	DIM      bool

	HasPollCtx bool
	HasDIM     bool
	HasCtxN    bool

	DevName  string
	KernName string
}

// Raw is one object's raw hardware context from RDMA_NLDEV_CMD_RES_{QP,CQ}_GET_RAW: the
// driver's bytes (their layout is the driver's; see checks/cq/rawctx), without an object number.
type Raw struct {
	DevIndex uint32
	DevName  string
	Data     []byte
}

// MR is one memory region from RDMA_NLDEV_CMD_RES_MR_GET.
type MR struct {
	DevIndex uint32
	MRN      uint32
	PDN      uint32
	PID      uint32
	// The keys and IOVA are sent only to a caller with CAP_NET_ADMIN.
	RKey    uint32
	LKey    uint32
	IOVA    uint64
	HasKeys bool
	Len     uint64

	DevName  string
	KernName string
}

// PD is one protection domain from RDMA_NLDEV_CMD_RES_PD_GET.
type PD struct {
	DevIndex         uint32
	PDN              uint32
	LocalDMALKey     uint32 // CAP_NET_ADMIN only
	UnsafeGlobalRKey uint32 // present only when the PD has one (a security smell)
	HasUnsafeRKey    bool
	Users            uint64
	CtxN             uint32
	HasCtxN          bool
	PID              uint32

	DevName  string
	KernName string
}
