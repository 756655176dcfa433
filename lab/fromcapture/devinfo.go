package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// parseDevinfo reads every "hca_id:" block of `ibv_devinfo` (optionally -v), as rdma-core's
// libibverbs/examples/devinfo.c print_hca_cap prints it, into the same CAs ibstat gives:
// vendor_part_id is the PCI device id ibstat names "MT<id>", and a port's state words map onto
// ibstat's (port_state_str). Without -v no rate and no physical state are printed; the port
// keeps them empty and build says what it did instead.
func parseDevinfo(text string) ([]ca, error) {
	var out []ca
	var cur *ca
	var port *caPort
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if k == "hca_id" {
			out = append(out, ca{Name: v})
			cur, port = &out[len(out)-1], nil
			continue
		}
		if cur == nil {
			continue
		}
		if k == "port" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("%s: bad port line %q", cur.Name, v)
			}
			cur.Ports = append(cur.Ports, caPort{Num: n})
			port = &cur.Ports[len(cur.Ports)-1]
			continue
		}
		if port != nil {
			switch k {
			case "state":
				port.State = devinfoState(v)
			case "phys_state":
				port.PhysState = devinfoPhys(v)
			case "sm_lid":
				port.SMLID = v
			case "port_lid":
				port.BaseLID = v
			case "link_layer":
				port.LinkLayer = v
			case "active_width":
				port.Width = strings.Fields(v)[0]
			case "active_speed":
				port.LaneGbps = strings.Fields(v)[0]
			}
			continue
		}
		switch k {
		case "fw_ver":
			cur.FW = v
		case "vendor_part_id":
			cur.Type = "MT" + v
		case "hw_ver":
			if n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 32); err == nil {
				cur.HWVersion = strconv.FormatUint(n, 16)
			}
		case "board_id":
			cur.BoardID = v
		case "phys_port_cnt":
			cur.NumPorts, _ = strconv.Atoi(v)
		case "node_guid":
			cur.NodeGUID = devinfoGUID(v)
		case "sys_image_guid":
			cur.SysGUID = devinfoGUID(v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"hca_id:\" block")
	}
	for _, c := range out {
		if c.Type == "MT" || c.FW == "" || len(c.Ports) == 0 {
			return nil, fmt.Errorf("%s: vendor_part_id, fw_ver or ports missing", c.Name)
		}
		for _, p := range c.Ports {
			if p.State == "" || p.LinkLayer == "" {
				return nil, fmt.Errorf("%s/%d: state or link_layer missing", c.Name, p.Num)
			}
		}
	}
	return out, sc.Err()
}

// devinfoState maps "PORT_ACTIVE (4)" (devinfo.c port_state_str) onto ibstat's word.
func devinfoState(v string) string {
	switch strings.Fields(v)[0] {
	case "PORT_DOWN":
		return "Down"
	case "PORT_INIT":
		return "Initializing"
	case "PORT_ARMED":
		return "Armed"
	case "PORT_ACTIVE":
		return "Active"
	}
	return v
}

// devinfoPhys maps "LINK_UP (5)" (devinfo.c port_phy_state_str) onto ibstat's word.
func devinfoPhys(v string) string {
	m := map[string]string{"SLEEP": "Sleep", "POLLING": "Polling", "DISABLED": "Disabled",
		"PORT_CONFIGURATION TRAINNING": "PortConfigurationTraining", "LINK_UP": "LinkUp",
		"LINK_ERROR_RECOVERY": "LinkErrorRecovery", "PHY TEST": "PhyTest"}
	name := strings.TrimSpace(v)
	if i := strings.LastIndex(name, " ("); i > 0 {
		name = name[:i]
	}
	if w, ok := m[name]; ok {
		return w
	}
	return v
}

// devinfoGUID turns "a088:c203:007e:1dba" into ibstat's "0xa088c203007e1dba".
func devinfoGUID(v string) string {
	return "0x" + strings.ReplaceAll(v, ":", "")
}

// ibstatusPort is one "Infiniband device 'x' port n status:" block of `ibstatus` (the
// infiniband-diags script, which prints the sysfs files themselves).
type ibstatusPort struct {
	Dev               string
	Num               int
	BaseLID, SMLID    string // "0x30c"
	State, Phys, Rate string // "4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)"
	LinkLayer         string
}

func parseIbstatus(text string) ([]ibstatusPort, error) {
	var out []ibstatusPort
	var cur *ibstatusPort
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var dev string
		var n int
		if strings.HasPrefix(line, "Infiniband device '") {
			rest := strings.TrimPrefix(line, "Infiniband device '")
			name, tail, ok := strings.Cut(rest, "' port ")
			if !ok {
				return nil, fmt.Errorf("bad device line %q", line)
			}
			if _, err := fmt.Sscanf(tail, "%d status:", &n); err != nil {
				return nil, fmt.Errorf("bad device line %q", line)
			}
			dev = name
			out = append(out, ibstatusPort{Dev: dev, Num: n})
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "base lid":
			cur.BaseLID = v
		case "sm lid":
			cur.SMLID = v
		case "state":
			cur.State = v
		case "phys state":
			cur.Phys = v
		case "rate":
			cur.Rate = v
		case "link_layer":
			cur.LinkLayer = v
		}
	}
	for _, p := range out {
		if p.State == "" || p.Phys == "" || p.Rate == "" || p.LinkLayer == "" {
			return nil, fmt.Errorf("%s/%d: state, phys state, rate or link_layer missing", p.Dev, p.Num)
		}
	}
	return out, sc.Err()
}
