package port_test

// The synthetic fixture port-ib-pkeys (three ConnectX-7 NDR rails, one left out of the
// partition the other two and the fleet policy use) is generated here from port-cx7-ib, its
// faults healed. Regenerate with
//
//	go test ./checks/port -run TestPKeysFixture -gen

import (
	"fmt"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
)

const pkeysComment = `No InfiniBand exists in the lab: three ConnectX-7 NDR rails of one node, one of them left
out of the partition its peers and the fleet policy use.
Built on the files of fixtures/sysfs/port-cx7-ib (three single-port ConnectX-7 HCAs, board
MT_0000000838, whose archive comment cites each value), its faults healed: mlx5_0/1
symbol_error and link_downed 0, mlx5_1/1 rate "400 Gb/sec (4X NDR)", mlx5_2/1 "4: ACTIVE" with
LID 0x1c and SM LID 0x1 (the SM's LID as on the other ports). Added:
- ports/1/pkeys/0..127 of each port: 128 entries (the size is made up; the kernel creates one
  file per entry of the device's pkey_tbl_len, setup_port in drivers/infiniband/core/sysfs.c,
  each printed by show_port_pkey as "0x%04x"), empty entries 0x0000 (the invalid key, IBTA
  Volume 1, 10.9 Partitioning);
- mlx5_0/1 and mlx5_1/1: index 0 0xffff (full member of the default partition, what opensm's
  "Default=0x7fff,ipoib : ALL=full;" gives) and index 1 0x8001 (full member of partition 1);
  mlx5_2/1: index 0 0xffff only (made up: the port GUID left out of partition 1).
The policy (policy.json, passed by args) expects 0xffff and 0x8001 on every port.
Expected: port.pkeys ok on mlx5_0/1 and mlx5_1/1; critical on mlx5_2/1 (lacks 0x8001, which
the policy expects and both identical rails hold).
`

func TestPKeysFixture(t *testing.T) {
	const name = "port-ib-pkeys"
	files := checktest.FixtureFiles(t, "port-cx7-ib")
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: three ConnectX-7 NDR rails; mlx5_2/1 lacks the partition key 0x8001 that its peers and the policy have",
		[]string{"fixtures/sysfs/port-cx7-ib", "drivers/infiniband/core/sysfs.c", "IBTA Volume 1, 10.9 Partitioning", checktest.Generator(t)}))
	dev := map[string]string{
		"mlx5_0": "root/sys/devices/pci0000:00/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/",
		"mlx5_1": "root/sys/devices/pci0000:00/0000:5d:00.0/0000:5e:00.0/infiniband/mlx5_1/ports/1/",
		"mlx5_2": "root/sys/devices/pci0000:00/0000:85:00.0/0000:86:00.0/infiniband/mlx5_2/ports/1/",
	}
	set := func(f, v string) {
		if _, ok := files[f]; !ok {
			t.Fatalf("%s: not in port-cx7-ib", f)
		}
		files[f] = v + "\n"
	}
	set(dev["mlx5_0"]+"counters/symbol_error", "0")
	set(dev["mlx5_0"]+"counters/link_downed", "0")
	set(dev["mlx5_1"]+"rate", "400 Gb/sec (4X NDR)")
	set(dev["mlx5_2"]+"state", "4: ACTIVE")
	set(dev["mlx5_2"]+"lid", "0x1c")
	set(dev["mlx5_2"]+"sm_lid", "0x1")
	table := map[string][]string{"mlx5_0": {"0xffff", "0x8001"}, "mlx5_1": {"0xffff", "0x8001"}, "mlx5_2": {"0xffff"}}
	for d, keys := range table {
		for i := 0; i < 128; i++ {
			v := "0x0000"
			if i < len(keys) {
				v = keys[i]
			}
			files[fmt.Sprintf("%spkeys/%d", dev[d], i)] = v + "\n"
		}
	}
	checktest.Generated(t, name, checktest.Txtar(checktest.GeneratedBy(t, name)+pkeysComment, files))
}
