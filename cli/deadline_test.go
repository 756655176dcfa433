package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rdmadiag/rdmadiag/checks"
	"github.com/rdmadiag/rdmadiag/report"
)

// manyDevicesTree writes a --root tree of n software RDMA devices (rxe0...), each with one
// active RoCE port, holding a few of the files discovery and the checks read (the sysfs layout
// of drivers/infiniband/core/sysfs.c: node_type, ports/<n>/link_layer and state).
func manyDevicesTree(t *testing.T, n int) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"node_type":          "1: CA",
		"ports/1/link_layer": "Ethernet",
		"ports/1/state":      "4: ACTIVE",
	}
	for i := range n {
		dev := filepath.Join(root, "sys/class/infiniband", fmt.Sprintf("rxe%d", i))
		if err := os.MkdirAll(filepath.Join(dev, "ports/1"), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dev, name), []byte(body+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return root
}

// A tree of thousands of devices takes longer to read than the run may: the deadline ends the
// inventory's discovery, the checks judging it and the report's inventory, the report comes
// within a grace of the deadline, and it says what was cut short. Discovery used to read every
// device after the deadline, the report's inventory waited a second grace for it, and nothing
// said that the inventory was incomplete.
func TestDeadlineCutsAManyDeviceTree(t *testing.T) {
	root := manyDevicesTree(t, 2000)
	const timeout = 300 * time.Millisecond
	start := time.Now()
	out, _, code := run(t, "check", "--root", root, "--format", "json", "--timeout", timeout.String())
	took := time.Since(start)
	r := decode(t, out)
	// Generous: the machine may be loaded; the contract is one grace, not one per step.
	if limit := timeout + checks.Grace + 10*time.Second; took > limit {
		t.Errorf("the run took %s, more than %s", took, limit)
	}
	if code != report.ExitUnknown {
		t.Errorf("exit %d, want %d", code, report.ExitUnknown)
	}
	cut := 0
	for _, f := range r.Findings {
		if strings.Contains(f.Summary, "--timeout 300ms reached; the inventory was cut short: ") && strings.Contains(f.Summary, " of 2000 RDMA devices read") {
			cut++
		}
	}
	if cut == 0 {
		for _, f := range r.Findings {
			t.Logf("%s %s: %s", f.CheckID, f.Severity, f.Summary)
		}
		t.Errorf("no finding says that the inventory was cut short (%d devices in the report)", len(r.Host.Devices))
	}
	t.Logf("%s, %d findings, %d cut short, %d devices in the report", took, len(r.Findings), cut, len(r.Host.Devices))
}
