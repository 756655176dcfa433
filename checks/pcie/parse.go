package pcie

import (
	"fmt"
	"strconv"
	"strings"
)

// Speed is a PCIe link speed in GT/s; 0 means the kernel said it does not know.
type Speed float64

// Gen returns the PCIe generation of a speed (1 for 2.5 GT/s ... 6 for 64 GT/s), 0 when unknown.
func (s Speed) Gen() int {
	switch s {
	case 2.5:
		return 1
	case 5:
		return 2
	case 8:
		return 3
	case 16:
		return 4
	case 32:
		return 5
	case 64:
		return 6
	}
	return 0
}

func (s Speed) String() string {
	if s == 0 {
		return "unknown speed"
	}
	return strconv.FormatFloat(float64(s), 'f', -1, 64) + " GT/s"
}

// LaneGbps is the usable bandwidth of one lane after line encoding, in Gb/s, as the kernel
// computes it (drivers/pci/pci.h PCIE_SPEED2MBS_ENC): 8b/10b for Gen1/2, 128b/130b for Gen3-5,
// and 1b/1b for Gen6 (FLIT mode; the kernel ignores FLIT overhead). TLP/DLLP protocol overhead is
// not subtracted, so real throughput is lower still: memory writes carry payload/(payload+20 bytes
// of TLP overhead), 92% at a 256-byte maximum payload before any DLLP (Intel AN 456, "PCI Express
// High Performance Reference Design", 1.1.2 "Throughput for Posted Writes").
func (s Speed) LaneGbps() float64 {
	switch s.Gen() {
	case 1:
		return 2.0
	case 2:
		return 4.0
	case 3:
		return 8.0 * 128 / 130
	case 4:
		return 16.0 * 128 / 130
	case 5:
		return 32.0 * 128 / 130
	case 6:
		return 64.0
	}
	return 0
}

// Encoding names the line encoding of a speed, for evidence.
func (s Speed) Encoding() string {
	switch s.Gen() {
	case 1, 2:
		return "8b/10b"
	case 3, 4, 5:
		return "128b/130b"
	case 6:
		return "PAM4 FLIT (counted 1b/1b, as the kernel does)"
	}
	return "unknown"
}

// ParseSpeed reads current_link_speed / max_link_speed. Current kernels print pci_speed_string()
// (drivers/pci/probe.c: "8.0 GT/s PCIe", "Unknown"); kernels up to about 5.6 printed "8 GT/s",
// "5 GT/s" and "Unknown speed" from current_link_speed_show() in drivers/pci/pci-sysfs.c, until
// commit 31483a35dbed "PCI: Use pci_speed_string() for all PCI/PCI-X/PCIe strings". Unknown
// returns 0 and no error.
func ParseSpeed(s string) (Speed, error) {
	t := strings.TrimSpace(s)
	if t == "Unknown" || t == "Unknown speed" || t == "" {
		return 0, nil
	}
	t = strings.TrimSuffix(t, " PCIe")
	num, ok := strings.CutSuffix(t, " GT/s")
	if !ok {
		return 0, fmt.Errorf("link speed %q: want \"<n> GT/s[ PCIe]\" or \"Unknown\"", s)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || Speed(v).Gen() == 0 {
		return 0, fmt.Errorf("link speed %q: not a PCIe rate (2.5, 5, 8, 16, 32, 64 GT/s)", s)
	}
	return Speed(v), nil
}

// ParseWidth reads current_link_width / max_link_width ("%u"). The kernel prints 0 for a
// function without a link and 255 (PCIE_LNK_WIDTH_UNKNOWN) when LnkCap holds no width, as the
// QEMU root port of the lab does; both return 0 (unknown) without error.
func ParseWidth(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < 0 {
		return 0, fmt.Errorf("link width %q: want a lane count", s)
	}
	switch {
	case v == 0 || v == 255:
		return 0, nil
	case v > 32:
		return 0, fmt.Errorf("link width %q: PCIe links have at most 32 lanes", s)
	}
	return v, nil
}

// ParseCount reads a single "%llu" counter (aer_rootport_total_err_*, netdev statistics).
func ParseCount(s string) (uint64, error) {
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("counter %q: not an unsigned number", s)
	}
	return v, nil
}
