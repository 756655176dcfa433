package probe

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/verbs"
)

// Attributes is the verbs view of a device and one of its ports.
type Attributes struct {
	Device     string `json:"device"`
	Uverbs     string `json:"uverbs"`      // uverbs node libibverbs lists, e.g. "uverbs0"
	UverbsPath string `json:"uverbs_path"` // what the context's command fd really points at
	FWVer      string `json:"fw_ver"`
	FWVerSysfs string `json:"fw_ver_sysfs"` // empty when sysfs has no fw_ver
	FWVerMatch bool   `json:"fw_ver_match"`
	NodeGUID   string `json:"node_guid"`
	VendorID   uint32 `json:"vendor_id"`
	VendorPart uint32 `json:"vendor_part_id"`
	HWVer      uint32 `json:"hw_ver"`
	MaxQP      int    `json:"max_qp"`
	MaxQPWR    int    `json:"max_qp_wr"`
	MaxCQ      int    `json:"max_cq"`
	MaxCQE     int    `json:"max_cqe"`
	MaxSGE     int    `json:"max_sge"`
	MaxMRSize  uint64 `json:"max_mr_size"`
	PhysPorts  int    `json:"phys_port_cnt"`

	PortState     string  `json:"port_state"`
	PortStateCode uint32  `json:"port_state_code"`
	PhysState     uint8   `json:"phys_state"`
	LinkLayer     string  `json:"link_layer"` // InfiniBand, Ethernet
	LID           uint16  `json:"lid"`
	ActiveMTU     int     `json:"active_mtu"` // bytes
	MaxMTU        int     `json:"max_mtu"`
	ActiveSpeed   string  `json:"active_speed"` // per lane, e.g. "25.0 Gbps (EDR)"
	ActiveWidth   string  `json:"active_width"` // e.g. "4X"
	RateGbps      float64 `json:"rate_gbps"`    // width x speed; 0 when either is unknown
	SpeedCode     uint8   `json:"active_speed_code"`
	WidthCode     uint8   `json:"active_width_code"`
	GIDTableLen   int     `json:"gid_tbl_len"`

	// GID is the source GID the traffic probes use (RoCE), chosen as
	// perftest does; nil on InfiniBand or when the port is not ACTIVE.
	GID *GIDChoice `json:"gid,omitempty"`
}

// GIDChoice is a GID table entry picked for traffic.
type GIDChoice struct {
	Index      int    `json:"index"`
	GID        string `json:"gid"`
	Type       string `json:"type"` // "RoCE v2", "RoCE v1", "IB"
	IPv4Mapped bool   `json:"ipv4_mapped"`
	Raw        [16]byte
}

var mtuBytes = map[uint32]int{verbs.MTU256: 256, verbs.MTU512: 512, verbs.MTU1024: 1024, verbs.MTU2048: 2048, verbs.MTU4096: 4096}

// speedGbps is the per-lane signalling rate for ibv_port_attr.active_speed.
var speedGbps = map[uint8]struct {
	gbps float64
	name string
}{
	1: {2.5, "SDR"}, 2: {5, "DDR"}, 4: {10, "QDR"}, 8: {10.3125, "FDR10"}, 16: {14.0625, "FDR"},
	32: {25.78125, "EDR"}, 64: {53.125, "HDR"}, 128: {106.25, "NDR"},
}

// widthLanes is the lane count for ibv_port_attr.active_width.
var widthLanes = map[uint8]int{1: 1, 2: 4, 4: 8, 8: 12, 16: 2}

func linkLayerName(l uint8) string {
	switch l {
	case verbs.LinkLayerInfiniBand:
		return "InfiniBand"
	case verbs.LinkLayerEthernet:
		return "Ethernet"
	case verbs.LinkLayerUnspecified:
		return "Unspecified"
	}
	return fmt.Sprintf("link layer %d", l)
}

// portRate decodes active speed and width as ibv_devinfo does.
func portRate(speed, width uint8) (speedName, widthName string, gbps float64) {
	sp, okS := speedGbps[speed]
	lanes, okW := widthLanes[width]
	if okS {
		speedName = fmt.Sprintf("%.1f Gbps (%s)", sp.gbps, sp.name)
	} else {
		speedName = fmt.Sprintf("invalid speed %d", speed)
	}
	if okW {
		widthName = fmt.Sprintf("%dX", lanes)
	} else {
		widthName = fmt.Sprintf("invalid width %d", width)
	}
	if okS && okW {
		gbps = sp.gbps * float64(lanes)
	}
	return speedName, widthName, gbps
}

// queryAttrs runs the query stages and fills res.Attrs.
func (s *session) queryAttrs() error {
	a := &Attributes{Device: s.res.Device}
	s.res.Attrs = a
	info := s.vc.Info()
	a.Uverbs = info.Uverbs
	if p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", s.vc.CmdFD())); err == nil {
		a.UverbsPath = p
	}
	if err := s.step(StageQueryDevice, func() error {
		d, err := s.vc.QueryDevice()
		if err != nil {
			return err
		}
		s.dattr = d
		return nil
	}); err != nil {
		return err
	}
	d := &s.dattr
	a.FWVer = d.FWVersion()
	if b, err := os.ReadFile(filepath.Join(s.o.sysfs(), "class/infiniband", s.res.Device, "fw_ver")); err == nil {
		a.FWVerSysfs = strings.TrimSpace(string(b))
		a.FWVerMatch = a.FWVerSysfs == a.FWVer
	}
	var g [8]byte
	binary.LittleEndian.PutUint64(g[:], d.NodeGUID) // stored in network order
	a.NodeGUID = fmt.Sprintf("%04x:%04x:%04x:%04x", binary.BigEndian.Uint16(g[0:]), binary.BigEndian.Uint16(g[2:]),
		binary.BigEndian.Uint16(g[4:]), binary.BigEndian.Uint16(g[6:]))
	a.VendorID, a.VendorPart, a.HWVer = d.VendorID, d.VendorPartID, d.HWVer
	a.MaxQP, a.MaxQPWR, a.MaxCQ, a.MaxCQE, a.MaxSGE = int(d.MaxQP), int(d.MaxQPWR), int(d.MaxCQ), int(d.MaxCQE), int(d.MaxSGE)
	a.MaxMRSize, a.PhysPorts = d.MaxMRSize, int(d.PhysPortCnt)
	if err := s.step(StageQueryPort, func() error {
		if int(s.port) > a.PhysPorts {
			return fmt.Errorf("%s has %d port(s), no port %d", s.res.Device, a.PhysPorts, s.port)
		}
		p, err := s.vc.QueryPort(s.port)
		if err != nil {
			return err
		}
		s.pattr = p
		return nil
	}); err != nil {
		return err
	}
	p := &s.pattr
	a.PortStateCode, a.PortState, a.PhysState = p.State, verbs.PortStateName(p.State), p.PhysState
	a.LinkLayer, a.LID = linkLayerName(p.LinkLayer), p.LID
	a.ActiveMTU, a.MaxMTU = mtuBytes[p.ActiveMTU], mtuBytes[p.MaxMTU]
	a.SpeedCode, a.WidthCode = p.ActiveSpeed, p.ActiveWidth
	a.ActiveSpeed, a.ActiveWidth, a.RateGbps = portRate(p.ActiveSpeed, p.ActiveWidth)
	a.GIDTableLen = int(p.GIDTblLen)
	if p.State != verbs.PortActive || p.LinkLayer == verbs.LinkLayerInfiniBand {
		return nil
	}
	return s.step(StageQueryGID, func() error {
		room := int(p.GIDTblLen) * max(a.PhysPorts, 1)
		entries, err := s.vc.GIDs(s.port, int(p.GIDTblLen), room)
		if err != nil {
			return err
		}
		c, err := chooseGID(entries, func(idx uint32) string {
			b, _ := os.ReadFile(filepath.Join(s.o.sysfs(), "class/infiniband", s.res.Device, "ports",
				strconv.Itoa(int(s.port)), "gid_attrs/types", strconv.Itoa(int(idx))))
			return strings.TrimSpace(string(b))
		})
		if err != nil {
			return fmt.Errorf("%s port %d: %w", s.res.Device, s.port, err)
		}
		s.gid = c
		a.GID = c
		return nil
	})
}

// chooseGID picks the GID perftest would: prefer IPv4-mapped addresses,
// then non-link-local ones, then RoCE v2 over v1; the lowest index breaks
// ties. sysfsType names the type of entries the library could not type.
func chooseGID(entries []verbs.GIDEntry, sysfsType func(idx uint32) string) (*GIDChoice, error) {
	var best *GIDChoice
	bestScore := -1
	for _, e := range entries {
		if e.GID == ([16]byte{}) {
			continue
		}
		typ := e.GIDType
		if typ == verbs.GIDTypeUnknown {
			switch t := sysfsType(e.GIDIndex); {
			case strings.EqualFold(t, "RoCE v2"):
				typ = verbs.GIDTypeRoCEv2
			case strings.Contains(t, "RoCE"):
				typ = verbs.GIDTypeRoCEv1
			default:
				typ = verbs.GIDTypeIB
			}
		}
		addr := netip.AddrFrom16(e.GID)
		score := 0
		if addr.Is4In6() {
			score += 100
		}
		if !addr.IsLinkLocalUnicast() {
			score += 10
		}
		switch typ {
		case verbs.GIDTypeRoCEv2:
			score += 2
		case verbs.GIDTypeRoCEv1:
			score++
		}
		if score > bestScore || (score == bestScore && int(e.GIDIndex) < best.Index) {
			bestScore = score
			best = &GIDChoice{Index: int(e.GIDIndex), GID: addr.String(), Type: gidTypeName(typ), IPv4Mapped: addr.Is4In6(), Raw: e.GID}
		}
	}
	if best == nil {
		return nil, fmt.Errorf("GID table has no usable entry (no IP address on the netdev?)")
	}
	return best, nil
}

func gidTypeName(t uint32) string {
	switch t {
	case verbs.GIDTypeRoCEv2:
		return "RoCE v2"
	case verbs.GIDTypeRoCEv1:
		return "RoCE v1"
	case verbs.GIDTypeIB:
		return "IB"
	}
	return fmt.Sprintf("type %d", t)
}

// Device is the driver-layer probe: open the device through its uverbs node
// and query device and port. It passes when all three verbs succeed,
// whatever the port state (the port state is evidence for the port layer).
func Device(ctx context.Context, lib *verbs.Lib, dev string, port int, o Options) (res Result) {
	_, done, ok := begin(ctx, lib, "driver", dev, port, o, &res)
	if ok {
		done()
	}
	return res
}
