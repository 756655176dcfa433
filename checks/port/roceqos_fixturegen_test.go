package port_test

// The synthetic fixture port-roce-qos (a dual-port ConnectX-6 Dx whose second port missed the
// node's lossless RoCE settings) is generated here from pcie-dual-pf-shared, its PCIe link
// healed. Regenerate with
//
//	go test ./checks/port -run TestRoCEQoSFixture -gen

import (
	"fmt"
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl"
	"github.com/rdmadiag/rdmadiag/internal/dcbnl/dcbtest"
)

const roceQoSComment = `No ConnectX exists in the lab, and virtio_net has no DCB: a dual-port ConnectX-6 Dx whose
second port missed the node's lossless RoCE settings.
Built on the files of fixtures/sysfs/pcie-dual-pf-shared (ConnectX-6 Dx 15b3:101d, PFs
0000:3b:00.0 mlx5_0 ens1f0np0 and 0000:3b:00.1 mlx5_1 ens1f1np1, MLNX_OFED 24.10-1.1.4, whose
archive comment cites each value), its PCIe limit removed: the root port 0000:3a:00.0 and both
functions at "16.0 GT/s PCIe" x16, and the kernel log without the "limited by 8.0 GT/s" lines.
Added:
- dcb-netlink/: the DCB_CMD_IEEE_GET answers (RTM_GETDCB=78, include/uapi/linux/rtnetlink.h;
  DCB_CMD_IEEE_GET=21, DCB_ATTR_IFNAME=1, DCB_ATTR_IEEE=13 with _ETS=1 (struct ieee_ets), _PFC=2
  (struct ieee_pfc), _APP_TABLE=3 (struct dcb_app entries), an empty _DCB_REWR_TABLE=12, then
  DCB_ATTR_DCBX=14 0x0c (DCB_CAP_DCBX_HOST | DCB_CAP_DCBX_VER_IEEE); include/uapi/linux/dcbnl.h,
  laid out as dcbnl_ieee_fill in net/dcb/dcbnl.c does) encoded by internal/dcbnl/dcbtest:
  - ens1f0np0: PFC on priority 3 (pfc_en 0x08, pfc_cap 8), 1,250 pause frames sent and 48,000
    received on it (made up); trust DSCP: the 64 DSCP APP entries mlx5 keeps in that state
    (mlx5e_dcbnl_dscp_app in drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c) with the
    driver's default map, DSCP d to priority d>>3 (DSCP 24-31 on 3); ETS: priority i in traffic
    class i, every class ETS (tsa 2) with 12-13 % each: what NVIDIA's "Lossless RoCE
    Configuration for Linux Drivers in DSCP-Based QoS Mode" sets (mlnx_qos -i <if> --trust dscp
    --pfc 0,0,0,1,0,0,0,0);
  - ens1f1np1: the same card's defaults, PFC off (pfc_en 0), trust PCP (no APP entry), the
    same ETS (made up: the node's QoS script did not run on this port);
- /sys/class/net/<if>/ecn/roce_np/enable/0..7 and roce_rp/enable/0..7: MLNX_OFED's ECN sysfs
  (mlx5e_show_ecn_enable in MLNX_OFED's en_sysfs.c), "1" on every priority of both ports (its
  default: ECN on);
- policy.json (passed by args): ports.pfc_priorities [3], ports.trust "dscp".
Expected: port.roce_qos ok on mlx5_0/1 (PFC on 3, trust dscp, ECN on 3); critical on mlx5_1/1
(PFC off and PCP trust where the policy expects PFC on 3 and DSCP, and differs from its sibling).
`

func TestRoCEQoSFixture(t *testing.T) {
	const name = "port-roce-qos"
	files := checktest.FixtureFiles(t, "pcie-dual-pf-shared")
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a dual-port ConnectX-6 Dx; the second port has PFC off and PCP trust where the node and the policy run lossless RoCE on priority 3 with DSCP trust",
		[]string{"fixtures/sysfs/pcie-dual-pf-shared", "include/uapi/linux/dcbnl.h", "net/dcb/dcbnl.c", "drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c",
			"NVIDIA, Lossless RoCE Configuration for Linux Drivers in DSCP-Based QoS Mode", checktest.Generator(t)}))
	pci := "root/sys/devices/pci0000:3a/0000:3a:00.0/"
	for _, f := range []string{pci + "current_link_speed", pci + "max_link_speed", pci + "0000:3b:00.0/current_link_speed", pci + "0000:3b:00.1/current_link_speed"} {
		if _, ok := files[f]; !ok {
			t.Fatalf("%s: not in the base", f)
		}
		files[f] = "16.0 GT/s PCIe\n"
	}
	files["kmsg"] = `6,100,4100000,-;mlx5_core 0000:3b:00.0: firmware version: 22.43.2026
 SUBSYSTEM=pci
 DEVICE=+pci:0000:3b:00.0
6,102,5001000,-;mlx5_core 0000:3b:00.1: firmware version: 22.43.2026
 SUBSYSTEM=pci
 DEVICE=+pci:0000:3b:00.1
`
	ets := &dcbnl.ETS{TCTxBW: [8]uint8{13, 13, 13, 13, 12, 12, 12, 12}, TSA: [8]uint8{2, 2, 2, 2, 2, 2, 2, 2}, PrioTC: [8]uint8{0, 1, 2, 3, 4, 5, 6, 7}}
	dcbx := uint8(0x0c)
	good := dcbnl.IEEE{Ifname: "ens1f0np0", ETS: ets, DCBX: &dcbx,
		PFC: &dcbnl.PFC{Cap: 8, Enabled: 1 << 3, Requests: [8]uint64{3: 1250}, Indications: [8]uint64{3: 48000}}}
	for d := uint16(0); d < 64; d++ {
		good.Apps = append(good.Apps, dcbnl.App{Selector: dcbnl.SelDSCP, Priority: uint8(d >> 3), Protocol: d})
	}
	missed := dcbnl.IEEE{Ifname: "ens1f1np1", ETS: ets, DCBX: &dcbx, PFC: &dcbnl.PFC{Cap: 8}, Apps: []dcbnl.App{}}
	for _, v := range []dcbnl.IEEE{good, missed} {
		req := dcbnl.IEEERequest(v.Ifname)
		files["dcb-netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(dcbtest.IEEEReply(v))
	}
	for _, nd := range []struct{ fn, name string }{{"0000:3b:00.0", "ens1f0np0"}, {"0000:3b:00.1", "ens1f1np1"}} {
		for _, side := range []string{"roce_np", "roce_rp"} {
			for p := 0; p < 8; p++ {
				files[fmt.Sprintf("%s%s/net/%s/ecn/%s/enable/%d", pci, nd.fn, nd.name, side, p)] = "1\n"
			}
		}
	}
	checktest.Generated(t, name, checktest.Txtar(checktest.GeneratedBy(t, name)+roceQoSComment, files))
}
