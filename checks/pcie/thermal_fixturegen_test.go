package pcie_test

// The synthetic fixture pcie-nic-hot (the healthy ConnectX-6 Dx of fw-inbox-cx6dx on a kernel
// whose mlx5_core registers hwmon, its ASIC above its critical temperature) is generated here
// from fw-inbox-cx6dx; regenerate with
//
//	go test ./checks/pcie -run TestHotFixture -gen

import (
	"strings"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
)

const hotFixture = "pcie-nic-hot"

const (
	hotBaseKernel = "6.1.0-56-amd64"
	hotKernel     = "6.12.19-amd64"
	hotHwmon      = "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/hwmon/hwmon2/"
)

// hotComment follows checktest.GeneratedBy's opening.
const hotComment = `No ConnectX and no hwmon exist in the lab.
fw-inbox-cx6dx (a healthy ConnectX-6 Dx, mlx5_0 on 0000:3b:00.0, whose archive comment cites every
other value) on kernel 6.12 instead of 6.1 (release string 6.12.19-amd64 made up in Debian's
style; same RDMA kernel options), where mlx5_core registers a hwmon device on the PCI function
(drivers/net/ethernet/mellanox/mlx5/core/hwmon.c, mlx5_hwmon_dev_register(), Linux 6.6+).
Its ASIC sensor reads 107 degrees C against a critical threshold of 105; the module sensor is cool.
Expected: pcie.thermal critical on 0000:3b:00.0 (ASIC at or above its critical threshold);
everything else as in fw-inbox-cx6dx.
Sources:
- hwmon layout and units (millidegrees Celsius): Documentation/hwmon/sysfs-interface.rst and
  drivers/hwmon/hwmon.c (hwmon_temp_attr_templates "temp%d_input", "temp%d_crit",
  "temp%d_highest", "temp%d_label"; the device's "name"); mlx5 names it "mlx5" and shows
  input, highest, crit and label only (mlx5_hwmon_is_visible()).
- channels: temp1 the ASIC (MTMP sensor_index 0), temp2 module 0 (sensor_index 64,
  to_mtmp_module_sensor_idx()); labels are the kernel's fallback "sensor%u" of the index
  (mlx5_hwmon_init_channels_names()), used when the firmware names no sensor.
- values: input is MTMP temperature, highest max_temperature, crit temperature_threshold_hi, each
  times 125 (mtmp_temp_to_mdeg(): units of 0.125 degrees C). The numbers are made up: 107000,
  highest 108000, crit 105000 for the ASIC; 46000, highest 52000, crit 75000 for the module.
`

func hotFixtureFiles(t *testing.T) map[string]string {
	base := checktest.FixtureFiles(t, "fw-inbox-cx6dx")
	out := map[string]string{}
	for name, body := range base {
		name = strings.ReplaceAll(name, hotBaseKernel, hotKernel)
		body = strings.ReplaceAll(body, hotBaseKernel, hotKernel)
		out[name] = body
	}
	out["meta.json"] = checktest.JSON(checktest.Meta(
		"Synthetic: fw-inbox-cx6dx on kernel 6.12 with mlx5 hwmon sensors, the ASIC at 107 degrees C against a critical threshold of 105",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "Documentation/hwmon/sysfs-interface.rst", "drivers/hwmon/hwmon.c",
			"drivers/net/ethernet/mellanox/mlx5/core/hwmon.c", checktest.Generator(t)}))
	for f, v := range map[string]string{
		"name":          "mlx5",
		"temp1_input":   "107000",
		"temp1_highest": "108000",
		"temp1_crit":    "105000",
		"temp1_label":   "sensor0",
		"temp2_input":   "46000",
		"temp2_highest": "52000",
		"temp2_crit":    "75000",
		"temp2_label":   "sensor64",
	} {
		out[hotHwmon+f] = v + "\n"
	}
	return out
}

func TestHotFixture(t *testing.T) {
	checktest.Generated(t, hotFixture, checktest.Txtar(checktest.GeneratedBy(t, hotFixture)+hotComment, hotFixtureFiles(t)))
}
