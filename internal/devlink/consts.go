package devlink

import "golang.org/x/sys/unix"

// Generic netlink controller ("nlctrl", include/uapi/linux/genetlink.h): the family that maps
// family names to the dynamic message types the kernel assigned at registration.
const (
	// CtrlType is GENL_ID_CTRL, the fixed nlmsg_type of nlctrl (NLMSG_MIN_TYPE).
	CtrlType           uint16 = unix.GENL_ID_CTRL
	CtrlCmdGetFamily   uint8  = unix.CTRL_CMD_GETFAMILY
	ctrlAttrFamilyID   uint16 = unix.CTRL_ATTR_FAMILY_ID
	ctrlAttrFamilyName uint16 = unix.CTRL_ATTR_FAMILY_NAME
	// genlVersion goes in every request's genlmsghdr; the kernel ignores it for both families
	// (DEVLINK_GENL_VERSION is 1, nlctrl's is 2) but iproute2 sends these values.
	ctrlVersion    uint8 = 2
	devlinkVersion uint8 = unix.DEVLINK_GENL_VERSION
	genlHdrLen           = 4
)

// FamilyName is DEVLINK_GENL_NAME.
const FamilyName = unix.DEVLINK_GENL_NAME

// Commands (enum devlink_command, include/uapi/linux/devlink.h). The values come from
// golang.org/x/sys/unix, which generates them from the same header; TestConstantsMatchReference
// (decode_test.go) pins them to the header's numbers.
const (
	CmdGet                    uint8 = unix.DEVLINK_CMD_GET                      // 1
	CmdInfoGet                uint8 = unix.DEVLINK_CMD_INFO_GET                 // 51
	CmdHealthReporterGet      uint8 = unix.DEVLINK_CMD_HEALTH_REPORTER_GET      // 52
	CmdHealthReporterDiagnose uint8 = unix.DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE // 55
)

// Attributes (enum devlink_attr).
const (
	AttrBusName   uint16 = unix.DEVLINK_ATTR_BUS_NAME   // 1, string "pci"
	AttrDevName   uint16 = unix.DEVLINK_ATTR_DEV_NAME   // 2, string "0000:3b:00.0"
	AttrPortIndex uint16 = unix.DEVLINK_ATTR_PORT_INDEX // 3, u32
	// AttrPad is what nla_put_u64_64bit inserts before a u64 on architectures that need 8-byte
	// alignment; decoders skip it like any attribute they do not know.
	AttrPad uint16 = unix.DEVLINK_ATTR_PAD // 61

	AttrInfoDriverName     uint16 = unix.DEVLINK_ATTR_INFO_DRIVER_NAME     // 98
	AttrInfoSerialNumber   uint16 = unix.DEVLINK_ATTR_INFO_SERIAL_NUMBER   // 99
	AttrInfoVersionFixed   uint16 = unix.DEVLINK_ATTR_INFO_VERSION_FIXED   // 100, nested
	AttrInfoVersionRunning uint16 = unix.DEVLINK_ATTR_INFO_VERSION_RUNNING // 101, nested
	AttrInfoVersionStored  uint16 = unix.DEVLINK_ATTR_INFO_VERSION_STORED  // 102, nested
	AttrInfoVersionName    uint16 = unix.DEVLINK_ATTR_INFO_VERSION_NAME    // 103, string
	AttrInfoVersionValue   uint16 = unix.DEVLINK_ATTR_INFO_VERSION_VALUE   // 104, string

	AttrFmsg              uint16 = unix.DEVLINK_ATTR_FMSG                 // 106, nested
	AttrFmsgObjNestStart  uint16 = unix.DEVLINK_ATTR_FMSG_OBJ_NEST_START  // 107, flag
	AttrFmsgPairNestStart uint16 = unix.DEVLINK_ATTR_FMSG_PAIR_NEST_START // 108, flag
	AttrFmsgArrNestStart  uint16 = unix.DEVLINK_ATTR_FMSG_ARR_NEST_START  // 109, flag
	AttrFmsgNestEnd       uint16 = unix.DEVLINK_ATTR_FMSG_NEST_END        // 110, flag
	AttrFmsgObjName       uint16 = unix.DEVLINK_ATTR_FMSG_OBJ_NAME        // 111, string
	AttrFmsgObjValueType  uint16 = unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_TYPE  // 112, u8 (NLA_* type)
	AttrFmsgObjValueData  uint16 = unix.DEVLINK_ATTR_FMSG_OBJ_VALUE_DATA  // 113

	AttrHealthReporter             uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER                 // 114, nested
	AttrHealthReporterName         uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_NAME            // 115, string
	AttrHealthReporterState        uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_STATE           // 116, u8
	AttrHealthReporterErrCount     uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_ERR_COUNT       // 117, u64
	AttrHealthReporterRecoverCount uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_RECOVER_COUNT   // 118, u64
	AttrHealthReporterDumpTS       uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS         // 119, u64
	AttrHealthReporterGracePeriod  uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_GRACEFUL_PERIOD // 120, u64 ms
	AttrHealthReporterAutoRecover  uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_RECOVER    // 121, u8
	AttrHealthReporterDumpTSNs     uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_DUMP_TS_NS      // 137, u64
	AttrHealthReporterAutoDump     uint16 = unix.DEVLINK_ATTR_HEALTH_REPORTER_AUTO_DUMP       // 141, u8
)

// Reporter states (enum devlink_health_reporter_state, include/uapi/linux/devlink.h).
const (
	StateHealthy uint8 = 0
	StateError   uint8 = 1
)

// fmsg value types: the kernel's NLA_* policy types (enum in include/net/netlink.h: NLA_UNSPEC,
// NLA_U8, NLA_U16, NLA_U32, NLA_U64, NLA_STRING, NLA_FLAG, NLA_MSECS, NLA_NESTED,
// NLA_NESTED_ARRAY, NLA_NUL_STRING, NLA_BINARY, ...), which devlink_fmsg_item_fill_type puts in
// FMSG_OBJ_VALUE_TYPE; iproute2 reads them as the identical MNL_TYPE_* values.
const (
	TypeU8        uint8 = 1
	TypeU32       uint8 = 3
	TypeU64       uint8 = 4
	TypeFlag      uint8 = 6
	TypeNulString uint8 = 10
	TypeBinary    uint8 = 11
)
