package firmware

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/optfile"
)

// Version is an NVIDIA/Mellanox firmware version MAJOR.MINOR.SUBMINOR: mlx5's fw_ver is
// "%d.%d.%04d" of fw_rev_maj/min/sub (drivers/infiniband/hw/mlx5/main.c, get_dev_fw_str). MAJOR
// names the device family (NVIDIA MFT documentation, "Supported Adapter Cards Firmware Versions":
// 22.x for ConnectX-6 Dx, 28.x for ConnectX-7), MINOR the release train, SUBMINOR the build.
type Version struct{ Major, Minor, Sub int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%04d", v.Major, v.Minor, v.Sub) }

// Less orders versions of one family.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	return v.Sub < w.Sub
}

// ParseVersion reads a firmware version. Each field is a decimal number below 65536 (the
// firmware reports 16-bit fields); anything else is an error, never a guess. The syntax is
// optfile's, which option files (--policy, --matrix) share with fw_ver.
func ParseVersion(s string) (Version, error) {
	v, err := optfile.ParseFirmwareVersion(s)
	return Version(v), err
}

// Family is one NVIDIA device family, identified by its firmware major.
type Family struct {
	Major int
	Name  string
	// PFIDs are the PCI device ids of its physical functions (hca_type is "MT" + the decimal id).
	PFIDs []uint16
}

// families pairs each firmware major (NVIDIA MFT Documentation v4.35.0 and v4.23.0, "Supported
// Adapter Cards Firmware Versions"; mlxup v4.23.0 release notes for ConnectX-3 and Connect-IB)
// with the PF device ids of mlx5_core_pci_table (drivers/net/ethernet/mellanox/mlx5/core/main.c;
// ConnectX-3 from mlx4_pci_table in drivers/net/ethernet/mellanox/mlx4/main.c).
var families = []Family{
	{2, "ConnectX-3/ConnectX-3 Pro", []uint16{0x1003, 0x1007}},
	{10, "Connect-IB", []uint16{0x1011}},
	{12, "ConnectX-4", []uint16{0x1013}},
	{14, "ConnectX-4 Lx", []uint16{0x1015}},
	{16, "ConnectX-5", []uint16{0x1017, 0x1019}},
	{18, "BlueField", []uint16{0xa2d2}},
	{20, "ConnectX-6", []uint16{0x101b}},
	{22, "ConnectX-6 Dx", []uint16{0x101d}},
	{24, "BlueField-2", []uint16{0xa2d6}},
	{26, "ConnectX-6 Lx", []uint16{0x101f}},
	{28, "ConnectX-7", []uint16{0x1021}},
	{32, "BlueField-3", []uint16{0xa2dc}},
	{40, "ConnectX-8", []uint16{0x1023}},
	{82, "ConnectX-9", []uint16{0x1025}},
}

// FamilyOf returns the family of a firmware major.
func FamilyOf(major int) (Family, bool) {
	for _, f := range families {
		if f.Major == major {
			return f, true
		}
	}
	return Family{}, false
}

// familyOfPCI returns the family whose PF has this PCI device id.
func familyOfPCI(id uint16) (Family, bool) {
	for _, f := range families {
		for _, x := range f.PFIDs {
			if x == id {
				return f, true
			}
		}
	}
	return Family{}, false
}

// ParseHCAType reads mlx5's hca_type ("MT4119": "MT" and the decimal PCI device id).
func ParseHCAType(s string) (uint16, error) {
	num, ok := strings.CutPrefix(strings.TrimSpace(s), "MT")
	if !ok {
		return 0, fmt.Errorf("hca_type %q: want MT<decimal PCI device id>", s)
	}
	v, err := strconv.ParseUint(num, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("hca_type %q: want MT<decimal PCI device id>", s)
	}
	return uint16(v), nil
}
