package optfile

import (
	"fmt"
	pathpkg "path"
	"slices"
	"strconv"
	"strings"
)

// Policy is the fleet policy (--policy): one section per layer, each optional.
type Policy struct {
	// Ports is the "ports" section; nil when the file has none.
	Ports *PortsPolicy
	// Firmware is the "firmware" section; nil when the file has none.
	Firmware *FirmwarePolicy
	// Topology is the "topology" section: what the node should have; nil when the file has none.
	Topology *TopologyPolicy
	// Devices is the "devices" section: which devices no check judges; nil when the file has none.
	Devices *DevicesPolicy
}

// DevicesPolicy leaves devices out of every check and output:
//
//	{"devices": {"exclude": ["mlx5_bond_*", "0000:3b:00.1", "eno*"]}}
type DevicesPolicy struct {
	// Exclude lists path.Match globs of RDMA device names, PCI addresses or netdev names.
	Exclude []string
}

func (c checker) devices(path string, v *value) (*DevicesPolicy, error) {
	if err := c.object(path, v, `an object like {"exclude": ["mlx5_2"]}`, "key", "exclude"); err != nil {
		return nil, err
	}
	d := &DevicesPolicy{}
	x, ok := v.obj["exclude"]
	if !ok {
		return d, nil
	}
	ep := field(path, "exclude")
	if x.kind != kArray || len(x.items) == 0 {
		return nil, c.want(ep, `a non-empty list of device names, PCI addresses or netdevs (names or globs) like ["mlx5_2", "0000:3b:00.1", "eno*"]`, x)
	}
	for i, it := range x.items {
		s, err := c.str(index(ep, i), it, `a name or glob string like "mlx5_2"`)
		if err != nil {
			return nil, err
		}
		if _, perr := pathpkg.Match(s, ""); perr != nil || s == "" {
			return nil, c.fail(index(ep, i), "want a device name, PCI address or netdev, or a glob (*, ?, [a-z]), got %s", quote(s))
		}
		d.Exclude = append(d.Exclude, s)
	}
	return d, nil
}

// PortsPolicy is what every port of the host must run:
//
//	{"ports": {"expect_rate_gbps": 400, "by_board_id": {"MT_0000000838": 400}, "link_layer": "InfiniBand"}}
type PortsPolicy struct {
	// ExpectRateGbps is the rate every active port must reach; 0 when not set.
	ExpectRateGbps float64
	// ByBoardID is the rate the ports of boards with a PSID must reach; it wins over
	// ExpectRateGbps (a host with 400G compute and 200G storage NICs).
	ByBoardID map[string]float64
	// LinkLayer is "InfiniBand" or "Ethernet" (spelt as the kernel's link_layer file), or "".
	LinkLayer string
	// ExpectUp lists path.Match globs of ports ("mlx5_0/1"), devices, PCI addresses or netdevs
	// that must be up: a port without a link is otherwise judged by evidence and may be unused.
	ExpectUp []string
	// PKeys are the partition keys every active InfiniBand port must hold, membership bit
	// included (0x8001: full member of partition 1; 0x0001: limited member).
	PKeys []uint16
	// PFCPriorities are the priorities on which every RoCE port must have PFC on, and only
	// those (an empty list: PFC off everywhere, a lossy fabric); nil when not set.
	PFCPriorities []int
	// Trust is how every RoCE port must classify traffic: "dscp" or "pcp"; "" when not set.
	Trust string
}

// FirmwarePolicy is which boards the fleet runs and the firmware each must have at least:
//
//	{"firmware": {"allowed_psids": ["MT_0000000838"], "min_version": {"MT_0000000838": "28.39.1002"}}}
type FirmwarePolicy struct {
	// AllowedPSIDs lists the PSIDs the fleet has qualified; nil allows every PSID.
	AllowedPSIDs []string
	// MinVersion is the oldest firmware each PSID may run.
	MinVersion map[string]FirmwareVersion
}

// Allows says whether a board with this PSID is allowed.
func (p *FirmwarePolicy) Allows(psid string) bool {
	if len(p.AllowedPSIDs) == 0 {
		return true
	}
	for _, a := range p.AllowedPSIDs {
		if a == psid {
			return true
		}
	}
	return false
}

// MaxRateGbps bounds a believable port rate: 12X XDR (12 lanes of 200 Gb/s, InfiniBand
// Architecture Specification Volume 1) is 2400 Gb/s; ten times that is a typo (Mb/s given for
// Gb/s), not a plan.
const MaxRateGbps = 24000

var (
	policySections = []string{"ports", "firmware", "topology", "devices"}
	portsKeys      = []string{"expect_rate_gbps", "by_board_id", "link_layer", "expect_up", "pkeys", "pfc_priorities", "trust"}
	firmwareKeys   = []string{"allowed_psids", "min_version"}
)

// DecodePolicy decodes a policy document; file names it in errors.
func DecodePolicy(b []byte, file string) (*Policy, error) {
	root, err := parse(file, b)
	if err != nil {
		return nil, err
	}
	c := checker{file}
	if err := c.object("", root, `a JSON object with sections "ports", "firmware", "topology" and "devices"`, "section", policySections...); err != nil {
		return nil, err
	}
	p := &Policy{}
	if v, ok := root.obj["ports"]; ok {
		if p.Ports, err = c.ports("ports", v); err != nil {
			return nil, err
		}
	}
	if v, ok := root.obj["firmware"]; ok {
		if p.Firmware, err = c.firmware("firmware", v); err != nil {
			return nil, err
		}
	}
	if v, ok := root.obj["topology"]; ok {
		if p.Topology, err = c.topology("topology", v); err != nil {
			return nil, err
		}
	}
	if v, ok := root.obj["devices"]; ok {
		if p.Devices, err = c.devices("devices", v); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (c checker) ports(path string, v *value) (*PortsPolicy, error) {
	if err := c.object(path, v, `an object like {"expect_rate_gbps": 400}`, "key", portsKeys...); err != nil {
		return nil, err
	}
	p := &PortsPolicy{}
	wantRate := fmt.Sprintf("a number of Gb/s > 0 (at most %d)", MaxRateGbps)
	rate := func(path string, v *value) (float64, error) {
		r, err := c.number(path, v, wantRate)
		if err == nil && (r <= 0 || r > MaxRateGbps) {
			err = c.want(path, wantRate, v)
		}
		return r, err
	}
	var err error
	if x, ok := v.obj["expect_rate_gbps"]; ok {
		if p.ExpectRateGbps, err = rate(field(path, "expect_rate_gbps"), x); err != nil {
			return nil, err
		}
	}
	if x, ok := v.obj["by_board_id"]; ok {
		bp := field(path, "by_board_id")
		if x.kind != kObject {
			return nil, c.want(bp, `an object of PSID to Gb/s like {"MT_0000000838": 400}`, x)
		}
		p.ByBoardID = map[string]float64{}
		for _, id := range x.keys {
			if err := c.psid(entry(bp, id), id); err != nil {
				return nil, err
			}
			if p.ByBoardID[id], err = rate(entry(bp, id), x.obj[id]); err != nil {
				return nil, err
			}
		}
	}
	if x, ok := v.obj["link_layer"]; ok {
		lp := field(path, "link_layer")
		const want = `"InfiniBand" or "Ethernet"`
		s, err := c.str(lp, x, want)
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(s) {
		case "infiniband":
			p.LinkLayer = "InfiniBand"
		case "ethernet":
			p.LinkLayer = "Ethernet"
		default:
			return nil, c.want(lp, want, x)
		}
	}
	if x, ok := v.obj["expect_up"]; ok {
		ep := field(path, "expect_up")
		if x.kind != kArray || len(x.items) == 0 {
			return nil, c.want(ep, `a non-empty list of ports, devices, PCI addresses or netdevs (names or globs) like ["mlx5_*/1", "ens1f0"]`, x)
		}
		for i, it := range x.items {
			s, err := c.str(index(ep, i), it, `a name or glob string like "mlx5_0/1"`)
			if err != nil {
				return nil, err
			}
			if _, perr := pathpkg.Match(s, ""); perr != nil || s == "" {
				return nil, c.fail(index(ep, i), "want a port (mlx5_0/1), device, PCI address or netdev name, or a glob (*, ?, [a-z]), got %s", quote(s))
			}
			p.ExpectUp = append(p.ExpectUp, s)
		}
	}
	if x, ok := v.obj["pkeys"]; ok {
		kp := field(path, "pkeys")
		const want = `a non-empty list of P_Keys like ["0xffff", "0x8001"]`
		if x.kind != kArray || len(x.items) == 0 {
			return nil, c.want(kp, want, x)
		}
		for i, it := range x.items {
			s, err := c.str(index(kp, i), it, `a P_Key string like "0x8001"`)
			if err != nil {
				return nil, err
			}
			k, ok := parsePKey(s)
			if !ok {
				return nil, c.fail(index(kp, i), "want a P_Key of 4 hex digits like \"0x8001\" (0x0000 and 0x8000 are the invalid key), got %s", quote(s))
			}
			p.PKeys = append(p.PKeys, k)
		}
	}
	if x, ok := v.obj["pfc_priorities"]; ok {
		pp := field(path, "pfc_priorities")
		if x.kind != kArray {
			return nil, c.want(pp, `a list of priorities 0-7 like [3] (empty: PFC off on every priority)`, x)
		}
		p.PFCPriorities = []int{}
		for i, it := range x.items {
			n, err := c.number(index(pp, i), it, "a priority 0-7")
			if err != nil {
				return nil, err
			}
			if n != float64(int(n)) || n < 0 || n > 7 {
				return nil, c.want(index(pp, i), "a priority 0-7", it)
			}
			if slices.Contains(p.PFCPriorities, int(n)) {
				return nil, c.fail(index(pp, i), "priority %d is listed twice", int(n))
			}
			p.PFCPriorities = append(p.PFCPriorities, int(n))
		}
		slices.Sort(p.PFCPriorities)
	}
	if x, ok := v.obj["trust"]; ok {
		tp := field(path, "trust")
		const want = `"dscp" or "pcp"`
		s, err := c.str(tp, x, want)
		if err != nil {
			return nil, err
		}
		switch strings.ToLower(s) {
		case "dscp", "pcp":
			p.Trust = strings.ToLower(s)
		default:
			return nil, c.want(tp, want, x)
		}
	}
	return p, nil
}

// parsePKey reads "0x8001" (hex, with or without 0x); the invalid P_Key (0x0000, 0x8000: base
// 0 in either membership; IBTA Volume 1, 10.9 Partitioning) is refused.
func parsePKey(s string) (uint16, bool) {
	h := strings.TrimPrefix(strings.ToLower(s), "0x")
	if h == "" || len(h) > 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(h, 16, 16)
	if err != nil || v&0x7fff == 0 {
		return 0, false
	}
	return uint16(v), true
}

func (c checker) firmware(path string, v *value) (*FirmwarePolicy, error) {
	if err := c.object(path, v, `an object like {"allowed_psids": ["MT_0000000838"]}`, "key", firmwareKeys...); err != nil {
		return nil, err
	}
	p := &FirmwarePolicy{}
	if x, ok := v.obj["allowed_psids"]; ok {
		ap := field(path, "allowed_psids")
		if x.kind != kArray || len(x.items) == 0 {
			return nil, c.want(ap, `a non-empty list of PSIDs like ["MT_0000000838"] (leave the key out to allow every PSID)`, x)
		}
		for i, it := range x.items {
			s, err := c.str(index(ap, i), it, `a PSID string like "MT_0000000838"`)
			if err != nil {
				return nil, err
			}
			if err := c.psid(index(ap, i), s); err != nil {
				return nil, err
			}
			p.AllowedPSIDs = append(p.AllowedPSIDs, s)
		}
	}
	if x, ok := v.obj["min_version"]; ok {
		mp := field(path, "min_version")
		if x.kind != kObject {
			return nil, c.want(mp, `an object of PSID to firmware version like {"MT_0000000838": "28.39.1002"}`, x)
		}
		p.MinVersion = map[string]FirmwareVersion{}
		for _, id := range x.keys {
			ep := entry(mp, id)
			if err := c.psid(ep, id); err != nil {
				return nil, err
			}
			fv, err := c.version(ep, x.obj[id], 0)
			if err != nil {
				return nil, err
			}
			p.MinVersion[id] = fv
		}
	}
	return p, nil
}

// psid checks a board id as the kernel's board_id file shows it: a value with surrounding
// space could never equal one.
func (c checker) psid(path, id string) error {
	if strings.TrimSpace(id) == "" {
		return c.fail(path, `want a PSID like "MT_0000000838", got an empty one`)
	}
	if strings.TrimSpace(id) != id {
		return c.fail(path, "want a PSID without surrounding white space, got %s", quote(id))
	}
	return nil
}
