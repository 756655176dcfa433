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
