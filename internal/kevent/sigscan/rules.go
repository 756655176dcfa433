package sigscan

import (
	"regexp"
	"strings"

	"github.com/rdmadiag/rdmadiag/internal/kevent"
)

// SourceDriver is a driver as its sources are laid out: the table's driver name, the module its
// files build (KBUILD_MODNAME), the directories that hold them, and how its lines start for each
// kind of print (what the table's prefixes see).
type SourceDriver struct {
	Name   string
	Module string
	// Family is the generated signature file the driver's entries go to ("mlx": mlx-scan.json,
	// "vendors", "consumers", "pcie"); ID the prefix of their ids.
	Family, ID string
	// Dirs are path prefixes of the tree; Files, when set, narrows a directory to the files
	// whose base name matches (mlx4_en's en_*.c beside mlx4_core in mlx4/).
	Dirs  []string
	Files *regexp.Regexp
	// Scope, when set, is what a message (its function, a space, its format) must match to be
	// counted: an Ethernet driver's messages about its RDMA function and the device's health,
	// not its own configuration.
	Scope *regexp.Regexp
	// Lead is how a line starts, by Print.Kind: dev_printk names the driver and the device,
	// netdev_printk the driver, bus id and netdev, ibdev_printk "infiniband <ibdev>: ".
	Lead map[string]string
	// Define is the table's driver when no hand-written signature file defines it; the
	// generated file carries it.
	Define *kevent.Driver
}

const (
	pciLead = "0000:3b:00.0: "
	netLead = "0000:3b:00.0 ens1f0np0: "
)

// ethScope is what an RDMA host's operator needs of an RDMA NIC's Ethernet (PF) driver: the
// firmware and its health, resets and error recovery, the PCIe function, the RDMA auxiliary
// device and its interface, the link; not the driver's configuration of its own netdev.
var ethScope = re(`(?i)firmware|\bfw\b|\bfw_|\bnvm\b|reset|health|recover|fatal|crash|heartbeat|hwrm|\bmcp\b|\bcmdq?\b|command|mailbox|\bmbox|\bmbx|\bAQ\b|admin ?q|timeout|timed out|\bhung\b|\bhang|stuck|\bulp\b|rdma|roce|iwarp|\baux|\biidc|\bpeer\b|\bPCIe?\b|\bAER\b|\bEEH\b|\bDMA\b|\bIOMMU\b|\blink (is )?(down|up|fail)|\bPHY\b|\bmodule\b|transceiver|temperature|thermal|\bMSI-?X?\b|\berror (interrupt|irq|int\b)|\bRAS\b|\bECC\b|parity|\bhw error|hardware error|\bdump\b|\bDDP\b|safe mode`)

// pciScope is pci.c's part of the PCIe path: the link, its bandwidth and retraining, resets,
// and a function that does not come back.
var pciScope = re(`(?i)\blink\b|bandwidth|retrain|\breset\b|\bFLR\b|ready|power state|\bD3|secondary bus|\bbus\b|timeout|timed out|inaccessible|\bACS\b|Gb/s|GT/s`)

func define(name, layer, device, example, source string, prefixes ...string) *kevent.Driver {
	return &kevent.Driver{Name: name, Layer: layer, Prefixes: prefixes, Device: device, Example: example, Source: source}
}

// SourceDrivers are the drivers the scanner reads, in the order their paths are tried (a
// narrower one first).
var SourceDrivers = []*SourceDriver{
	{Name: "mlx5_core", Module: "mlx5_core", Family: "mlx", ID: "mlx5", Dirs: []string{"drivers/net/ethernet/mellanox/mlx5/core/"},
		Lead: map[string]string{"dev": "mlx5_core " + pciLead, "net": "mlx5_core " + netLead, "ib": "infiniband mlx5_0: "}},
	{Name: "mlx5_ib", Module: "mlx5_ib", Family: "mlx", ID: "mlx5ib", Dirs: []string{"drivers/infiniband/hw/mlx5/"},
		// mlx5_ib_err() prints on the ib_device: "infiniband mlx5_0: ".
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},
	{Name: "mlx4_en", Module: "mlx4_en", Family: "mlx", ID: "mlx4en", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"}, Files: regexp.MustCompile(`^(en_.*|mlx4_en\.h)$`),
		// en_print(): "mlx4_en: <netdev>: "; mlx4_err() in mlx4_en.h prints on the PCI function,
		// whose driver is mlx4_core.
		Lead: map[string]string{"en": "mlx4_en: eth2: ", "dev": "mlx4_core " + pciLead, "net": "mlx4_en " + netLead}},
	{Name: "mlx4_core", Module: "mlx4_core", Family: "mlx", ID: "mlx4", Dirs: []string{"drivers/net/ethernet/mellanox/mlx4/"},
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "net": "mlx4_core " + netLead}},
	{Name: "mlx4_ib", Module: "mlx4_ib", Family: "mlx", ID: "mlx4ib", Dirs: []string{"drivers/infiniband/hw/mlx4/"},
		// mlx4_ib_warn() prints on the ib_device's parent, the PCI function.
		Lead: map[string]string{"dev": "mlx4_core " + pciLead, "ib": "infiniband mlx4_0: "}},
	{Name: "rdma_rxe", Module: "rdma_rxe", Family: "mlx", ID: "rxe", Dirs: []string{"drivers/infiniband/sw/rxe/"},
		Lead: map[string]string{"dev": "infiniband rxe0: ", "ib": "infiniband rxe0: "}},
	{Name: "ib_ipoib", Module: "ib_ipoib", Family: "mlx", ID: "ipoib", Dirs: []string{"drivers/infiniband/ulp/ipoib/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "ib0: "}},
	// drivers/infiniband/core builds ib_core, ib_cm, iw_cm, rdma_cm, ib_umad and ib_uverbs; the
	// table keeps them under one driver.
	{Name: "ib_core", Module: "ib_core", Family: "mlx", ID: "ibcore", Dirs: []string{"drivers/infiniband/core/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "net": "mlx5_core " + netLead}},

	// The other vendors' RDMA drivers (signatures/vendors.json) and the Ethernet (PF) drivers
	// under them, the latter scoped to the RDMA function and the device's health. Leads as the
	// drivers print: dev_err() on the PCI function (bnxt_re's on the bnxt_en function,
	// hns_roce's on hns3's, irdma's on ice's), ibdev_err() on the RDMA device.
	{Name: "bnxt_re", Module: "bnxt_re", Family: "vendors", ID: "bnxtre", Dirs: []string{"drivers/infiniband/hw/bnxt_re/"},
		Lead: map[string]string{"dev": "bnxt_en " + pciLead, "ib": "infiniband bnxt_re0: ", "net": "bnxt_en " + netLead}},
	{Name: "bnxt_en", Module: "bnxt_en", Family: "vendors", ID: "bnxten", Dirs: []string{"drivers/net/ethernet/broadcom/bnxt/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "bnxt_en " + pciLead, "net": "bnxt_en " + netLead}},
	{Name: "irdma", Module: "irdma", Family: "vendors", ID: "irdma", Dirs: []string{"drivers/infiniband/hw/irdma/"},
		Lead: map[string]string{"dev": "ice " + pciLead, "ib": "infiniband irdma0: ", "net": "ice " + netLead}},
	{Name: "i40iw", Module: "i40iw", Family: "vendors", ID: "i40iw", Dirs: []string{"drivers/infiniband/hw/i40iw/"},
		Lead: map[string]string{"dev": "i40e " + pciLead, "ib": "infiniband i40iw0: ", "net": "i40e " + netLead}},
	{Name: "ice", Module: "ice", Family: "vendors", ID: "ice", Dirs: []string{"drivers/net/ethernet/intel/ice/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "ice " + pciLead, "net": "ice " + netLead}},
	{Name: "i40e", Module: "i40e", Family: "vendors", ID: "i40e", Dirs: []string{"drivers/net/ethernet/intel/i40e/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "i40e " + pciLead, "net": "i40e " + netLead}},
	// The MANA Ethernet driver's management layer under mana_ib: GDMA (queues, interrupts, DMA
	// regions) and the hardware channel to the device's firmware carry the RDMA device's
	// requests too, so they are taken whole; its netdev (mana_en.c) is not read.
	// Of mana_en.c, the requests to the management channel that mana_ib makes through it (its
	// EXPORT_SYMBOL_NS(..., NET_MANA) functions) and the request path they share.
	{Name: "mana", Module: "mana", Family: "vendors", ID: "manaen", Dirs: []string{"drivers/net/ethernet/microsoft/mana/"}, Files: re(`^mana_en\.c$`),
		Scope: re(`^(mana_send_request|mana_verify_resp_hdr|mana_cfg_vport|mana_uncfg_vport|mana_create_wq_obj|mana_destroy_wq_obj|mana_query_device_cfg|mana_query_vport_cfg) `),
		Lead:  map[string]string{"dev": "mana 7870:00:00.0: ", "net": "mana 7870:00:00.0 eth1: "}},
	{Name: "mana", Module: "mana", Family: "vendors", ID: "mana", Dirs: []string{"drivers/net/ethernet/microsoft/mana/"}, Files: re(`^(gdma_main|hw_channel|shm_channel)\.c$`),
		Lead:   map[string]string{"dev": "mana 7870:00:00.0: ", "net": "mana 7870:00:00.0 eth1: "},
		Define: &kevent.Driver{Name: "mana", Layer: "driver", Prefixes: []string{"mana "}, Device: "pci", Source: "drivers/net/ethernet/microsoft/mana (gdma_main.c, hw_channel.c, mana_en.c): dev_err() on the MANA PCI function (\"mana 7870:00:00.0: \"), netdev_err() on its netdev; mana_ib prints on the same function"}},
	{Name: "efa", Module: "efa", Family: "vendors", ID: "efa", Dirs: []string{"drivers/infiniband/hw/efa/"},
		Lead: map[string]string{"dev": "efa " + pciLead, "ib": "infiniband efa_0: "}},
	{Name: "hns_roce", Module: "hns_roce_hw_v2", Family: "vendors", ID: "hnsroce", Dirs: []string{"drivers/infiniband/hw/hns/"},
		Lead: map[string]string{"dev": "hns3 " + pciLead, "ib": "infiniband hns_0: ", "net": "hns3 " + netLead}},
	{Name: "hns3", Module: "hns3", Family: "vendors", ID: "hns3", Dirs: []string{"drivers/net/ethernet/hisilicon/hns3/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "hns3 " + pciLead, "net": "hns3 " + netLead}},
	{Name: "qedr", Module: "qedr", Family: "vendors", ID: "qedr", Dirs: []string{"drivers/infiniband/hw/qedr/"},
		Lead: map[string]string{"dev": "qede " + pciLead, "ib": "infiniband qedr0: ", "net": "qede " + netLead}},
	{Name: "qed", Module: "qed", Family: "vendors", ID: "qed", Dirs: []string{"drivers/net/ethernet/qlogic/qed/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "qede " + pciLead, "net": "qede " + netLead}},
	{Name: "qede", Module: "qede", Family: "vendors", ID: "qede", Dirs: []string{"drivers/net/ethernet/qlogic/qede/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "qede " + pciLead, "net": "qede " + netLead}},
	{Name: "iw_cxgb4", Module: "iw_cxgb4", Family: "vendors", ID: "iwcxgb4", Dirs: []string{"drivers/infiniband/hw/cxgb4/"},
		Lead: map[string]string{"dev": "cxgb4 0000:3b:00.4: ", "ib": "infiniband iwcxgb4_0: "}},
	{Name: "cxgb4", Module: "cxgb4", Family: "vendors", ID: "cxgb4", Dirs: []string{"drivers/net/ethernet/chelsio/cxgb4/"}, Scope: ethScope,
		Lead: map[string]string{"dev": "cxgb4 0000:3b:00.4: ", "net": "cxgb4 0000:3b:00.4 enp59s0f4: "}},
	{Name: "erdma", Module: "erdma", Family: "vendors", ID: "erdma", Dirs: []string{"drivers/infiniband/hw/erdma/"},
		Lead: map[string]string{"dev": "erdma " + pciLead, "ib": "infiniband erdma_0: "}},
	{Name: "mana_ib", Module: "mana_ib", Family: "vendors", ID: "manaib", Dirs: []string{"drivers/infiniband/hw/mana/"},
		Lead: map[string]string{"dev": "mana 7870:00:00.0: ", "ib": "infiniband mana_0: "}},
	{Name: "vmw_pvrdma", Module: "vmw_pvrdma", Family: "vendors", ID: "pvrdma", Dirs: []string{"drivers/infiniband/hw/vmw_pvrdma/"},
		Lead: map[string]string{"dev": "vmw_pvrdma " + pciLead, "ib": "infiniband vmw_pvrdma0: "}},
	{Name: "ocrdma", Module: "ocrdma", Family: "vendors", ID: "ocrdma", Dirs: []string{"drivers/infiniband/hw/ocrdma/"},
		Lead:   map[string]string{"dev": "be2net " + pciLead, "ib": "infiniband ocrdma0: "},
		Define: define("ocrdma", "driver", "", "be2net 0000:3b:00.0: ", "drivers/infiniband/hw/ocrdma (Emulex OneConnect RoCE): pr_err() without pr_fmt, dev_err() on the be2net PCI function, ibdev on the RDMA device")},
	{Name: "usnic_verbs", Module: "usnic_verbs", Family: "vendors", ID: "usnic", Dirs: []string{"drivers/infiniband/hw/usnic/"},
		Lead:   map[string]string{"dev": "enic " + pciLead, "ib": "infiniband usnic_0: "},
		Define: define("usnic_verbs", "driver", "", "", "drivers/infiniband/hw/usnic/usnic_log.h usnic_printk(): \"usnic_verbs:<function>:<line>: \" printed before the message, which follows in a printk of its own")},
	{Name: "siw", Module: "siw", Family: "vendors", ID: "siw", Dirs: []string{"drivers/infiniband/sw/siw/"},
		Lead: map[string]string{"dev": "infiniband siw0: ", "ib": "infiniband siw0: "}},
	{Name: "hfi1", Module: "hfi1", Family: "vendors", ID: "hfi1", Dirs: []string{"drivers/infiniband/hw/hfi1/"},
		// dd_dev_err() and its kind (hfi.h): dev_err() on the PCI function, the unit's name first.
		Lead:   map[string]string{"dev": "hfi1 " + pciLead, "ib": "infiniband hfi1_0: "},
		Define: define("hfi1", "driver", "pci", "hfi1 0000:05:00.0: hfi1_0: ", "drivers/infiniband/hw/hfi1 (Omni-Path HFI): dd_dev_err() and its kind in hfi.h print dev_err() on the PCI function with the unit's name first", "hfi1 ")},

	// The RDMA consumers (signatures/consumers.json): lines start with their pr_fmt, or the
	// SCSI host, NVMe controller or RDMA device they print on.
	{Name: "ib_iser", Module: "ib_iser", Family: "consumers", ID: "iser", Dirs: []string{"drivers/infiniband/ulp/iser/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "ib_isert", Module: "ib_isert", Family: "consumers", ID: "isert", Dirs: []string{"drivers/infiniband/ulp/isert/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "ib_srp", Module: "ib_srp", Family: "consumers", ID: "srp", Dirs: []string{"drivers/infiniband/ulp/srp/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: ", "shost": "scsi host5: "}},
	{Name: "ib_srpt", Module: "ib_srpt", Family: "consumers", ID: "srpt", Dirs: []string{"drivers/infiniband/ulp/srpt/"},
		Lead:   map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "},
		Define: define("ib_srpt", "qp", "", "", "drivers/infiniband/ulp/srpt/ib_srpt.c: #define pr_fmt(fmt) DRV_NAME \" \" fmt, DRV_NAME \"ib_srpt\"", "ib_srpt ")},
	{Name: "rtrs", Module: "rtrs_core", Family: "consumers", ID: "rtrs", Dirs: []string{"drivers/infiniband/ulp/rtrs/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "nvme_rdma", Module: "nvme_rdma", Family: "consumers", ID: "nvmerdma", Dirs: []string{"drivers/nvme/host/"}, Files: re(`^rdma\.c$`),
		Lead: map[string]string{"dev": "nvme nvme0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "nvmet_rdma", Module: "nvmet_rdma", Family: "consumers", ID: "nvmetrdma", Dirs: []string{"drivers/nvme/target/"}, Files: re(`^rdma\.c$`),
		Lead: map[string]string{"dev": "nvmet_rdma: ", "ib": "infiniband mlx5_0: "}},
	{Name: "rpcrdma", Module: "rpcrdma", Family: "consumers", ID: "rpcrdma", Dirs: []string{"net/sunrpc/xprtrdma/"},
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "rds_rdma", Module: "rds_rdma", Family: "consumers", ID: "rds", Dirs: []string{"net/rds/"}, Files: re(`^(ib.*|rdma_transport)\.[ch]$`),
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},
	{Name: "smc", Module: "smc", Family: "consumers", ID: "smc", Dirs: []string{"net/smc/"},
		Lead:   map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "},
		Define: define("smc", "qp", "", "", "net/smc/af_smc.c: #define pr_fmt(fmt) KMSG_COMPONENT \": \" fmt, KMSG_COMPONENT \"smc\"; the other files write \"smc: \" into their formats or print without it", "smc: ")},
	// The SMB client's RDMA transport (SMB Direct). No prefix: "CIFS: VFS: " is every SMB
	// client error, over TCP as well, so the entries match by their own text.
	{Name: "cifs_smbd", Module: "cifs", Family: "consumers", ID: "smbd", Dirs: []string{"fs/smb/client/", "fs/cifs/"}, Files: re(`^smbdirect\.c$`),
		Lead:   map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "},
		Define: &kevent.Driver{Name: "cifs_smbd", Layer: "qp", Example: "CIFS: VFS: ", Source: "fs/smb/client/smbdirect.c (before 6.3 fs/cifs/smbdirect.c): log_rdma() prints cifs_dbg(VFS, \"%s:%d \" fmt, __func__, __LINE__), pr_err() with cifs_debug.h's pr_fmt \"CIFS: \" and \"VFS: \" before the function and line"}},
	{Name: "ksmbd_rdma", Module: "ksmbd", Family: "consumers", ID: "ksmbd", Dirs: []string{"fs/smb/server/", "fs/ksmbd/"}, Files: re(`^transport_rdma\.c$`),
		Lead: map[string]string{"dev": "infiniband mlx5_0: ", "ib": "infiniband mlx5_0: "}},

	// The PCIe path and the IOMMUs (signatures/pcie.json).
	{Name: "aer", Module: "aer", Family: "pcie", ID: "aer", Dirs: []string{"drivers/pci/pcie/"}, Files: re(`^(aer|err)\.c$`),
		Lead: map[string]string{"dev": "pcieport 0000:00:1c.0: "}},
	{Name: "dpc", Module: "dpc", Family: "pcie", ID: "dpc", Dirs: []string{"drivers/pci/pcie/"}, Files: re(`^(dpc|edr)\.c$`),
		Lead: map[string]string{"dev": "pcieport 0000:00:1c.0: "}},
	{Name: "pcieport", Module: "pcieport", Family: "pcie", ID: "pcieport", Dirs: []string{"drivers/pci/pcie/"}, Files: re(`^(portdrv.*|bwctrl|bw_notification)\.c$`),
		Lead: map[string]string{"dev": "pcieport 0000:00:1c.0: "}},
	{Name: "pciehp", Module: "pciehp", Family: "pcie", ID: "pciehp", Dirs: []string{"drivers/pci/hotplug/"}, Files: re(`^pciehp`),
		Lead: map[string]string{"dev": "pcieport 0000:00:1c.0: "}},
	{Name: "pci", Module: "pci", Family: "pcie", ID: "pci", Dirs: []string{"drivers/pci/pci.c"}, Scope: pciScope,
		Lead: map[string]string{"dev": "pci " + pciLead}},
	{Name: "ghes", Module: "ghes", Family: "pcie", ID: "ghes", Dirs: []string{"drivers/acpi/apei/ghes.c"}, Scope: re(`^ghes_handle_aer|(?i)\bCPER\b|\bAER\b|\bPCIe?\b`),
		Define: define("ghes", "pcie", "", "", "drivers/acpi/apei/ghes.c: GHES_PFX \"GHES: \" written into the formats (after FW_WARN \"[Firmware Warn]: \" on some)", "GHES: ", "[Firmware Warn]: GHES: ")},
	{Name: "cper", Module: "cper", Family: "pcie", ID: "cper", Dirs: []string{"drivers/firmware/efi/cper.c"}, Scope: re(`^cper_print_pcie|(?i)\bPCIe\b|\baer_`)},
	{Name: "dmar-ir", Module: "dmar-ir", Family: "pcie", ID: "dmarir", Dirs: []string{"drivers/iommu/intel/irq_remapping.c", "drivers/iommu/intel_irq_remapping.c"},
		Lead:   map[string]string{"dev": "pci " + pciLead},
		Define: define("dmar-ir", "pcie", "", "", "drivers/iommu/intel/irq_remapping.c (5.4: drivers/iommu/intel_irq_remapping.c): #define pr_fmt(fmt) \"DMAR-IR: \" fmt", "DMAR-IR: ")},
	{Name: "dmar", Module: "dmar", Family: "pcie", ID: "dmar", Dirs: []string{"drivers/iommu/intel/", "drivers/iommu/dmar.c", "drivers/iommu/intel-", "drivers/iommu/intel_"},
		Lead: map[string]string{"dev": "pci " + pciLead}},
	{Name: "amd-vi", Module: "amd-vi", Family: "pcie", ID: "amdvi", Dirs: []string{"drivers/iommu/amd/", "drivers/iommu/amd_iommu"},
		Lead: map[string]string{"dev": "iommu ivhd0: "}},
	{Name: "arm-smmu-v3", Module: "arm-smmu-v3", Family: "pcie", ID: "smmuv3", Dirs: []string{"drivers/iommu/arm/arm-smmu-v3/", "drivers/iommu/arm-smmu-v3"},
		Lead: map[string]string{"dev": "arm-smmu-v3 arm-smmu-v3.0.auto: "}},
	{Name: "arm-smmu", Module: "arm-smmu", Family: "pcie", ID: "smmu", Dirs: []string{"drivers/iommu/arm/arm-smmu/", "drivers/iommu/arm-smmu"},
		Lead:   map[string]string{"dev": "arm-smmu arm-smmu.0.auto: "},
		Define: define("arm-smmu", "pcie", "", "", "drivers/iommu/arm/arm-smmu/arm-smmu.c (5.4: drivers/iommu/arm-smmu.c): #define pr_fmt(fmt) \"arm-smmu: \" fmt; dev_err() on the SMMU's platform device", "arm-smmu: ", "arm-smmu ")},
	{Name: "iommu-dma", Module: "iommu-dma", Family: "pcie", ID: "iommudma", Dirs: []string{"drivers/iommu/dma-iommu.c"},
		Lead:   map[string]string{"dev": "mlx5_core " + pciLead},
		Define: define("iommu-dma", "pcie", "", "", "drivers/iommu/dma-iommu.c: pr_warn() without pr_fmt, dev_err() on the device whose DMA it maps")},
	// CONFIG_DMA_API_DEBUG's checks of a driver's use of the DMA API: err_printk() is WARN()
	// with the driver and device first ("%s %s: "); 5.x and later put pr_fmt "DMA-API: " before
	// them, 4.19 writes it into each format after them.
	{Name: "dma-debug", Module: "dma-debug", Family: "pcie", ID: "dmadebug", Dirs: []string{"kernel/dma/debug.c"},
		Lead:   map[string]string{"dev": "mlx5_core " + pciLead},
		Define: define("dma-debug", "pcie", "", "DMA-API: mlx5_core 0000:3b:00.0: ", "kernel/dma/debug.c (CONFIG_DMA_API_DEBUG): #define pr_fmt(fmt) \"DMA-API: \" fmt (5.x and later); err_printk() is WARN(1, pr_fmt(\"%s %s: \") format) with the device's driver and name, 4.19 WARN(1, \"%s %s: \" format) with \"DMA-API: \" in each format; no prefix, since the driver and device come between \"DMA-API: \" and the words")},
	{Name: "swiotlb", Module: "swiotlb", Family: "pcie", ID: "swiotlb", Dirs: []string{"kernel/dma/swiotlb.c"},
		Lead: map[string]string{"dev": "mlx5_core " + pciLead}},
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

// A Rule gives a message the fault row it belongs to (the row fixes the layer). The first rule
// that matches wins; every field set must match: the driver, the file's path in the tree, the
// function, the format's text. Severity, when set, overrides the one the print's level gives.
type Rule struct {
	Why      string
	Drivers  []string
	Path     *regexp.Regexp
	Func     *regexp.Regexp
	Text     *regexp.Regexp
	Unless   *regexp.Regexp // the text must not match
	Also     *regexp.Regexp // the text must match this too
	Fault    string
	Severity string
	// What and Fix, when set, are the entry's texts instead of the fault row's.
	What, Fix string
}

func (r *Rule) matches(driver, file, fn, text string) bool {
	return (len(r.Drivers) == 0 || contains(r.Drivers, driver)) &&
		(r.Path == nil || r.Path.MatchString(file)) &&
		(r.Func == nil || r.Func.MatchString(fn)) &&
		(r.Text == nil || r.Text.MatchString(text)) &&
		(r.Unless == nil || !r.Unless.MatchString(text)) &&
		(r.Also == nil || r.Also.MatchString(text))
}

func contains(ss []string, s string) bool {
	for _, v := range ss {
		if v == s {
			return true
		}
	}
	return false
}

var re = regexp.MustCompile

// The drivers by what they are: the other vendors' RDMA drivers, their Ethernet (PF) drivers,
// the RDMA consumers, the PCIe path, the IOMMUs and the DMA mapping layer.
var (
	vendorRDMA = []string{"bnxt_re", "irdma", "i40iw", "efa", "hns_roce", "qedr", "iw_cxgb4", "erdma", "mana_ib", "vmw_pvrdma", "ocrdma", "usnic_verbs", "siw", "hfi1"}
	vendorEth  = []string{"bnxt_en", "ice", "i40e", "hns3", "qed", "qede", "cxgb4", "mana"}
	vendors    = append(append([]string{}, vendorRDMA...), vendorEth...)
	consumers  = []string{"ib_iser", "ib_isert", "ib_srp", "ib_srpt", "rtrs", "nvme_rdma", "nvmet_rdma", "rpcrdma", "rds_rdma", "smc", "ksmbd_rdma", "cifs_smbd"}
	pciePath   = []string{"aer", "dpc", "pcieport", "pciehp", "pci", "ghes", "cper"}
	iommus     = []string{"dmar-ir", "dmar", "amd-vi", "arm-smmu-v3", "arm-smmu", "iommu-dma", "swiotlb", "dma-debug"}
)

// verbsDrivers serve applications' verbs requests: what they refuse is the application's.
var verbsDrivers = append([]string{"mlx5_ib", "mlx4_ib", "rdma_rxe", "ib_core"}, vendorRDMA...)

// The vendors' words for the device's health, for their command interfaces (bnxt_re's RCFW and
// cmdq, hns3's and hns_roce's cmdq and mailbox, irdma's CQP, efa's admin queue, qed's MCP,
// mana's hardware channel), and for a wait that ran out.
var (
	healthWords  = re(`(?i)\bhealth|\bfatal|\bcrash|heartbeat|\bhung\b|\bhang\b|\bstuck\b|recover|\breset|\bFLR\b|\bAER\b|\bEEH\b|\bRAS\b|\bECC\b|hardware error|\bhw err|\bHW (err|error)|\bparity|\bdead\b|not responding`)
	queueWords   = re(`(?i)\b(QPs?|CQs?|SRQs?|WQs?|EQs?|qpn|cqn|queue pair|TX timeout|tx_timeout)\b`)
	commandWords = re(`(?i)\bcmdq|\bcmd\b|command|mailbox|\bmbox|\bmbx|\bhwrm|\brcfw|\bCQP\b|\bCCQ\b|admin ?q|\bAQ\b|\bmcp\b|\bopcode|\bHWC\b|hw channel|\bfw\b|firmware`)
	timeoutWords = re(`(?i)time ?out|timed ?out|no response|not respond|\bpoll(ing)? (fail|time)`)
	commandFiles = re(`/(qplib_rcfw|hclge_cmd|hclge_comm_cmd|hclgevf_cmd|hns_roce_cmd|efa_com|efa_com_cmd|erdma_cmdq|qed_mcp|qed_hw|hw_channel|ice_controlq|i40e_adminq|bnxt_hwrm|ctrl|i40iw_ctrl|t4_hw|pvrdma_cmd|ocrdma_hw)\.c$`)
	// A consumer's resources on the device: set-up, not its connection.
	setupWords = re(`(?i)alloc|\bcreate|regist(er|r)|kobject|device_add|_register|kstrdup|\bMAD\b|\bmap\b|\bmr\b|memory|\bpd\b|\bdevice\b|\binit|set ?up|\bmodule|workqueue|\bno mem|ENOMEM|\bsysfs|debugfs`)
	// The IOMMU tables the system firmware gives (DMAR, IVRS, IORT): a BIOS issue printed at
	// boot, not a fault of the adapter's DMA.
	firmwareBug = re(`(?i)\[Firmware (Bug|Warn|Info)\]|\bFW_(BUG|WARN|INFO)\b|your BIOS|\bBIOS\b|\bIVRS\b|\bACPI\b|\bDMAR table|\bRMRR\b|\bATSR\b|\bDRHD\b.*(base|address|firmware)`)
)

// refusal is a message that refuses a request or reports a setting the device or kernel does
// not support, without a failure of its own: configuration, reported as information.
var refusal = re(`(?i)\bnot supported\b|\bunsupported\b|isn't supported|is not allowed|not allowed|\binvalid\b|out of range|too (large|big|small|many|long)|\bexceeds?\b|\bmust be\b|\bonly\b.*\bsupported\b|doesn't support|does not support|not possible|not enabled|\bis disabled\b|\bnot permitted\b|\bcan't be\b|\bcannot be\b`)

// failure words keep a message a fault even when it also refuses something.
var failure = re(`(?i)fail|error|\berr\b|timeout|timed out|unable|couldn't|could not|can't (create|alloc|get|set|query|find|register)`)

// Rules, in the order they are tried. The mlx5 split follows the driver's layout
// (drivers/net/ethernet/mellanox/mlx5/core): health.c, fw_reset.c and the command interface are
// the firmware's health, en_*.c and en/ the Ethernet data path, steering, eswitch, tc, IPsec,
// MACsec, kTLS, FPGA and SF the driver's offload functions; pci_irq.c is the driver's use of
// interrupt vectors, pagealloc.c the pages the firmware asks for.
var Rules = []Rule{
	// The IOMMUs, dma-iommu and swiotlb: DMA faults, their translation tables and mapping, all
	// fault row dma-engine (pcie.dma judges them), the system firmware's tables information.
	{Why: "the system firmware's IOMMU tables", Drivers: iommus, Text: firmwareBug, Fault: "dma-engine", Severity: "info",
		What: "The system firmware's IOMMU tables (DMAR, IVRS, IORT) are wrong or incomplete, as the kernel reads them at boot: a BIOS issue, not a fault of the adapter", Fix: "Update the system firmware (BIOS); if DMA faults follow, check the IOMMU mode (iommu=pt for RDMA)."},
	{Why: "an IOMMU's notice of a mode or an option", Drivers: iommus, Text: re(`(?i)\bdeprecated\b|\bforcing\b.* to enabled|already enabled - trying to copy|ignoring identity map|overridden by FW|memory encryption is active|fallback to v1|falling back`), Unless: re(`(?i)\bfatal\b`), Fault: "dma-engine", Severity: "info",
		What: noticeWhat.What, Fix: ""},
	// The DMA API's debugging checks: its own set-up is information; what it catches is the
	// named driver misusing the DMA API, which can corrupt memory or the device's DMA.
	{Why: "the DMA API debugging facility's own set-up", Drivers: []string{"dma-debug"}, Text: re(`(?i)disabl|debugfs|out of memory|ENOMEM|preallocat|\bentries\b|driver filter`), Unless: re(`(?i)device driver|\bdriver (tries|frees|failed|maps|syncs)`), Fault: "dma-engine", Severity: "info",
		What: noticeWhat.What, Fix: ""},
	{Why: "a driver's misuse of the DMA API, caught by its debugging checks", Drivers: []string{"dma-debug"}, Fault: "dma-engine",
		What: "The kernel's DMA API debugging (CONFIG_DMA_API_DEBUG, kernel/dma/debug.c) caught the driver named in the line misusing the DMA API: a mapping freed twice or with the wrong size or direction, a mapping error not checked, or memory the device owns touched by the CPU. A driver defect that can corrupt memory or the device's DMA", Fix: "Report it to the driver's maintainers with the stack trace the WARNING prints after the line; production hosts should run a kernel without CONFIG_DMA_API_DEBUG, which also costs throughput."},
	{Why: "IOMMU faults, translation and DMA mapping", Drivers: iommus, Fault: "dma-engine"},
	// The PCIe path's own drivers: AER, DPC, hotplug, the port services, pci.c's link and
	// reset, GHES and CPER's PCIe errors (the family, for pcie.aer, is eventFamily's).
	{Why: "the PCIe path", Drivers: pciePath, Fault: "pcie-interface"},
	// The PCIe path: the function's config space and link, as mlx5's health poll and probe
	// read them (health.c "PCI reads still not working", "PCI slot is unavailable").
	{Why: "PCIe link, slot or config space", Text: re(`(?i)PCI reads still not working|PCI slot is unavailable|\bPCIe\b|PCI Express|pcie_|\bPCI (capabilit|power|error|channel|link|bus)|pci_(enable|request|set_master|save|restore|reset|iomap|find_capability)|\bBARs?\b|\bDMA mask\b|dma_set_mask|consistent DMA|No usable DMA|Missing DCS|\bAER\b|bus master|config space`), Fault: "pcie-interface"},
	{Why: "DMA mapping between the adapter and host memory", Text: re(`(?i)dma[_ ]?map|DMA mapping|dma_alloc|\bIOMMU\b|mapping error|map_sg`), Fault: "dma-engine"},
	// The driver's use of host resources: interrupt vectors. The pages the firmware asks for
	// (pagealloc.c) are the firmware's: a failed give or reclaim is a MANAGE_PAGES command that
	// failed or timed out ("give fail -110"), as the hand-written pagealloc entries have it.
	{Why: "mlx5 interrupt vectors", Drivers: []string{"mlx5_core"}, Path: re(`/(pci_irq|irq_affinity)\.c$`), Fault: "driver-module"},
	{Why: "mlx5 pages given to the firmware", Drivers: []string{"mlx5_core"}, Path: re(`/pagealloc\.c$`), Unless: re(`(?i)dma`), Fault: "firmware"},
	// The firmware's health: the health poll, firmware reset and crash dump, the command
	// interface's timeouts and the catastrophic error flow.
	{Why: "mlx5 health, firmware reset, crash dump", Drivers: []string{"mlx5_core"}, Path: re(`/(health|fw_reset|diag/crdump|lib/tout)\.c$`), Fault: "firmware-health"},
	{Why: "mlx4 catastrophic error, reset and crash dump", Drivers: []string{"mlx4_core"}, Path: re(`/(catas|reset|crdump)\.c$`), Fault: "firmware-health"},
	{Why: "command interface timeouts and recovery", Path: re(`/cmd\.c$`), Text: re(`(?i)time ?out|timed out|health|syndrome|recover|polling|fatal|internal error|stuck`), Fault: "firmware-health"},
	{Why: "firmware commands, queries and versions", Drivers: []string{"mlx5_core"}, Path: re(`/(cmd|fw|diag/fw_tracer|diag/rsc_dump|diag/reporter_vnic|lib/pci_vsc|uar)\.c$`), Fault: "firmware"},
	{Why: "firmware commands, queries and versions", Drivers: []string{"mlx4_core"}, Path: re(`/(cmd|fw|fw_qos|port)\.c$`), Fault: "firmware"},
	// The other vendors' drivers, as mlx5's layout has it: the device's health, resets and
	// error recovery, and the command interfaces' timeouts are the firmware's health; the
	// command interfaces otherwise the firmware; the Ethernet driver's RDMA auxiliary device
	// the RDMA device.
	{Why: "a vendor driver's notice of a state", Drivers: vendors, Text: re(`(?i)already (up[- ]to[- ]date|running|loaded|enabled)|\bLAG disabled\b`), Unless: re(`(?i)\bfatal\b`), Fault: "kernel-config", Severity: "info",
		What: noticeWhat.What, Fix: ""},
	{Why: "vendor device health, reset, recovery", Drivers: vendors, Text: healthWords, Unless: re(queueWords.String() + `|(?i)non-?fatal`), Fault: "firmware-health"},
	{Why: "vendor command interface timeouts", Drivers: vendors, Path: commandFiles, Text: timeoutWords, Fault: "firmware-health"},
	{Why: "vendor command interface timeouts", Drivers: vendors, Text: commandWords, Also: timeoutWords, Fault: "firmware-health"},
	{Why: "vendor firmware commands", Drivers: vendors, Path: commandFiles, Unless: queueWords, Fault: "firmware"},
	{Why: "vendor firmware commands", Drivers: vendors, Text: commandWords, Unless: queueWords, Fault: "firmware"},
	{Why: "the RDMA auxiliary device of an Ethernet driver", Drivers: vendorEth, Text: re(`(?i)rdma|roce|iwarp|\baux|\biidc|\bulp\b|\bpeer\b|\bRoCE`), Fault: "rdma-device"},
	// Intel's DDP package is the profile the E800 series' packet pipeline runs, loaded by the
	// driver at probe like firmware ("The DDP package file was not found or could not be
	// read. Entering Safe Mode": ice_main.c, Intel E810 DDP Technology Guide).
	{Why: "the firmware named by the message", Text: re(`(?i)\bfirmware\b|\bFW\b|\bDDP\b|\bfw[ _](ver|version|reset|tracer|dump|command)|\bISSI\b|\bINIT_HCA\b|\bQUERY_(FW|ADAPTER|HCA|DEV_CAP)\b|\bMAP_FA\b|\bRUN_FW\b|\bHCA cap`), Fault: "firmware"},
	// The port: cable and module, then the link.
	{Why: "cable or transceiver", Text: re(`(?i)\bcable\b|transceiver|EEPROM|\bSFP|\bQSFP|module (temperature|eeprom|info|type)|\b(un)?plugged\b|\bport module\b|\bmodule (inserted|removed)\b`), Fault: "port-module"},
	{Why: "link state, speed, FEC", Text: re(`(?i)\blink (is )?(up|down)\b|link state|\bcarrier\b|\bautoneg|link speed|link mode|\bFEC\b|\bPHY\b|port type`), Fault: "port-link"},
	{Why: "mlx4 port type sensing", Drivers: []string{"mlx4_core"}, Path: re(`/sense\.c$`), Fault: "port-link"},
	// The subnet's services: SA queries, multicast joins, path records, the SM.
	{Why: "subnet administration and multicast", Drivers: []string{"ib_core", "ib_ipoib", "mlx4_ib"}, Text: re(`(?i)\bSM\b|subnet manager|multicast|\bmcast|\bMCG\b|path record|\bpath rec|SA query|sa_query|\bLID\b|\bP_?Key\b|\bGUID\b`), Fault: "node-topology"},
	{Why: "subnet administration and multicast", Drivers: []string{"ib_core", "ib_ipoib"}, Path: re(`/(sa_query|multicast|ipoib_multicast)\.c$`), Fault: "node-topology"},
	// Transmit watchdog and stalled queues.
	{Why: "transmit timeout", Text: re(`(?i)TX timeout|tx_timeout|\btxq?\b.*(stuck|timeout|timed out)|watchdog|transmit queue`), Fault: "netdev-tx"},
	// Requests refused as unsupported or invalid: configuration, not a fault.
	{Why: "a verbs request refused", Drivers: verbsDrivers, Text: refusal, Fault: "user-verbs", Severity: "info"},
	{Why: "a setting refused", Text: refusal, Fault: "kernel-config", Severity: "info"},
	// The paths that apply what a user asks through ethtool, DCB netlink and tc: what they
	// print without a failure of their own refuses the request ("Can't set CQE compression
	// with HW-GRO, disable it first").
	{Why: "an ethtool, DCB or tc request refused", Drivers: []string{"mlx5_core", "mlx4_en"}, Path: re(`/(en_ethtool|en_dcbnl|en_dcb_nl|en_fs_ethtool|en_tc|en/tc_.*|en/tc/.*|en/port_buffer|en/qos|en/htb|esw/qos)\.c$`), Unless: re(`(?i)fail|error|\berr\b|timeout|timed out|unable|couldn't|could not`), Fault: "kernel-config", Severity: "info"},
	// The RDMA consumers: the address and route to the peer are the port's, path records and
	// multicast the subnet's, the connection and its work requests the queue pair's, the
	// resources they set up on the device the driver's.
	// A consumer's notices at warning level of a state or an expected refusal: a device or an
	// SMC-R link added or removed, the peer's disconnect or logout, a deprecated parameter,
	// device management refused on an SR-IOV function ("this is expected if SR-IOV is enabled").
	{Why: "a consumer's notice of a state", Drivers: consumers, Text: re(`(?i)\bexpected if\b|is deprecated|\bbumping\b|\b(adding|removing) (ib |smcd |smcr |net )?device|link (added|removed)|state changed|received DREQ|logout request|may cause .* to fail`), Unless: re(`(?i)\bfatal\b`), Fault: "qp-context", Severity: "info",
		What: "A notice the consumer prints at warning level of a state it reports (a device or an SMC-R link added or removed, the peer's disconnect or logout, a deprecated parameter, device management refused on an SR-IOV function, as the message says is expected): not a fault", Fix: ""},
	// What an administrator asks of a consumer (srp's add_target options, module parameters,
	// configfs attributes) and the sizes it settles on: configuration.
	{Why: "a consumer's parameters and the sizes it settles on", Drivers: consumers, Text: re(`(?i)parameter|\bparam\b|\boption|kstrto|match_(int|u64|hex|strdup)|\bclamp|\breduc|\bextract\b|\bstore_|\bconfigfs|(adding|removing) (smcd |smcr |net )?device|\bpnetid\b`), Unless: re(`(?i)time ?out|timed out`), Fault: "kernel-config", Severity: "info"},
	{Why: "a consumer's address or route to the peer", Drivers: consumers, Text: re(`(?i)addr(ess)? (resolution|resolve)|resolve_addr|resolve_route|route (resolution|error|resolve)|ADDR_ERROR|ROUTE_ERROR|unreachable|\bno route`), Fault: "port-link"},
	{Why: "a consumer's path record or multicast join", Drivers: consumers, Text: re(`(?i)path record|path query|path rec|SA query|\bSM\b|subnet manager|multicast`), Fault: "node-topology"},
	{Why: "a consumer's completion queues", Drivers: consumers, Text: re(`(?i)\bCQs?\b|completion queue|ib_alloc_cq|\bcq\b`), Unless: re(`(?i)\bCQE`), Fault: "cq-eq"},
	{Why: "a consumer's set-up on an RDMA device as it appears (its ib_client add callback: srpt_add_one, rds_ib_add_one)", Drivers: consumers, Func: re(`_add_one$`), Fault: "driver-module"},
	{Why: "a consumer's connection and work requests", Drivers: consumers, Text: re(`(?i)connect|reject|\bREJ\b|\bCM\b|cm_id|cm event|rdma_cm|\bwork completion|\bWC\b|\bWR\b|post_(send|recv)|\bsend\b|\brecv|receive|keep.?alive|heartbeat|time ?out|timed out|\bQPs?\b|\bqp\b|flush|\bCQE|completion|\berror recovery|\bsession|\bconn\b|\bRDMA (READ|WRITE)|\bread\b|\bwrite\b`), Fault: "qp-context"},
	{Why: "a consumer's resources on the device", Drivers: consumers, Text: setupWords, Fault: "driver-module"},
	{Why: "a consumer's RDMA connection", Drivers: consumers, Fault: "qp-context"},
	// MANA's requests to its management channel (mana_en.c mana_send_request(): over the HWC to
	// the host's agent, as the firmware commands of other NICs).
	{Why: "MANA's management requests", Drivers: []string{"mana"}, Func: re(`^(mana_send_request|mana_verify_resp_hdr)$`), Fault: "firmware"},
	// hfi1 (drivers/infiniband/hw/hfi1): its files name the part of the HFI they drive.
	{Why: "hfi1's firmware loading and its 8051 microcontroller's firmware", Drivers: []string{"hfi1"}, Path: re(`/firmware\.c$`), Fault: "firmware"},
	{Why: "hfi1's PCIe set-up, link speed and width", Drivers: []string{"hfi1"}, Path: re(`/pcie\.c$`), Fault: "pcie-interface"},
	{Why: "hfi1's cable and QSFP module", Drivers: []string{"hfi1"}, Path: re(`/(qsfp|platform)\.c$`), Fault: "port-module"},
	{Why: "hfi1's link bring-up (the 8051's link state machine, LNI, the SerDes lanes)", Drivers: []string{"hfi1"}, Text: re(`(?i)\blink\b|\bLNI\b|\b8051\b|\bSerDes\b|\blanes?\b|\bLCB\b|\bpolling\b|\boffline\b|physical state|\bphys state|\blid\b`), Fault: "port-link"},
	// Completion and event queues.
	{Why: "completion and event queues", Text: re(`(?i)\bEQs?\b|\bCQs?\b|\bCQN\b|completion queue|event queue|\bEQE|cq overrun|overrun`), Fault: "cq-eq"},
	{Why: "completion and event queues", Path: re(`/(eq|cq|rxe_cq)\.c$`), Fault: "cq-eq"},
	{Why: "completion and event queues", Drivers: vendorRDMA, Path: re(`[/_](eq|cq|cq_ev|hns_roce_eq|pvrdma_cq)\.c$`), Fault: "cq-eq"},
	// Queue pairs, their send and receive queues and error completions (mlx5e's error CQE
	// reporter: en/reporter_tx.c, en/reporter_rx.c).
	{Why: "queues and error completions", Text: re(`(?i)\bCQEs?\b|err_cqe|error cqe|\bSQs?\b|\bRQs?\b|ICOSQ|XDPSQ|\bWQEs?\b|\bQPN?s?\b|\bqpn\b|queue pair|\bSRQs?\b|\bWQs?\b|\bqp#`), Fault: "qp-context"},
	{Why: "queues and error completions", Path: re(`/(qp|srq|wq|transobj|en_rx|en_tx|en_txrx|en/reporter_(tx|rx)|en/xsk/.*|rxe_(qp|req|resp|comp|srq|recv|icrc)|cm|iwcm|rw|ipoib_cm|ipoib_ib)\.c$`), Fault: "qp-context"},
	{Why: "queues and error completions", Drivers: vendorRDMA, Path: re(`[/_](qp|srq|qplib_fp|uk|puda|hns_roce_qp|hns_roce_srq|qp_tx|qp_rx|erdma_qp)\.c$`), Fault: "qp-context"},
	// The RDMA device and the verbs applications use.
	{Why: "verbs requests of applications", Drivers: []string{"ib_core"}, Path: re(`/(uverbs.*|umem.*|rdma_core|ucma|user_mad|ib_core_uverbs)\.c$`), Fault: "user-verbs"},
	{Why: "verbs requests of applications", Drivers: []string{"mlx5_ib", "mlx4_ib"}, Path: re(`/(mr|odp|umr|devx|wr|mem|dm|mw|doorbell|fs|qos|std_types|restrack)\.c$`), Fault: "user-verbs"},
	{Why: "verbs requests of applications", Drivers: []string{"rdma_rxe"}, Path: re(`/rxe_(verbs|mr|mw|mmap|pool|queue)\.[ch]$`), Fault: "user-verbs"},
	{Why: "the RDMA device's registration and core services", Drivers: []string{"ib_core", "mlx5_ib", "mlx4_ib"}, Fault: "rdma-device"},
	{Why: "verbs requests of applications", Drivers: vendorRDMA, Path: re(`(?i)(verbs|_mr|_mw|mem|umem|_mmap|_user|_uverbs|pvrdma_misc)\.c$`), Fault: "user-verbs"},
	{Why: "the RDMA device's registration and core services", Drivers: vendorRDMA, Text: re(`(?i)register|ib_alloc_device|ib device|\bibdev\b|\bGIDs?\b|\bsgid|\bP_?Key|\bMAD\b|port attr|query_port|query_device|netdev notifier|notifier`), Fault: "rdma-device"},
	{Why: "the Ethernet data path", Drivers: []string{"mlx5_core"}, Path: re(`/(en_(main|tx|rx|txrx)|en/(health|txrx|ptp|params))\.[ch]$`), Fault: "netdev-tx"},
	{Why: "the Ethernet data path", Drivers: []string{"mlx4_en"}, Path: re(`/en_(tx|rx|netdev|cq|port)\.c$`), Fault: "netdev-tx"},
	{Why: "the rest of the driver", Fault: "driver-module"},
}

// Texts are what an entry says, once per fault row, and, for a refusal, once per row it can
// take (stated here, not per line: the line itself is quoted with the finding).
var Texts = map[string]struct{ What, Fix string }{
	"pcie-interface":  {"The PCIe link, slot or configuration space of the adapter's function failed, as the driver reports it", "Check the function's link and errors (`lspci -vvv -s <BDF>`: LnkSta against LnkCap, the AER status), reseat the card or move it to another slot, and update the system firmware if it repeats."},
	"dma-engine":      {"A DMA mapping or transfer between the adapter and host memory failed", "Check the IOMMU mode (passthrough for RDMA), IOMMU faults at the same time in the kernel log, and memory pressure; update driver and firmware if it repeats."},
	"firmware":        {"A firmware command or query failed, or the firmware reported something the driver cannot use", "Compare the firmware with the driver's supported versions (`devlink dev info`, `ethtool -i`) and update it; if it persists after a reset, collect `devlink health` dumps for the vendor."},
	"firmware-health": {"The adapter's firmware health, command interface or recovery flow reported a fault", "Read the health lines around it and `devlink health show`; if the device did not recover, reset it (devlink reload or a reboot) and update the firmware."},
	"driver-module":   {"Part of the driver failed to initialise or to apply a setting, and the device runs without that function", "Read the lines around it for the step that failed; check that driver and firmware versions match and update them together if it repeats."},
	"rdma-device":     {"The RDMA device's registration or one of its core services (GID table, MAD agents, port attributes) failed", "Check `rdma dev` and `ibv_devinfo`; reload the RDMA driver and update driver and firmware if the device stays missing or degraded."},
	"user-verbs":      {"A verbs request of an application (memory registration, object creation, a user mapping) failed in the kernel", "Check the application's resource use and its locked-memory limit (`ulimit -l`); the request that failed is in the line."},
	"netdev-tx":       {"The adapter's Ethernet send or receive path reported an error on one of its queues", "Check `ethtool -S <netdev>` for queue errors and `devlink health show` for the tx and rx reporters; update driver and firmware if it repeats."},
	"port-link":       {"The port's link reported a problem", "Check the link (`ethtool <netdev>`, `ibstat`), the cable and the switch port."},
	"port-module":     {"The cable or transceiver in the port reported a problem", "Read the module (`ethtool -m <netdev>`); reseat or replace the cable or transceiver."},
	"node-topology":   {"A subnet service (SA query, multicast join, path record, the subnet manager) failed", "Check that the subnet manager runs and is reachable (`sminfo`, the SM lid in `ibstat`), the port's P_Key membership and the fabric's multicast groups."},
	"qp-context":      {"A queue pair, one of its send or receive queues, or their completions reported an error", "The line names the queue; an application's error completion usually comes with it: check the peer and the application, and the device's health if the queues of every application fail."},
	"cq-eq":           {"A completion queue, an event queue or its interrupt reported an error", "Check for a CQ overrun in the application, the interrupt vectors (`/proc/interrupts`) and the device's health lines around it."},
	"kernel-config":   {"The driver refused a setting or a feature the device or kernel does not support (configuration, not a fault)", "Check the requested configuration against what the device, its firmware and the kernel support."},
}

// The texts of the two kinds of information, whatever the row: a refused request or
// unsupported setting (the verbs drivers' are an application's), and a notice without a
// failure.
var (
	refusalWhat     = struct{ What, Fix string }{"The kernel refused an application's verbs request as invalid or unsupported (the application's, not a fault of the device)", "Check the request the application makes against the device's capabilities (`ibv_devinfo -v`)."}
	unsupportedWhat = struct{ What, Fix string }{"The driver reports a feature or setting the device, its firmware or the kernel does not support, or a request it refused (configuration, not a fault)", "Check the requested configuration against what the device, its firmware and the kernel support."}
	noticeWhat      = struct{ What, Fix string }{"A notice the driver prints at warning level without a failure: a state it reports or a setting it chose", ""}
)

// eventFamilies are the PCIe port services' files whose events pcie.aer judges, with the
// family of their lines (signatures/pcie.json; checks.JudgeOf): AER's reports (aer.c) and
// recovery (err.c), DPC and EDR, native hotplug. The service's own set-up (its interrupt, its
// memory, its registration) is no event of a link and stays with driver.kernel_log.
var eventFamilies = []struct {
	driver string
	path   *regexp.Regexp
	family string
}{
	{"aer", re(`/aer\.c$`), "aer"},
	{"aer", re(`/err\.c$`), "aer-recovery"},
	{"dpc", nil, "dpc"},
	{"pciehp", nil, "hotplug"},
	{"cper", nil, "cper-pcie"},
}

// serviceSetup is a port service's set-up of itself, not an event of the link it watches.
var serviceSetup = re(`(?i)\birq\b|interrupt|\balloc|\bmemory\b|\bregister|sysfs|debugfs|\bprobe\b|\binit\b|initiali[sz]|\bkfifo|\bpoll interval`)

// eventFamily is the family a generated entry carries: a PCIe port service's event, "" for
// every other line.
func eventFamily(driver, file, text, fault string) string {
	if fault != "pcie-interface" || serviceSetup.MatchString(text) {
		return ""
	}
	for _, f := range eventFamilies {
		if f.driver == driver && (f.path == nil || f.path.MatchString(file)) {
			return f.family
		}
	}
	return ""
}

// Classify gives a message its rule.
func Classify(driver, file, fn, text string) *Rule {
	for i := range Rules {
		if r := &Rules[i]; r.matches(driver, file, fn, text) {
			// An information rule without words of its own to exclude yields to a failure.
			if r.Severity == "info" && r.Unless == nil && failure.MatchString(text) {
				continue
			}
			return r
		}
	}
	return nil
}

// notice is a warning-level print that reports a state or a choice ("Using %d RX rings",
// "Setting num_txqs %d", "Running in master mode"): information when no problem word is in it.
var notice = re(`(?i)^(using|setting|initializing|enabling|running in|detected|skipping|sending|trying again|consider|expected slowdown|reload performed|hca operating)\b|obsolete module param|falling back|deferring probe`)

// problem words keep a notice a warning.
var problem = re(`(?i)fail|error|\berr|timeout|timed out|unable|couldn't|could not|can't|cannot|\binvalid|\bbad\b|wrong|unexpected|unknown|illegal|mismatch|\bnot\b|\bno\b|missing|lost|exceed|overflow|stuck|abort|corrupt|\bbug\b|warn|refus|reject|declin|denied|busy|\bfull\b|leak|drop|violat|fatal|crash|hang|\btoo\b|\bonly\b|retry|disabl|doesn't|isn't|won't|unsupported|out of|exhaust|insufficient|degrad|limit|!`)

// severityOf is what a print's level says: crit and graver the device or function stops
// working, err and warn a fault the driver reports.
func severityOf(level, text string) string {
	switch {
	case level == "emerg" || level == "alert" || level == "crit":
		return "critical"
	case level == "warn" && notice.MatchString(text) && !problem.MatchString(text):
		return "info"
	}
	return "warning"
}
