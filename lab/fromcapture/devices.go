package main

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"
)

// pciDev is one line of devices.txt: a PCI function a report's kernel log names
// ("mlx5_core 0000:03:00.0: ...", "mlx5_ib: ... mlx5_0") where it quotes no lspci -nn, so the
// tree can hold the function, and the CA on it or the driver that failed to bind it.
//
//	# <PCI address> <vendor:device> <driver> <CA name | - (CA not named) | unbound (probe failed)>
//	0000:b3:00.0 15b3:101d mlx5_core mlx5_0
//	0000:03:00.0 15b3:1015 mlx5_core unbound
type pciDev struct {
	BDF     string
	Device  uint16
	Driver  string
	CA      string // "" when the line names none
	Unbound bool   // the driver is loaded but its probe of the function failed
}

var (
	bdfRe = regexp.MustCompile(`^[0-9a-f]{4}:[0-9a-f]{2}:[0-1][0-9a-f]\.[0-7]$`)
	idRe  = regexp.MustCompile(`^15b3:([0-9a-f]{4})$`)
	drvRe = regexp.MustCompile(`^mlx[45]_core$`)
	caRe  = regexp.MustCompile(`^[a-z][a-z0-9_]*[0-9]$`)
)

func parseDevices(text string) ([]pciDev, error) {
	var out []pciDev
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: want <PCI address> <vendor:device> <driver> <CA|-|unbound>, got %q", n, line)
		}
		d := pciDev{BDF: f[0], Driver: f[2]}
		if !bdfRe.MatchString(d.BDF) || seen[d.BDF] {
			return nil, fmt.Errorf("line %d: PCI address %q is malformed or repeated", n, f[0])
		}
		seen[d.BDF] = true
		m := idRe.FindStringSubmatch(f[1])
		if m == nil {
			return nil, fmt.Errorf("line %d: %q is no Mellanox vendor:device id", n, f[1])
		}
		fmt.Sscanf(m[1], "%x", &d.Device)
		if !drvRe.MatchString(d.Driver) {
			return nil, fmt.Errorf("line %d: driver %q is not mlx4_core or mlx5_core", n, f[2])
		}
		switch ca := f[3]; {
		case ca == "unbound":
			d.Unbound = true
		case ca == "-":
		case caRe.MatchString(ca):
			d.CA = ca
		default:
			return nil, fmt.Errorf("line %d: CA name %q is malformed", n, ca)
		}
		out = append(out, d)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no device line")
	}
	return out, sc.Err()
}
