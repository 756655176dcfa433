package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/report"
)

// ksmbdLoad is the dmesg of namjaejeon/ksmbd#485 (https://github.com/namjaejeon/ksmbd/issues/485):
// ksmbd built against the kernel's headers, loaded beside MLNX_OFED 24.04's ib_core.
const ksmbdLoad = "" +
	"[  289.068777] ksmbd: disagrees about version of symbol ib_mr_pool_destroy\n" +
	"[  289.068788] ksmbd: Unknown symbol ib_mr_pool_destroy (err -22)\n" +
	"[  289.068828] ksmbd: disagrees about version of symbol ib_unregister_client\n" +
	"[  289.068829] ksmbd: Unknown symbol ib_unregister_client (err -22)\n" +
	"[  289.068876] ksmbd: disagrees about version of symbol rdma_rw_ctx_destroy\n" +
	"[  289.068878] ksmbd: Unknown symbol rdma_rw_ctx_destroy (err -22)\n"

// A consumer of ib_core that cannot load for a symbol-version mismatch is a warning naming the
// mismatch and its rebuild; the same lines from the NIC's RDMA module stay critical.
func TestModuleLoadFailureBySeverityOfTheModule(t *testing.T) {
	for _, c := range []struct {
		name, log, module string
		sev               report.Severity
		summary, fix      string
	}{
		{"consumer", ksmbdLoad, "ksmbd", report.Warning, "built against another RDMA stack than the one running (the kernel's own, ib_core in-box)", "Rebuild or reinstall ksmbd"},
		{"RDMA driver", strings.ReplaceAll(ksmbdLoad, "ksmbd", "mlx5_ib"), "mlx5_ib", report.Critical, "(mlx5_ib, an RDMA driver)", "reinstall one driver stack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := copyTree(t, "port-flaps")
			if err := os.MkdirAll(filepath.Join(root, "var/log"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "var/log/dmesg"), []byte(c.log), 0o644); err != nil {
				t.Fatal(err)
			}
			fs := runTree(t, root, "driver.kernel_log")
			f := checktest.One(t, fs, "driver.kernel_log", c.module)
			checktest.WantSeverity(t, f, c.sev)
			if !strings.Contains(f.Summary, c.summary) || !strings.Contains(f.Remediation, c.fix) {
				t.Errorf("summary %q\nfix %q", f.Summary, f.Remediation)
			}
			checktest.WantEvidenceIs(t, f, "count", "6")
		})
	}
}
