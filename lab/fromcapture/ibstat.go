package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// ca is one HCA as `ibstat` prints it (infiniband-diags ibstat.c: ca_dump and port_dump).
type ca struct {
	Name      string
	Type      string // "MT4129"
	FW        string
	NodeGUID  string // "0x58a2e10300dae626"
	SysGUID   string
	Ports     []caPort
	NumPorts  int
	BoardID   string // from ibv_devinfo, when given
	HWVersion string
}

type caPort struct {
	Num       int
	State     string // "Active", "Down", "Initializing", "Armed"
	PhysState string // "LinkUp", "Polling", "Disabled", ...
	Rate      string // "400", "2.5"
	BaseLID   string
	SMLID     string
	CapMask   string
	PortGUID  string
	LinkLayer string
	// From ibv_devinfo -v or ibstatus, where the capture is not ibstat's.
	Width    string // active_width "4X"
	LaneGbps string // active_speed "25.0"
	RateSys  string // ibstatus prints the rate file itself: "100 Gb/sec (4X EDR)"
}

// parseIbstat reads every "CA 'name'" block; lines it does not know are ignored, as ibstat's own
// output grew fields over the years.
func parseIbstat(text string) ([]ca, error) {
	var out []ca
	var cur *ca
	var port *caPort
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "CA '") && strings.HasSuffix(line, "'") {
			out = append(out, ca{Name: strings.TrimSuffix(strings.TrimPrefix(line, "CA '"), "'")})
			cur, port = &out[len(out)-1], nil
			continue
		}
		if cur == nil {
			continue
		}
		if strings.HasPrefix(line, "Port ") && strings.HasSuffix(line, ":") {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, "Port "), ":"))
			if err != nil {
				return nil, fmt.Errorf("%s: bad port line %q", cur.Name, line)
			}
			cur.Ports = append(cur.Ports, caPort{Num: n})
			port = &cur.Ports[len(cur.Ports)-1]
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		if port != nil {
			switch k {
			case "State":
				port.State = v
			case "Physical state":
				port.PhysState = v
			case "Rate":
				port.Rate = v
			case "Base lid":
				port.BaseLID = v
			case "SM lid":
				port.SMLID = v
			case "Capability mask":
				port.CapMask = v
			case "Port GUID":
				port.PortGUID = v
			case "Link layer":
				port.LinkLayer = v
			}
			continue
		}
		switch k {
		case "CA type":
			cur.Type = v
		case "Number of ports":
			cur.NumPorts, _ = strconv.Atoi(v)
		case "Firmware version":
			cur.FW = v
		case "Hardware version":
			cur.HWVersion = v
		case "Node GUID":
			cur.NodeGUID = v
		case "System image GUID":
			cur.SysGUID = v
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no \"CA '...'\" block")
	}
	for _, c := range out {
		if c.Type == "" || c.FW == "" || len(c.Ports) == 0 {
			return nil, fmt.Errorf("%s: CA type, firmware version or ports missing", c.Name)
		}
	}
	return out, sc.Err()
}

// sysGUID writes ibstat's 0x-prefixed 64-bit GUID in sysfs's "%04x:%04x:%04x:%04x" form
// (drivers/infiniband/core/sysfs.c node_guid_show).
func sysGUID(g string) (string, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(g, "0x"), 16, 64)
	if err != nil {
		return "", fmt.Errorf("GUID %q: %w", g, err)
	}
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v>>48, v>>32&0xffff, v>>16&0xffff, v&0xffff), nil
}

// portState and physState map ibstat's words (ibstat.c port_state_str, port_phy_state_str) to
// the sysfs files' "%d: %s" (drivers/infiniband/core/sysfs.c state_show, phys_state_show).
func portState(s string) (string, error) {
	switch s {
	case "Down":
		return "1: DOWN", nil
	case "Initializing":
		return "2: INIT", nil
	case "Armed":
		return "3: ARMED", nil
	case "Active":
		return "4: ACTIVE", nil
	}
	return "", fmt.Errorf("port state %q", s)
}

func physState(s string) (string, error) {
	for i, n := range []string{"", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"} {
		if i > 0 && s == n {
			return fmt.Sprintf("%d: %s", i, n), nil
		}
	}
	return "", fmt.Errorf("physical state %q", s)
}

// rateFile turns ibstat's number of Gb/s into rate_show's "%d%s Gb/sec (%dX%s)": ibstat prints
// no width, so 4X is assumed (every HCA port of the captures) and the lane speed is the rate
// over four (ib_verbs.h enum ib_port_speed names). A down Ethernet port reads 40: mlx5's
// IB_WIDTH_4X/IB_SPEED_QDR preset (drivers/infiniband/hw/mlx5/main.c mlx5_query_port_roce).
func rateFile(rate string) (string, error) {
	v, err := strconv.ParseFloat(rate, 64)
	if err != nil {
		return "", fmt.Errorf("rate %q", rate)
	}
	speeds := map[float64]string{2.5: "SDR", 5: "DDR", 10: "QDR", 14: "FDR", 25: "EDR", 50: "HDR", 100: "NDR", 200: "XDR"}
	name, ok := speeds[v/4]
	if !ok {
		return "", fmt.Errorf("rate %q is no 4X rate", rate)
	}
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") + " Gb/sec (4X " + name + ")", nil
}

// widthRate writes ibv_devinfo -v's active_width ("4X") and active_speed ("25.0") as rate_show
// does, "%d%s Gb/sec (%dX%s)" (drivers/infiniband/core/sysfs.c; the lane speeds of
// ib_verbs.h enum ib_port_speed, FDR10 being 10.3125).
func widthRate(width, lane string) (string, error) {
	w, err := strconv.Atoi(strings.TrimSuffix(width, "X"))
	if err != nil || !strings.HasSuffix(width, "X") {
		return "", fmt.Errorf("active_width %q", width)
	}
	v, err := strconv.ParseFloat(lane, 64)
	if err != nil {
		return "", fmt.Errorf("active_speed %q", lane)
	}
	speeds := map[float64]string{2.5: "SDR", 5: "DDR", 10: "QDR", 10.3125: "FDR10", 14.0625: "FDR", 14: "FDR", 25: "EDR", 25.78125: "EDR", 50: "HDR", 100: "NDR", 200: "XDR"}
	name, ok := speeds[v]
	if !ok {
		return "", fmt.Errorf("active_speed %q is no IB lane speed", lane)
	}
	// rate_show prints the kernel's rate in Gb/s: 14.0625 Gb/s lanes make "56 Gb/sec".
	total := map[string]float64{"FDR": 14, "EDR": 25, "FDR10": 10}[name]
	if total == 0 {
		total = v
	}
	return strings.TrimSuffix(strconv.FormatFloat(total*float64(w), 'f', 1, 64), ".0") + fmt.Sprintf(" Gb/sec (%dX %s)", w, name), nil
}

// deviceID is the PCI device id of an mlx5/mlx4 CA type: hca_type is "MT%d" of the decimal id
// (drivers/infiniband/hw/mlx5/main.c hca_type_show).
func deviceID(caType string) (uint16, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(caType, "MT"), 10, 16)
	if err != nil || !strings.HasPrefix(caType, "MT") {
		return 0, fmt.Errorf("CA type %q is not MT<decimal PCI device id>", caType)
	}
	return uint16(v), nil
}
