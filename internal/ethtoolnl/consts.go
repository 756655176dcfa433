package ethtoolnl

import "golang.org/x/sys/unix"

// FamilyName is ETHTOOL_GENL_NAME; the family exists from Linux 5.6 (CONFIG_ETHTOOL_NETLINK).
const FamilyName = unix.ETHTOOL_GENL_NAME

// genlVersion is ETHTOOL_GENL_VERSION, sent in every request's genlmsghdr.
const genlVersion uint8 = unix.ETHTOOL_GENL_VERSION

const genlHdrLen = 4

// Request and reply commands (include/uapi/linux/ethtool_netlink.h, moved to
// ethtool_netlink_generated.h in 6.15 with the same values). FEC_GET exists from 5.14 and
// MODULE_EEPROM_GET from 5.13; an older kernel answers EOPNOTSUPP, as for a missing driver op.
const (
	CmdLinkModesGet     uint8  = unix.ETHTOOL_MSG_LINKMODES_GET           // 4
	CmdFECGet           uint8  = unix.ETHTOOL_MSG_FEC_GET                 // 29
	CmdModuleEEPROMGet  uint8  = unix.ETHTOOL_MSG_MODULE_EEPROM_GET       // 31
	replyLinkModes      uint8  = unix.ETHTOOL_MSG_LINKMODES_GET_REPLY     // 4
	replyFEC            uint8  = unix.ETHTOOL_MSG_FEC_GET_REPLY           // 30
	replyModuleEEPROM   uint8  = unix.ETHTOOL_MSG_MODULE_EEPROM_GET_REPLY // 32
	FlagStats           uint32 = unix.ETHTOOL_FLAG_STATS                  // 1<<2, ETHTOOL_FLAG_STATS (5.14)
	attrNestedFlag      uint16 = 0x8000                                   // NLA_F_NESTED
	lowerPageEnd        uint32 = 128                                      // ETH_MODULE_EEPROM_PAGE_LEN / 2
	pageEnd             uint32 = 256                                      // ETH_MODULE_EEPROM_PAGE_LEN
	maxEEPROMReadLength uint32 = 128                                      // NLA_POLICY_RANGE(NLA_U32, 1, ETH_MODULE_EEPROM_PAGE_LEN) in net/ethtool/eeprom.c
)

// Request header (enum ETHTOOL_A_HEADER_*), the nest every request and reply carries as
// attribute 1 of its command.
const (
	AttrHeader         uint16 = 1                               // ETHTOOL_A_<CMD>_HEADER of every command
	AttrHeaderDevIndex uint16 = unix.ETHTOOL_A_HEADER_DEV_INDEX // 1, u32
	AttrHeaderDevName  uint16 = unix.ETHTOOL_A_HEADER_DEV_NAME  // 2, string
	AttrHeaderFlags    uint16 = unix.ETHTOOL_A_HEADER_FLAGS     // 3, u32
)

// FEC_GET attributes (enum ETHTOOL_A_FEC_*, ETHTOOL_A_FEC_STAT_*); x/sys does not generate them.
const (
	AttrFECModes  uint16 = 2 // ETHTOOL_A_FEC_MODES, bitset of configured modes
	AttrFECAuto   uint16 = 3 // ETHTOOL_A_FEC_AUTO, u8
	AttrFECActive uint16 = 4 // ETHTOOL_A_FEC_ACTIVE, u32: link mode bit index of the active FEC
	AttrFECStats  uint16 = 5 // ETHTOOL_A_FEC_STATS, nest

	AttrFECStatPad       uint16 = 1 // ETHTOOL_A_FEC_STAT_PAD
	AttrFECStatCorrected uint16 = 2 // ETHTOOL_A_FEC_STAT_CORRECTED, array of u64: total, then lanes
	AttrFECStatUncorr    uint16 = 3 // ETHTOOL_A_FEC_STAT_UNCORR, likewise
	AttrFECStatCorrBits  uint16 = 4 // ETHTOOL_A_FEC_STAT_CORR_BITS, likewise
)

// LINKMODES_GET attributes (enum ETHTOOL_A_LINKMODES_*).
const (
	AttrLinkModesAutoneg uint16 = unix.ETHTOOL_A_LINKMODES_AUTONEG // 2, u8
	AttrLinkModesOurs    uint16 = unix.ETHTOOL_A_LINKMODES_OURS    // 3, bitset
	AttrLinkModesSpeed   uint16 = unix.ETHTOOL_A_LINKMODES_SPEED   // 5, u32 Mb/s (SPEED_UNKNOWN = 0xffffffff)
	AttrLinkModesDuplex  uint16 = unix.ETHTOOL_A_LINKMODES_DUPLEX  // 6, u8
	AttrLinkModesLanes   uint16 = unix.ETHTOOL_A_LINKMODES_LANES   // 9, u32 (5.11)
)

// MODULE_EEPROM_GET attributes (enum ETHTOOL_A_MODULE_EEPROM_*).
const (
	AttrEEPROMOffset  uint16 = 2 // u32
	AttrEEPROMLength  uint16 = 3 // u32
	AttrEEPROMPage    uint16 = 4 // u8
	AttrEEPROMBank    uint16 = 5 // u8
	AttrEEPROMI2CAddr uint16 = 6 // u8
	AttrEEPROMData    uint16 = 7 // binary
)

// Bitset attributes (enum ETHTOOL_A_BITSET_*, ETHTOOL_A_BITSET_BIT_*), for the test encoder's
// bitsets; decoders skip bitsets.
const (
	AttrBitsetNoMask   uint16 = 1 // flag
	AttrBitsetSize     uint16 = 2 // u32
	AttrBitsetBits     uint16 = 3 // nest of ETHTOOL_A_BITSET_BITS_BIT
	AttrBitsetBitsBit  uint16 = 1 // nest
	AttrBitsetBitIndex uint16 = 1 // u32
	AttrBitsetBitName  uint16 = 2 // string
)

// speedUnknown is SPEED_UNKNOWN (include/uapi/linux/ethtool.h).
const speedUnknown = 0xffffffff
