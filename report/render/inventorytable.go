package render

import (
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/report"
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
//
// Every line fits width columns (DefaultWidth when 0), as the check table's do. When one line
// per port does not fit (a hardware RoCE port: firmware, PSID, GID and netdev), each device gets
// a line of its own (PCI, NUMA, firmware, PSID, driver) and its ports follow, indented, with
// their state, rate, address and netdev, as ibstat lists a CA and then its ports. A cell still
// too wide for its column wraps onto continuation lines (at spaces first, else after a '.', '_',
// '-', '/' or ','); headings never wrap, so a terminal narrower than them gets longer lines.
func RenderInventoryTable(w io.Writer, inv *report.Inventory, width int) error {
	if len(inv.Devices) == 0 {
		return nil
	}
	if width <= 0 {
		width = DefaultWidth
	}
	type device struct {
		cells []string   // name, PCI, NUMA, FW, PSID, driver
		ports [][]string // port, state, rate, address, netdev
	}
	var devs []device
	lids, gids := false, false
	for _, d := range inv.Devices {
		dv := device{cells: []string{d.Name, shortBDF(d.PCI), numa(d.NUMANode), dash(d.FirmwareVersion), dash(d.BoardID), dash(d.Driver)}}
		if len(d.Ports) == 0 {
			dv.ports = [][]string{{"-", "no ports", "-", "-", "-"}}
		}
		for _, p := range d.Ports {
			lids = lids || p.LID != nil
			gids = gids || p.GID != nil
			dv.ports = append(dv.ports, []string{strconv.Itoa(p.Port), portState(p), portRate(p), portAddress(p), portNetdev(p)})
		}
		devs = append(devs, dv)
	}
	head := append([]string(nil), InventoryHeadings...)
	switch {
	case lids && !gids:
		head[8] = "LID/SM"
	case gids && !lids:
		head[8] = "GID"
	}
	// One line per port: the device/port, then the device's cells, then the port's.
	var rows [][]string
	for _, d := range devs {
		for _, p := range d.ports {
			name := d.cells[0] + "/" + p[0]
			if p[0] == "-" {
				name = d.cells[0]
			}
			rows = append(rows, append(append([]string{name}, d.cells[1:]...), p[1:]...))
		}
	}
	flat := columns(head, rows, 0, 6) // the port and its state are always shown
	var b strings.Builder
	if lineWidth(flat) <= width {
		writeColumns(&b, flat, fitColumns(flat, width), "")
		_, err := io.WriteString(w, b.String())
		return err
	}
	// A line per device, its ports under it.
	var devRows, portRows [][]string
	for _, d := range devs {
		devRows = append(devRows, d.cells)
		portRows = append(portRows, d.ports...)
	}
	devHead := append([]string{"DEVICE"}, head[1:6]...)
	portHead := append([]string{"PORT"}, head[6:]...)
	dt := columns(devHead, devRows, 0)
	pt := columns(portHead, portRows, 0, 1)
	const indent = "  "
	dw, pw := fitColumns(dt, width), fitColumns(pt, width-len(indent))
	writeColumns(&b, dt[:1], dw, "")
	writeColumns(&b, pt[:1], pw, indent)
	next := 1
	for i, d := range devs {
		writeColumns(&b, dt[1+i:2+i], dw, "")
		writeColumns(&b, pt[next:next+len(d.ports)], pw, indent)
		next += len(d.ports)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// columns is the heading and rows without the columns no row has a value in ("-" in every row),
// save those always shown; cells are made safe for a terminal.
func columns(head []string, rows [][]string, always ...int) [][]string {
	var keep []int
	for c := range head {
		used := slices.Contains(always, c)
		for _, r := range rows {
			used = used || r[c] != "-"
		}
		if used {
			keep = append(keep, c)
		}
	}
	out := make([][]string, 0, len(rows)+1)
	for _, r := range append([][]string{head}, rows...) {
		cells := make([]string, len(keep))
		for i, c := range keep {
			cells[i] = termSafe(r[c], false)
		}
		out = append(out, cells)
	}
	return out
}

// inventoryGap is the space between two columns.
const inventoryGap = 2

// lineWidth is the width of the table's longest line when no cell wraps.
func lineWidth(table [][]string) int {
	total := inventoryGap * (len(table[0]) - 1)
	for _, w := range naturalWidths(table) {
		total += w
	}
	return total
}

func naturalWidths(table [][]string) []int {
	widths := make([]int, len(table[0]))
	for _, r := range table {
		for i, c := range r {
			widths[i] = max(widths[i], textWidth(c))
		}
	}
	return widths
}

// fitColumns returns each column's width: its widest cell's, or less when a line would be wider
// than width. Columns are narrowed one column at a time, the widest first: down to their longest
// word (cells then wrap at spaces), then down to their heading (words are cut).
func fitColumns(table [][]string, width int) []int {
	widths := naturalWidths(table)
	total := lineWidth(table)
	words := make([]int, len(widths))
	for _, r := range table {
		for i, c := range r {
			for _, wd := range strings.Fields(c) {
				words[i] = max(words[i], textWidth(wd))
			}
		}
	}
	for _, floor := range []func(i int) int{
		func(i int) int { return max(words[i], textWidth(table[0][i])) },
		func(i int) int { return max(textWidth(table[0][i]), 1) },
	} {
		for total > width {
			widest := -1
			for i, w := range widths {
				if w > floor(i) && (widest < 0 || w > widths[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				break
			}
			widths[widest]--
			total--
		}
	}
	return widths
}

// writeColumns writes rows in columns of these widths, each line after indent, wrapping cells
// wider than their column onto continuation lines.
func writeColumns(b *strings.Builder, rows [][]string, widths []int, indent string) {
	for _, r := range rows {
		parts := make([][]string, len(r))
		n := 1
		for i, cell := range r {
			parts[i] = wrap(cell, widths[i])
			n = max(n, len(parts[i]))
		}
		for l := range n {
			line := indent
			for i := range r {
				cell := ""
				if l < len(parts[i]) {
					cell = parts[i][l]
				}
				if i < len(r)-1 {
					cell = padRight(cell, widths[i]+inventoryGap)
				}
				line += cell
			}
			b.WriteString(strings.TrimRight(line, " ") + "\n")
		}
	}
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
func portState(p report.InventoryPort) string {
	s := dash(p.State)
	if p.State != "ACTIVE" && p.PhysState != "" && p.PhysState != "LinkUp" {
		s += "/" + p.PhysState
	}
	return s
}

func portRate(p report.InventoryPort) string {
	if p.RateGbps == nil {
		return dash(p.Rate)
	}
	s := strconv.FormatFloat(*p.RateGbps, 'f', -1, 64) + "G"
	if p.Width != "" {
		s += " " + p.Width
	}
	return s
}

func portAddress(p report.InventoryPort) string {
	switch {
	case p.LID != nil && p.SMLID != nil:
		return fmt.Sprintf("%d/%d", *p.LID, *p.SMLID)
	case p.LID != nil:
		return fmt.Sprintf("%d/-", *p.LID)
	case p.GID != nil:
		s := fmt.Sprintf("[%d] %s", p.GID.Index, gidDisplay(p.GID))
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

func portNetdev(p report.InventoryPort) string {
	if len(p.Netdevs) == 0 {
		return "-"
	}
	s := strings.Join(p.Netdevs, ",")
	if p.NetdevMTU > 0 {
		s += "/" + strconv.Itoa(p.NetdevMTU)
	}
	return s
}

// gidDisplay is the GID as people write addresses: the dotted address of an IPv4-mapped GID, else
// the compressed IPv6 form; the kernel's form when it is not an address.
func gidDisplay(g *report.InventoryGID) string {
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
