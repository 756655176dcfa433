package sigscan

import (
	"regexp"
	"strings"
)

// SourceDriver is a driver as its sources are laid out: the table's driver name, the module its
// files build (KBUILD_MODNAME), the directories that hold them, and how its lines start for each
// kind of print (what the table's prefixes see).
type SourceDriver struct {
	Name   string
	Module string
	// Dirs are path prefixes of the tree; Files, when set, narrows a directory to the files
	// whose base name matches (mlx4_en's en_*.c beside mlx4_core in mlx4/).
	Dirs  []string
	Files *regexp.Regexp
	// Lead is how a line starts, by Print.Kind: dev_printk names the driver and the device,
	// netdev_printk the driver, bus id and netdev, ibdev_printk "infiniband <ibdev>: ".
	Lead map[string]string
}

const (
	pciLead = "0000:3b:00.0: "
	netLead = "0000:3b:00.0 ens1f0np0: "
)

// SourceDrivers are the drivers the scanner reads, in the order their paths are tried (a
// narrower one first).
var SourceDrivers = []*SourceDriver{
	{Name: "mlx5_core", Module: "mlx5_core", Dirs: []string{"drivers/net/ethernet/mellanox/mlx5/core/"},
		Lead: map[string]string{"dev": "mlx5_core " + pciLead, "net": "mlx5_core " + netLead, "ib": "infiniband mlx5_0: "}},
	{Name: "mlx5_ib", Module: "mlx5_ib", Dirs: []string{"drivers/infiniband/hw/mlx5/"},
		// mlx5_ib_err() prints on the ib_device: "infiniband mlx5_0: ".
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},
	{Name: "mlx4_en", Module: "mlx4_en", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"}, Files: regexp.MustCompile(`^(en_.*|mlx4_en\.h)$`),
		// en_print(): "mlx4_en: <netdev>: "; mlx4_err() in mlx4_en.h prints on the PCI function,
		// whose driver is mlx4_core.
		Lead: map[string]string{"en": "mlx4_en: eth2: ", "dev": "mlx4_core " + pciLead, "net": "mlx4_en " + netLead}},
	{Name: "mlx4_core", Module: "mlx4_core", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"},
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "net": "mlx4_core " + netLead}},
	{Name: "mlx4_ib", Module: "mlx4_ib", Dirs: []string{"drivers/infiniband/hw/mlx4/"},
		// mlx4_ib_warn() prints on the ib_device's parent, the PCI function.
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "ib": "infiniband mlx4_0: "}},
	{Name: "rdma_rxe", Module: "rdma_rxe", Dirs: []string{"drivers/infiniband/sw/rxe/"},
		Lead: map[string]string{"dev": "infiniband rxe0: ", "ib": "infiniband rxe0: "}},
	{Name: "ib_ipoib", Module: "ib_ipoib", Dirs: []string{"drivers/infiniband/ulp/ipoib/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "ib0: "}},
	// drivers/infiniband/core builds ib_core, ib_cm, iw_cm, rdma_cm, ib_umad and ib_uverbs; the
	// table keeps them under one driver.
	{Name: "ib_core", Module: "ib_core", Dirs: []string{"drivers/infiniband/core/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},
}

// DriverOf is the driver a file of the tree belongs to, nil for none.
func DriverOf(p string) *SourceDriver {
	base := p[strings.LastIndexByte(p, '/')+1:]
	for _, d := range SourceDrivers {
		for _, dir := range d.Dirs {
			if strings.HasPrefix(p, dir) && (d.Files == nil || d.Files.MatchString(base)) {
				return d
			}
		}
	}
	return nil
}
