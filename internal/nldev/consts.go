package nldev

// Protocol numbers from the kernel's uapi headers (include/uapi/linux/netlink.h NETLINK_RDMA and
// include/uapi/rdma/rdma_netlink.h: enum rdma_nl_client, enum rdma_nldev_command, enum
// rdma_nldev_attr; rdma-core carries copies in kernel-headers/rdma/).
const (
	// NetlinkRDMA is the netlink protocol family of the RDMA subsystem.
	NetlinkRDMA = 20
	// ClientNLDEV is the RDMA netlink client that serves device, port and resource queries.
	ClientNLDEV = 5
)

// MsgType is RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd): the nlmsg_type of an nldev command.
func MsgType(cmd uint16) uint16 { return ClientNLDEV<<10 + cmd }

// Commands (enum rdma_nldev_command).
const (
	CmdGet         uint16 = 1
	CmdPortGet     uint16 = 5
	CmdSysGet      uint16 = 6
	CmdResGet      uint16 = 9
	CmdResQPGet    uint16 = 10
	CmdResCMIDGet  uint16 = 11
	CmdResCQGet    uint16 = 12
	CmdResMRGet    uint16 = 13
	CmdResPDGet    uint16 = 14
	CmdStatGet     uint16 = 17
	CmdResQPGetRaw uint16 = 19 // RDMA_NL_ADMIN_PERM: CAP_NET_ADMIN in the initial user namespace
	CmdResCQGetRaw uint16 = 20 // likewise
	CmdResCtxGet   uint16 = 22
	CmdResSRQGet   uint16 = 23
	CmdStatGetStat uint16 = 24
)

// Attributes (enum rdma_nldev_attr). Only the ones this package reads or writes are named.
const (
	AttrPad              uint16 = 0
	AttrDevIndex         uint16 = 1
	AttrDevName          uint16 = 2
	AttrPortIndex        uint16 = 3
	AttrCapFlags         uint16 = 4
	AttrFWVersion        uint16 = 5
	AttrNodeGUID         uint16 = 6
	AttrSysImageGUID     uint16 = 7
	AttrSubnetPrefix     uint16 = 8
	AttrLID              uint16 = 9
	AttrSMLID            uint16 = 10
	AttrLMC              uint16 = 11
	AttrPortState        uint16 = 12
	AttrPortPhysState    uint16 = 13
	AttrDevNodeType      uint16 = 14
	AttrResSummary       uint16 = 15
	AttrResSummaryEntry  uint16 = 16
	AttrResSummaryName   uint16 = 17
	AttrResSummaryCurr   uint16 = 18
	AttrResQP            uint16 = 19
	AttrResQPEntry       uint16 = 20
	AttrResLQPN          uint16 = 21
	AttrResRQPN          uint16 = 22
	AttrResRQPSN         uint16 = 23
	AttrResSQPSN         uint16 = 24
	AttrResPathMigState  uint16 = 25
	AttrResType          uint16 = 26
	AttrResState         uint16 = 27
	AttrResPID           uint16 = 28
	AttrResKernName      uint16 = 29
	AttrResCQ            uint16 = 35
	AttrResCQEntry       uint16 = 36
	AttrResCQE           uint16 = 37
	AttrResUseCnt        uint16 = 38
	AttrResPollCtx       uint16 = 39
	AttrResMR            uint16 = 40
	AttrResMREntry       uint16 = 41
	AttrResRKey          uint16 = 42
	AttrResLKey          uint16 = 43
	AttrResIOVA          uint16 = 44
	AttrResMRLen         uint16 = 45
	AttrResPD            uint16 = 46
	AttrResPDEntry       uint16 = 47
	AttrResLocalDMALKey  uint16 = 48
	AttrResUnsafeGlobalR uint16 = 49
	AttrNdevIndex        uint16 = 50
	AttrNdevName         uint16 = 51
	AttrDriver           uint16 = 52
	AttrResPDN           uint16 = 60
	AttrResCQN           uint16 = 61
	AttrResMRN           uint16 = 62
	AttrResCtxN          uint16 = 64
	AttrDevProtocol      uint16 = 67
	AttrDevDIM           uint16 = 84
	AttrResRaw           uint16 = 85 // a driver's raw hardware context (binary)
	AttrResSubtype       uint16 = 98
)

// Netlink header constants (include/uapi/linux/netlink.h). Spelled out here so that the decoder,
// which also runs on recorded replies, does not depend on a platform's syscall package; the
// message types a reply walk meets are netlinkraw.Walk's.
const (
	// NLMFRequest and the dump flags are the nlmsg_flags this package puts in requests.
	NLMFRequest = 0x1
	NLMFMulti   = 0x2
	NLMFAck     = 0x4
	NLMFDump    = 0x300

	// Attribute framing, including the NLA_F_NESTED mask (nldev sets the flag on counter nests
	// but not on resource tables), is netlinkraw.NextAttr's.
)

func name(table []string, v uint8, unknown string) string {
	if int(v) < len(table) && table[v] != "" {
		return table[v]
	}
	return unknown
}

// QP states as iproute2 rdma/res-qp.c prints them (enum ib_qp_state).
var qpStates = []string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"}

// QP state values.
const (
	QPStateReset uint8 = 0
	QPStateInit  uint8 = 1
	QPStateRTR   uint8 = 2
	QPStateRTS   uint8 = 3
	QPStateSQD   uint8 = 4
	QPStateSQE   uint8 = 5
	QPStateErr   uint8 = 6
)

// QPStateName is the iproute2 name of a QP state ("RTS", "ERR"), "UNKNOWN" otherwise.
func QPStateName(s uint8) string { return name(qpStates, s, "UNKNOWN") }

var qpTypes = []string{0: "SMI", 1: "GSI", 2: "RC", 3: "UC", 4: "UD", 5: "RAW_IPV6",
	6: "RAW_ETHERTYPE", 8: "RAW_PACKET", 9: "XRC_INI", 10: "XRC_TGT"}

// QP type values (enum ib_qp_type).
const (
	QPTypeSMI    uint8 = 0
	QPTypeGSI    uint8 = 1
	QPTypeRC     uint8 = 2
	QPTypeUC     uint8 = 3
	QPTypeUD     uint8 = 4
	QPTypeDriver uint8 = 0xff
)

// QPTypeName is the iproute2 name of a QP type ("RC", "GSI", "DRIVER"), "UNKNOWN" otherwise.
func QPTypeName(t uint8) string {
	if t == QPTypeDriver {
		return "DRIVER"
	}
	return name(qpTypes, t, "UNKNOWN")
}

var pathMigStates = []string{"MIGRATED", "REARM", "ARMED"}

// PathMigStateName is the iproute2 name of a QP path migration state.
func PathMigStateName(s uint8) string { return name(pathMigStates, s, "UNKNOWN") }

var portStates = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// Port state values (enum ib_port_state).
const (
	PortStateNop    uint8 = 0
	PortStateDown   uint8 = 1
	PortStateInit   uint8 = 2
	PortStateArmed  uint8 = 3
	PortStateActive uint8 = 4
)

// PortStateName is the iproute2 rdma/link.c name of a port state.
func PortStateName(s uint8) string { return name(portStates, s, "UNKNOWN") }

var portPhysStates = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}

// Port physical state values.
const (
	PortPhysStateDisabled uint8 = 3
	PortPhysStateLinkUp   uint8 = 5
)

// PortPhysStateName is the iproute2 rdma/link.c name of a port physical state.
func PortPhysStateName(s uint8) string { return name(portPhysStates, s, "UNKNOWN") }

var nodeTypes = []string{"unknown", "ca", "switch", "router", "rnic", "usnic", "usnic_udp", "unspecified"}

// NodeTypeName is the iproute2 rdma/dev.c name of a node type ("ca", "rnic").
func NodeTypeName(t uint8) string { return name(nodeTypes, t, "unknown") }

var pollCtxs = []string{"DIRECT", "SOFTIRQ", "WORKQUEUE", "UNBOUND_WORKQUEUE"}

// PollCtxName is the iproute2 rdma/res-cq.c name of a kernel CQ's poll context.
func PollCtxName(p uint8) string { return name(pollCtxs, p, "UNKNOWN") }
