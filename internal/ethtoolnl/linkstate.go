package ethtoolnl

import (
	"fmt"

	"github.com/rdmadiag/rdmadiag/internal/host"
)

// LINKSTATE_GET (`ethtool <dev>`'s "Link detected" and the "Link ... extended state" lines):
// command and reply ETHTOOL_MSG_LINKSTATE_GET=6 and ETHTOOL_MSG_LINKSTATE_GET_REPLY=6, attributes
// enum ETHTOOL_A_LINKSTATE_* (include/uapi/linux/ethtool_netlink.h; EXT_STATE and EXT_SUBSTATE
// from 5.10, EXT_DOWN_CNT from 6.6).
const (
	CmdLinkStateGet          uint8  = 6
	replyLinkState           uint8  = 6
	AttrLinkStateLink        uint16 = 2 // u8
	AttrLinkStateSQI         uint16 = 3 // u32
	AttrLinkStateSQIMax      uint16 = 4 // u32
	AttrLinkStateExtState    uint16 = 5 // u8, enum ethtool_link_ext_state
	AttrLinkStateExtSubstate uint16 = 6 // u8, the enum of the state
	AttrLinkStateExtDownCnt  uint16 = 7 // u32, link_down_events of get_link_ext_stats
)

// LinkExtState is enum ethtool_link_ext_state (include/uapi/linux/ethtool.h): why a link is
// down, as the driver's get_link_ext_state says.
type LinkExtState uint8

// Link extended states, in the enum's order.
const (
	ExtAutoneg LinkExtState = iota
	ExtLinkTrainingFailure
	ExtLinkLogicalMismatch
	ExtBadSignalIntegrity
	ExtNoCable
	ExtCableIssue
	ExtEEPROMIssue
	ExtCalibrationFailure
	ExtPowerBudgetExceeded
	ExtOverheat
	ExtModule
)

// extStateNames are ethtool's names (link_ext_state_names in ethtool's netlink/settings.c is
// what `ethtool <dev>` prints as "Link detected: no (<name>)").
var extStateNames = []string{"Autoneg", "Link training failure", "Logical mismatch", "Bad signal integrity",
	"No cable", "Cable issue", "EEPROM issue", "Calibration failure", "Power budget exceeded", "Overheat", "Module"}

func (s LinkExtState) String() string {
	if int(s) < len(extStateNames) {
		return extStateNames[s]
	}
	return fmt.Sprintf("link extended state %d", uint8(s))
}

// extSubstateNames are the substates of the states that have them (enum
// ethtool_link_ext_substate_*, numbered from 1; names as ethtool's netlink/settings.c prints them).
var extSubstateNames = map[LinkExtState][]string{
	ExtAutoneg: {"No partner detected", "Ack not received", "Next page exchange failed",
		"No partner detected during force mode", "FEC mismatch during override", "No HCD"},
	ExtLinkTrainingFailure: {"KR frame lock not acquired", "KR link inhibit timeout",
		"KR Link partner did not set receiver ready", "Remote side is not ready yet"},
	ExtLinkLogicalMismatch: {"PCS did not acquire block lock", "PCS did not acquire AM lock",
		"PCS did not get align_status", "FC FEC is not locked", "RS FEC is not locked"},
	ExtBadSignalIntegrity: {"Large number of physical errors", "Unsupported rate",
		"Serdes reference clock lost", "Serdes ALOS"},
	ExtCableIssue: {"Unsupported cable", "Cable test failure"},
	ExtModule:     {"CMIS module is not in ModuleReady state"},
}

// LinkState is what LINKSTATE_GET (with ETHTOOL_FLAG_STATS) says of a netdev's link.
type LinkState struct {
	Ifindex uint32
	Ifname  string
	// Link is the driver's get_link (carrier); nil when not sent.
	Link *bool
	// ExtState is set when the driver says why the link is down (only while it is down, and only
	// drivers with get_link_ext_state: mlx5e, mlxsw, bnxt_en (6.x), ice, sfc).
	ExtState    *LinkExtState
	ExtSubstate uint8
	// DownCount is the link-down events the driver counted (get_link_ext_stats: mlx5e's
	// PPCNT link_down_events, bnxt_en from 6.6); nil when not reported.
	DownCount *uint32
}

// Substate names the substate of the extended state, "" when there is none.
func (l *LinkState) Substate() string {
	if l.ExtState == nil || l.ExtSubstate == 0 {
		return ""
	}
	names := extSubstateNames[*l.ExtState]
	if int(l.ExtSubstate) <= len(names) {
		return names[l.ExtSubstate-1]
	}
	return fmt.Sprintf("substate %d", l.ExtSubstate)
}

// LinkStateRequest asks for ifname's link state, extended state and link-down count.
func LinkStateRequest(fam uint16, ifname string) host.Request {
	return host.Request{Type: fam, Payload: append(genlHdr(CmdLinkStateGet), requestHeader(ifname, FlagStats)...)}
}

// DecodeLinkState reads a LINKSTATE_GET reply of family fam (net/ethtool/linkstate.c,
// linkstate_fill_reply).
func DecodeLinkState(b []byte, fam uint16) (*LinkState, error) {
	var out *LinkState
	err := walkReply(b, fam, replyLinkState, func(attrs []byte) error {
		l := &LinkState{}
		err := eachAttr(attrs, func(t uint16, v []byte) error {
			var err error
			switch t {
			case AttrHeader:
				var h header
				h, err = decodeHeader(v)
				l.Ifindex, l.Ifname = h.ifindex, h.ifname
			case AttrLinkStateLink:
				var x uint8
				x, err = u8("LINKSTATE", t, v)
				up := x != 0
				l.Link = &up
			case AttrLinkStateExtState:
				var x uint8
				x, err = u8("LINKSTATE", t, v)
				s := LinkExtState(x)
				l.ExtState = &s
			case AttrLinkStateExtSubstate:
				l.ExtSubstate, err = u8("LINKSTATE", t, v)
			case AttrLinkStateExtDownCnt:
				var x uint32
				x, err = u32("LINKSTATE", t, v)
				l.DownCount = &x
			}
			return err
		})
		out = l
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// LinkState reads ifname's link state. A kernel before 5.10 sends no extended state, one before
// 6.6 no link-down count; a driver without get_link_ext_state sends only the link.
func (c *Client) LinkState(ifname string) (*LinkState, error) {
	l, err := query(c, "LINKSTATE_GET", ifname, func(fam uint16) host.Request { return LinkStateRequest(fam, ifname) }, DecodeLinkState)
	if err != nil {
		return nil, err
	}
	if err := checkName("LINKSTATE_GET", ifname, l.Ifname); err != nil {
		return nil, err
	}
	return l, nil
}
