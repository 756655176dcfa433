package sigscan

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/report/engine"
)

// Every rule names a fault row of the fault table, and every row a rule names has its texts.
func TestRulesFaultsExist(t *testing.T) {
	rows := map[string]bool{}
	for _, r := range engine.DefaultFaults().Rows {
		rows[r.ID] = true
	}
	for _, r := range Rules {
		if !rows[r.Fault] {
			t.Errorf("rule %q: fault row %q is not in report/engine/faults.json", r.Why, r.Fault)
		}
		if _, ok := Texts[r.Fault]; !ok {
			t.Errorf("rule %q: no texts for %q", r.Why, r.Fault)
		}
	}
	if last := Rules[len(Rules)-1]; last.Drivers != nil || last.Path != nil || last.Text != nil {
		t.Errorf("the last rule must match every message")
	}
}

func TestClassify(t *testing.T) {
	const core = "drivers/net/ethernet/mellanox/mlx5/core/"
	for _, tc := range []struct {
		driver, file, fn, text, fault, severity string
	}{
		{"mlx5_core", core + "health.c", "mlx5_health_try_recover", "health recovery flow aborted, PCI reads still not working", "pcie-interface", ""},
		{"mlx5_core", core + "health.c", "print_health_info", "PCI slot is unavailable", "pcie-interface", ""},
		{"mlx5_core", core + "health.c", "mlx5_error_sw_reset", "start", "firmware-health", ""},
		{"mlx5_core", core + "fw_reset.c", "mlx5_fw_reset_complete_reload", "Sync reset unload failed, err %d", "firmware-health", ""},
		{"mlx5_core", core + "en/reporter_tx.c", "mlx5e_reset_txqsq_cc_pc", "SQ 0x%x: cc (0x%x) != pc (0x%x)", "qp-context", ""},
		{"mlx5_core", core + "en/reporter_rx.c", "mlx5e_rx_reporter_err_icosq_cqe_recover", "Failed to query ICOSQ 0x%x state. err = %d", "qp-context", ""},
		{"mlx5_core", core + "pci_irq.c", "set_comp_irq_affinity_hint", "irq_set_affinity_hint failed, irq 0x%.4x", "driver-module", ""},
		{"mlx5_core", core + "pagealloc.c", "pages_work_handler", "%s fail %d", "firmware", ""},
		{"mlx5_core", core + "en_ethtool.c", "mlx5e_set_rx_cqe_compress", "Can't set CQE compression with HW-GRO, disable it first.", "kernel-config", "info"},
		{"mlx5_core", core + "steering/fs_dr.c", "mlx5_cmd_dr_create_fte", "Failed to create fte, err = %d", "driver-module", ""},
		{"mlx4_core", "drivers/net/ethernet/mellanox/mlx4/main.c", "mlx4_init_one", "Missing DCS, aborting", "pcie-interface", ""},
		{"mlx4_core", "drivers/net/ethernet/mellanox/mlx4/catas.c", "mlx4_reset_slave", "Failed to obtain HW semaphore", "firmware-health", ""},
		{"rdma_rxe", "drivers/infiniband/sw/rxe/rxe_verbs.c", "rxe_create_qp", "rdma_rxe: invalid qp type %d", "user-verbs", "info"},
		{"ib_ipoib", "drivers/infiniband/ulp/ipoib/ipoib_multicast.c", "ipoib_mcast_join_complete", "%smulticast join failed for %pI6, status %d", "node-topology", ""},
		// The DMA API's debugging checks: a driver's misuse is a fault, the facility's own
		// set-up information.
		{"dma-debug", "kernel/dma/debug.c", "check_unmap", "device driver tries to free DMA memory it has not allocated [device address=0x%016llx] [size=%llu bytes]", "dma-engine", ""},
		{"dma-debug", "kernel/dma/debug.c", "dma_entry_alloc", "DMA-API: debugging out of memory - disabling", "dma-engine", "info"},
		// The other vendors, as mlx5's layout has it.
		{"hns3", "drivers/net/ethernet/hisilicon/hns3/hns3pf/hclge_main.c", "hclge_reset", "failed to reset VF(%u)", "firmware-health", ""},
		{"bnxt_re", "drivers/infiniband/hw/bnxt_re/qplib_rcfw.c", "__wait_for_resp", "QPLIB: cmdq[%#x]=%#x timedout (%d)msec", "firmware-health", ""},
		{"efa", "drivers/infiniband/hw/efa/efa_com.c", "efa_com_submit_admin_cmd", "Failed to submit command %s (opcode %u) err %d", "firmware", ""},
		{"hns_roce", "drivers/infiniband/hw/hns/hns_roce_qp.c", "hns_roce_create_qp_common", "failed to alloc QP buffer, ret = %d.", "qp-context", ""},
		{"hns_roce", "drivers/infiniband/hw/hns/hns_roce_cq.c", "alloc_cqc", "failed to alloc CQ buf, ret = %d.", "cq-eq", ""},
		{"iw_cxgb4", "drivers/infiniband/hw/cxgb4/device.c", "c4iw_uld_add", "iw_cxgb4: Warning - downlevel libcxgb4 (non-fatal), device status page disabled", "driver-module", ""},
		{"ice", "drivers/net/ethernet/intel/ice/ice_idc.c", "ice_plug_aux_dev", "Failed to add RDMA auxiliary device: %d", "rdma-device", ""},
		{"cxgb4", "drivers/net/ethernet/chelsio/cxgb4/cxgb4_main.c", "adap_init0_phy", "PHY Firmware already up-to-date, version %#x", "kernel-config", "info"},
		{"mana", "drivers/net/ethernet/microsoft/mana/gdma_main.c", "mana_gd_probe", "gdma probe failed: err = %d", "driver-module", ""},
		{"mana", "drivers/net/ethernet/microsoft/mana/hw_channel.c", "mana_hwc_send_request", "HWC: Request timed out!", "firmware-health", ""},
		{"ice", "drivers/net/ethernet/intel/ice/ice_main.c", "ice_load_pkg", "The DDP package file was not found or could not be read. Entering Safe Mode", "firmware", ""},
		// The RDMA consumers.
		{"cifs_smbd", "fs/smb/client/smbdirect.c", "_smbd_get_connection", "rdma_create_qp failed %i", "qp-context", ""},
		{"ib_srp", "drivers/infiniband/ulp/srp/ib_srp.c", "srp_parse_options", "ib_srp: bad dest GID parameter '%s'", "kernel-config", "info"},
		{"ib_srp", "drivers/infiniband/ulp/srp/ib_srp.c", "srp_path_rec_completion", "ib_srp: Path record query failed: sgid %pI6, dgid %pI6, pkey %#04x, service_id %#16llx", "node-topology", ""},
		{"ib_srpt", "drivers/infiniband/ulp/srpt/ib_srpt.c", "srpt_refresh_port", "ib_srpt %s-%d: enabling device management failed (%d). Note: this is expected if SR-IOV is enabled.", "qp-context", "info"},
		{"rpcrdma", "net/sunrpc/xprtrdma/verbs.c", "rpcrdma_xprt_connect", "rpcrdma: can't reconnect on different device!", "qp-context", ""},
		{"nvme_rdma", "drivers/nvme/host/rdma.c", "nvme_rdma_addr_resolved", "nvme_rdma: rdma_resolve_route failed (%d).", "port-link", ""},
		{"smc", "net/smc/smc_ib.c", "smc_ib_add_dev", "smc: adding ib device %s with port count %d", "qp-context", "info"},
		{"ksmbd_rdma", "fs/smb/server/transport_rdma.c", "smb_direct_create_pools", "ksmbd: smb_direct: failed to init mr pool count %d pages %d", "driver-module", ""},
		// The PCIe path and the IOMMUs.
		{"aer", "drivers/pci/pcie/aer.c", "aer_print_error", "AER: PCIe Bus Error: severity=%s, type=%s, (%s)", "pcie-interface", ""},
		{"pciehp", "drivers/pci/hotplug/pciehp_hpc.c", "pciehp_check_link_status", "pciehp: %s: Can not enable the link!", "pcie-interface", ""},
		{"dmar", "drivers/iommu/intel/dmar.c", "dmar_parse_one_rmrr", "DMAR: [Firmware Bug]: No firmware reserved region can cover this RMRR [%#018Lx-%#018Lx], contact BIOS vendor for fixes", "dma-engine", "info"},
		{"amd-vi", "drivers/iommu/amd/init.c", "parse_amd_iommu_options", "AMD-Vi: amd_iommu=fullflush deprecated; use iommu.strict=1 instead", "dma-engine", "info"},
		{"arm-smmu-v3", "drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c", "arm_smmu_setup_irqs", "no evtq irq - events will not be reported!", "dma-engine", ""},
		{"swiotlb", "kernel/dma/swiotlb.c", "swiotlb_map", "Cannot do DMA to address %pa", "dma-engine", ""},
	} {
		r := Classify(tc.driver, tc.file, tc.fn, tc.text)
		if r == nil || r.Fault != tc.fault || r.Severity != tc.severity {
			got := "no rule"
			if r != nil {
				got = r.Fault + "/" + r.Severity + " (" + r.Why + ")"
			}
			t.Errorf("%s %s %q: got %s, want %s/%s", tc.driver, tc.file, tc.text, got, tc.fault, tc.severity)
		}
	}
}

func TestSeverity(t *testing.T) {
	for _, tc := range []struct{ level, text, want string }{
		{"crit", "device is dead", "critical"},
		{"err", "Failed to create EQ", "warning"},
		{"warn", "Using %d RX rings", "info"},
		{"warn", "Using %d RX rings, failed to allocate more", "warning"},
		{"warn", "CQ %s on CQN %06x", "warning"},
	} {
		if got := severityOf(tc.level, literalText(tc.text)); got != tc.want {
			t.Errorf("%s %q: %s, want %s", tc.level, tc.text, got, tc.want)
		}
	}
}

// A PCIe port service's events carry the family pcie.aer judges; its own set-up does not.
func TestEventFamily(t *testing.T) {
	for _, tc := range []struct{ driver, file, text, fault, want string }{
		{"aer", "drivers/pci/pcie/aer.c", "AER: PCIe Bus Error: severity=%s, type=%s, (%s)", "pcie-interface", "aer"},
		{"aer", "drivers/pci/pcie/err.c", "AER: device recovery failed", "pcie-interface", "aer-recovery"},
		{"dpc", "drivers/pci/pcie/edr.c", "EDR: Locate Port _DSM failed", "pcie-interface", "dpc"},
		{"pciehp", "drivers/pci/hotplug/pciehp_hpc.c", "pciehp: %s: Can not enable the link!", "pcie-interface", "hotplug"},
		{"pciehp", "drivers/pci/hotplug/pciehp_hpc.c", "pciehp: Cannot get irq %d for the hotplug controller", "pcie-interface", ""},
		{"cper", "drivers/firmware/efi/cper.c", "%saer_cor_status: 0x%08x, aer_cor_mask: 0x%08x", "pcie-interface", "cper-pcie"},
		{"pci", "drivers/pci/pci.c", "timed out waiting for pending transaction; performing function level reset anyway", "pcie-interface", ""},
		{"dmar", "drivers/iommu/intel/dmar.c", "DMAR: Unable to map DMAR", "dma-engine", ""},
	} {
		if got := eventFamily(tc.driver, tc.file, tc.text, tc.fault); got != tc.want {
			t.Errorf("%s %q: family %q, want %q", tc.driver, tc.text, got, tc.want)
		}
	}
}

// Every file of a family's drivers is read as that driver, and a driver that no hand-written
// file defines carries its definition.
func TestSourceDrivers(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		{"drivers/pci/pcie/aer.c", "aer"},
		{"drivers/pci/pcie/portdrv.c", "pcieport"},
		{"drivers/pci/pci.c", "pci"},
		{"drivers/pci/pci-driver.c", ""},
		{"drivers/iommu/intel/irq_remapping.c", "dmar-ir"},
		{"drivers/iommu/intel_irq_remapping.c", "dmar-ir"},
		{"drivers/iommu/intel-iommu.c", "dmar"},
		{"drivers/iommu/arm-smmu-v3.c", "arm-smmu-v3"},
		{"drivers/iommu/arm-smmu.c", "arm-smmu"},
		{"drivers/nvme/host/rdma.c", "nvme_rdma"},
		{"drivers/nvme/host/tcp.c", ""},
		{"net/rds/ib_cm.c", "rds_rdma"},
		{"net/rds/tcp.c", ""},
		{"fs/ksmbd/transport_rdma.c", "ksmbd_rdma"},
		{"drivers/infiniband/hw/mlx5/main.c", "mlx5_ib"},
		{"drivers/net/ethernet/microsoft/mana/mana_en.c", "mana"},
		{"drivers/net/ethernet/microsoft/mana/mana_ethtool.c", ""},
	} {
		got := ""
		if d := DriverOf(tc.path); d != nil {
			got = d.Name
		}
		if got != tc.want {
			t.Errorf("%s: driver %q, want %q", tc.path, got, tc.want)
		}
	}
	ids := map[string]bool{}
	for _, d := range SourceDrivers {
		if d.Family == "" || d.ID == "" || ids[d.ID] {
			t.Errorf("%s: family %q, id prefix %q (empty or another's)", d.Name, d.Family, d.ID)
		}
		ids[d.ID] = true
		if _, ok := genWhat[d.Family]; !ok {
			t.Errorf("%s: family %q has no generated file", d.Name, d.Family)
		}
		if d.Define != nil && (d.Define.Name != d.Name || d.Define.Source == "") {
			t.Errorf("%s: its definition is named %q or has no source", d.Name, d.Define.Name)
		}
	}
}

// A print below warning gets an entry of information when it names a failure, a link or module
// change or a reset; a chosen setting does not, nor does a debug print.
func TestNoticeable(t *testing.T) {
	for _, c := range []struct {
		level, format string
		want          bool
	}{
		{"info", "%s(%s) failed.", true},     // ib_srpt.c srpt_add_one()
		{"info", "%s module inserted", true}, // cxgb4_main.c t4_os_portmod_changed()
		{"notice", "Link is Down", true},
		{"info", "Setting reset type %d", true},
		{"info", "Using %d RX rings", false},
		{"debug", "REJ received, reason %d failed", false}, // compiled out without dynamic debug
		{"warn", "x failed", false},                        // counted as it is, not as a notice
	} {
		p := Print{Level: c.level, Format: c.format}
		if got := noticeable(&p); got != c.want {
			t.Errorf("%s %q: noticeable %v, want %v", c.level, c.format, got, c.want)
		}
	}
}
