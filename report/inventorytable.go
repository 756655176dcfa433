package report

import (
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"text/tabwriter"
)

// InventoryHeadings are the columns of RenderInventoryTable, abbreviated so that a port of a
// hardware NIC stays near 80 columns: PORT is device/port, NUMA the node of the PCI function,
// LID/SM the port's and its subnet manager's LIDs in decimal as ibstat prints them, GID the
// routable RoCE GID as [index] address and type. The address heading is "LID/SM", "GID" or, on
// a host with both link layers, "LID/SM|GID".
var InventoryHeadings = []string{"PORT", "PCI", "NUMA", "FW", "PSID", "DRIVER", "STATE", "RATE", "LID/SM|GID", "NETDEV/MTU"}

// RenderInventoryTable writes one line per port, the first look ibstat and ibv_devinfo give: a
// device without ports gets one line that says so. Values that are not known print "-"; a column
// no port has a value in is left out (NETDEV/MTU on an InfiniBand host, the PCI columns on a
// host with software devices only), so that the table stays narrow. It writes nothing for an
// empty inventory; the caller says why there is none.
func RenderInventoryTable(w io.Writer, inv *Inventory) error {
	if len(inv.Devices) == 0 {
		return nil
	}
	var rows [][]string
	lids, gids := false, false
	for _, d := range inv.Devices {
		dev := []string{shortBDF(d.PCI), numa(d.NUMANode), dash(d.FirmwareVersion), dash(d.BoardID), dash(d.Driver)}
		if len(d.Ports) == 0 {
			rows = append(rows, append(append([]string{d.Name}, dev...), "no ports", "-", "-", "-"))
			continue
		}
		for _, p := range d.Ports {
			lids = lids || p.LID != nil
			gids = gids || p.GID != nil
			row := append([]string{fmt.Sprintf("%s/%d", d.Name, p.Port)}, dev...)
			rows = append(rows, append(row, portState(p), portRate(p), portAddress(p), portNetdev(p)))
		}
	}
	head := append([]string(nil), InventoryHeadings...)
	switch {
	case lids && !gids:
		head[8] = "LID/SM"
	case gids && !lids:
		head[8] = "GID"
	}
	var keep []int
	for c := range head {
		used := c == 0 || c == 6 // the port and its state are always shown
		for _, r := range rows {
			used = used || r[c] != "-"
		}
		if used {
			keep = append(keep, c)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range append([][]string{head}, rows...) {
		cells := make([]string, len(keep))
		for i, c := range keep {
			cells[i] = r[c]
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// shortBDF drops PCI domain 0000, as lspci does.
func shortBDF(bdf string) string {
	if b, ok := strings.CutPrefix(bdf, "0000:"); ok {
		return b
	}
	return dash(bdf)
}

func numa(n *int) string {
	if n == nil || *n < 0 {
		return "-"
	}
	return strconv.Itoa(*n)
}

// portState is the logical state, with the physical one when the port is not up
// ("DOWN/Polling": no link partner; "DOWN/Disabled": set down).
func portState(p InventoryPort) string {
	s := dash(p.State)
	if p.State != "ACTIVE" && p.PhysState != "" && p.PhysState != "LinkUp" {
		s += "/" + p.PhysState
	}
	return s
}

func portRate(p InventoryPort) string {
	if p.RateGbps == nil {
		return dash(p.Rate)
	}
	s := strconv.FormatFloat(*p.RateGbps, 'f', -1, 64) + "G"
	if p.Width != "" {
		s += " " + p.Width
	}
	return s
}

func portAddress(p InventoryPort) string {
	switch {
	case p.LID != nil && p.SMLID != nil:
		return fmt.Sprintf("%d/%d", *p.LID, *p.SMLID)
	case p.LID != nil:
		return fmt.Sprintf("%d/-", *p.LID)
	case p.GID != nil:
		s := fmt.Sprintf("[%d] %s", p.GID.Index, p.GID.Display())
		switch p.GID.Type {
		case "RoCE v2":
			s += " v2"
		case "IB/RoCE v1":
			s += " v1"
		}
		return s
	}
	return "-"
}

func portNetdev(p InventoryPort) string {
	if len(p.Netdevs) == 0 {
		return "-"
	}
	s := strings.Join(p.Netdevs, ",")
	if p.NetdevMTU > 0 {
		s += "/" + strconv.Itoa(p.NetdevMTU)
	}
	return s
}

// Display is the GID as people write addresses: the dotted address of an IPv4-mapped GID, else
// the compressed IPv6 form; the kernel's form when it is not an address.
func (g *InventoryGID) Display() string {
	parts := strings.Split(g.GID, ":")
	if len(parts) != 8 {
		return g.GID
	}
	var b [16]byte
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 16)
		if err != nil {
			return g.GID
		}
		b[2*i], b[2*i+1] = byte(v>>8), byte(v)
	}
	return netip.AddrFrom16(b).Unmap().String()
}
