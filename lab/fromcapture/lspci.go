package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// pciFunc is one function as `lspci -vvv` (optionally -nn) prints it (pciutils ls-caps.c
// cap_express_link: "LnkCap: Port #%d, Speed %s, Width x%d", "LnkSta: Speed %s..., Width x%d").
type pciFunc struct {
	BDF              string // with domain
	Class            string // "Infiniband controller", "Ethernet controller"
	Vendor, Device   uint16 // zero without -nn
	CapSpeed, CapWid string // "32GT/s", "16"
	StaSpeed, StaWid string
	Driver           string
}

var (
	lspciHead = regexp.MustCompile(`^((?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) ([^:]+?)(?: \[[0-9a-f]{4}\])?: (.*)$`)
	lspciIDs  = regexp.MustCompile(`\[([0-9a-f]{4}):([0-9a-f]{4})\]`)
	lnk       = regexp.MustCompile(`Lnk(Cap|Sta):.*?Speed ([0-9.]+GT/s)[^,]*, Width x([0-9]+)`)
)

func parseLspci(text string) ([]pciFunc, error) {
	var out []pciFunc
	var cur *pciFunc
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		raw := sc.Text()
		if m := lspciHead.FindStringSubmatch(raw); m != nil && !strings.HasPrefix(raw, "\t") && !strings.HasPrefix(raw, " ") {
			bdf := m[1]
			if strings.Count(bdf, ":") == 1 {
				bdf = "0000:" + bdf
			}
			f := pciFunc{BDF: bdf, Class: m[2]}
			if ids := lspciIDs.FindAllStringSubmatch(m[3], -1); len(ids) > 0 {
				last := ids[len(ids)-1]
				fmt.Sscanf(last[1], "%x", &f.Vendor)
				fmt.Sscanf(last[2], "%x", &f.Device)
			}
			out = append(out, f)
			cur = &out[len(out)-1]
			continue
		}
		if cur == nil {
			continue
		}
		line := strings.TrimSpace(raw)
		if m := lnk.FindStringSubmatch(line); m != nil {
			if m[1] == "Cap" {
				cur.CapSpeed, cur.CapWid = m[2], m[3]
			} else {
				cur.StaSpeed, cur.StaWid = m[2], m[3]
			}
		}
		if d, ok := strings.CutPrefix(line, "Kernel driver in use: "); ok {
			cur.Driver = d
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no PCI function header")
	}
	return out, sc.Err()
}

// sysfsSpeed writes lspci's "16GT/s" as current_link_speed prints it, "16.0 GT/s PCIe"
// (drivers/pci/pci-sysfs.c, PCIE_SPEED2STR).
func sysfsSpeed(s string) string {
	v := strings.TrimSuffix(s, "GT/s")
	if !strings.Contains(v, ".") {
		v += ".0"
	}
	return v + " GT/s PCIe"
}
