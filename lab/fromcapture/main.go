// Command fromcapture turns the text a public bug report quotes from a real machine (`ibstat`,
// `lspci -vvv`, a kernel log, /proc/modules) into a directory laid out like that machine's root,
// for `rdmadiag record --root` to record as a fixture (lab/captures.sh). Every value the capture
// does not hold is filled in and listed on standard output, for the fixture's README.
//
//	go run ./lab/fromcapture -o /tmp/tree fixtures/captures/<name>
//
// A capture directory holds ibstat.txt (or devinfo.txt, or only devices.txt: the functions a
// kernel log names, see devices.go) and, optionally: lspci.txt (the RDMA functions of
// `lspci -vvv`, -nn for ids), dmesg.txt, kern.log or messages (kept as var/log/dmesg,
// var/log/kern.log, var/log/messages), modules.txt (/proc/modules), osrelease.txt, uptime.txt,
// board_id.txt ("<ca> <psid>" lines from ibv_devinfo).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	out := flag.String("o", "", "the root directory to write (must not exist)")
	flag.Parse()
	if flag.NArg() != 1 || *out == "" {
		fmt.Fprintln(os.Stderr, "usage: fromcapture -o ROOT CAPTURE_DIR")
		os.Exit(64)
	}
	filled, err := build(flag.Arg(0), *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fromcapture:", err)
		os.Exit(1)
	}
	for _, f := range filled {
		fmt.Println("- " + f)
	}
}

// tree collects the files and links of the root being built.
type tree struct {
	files map[string]string
	links map[string]string
}

func (t *tree) file(p, content string) { t.files[p] = content }
func (t *tree) link(p, target string)  { t.links[p] = target }

func readOpt(dir, name string) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	return string(b), err == nil, err
}

// readCAs reads the CAs of ibstat.txt or, where the report quotes ibv_devinfo instead,
// devinfo.txt; an ibstatus.txt beside them gives the ports' sysfs state, rate and LIDs.
func readCAs(capDir string) ([]ca, error) {
	var cas []ca
	if s, ok, err := readOpt(capDir, "ibstat.txt"); err != nil {
		return nil, err
	} else if ok {
		if cas, err = parseIbstat(s); err != nil {
			return nil, fmt.Errorf("%s/ibstat.txt: %w", capDir, err)
		}
	} else if s, ok, err := readOpt(capDir, "devinfo.txt"); err != nil {
		return nil, err
	} else if ok {
		if cas, err = parseDevinfo(s); err != nil {
			return nil, fmt.Errorf("%s/devinfo.txt: %w", capDir, err)
		}
	} else if _, err := os.Stat(filepath.Join(capDir, "devices.txt")); err != nil {
		return nil, fmt.Errorf("%s: ibstat.txt, devinfo.txt or devices.txt is needed", capDir)
	}
	s, ok, err := readOpt(capDir, "ibstatus.txt")
	if err != nil || !ok {
		return cas, err
	}
	ports, err := parseIbstatus(s)
	if err != nil {
		return nil, fmt.Errorf("%s/ibstatus.txt: %w", capDir, err)
	}
	for _, sp := range ports {
		for i := range cas {
			for j := range cas[i].Ports {
				if p := &cas[i].Ports[j]; cas[i].Name == sp.Dev && p.Num == sp.Num {
					p.RateSys, p.BaseLID, p.SMLID = sp.Rate, sp.BaseLID, sp.SMLID
					_, p.PhysState, _ = strings.Cut(sp.Phys, ": ")
				}
			}
		}
	}
	return cas, nil
}

// build writes the root and returns what it filled in.
func build(capDir, root string) ([]string, error) {
	cas, err := readCAs(capDir)
	if err != nil {
		return nil, err
	}
	t := &tree{files: map[string]string{}, links: map[string]string{}}
	var filled []string

	var funcs []pciFunc
	if s, ok, err := readOpt(capDir, "lspci.txt"); err != nil {
		return nil, err
	} else if ok {
		if funcs, err = parseLspci(s); err != nil {
			return nil, fmt.Errorf("%s/lspci.txt: %w", capDir, err)
		}
	}
	var devs []pciDev
	if s, ok, err := readOpt(capDir, "devices.txt"); err != nil {
		return nil, err
	} else if ok {
		if devs, err = parseDevices(s); err != nil {
			return nil, fmt.Errorf("%s/devices.txt: %w", capDir, err)
		}
	}
	byCA := map[string]pciDev{}
	for _, d := range devs {
		if d.CA != "" {
			byCA[d.CA] = d
		}
	}
	boards := map[string]string{}
	if s, ok, err := readOpt(capDir, "board_id.txt"); err != nil {
		return nil, err
	} else if ok {
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) == 2 {
				boards[f[0]] = f[1]
			}
		}
	}

	// CAs in name order (mlx5_0, mlx5_1, ..., mlx5_10): the driver names them in probe order,
	// which follows the PCI address, so the n-th CA of a device id takes the n-th function of it.
	sort.SliceStable(cas, func(i, j int) bool { return natLess(cas[i].Name, cas[j].Name) })
	used := map[string]bool{}
	for i, c := range cas {
		dev, err := deviceID(c.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		var pf *pciFunc
		bdf := fmt.Sprintf("0000:%02x:00.0", 0x10+i*0x10)
		if d, ok := byCA[c.Name]; ok {
			// The kernel log names the CA's function: lspci's block of it, if any, gives its link.
			if d.Device != dev {
				return nil, fmt.Errorf("%s: devices.txt gives device %04x, its CA type %s", c.Name, d.Device, c.Type)
			}
			bdf = d.BDF
			pf = lspciAt(funcs, bdf)
			used[bdf] = true
		} else {
			for k := range funcs {
				f := &funcs[k]
				if !used[f.BDF] && (f.Device == dev || (f.Device == 0 && f.Driver == "mlx5_core")) {
					pf = f
					used[f.BDF] = true
					break
				}
			}
			if pf != nil {
				bdf = pf.BDF
			} else {
				filled = append(filled, fmt.Sprintf("%s: PCI address %s (not in the capture)", c.Name, bdf))
			}
		}
		if err := writeCA(t, c, dev, bdf, pf, boards[c.Name], &filled); err != nil {
			return nil, err
		}
	}
	// Functions the log names without a CA the capture shows: the driver failed to bind them,
	// or their CA is not quoted. Either way the tree holds the function, not a guessed CA.
	for _, d := range devs {
		how := "CA " + d.CA
		switch {
		case d.Unbound:
			how = "probe failed, no driver bound"
		case d.CA == "":
			how = "CA not named"
		}
		filled = append(filled, fmt.Sprintf("%s: device 15b3:%04x, driver %s, %s: from devices.txt, read off the report's kernel log and text", d.BDF, d.Device, d.Driver, how))
		if d.CA != "" {
			if !hasCA(cas, d.CA) {
				return nil, fmt.Errorf("devices.txt names CA %s, which the capture does not show", d.CA)
			}
			continue
		}
		pf := lspciAt(funcs, d.BDF)
		cls := "0x020000\n"
		if pf != nil && pf.Class == "Infiniband controller" {
			cls = "0x020700\n"
		} else if pf == nil {
			filled = append(filled, fmt.Sprintf("%s: class 0x020000 (Ethernet controller; no lspci block gives it)", d.BDF))
		}
		writeFunc(t, d.BDF, d.Device, cls, d.Driver, !d.Unbound, pf)
		if !d.Unbound {
			filled = append(filled, fmt.Sprintf("%s: bound to %s with no CA (the capture names none on it)", d.BDF, d.Driver))
		}
	}

	for name, dst := range map[string]string{"dmesg.txt": "var/log/dmesg", "kern.log": "var/log/kern.log", "messages": "var/log/messages",
		"modules.txt": "proc/modules", "osrelease.txt": "proc/sys/kernel/osrelease", "uptime.txt": "proc/uptime"} {
		if s, ok, err := readOpt(capDir, name); err != nil {
			return nil, err
		} else if ok {
			t.file(dst, s)
		}
	}
	sort.Strings(filled)
	return filled, t.write(root)
}

// writeFunc writes a Mellanox PCI function; bound links it to its driver, which is loaded either
// way (a failed probe leaves the driver registered and the function without one).
func writeFunc(t *tree, bdf string, dev uint16, cls, drv string, bound bool, pf *pciFunc) string {
	// The capture names no upstream bridge: the function sits under its host bridge, and the
	// PCIe checks judge its own link attributes only.
	pci := "sys/devices/pci" + bdf[:4] + ":" + bdf[5:7] + "/" + bdf
	t.file(pci+"/vendor", "0x15b3\n")
	t.file(pci+"/device", fmt.Sprintf("0x%04x\n", dev))
	t.file(pci+"/class", cls)
	if bound {
		t.link(pci+"/driver", relTo(pci, "sys/bus/pci/drivers/"+drv))
	}
	t.file("sys/bus/pci/drivers/"+drv+"/.keep", "")
	t.link("sys/bus/pci/devices/"+bdf, relTo("sys/bus/pci/devices", pci))
	if pf != nil && pf.StaSpeed != "" {
		t.file(pci+"/current_link_speed", sysfsSpeed(pf.StaSpeed)+"\n")
		t.file(pci+"/current_link_width", pf.StaWid+"\n")
		t.file(pci+"/max_link_speed", sysfsSpeed(pf.CapSpeed)+"\n")
		t.file(pci+"/max_link_width", pf.CapWid+"\n")
	}
	return pci
}

func lspciAt(funcs []pciFunc, bdf string) *pciFunc {
	for k := range funcs {
		if funcs[k].BDF == bdf {
			return &funcs[k]
		}
	}
	return nil
}

func hasCA(cas []ca, name string) bool {
	for _, c := range cas {
		if c.Name == name {
			return true
		}
	}
	return false
}

func writeCA(t *tree, c ca, dev uint16, bdf string, pf *pciFunc, board string, filled *[]string) error {
	cls := "0x020700\n" // InfiniBand controller (PCI Code and ID Assignment Specification)
	if len(c.Ports) > 0 && c.Ports[0].LinkLayer == "Ethernet" {
		cls = "0x020000\n"
	}
	// mlx4_ib names its devices mlx4_<n> (drivers/infiniband/hw/mlx4/main.c mlx4_ib_add), on
	// functions mlx4_core drives; every other CA of the captures is mlx5's.
	drv := "mlx5_core"
	if strings.HasPrefix(c.Name, "mlx4_") {
		drv = "mlx4_core"
	}
	pci := writeFunc(t, bdf, dev, cls, drv, true, pf)

	ib := pci + "/infiniband/" + c.Name
	t.link("sys/class/infiniband/"+c.Name, relTo("sys/class/infiniband", ib))
	t.link(ib+"/device", "../../../"+bdf)
	t.file(ib+"/node_type", "1: CA\n")
	t.file(ib+"/fw_ver", c.FW+"\n")
	t.file(ib+"/hca_type", c.Type+"\n")
	if c.HWVersion != "" {
		t.file(ib+"/hw_rev", c.HWVersion+"\n")
	}
	for _, g := range []struct{ file, v string }{{"node_guid", c.NodeGUID}, {"sys_image_guid", c.SysGUID}} {
		if g.v == "" {
			continue
		}
		s, err := sysGUID(g.v)
		if err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
		t.file(ib+"/"+g.file, s+"\n")
	}
	if board == "" {
		board = c.BoardID
	}
	if board != "" {
		t.file(ib+"/board_id", board+"\n")
	}
	for _, p := range c.Ports {
		pd := fmt.Sprintf("%s/ports/%d", ib, p.Num)
		st, err := portState(p.State)
		if err != nil {
			return fmt.Errorf("%s/%d: %w", c.Name, p.Num, err)
		}
		if p.PhysState == "" && p.State == "Active" {
			// A port leaves Down only once its physical link is up (IBA vol. 1 7.2 link
			// states; the kernel reports the same for RoCE), so ACTIVE implies LinkUp.
			p.PhysState = "LinkUp"
			*filled = append(*filled, fmt.Sprintf("%s/%d: phys_state \"5: LinkUp\": ibv_devinfo without -v prints none; an ACTIVE port is LinkUp", c.Name, p.Num))
		}
		ph, err := physState(p.PhysState)
		if err != nil {
			return fmt.Errorf("%s/%d: %w", c.Name, p.Num, err)
		}
		rate, note, err := portRate(p)
		if err != nil {
			return fmt.Errorf("%s/%d: %w", c.Name, p.Num, err)
		}
		if note != "" {
			*filled = append(*filled, fmt.Sprintf("%s/%d: %s", c.Name, p.Num, note))
		}
		t.file(pd+"/state", st+"\n")
		t.file(pd+"/phys_state", ph+"\n")
		if rate != "" {
			t.file(pd+"/rate", rate+"\n")
		}
		t.file(pd+"/link_layer", p.LinkLayer+"\n")
		if p.CapMask != "" {
			t.file(pd+"/cap_mask", p.CapMask+"\n")
		}
		for _, l := range []struct{ file, v string }{{"lid", p.BaseLID}, {"sm_lid", p.SMLID}} {
			var n uint64
			if _, err := fmt.Sscan(l.v, &n); err != nil {
				return fmt.Errorf("%s/%d: %s %q", c.Name, p.Num, l.file, l.v)
			}
			t.file(pd+"/"+l.file, fmt.Sprintf("0x%x\n", n))
		}
	}
	return nil
}

// portRate is the port's rate file as the capture gives it, and what was assumed for it: ibstat
// prints the Gb/s without the width, ibv_devinfo -v the width and the lane speed, ibstatus the
// file itself, and ibv_devinfo without -v nothing (then no rate file is written).
func portRate(p caPort) (string, string, error) {
	switch {
	case p.RateSys != "":
		return p.RateSys, "", nil
	case p.Width != "" && p.LaneGbps != "":
		r, err := widthRate(p.Width, p.LaneGbps)
		return r, "", err
	case p.Rate != "":
		r, err := rateFile(p.Rate)
		return r, fmt.Sprintf("rate %q: ibstat prints no width, 4X assumed", r), err
	}
	return "", "rate: not in the capture (ibv_devinfo without -v prints none), no rate file written", nil
}

// relTo is the relative symlink target from directory dir's entry to target (both root-relative).
func relTo(dir, target string) string {
	r, err := filepath.Rel(filepath.Dir(dir+"/x"), target)
	if err != nil {
		panic(err)
	}
	return r
}

// natLess orders mlx5_2 before mlx5_10.
func natLess(a, b string) bool {
	ta, na := splitNum(a)
	tb, nb := splitNum(b)
	if ta != tb {
		return ta < tb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n := 0
	fmt.Sscan(s[i:], &n)
	return s[:i], n
}

func (t *tree) write(root string) error {
	if _, err := os.Stat(root); err == nil {
		return fmt.Errorf("%s exists", root)
	}
	for p, c := range t.files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			return err
		}
	}
	for p, target := range t.links {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.Symlink(target, full); err != nil {
			return err
		}
	}
	return nil
}
