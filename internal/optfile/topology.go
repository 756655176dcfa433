package optfile

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// TopologyPolicy is what the node should have: how many RDMA devices, how many active ports of
// each link layer at which rate, and what not to count:
//
//	{"topology": {"devices": 8, "devices_by_driver": {"mlx5_core": 8},
//	  "ports": {"InfiniBand": {"active": 8, "min_rate_gbps": 400}},
//	  "ignore": ["mlx5_bond_*", "eno1"], "include_management": false}}
type TopologyPolicy struct {
	// Devices is the number of RDMA devices the node must have at least; 0 when not stated.
	Devices int
	// DevicesByDriver is the number of devices each PCI driver (mlx5_core, irdma, bnxt_en) or
	// software RDMA module (rdma_rxe, siw) must have at least.
	DevicesByDriver map[string]int
	// Ports holds, per link layer ("InfiniBand", "Ethernet"), the active ports expected.
	Ports map[string]PortExpectation
	// Ignore lists path.Match globs of RDMA device or netdev names never counted (management
	// NICs, a bond's member devices).
	Ignore []string
	// IncludeManagement counts devices that carry the host's default route, which are
	// otherwise reported as management NICs and left out.
	IncludeManagement bool
}

// PortExpectation is one link layer's expectation: at least Active ports ACTIVE at MinRateGbps
// or faster. Either may be zero (not stated), not both.
type PortExpectation struct {
	Active      int
	MinRateGbps float64
}

// Ignored reports whether a device or netdev name matches one of the ignore globs, and which.
func (t *TopologyPolicy) Ignored(name string) (string, bool) {
	for _, g := range t.Ignore {
		if ok, _ := path.Match(g, name); ok {
			return g, true
		}
	}
	return "", false
}

// LinkLayers returns the link layers the policy states, sorted.
func (t *TopologyPolicy) LinkLayers() []string {
	var out []string
	for ll := range t.Ports {
		out = append(out, ll)
	}
	sort.Strings(out)
	return out
}

// MaxTopologyCount bounds device and port counts: a node with more than 1024 RDMA devices or
// ports (SR-IOV VFs are not counted) is a typo, not a plan.
const MaxTopologyCount = 1024

var (
	topologyKeys = []string{"devices", "devices_by_driver", "ports", "ignore", "include_management"}
	portExpKeys  = []string{"active", "min_rate_gbps"}
)

func (c checker) topology(p string, v *value) (*TopologyPolicy, error) {
	if err := c.object(p, v, `an object like {"devices": 8, "ports": {"InfiniBand": {"active": 8, "min_rate_gbps": 400}}}`, "key", topologyKeys...); err != nil {
		return nil, err
	}
	t := &TopologyPolicy{}
	wantCount := fmt.Sprintf("an integer from 1 to %d", MaxTopologyCount)
	count := func(p string, v *value) (int, error) {
		n, err := c.integer(p, v, wantCount)
		if err == nil && (n < 1 || n > MaxTopologyCount) {
			err = c.want(p, wantCount, v)
		}
		return int(n), err
	}
	var err error
	if x, ok := v.obj["devices"]; ok {
		if t.Devices, err = count(field(p, "devices"), x); err != nil {
			return nil, err
		}
	}
	if x, ok := v.obj["devices_by_driver"]; ok {
		dp := field(p, "devices_by_driver")
		if x.kind != kObject || len(x.keys) == 0 {
			return nil, c.want(dp, `a non-empty object of driver to device count like {"mlx5_core": 8}`, x)
		}
		t.DevicesByDriver = map[string]int{}
		for _, d := range x.keys {
			if d == "" || strings.ContainsAny(d, " \t/") {
				return nil, c.fail(entry(dp, d), `want a driver name as /sys/bus/pci/devices/<bdf>/driver names it (mlx5_core), got %s`, quote(d))
			}
			if t.DevicesByDriver[d], err = count(entry(dp, d), x.obj[d]); err != nil {
				return nil, err
			}
		}
	}
	if x, ok := v.obj["ports"]; ok {
		pp := field(p, "ports")
		if x.kind != kObject || len(x.keys) == 0 {
			return nil, c.want(pp, `a non-empty object of link layer to expectation like {"InfiniBand": {"active": 8}}`, x)
		}
		t.Ports = map[string]PortExpectation{}
		for _, ll := range x.keys {
			ep := entry(pp, ll)
			name := ""
			switch strings.ToLower(ll) {
			case "infiniband":
				name = "InfiniBand"
			case "ethernet":
				name = "Ethernet"
			default:
				return nil, c.fail(ep, `want a link layer "InfiniBand" or "Ethernet", got %s`, quote(ll))
			}
			if _, dup := t.Ports[name]; dup {
				return nil, c.fail(ep, "link layer %s is stated twice", name)
			}
			e, err := c.portExpectation(ep, x.obj[ll], count)
			if err != nil {
				return nil, err
			}
			t.Ports[name] = e
		}
	}
	if x, ok := v.obj["ignore"]; ok {
		ip := field(p, "ignore")
		if x.kind != kArray || len(x.items) == 0 {
			return nil, c.want(ip, `a non-empty list of device or netdev names or globs like ["mlx5_bond_*", "eno1"]`, x)
		}
		for i, it := range x.items {
			s, err := c.str(index(ip, i), it, `a name or glob string like "eno*"`)
			if err != nil {
				return nil, err
			}
			if _, perr := path.Match(s, ""); perr != nil || s == "" || strings.Contains(s, "/") {
				return nil, c.fail(index(ip, i), "want a device or netdev name or a glob (*, ?, [a-z]) without '/', got %s", quote(s))
			}
			t.Ignore = append(t.Ignore, s)
		}
	}
	if x, ok := v.obj["include_management"]; ok {
		if x.kind != kBool {
			return nil, c.want(field(p, "include_management"), "true or false", x)
		}
		t.IncludeManagement = x.b
	}
	return t, nil
}

func (c checker) portExpectation(p string, v *value, count func(string, *value) (int, error)) (PortExpectation, error) {
	var e PortExpectation
	const want = `an object like {"active": 8, "min_rate_gbps": 400}`
	if err := c.object(p, v, want, "key", portExpKeys...); err != nil {
		return e, err
	}
	if len(v.keys) == 0 {
		return e, c.want(p, want+" (at least one of the two)", v)
	}
	var err error
	if x, ok := v.obj["active"]; ok {
		if e.Active, err = count(field(p, "active"), x); err != nil {
			return e, err
		}
	}
	if x, ok := v.obj["min_rate_gbps"]; ok {
		wantRate := fmt.Sprintf("a number of Gb/s > 0 (at most %d)", MaxRateGbps)
		r, err := c.number(field(p, "min_rate_gbps"), x, wantRate)
		if err == nil && (r <= 0 || r > MaxRateGbps) {
			err = c.want(field(p, "min_rate_gbps"), wantRate, x)
		}
		if err != nil {
			return e, err
		}
		e.MinRateGbps = r
	}
	return e, nil
}
