package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The GPUDirect and topology checks read sources beyond the RDMA devices: NVIDIA GPU functions
// and their bridges, the IOMMU units and groups, the NVIDIA driver, the route tables. A recording
// must hold them, or a snapshot would judge a different host than the live run did.
func TestRecordKeepsGPUDirectAndRouteSources(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    []string
	}{
		{"gpu-no-peermem-acs", []string{
			"root/sys/bus/pci/devices/0000:1b:00.0",
			"root/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0/config",
			"root/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/config",
			"root/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0/0000:19:01.0/0000:1b:00.0/numa_node",
			"root/sys/kernel/iommu_groups/31/type",
			"root/sys/class/iommu/dmar0",
			"root/proc/driver/nvidia/version",
			"root/sys/module/nvidia/taint",
			"root/proc/cmdline",
		}},
		{"topo-missing-device", []string{"root/proc/net/route"}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "sysfs", tc.fixture, "snapshot.txtar"))
			if err != nil {
				t.Fatal(err)
			}
			src := t.TempDir()
			if err := UnpackTxtar(b, src); err != nil {
				t.Fatal(err)
			}
			h, err := OpenRoot(filepath.Join(src, "root"))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "rec")
			if err := Record(h, dir, RecordOptions{ToolVersion: "t", Now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}); err != nil {
				t.Fatal(err)
			}
			for _, p := range tc.want {
				if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
					t.Errorf("not recorded: %s", p)
				}
			}
		})
	}
}
