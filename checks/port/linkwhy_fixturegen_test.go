package port_test

// The synthetic fixture port-down-autoneg (a RoCE port whose switch end does not answer) is
// generated here from fw-inbox-cx6dx: the port DOWN, its netdev up without carrier, and the
// driver's reason in the ethtool netlink LINKSTATE_GET answer. Regenerate with
//
//	go test ./checks/port -run TestLinkWhyFixture -gen

import (
	"testing"

	"github.com/rdmadiag/rdmadiag/checks/checktest"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl"
	"github.com/rdmadiag/rdmadiag/internal/ethtoolnl/ethtooltest"
	"github.com/rdmadiag/rdmadiag/internal/host"
)

const linkWhyComment = `No ConnectX exists in the lab, and no lab driver says why a link is down
(virtio_net and netdevsim have no get_link_ext_state): a RoCE port whose link partner does not
answer auto-negotiation.
Built on the files of fixtures/sysfs/fw-inbox-cx6dx (a healthy ConnectX-6 Dx, mlx5_0 on
0000:3b:00.0, in-box mlx5_core of Debian's 6.1.0-56-amd64, RoCE port on ens1f0np0, /proc/uptime
3600 s), whose archive comment cites each of them; changed here:
- mlx5_0/ports/1/state "1: DOWN" and phys_state "3: Disabled": what mlx5_ib reports for an
  Ethernet port without link (mlx5_query_port_roce in drivers/infiniband/hw/mlx5/main.c maps a
  netdev without carrier to IB_PORT_DOWN and IB_PORT_PHYS_STATE_DISABLED);
- /sys/class/net/ens1f0np0: carrier 0, operstate down, speed -1 (SPEED_UNKNOWN, what
  mlx5e reports without link), flags 0x1003 (IFF_UP|IFF_BROADCAST|IFF_MULTICAST: brought up,
  include/uapi/linux/if.h), carrier_up_count 2 and carrier_down_count 2 (net/core/net-sysfs.c,
  4.16+: the link was up after probing, then went down: made up);
- ethtool-netlink/: the family resolution (id 0x14, as in port-fec-errors) and the
  LINKSTATE_GET answer encoded by internal/ethtoolnl/ethtooltest as linkstate_fill_reply
  (net/ethtool/linkstate.c) lays it out: ETHTOOL_MSG_LINKSTATE_GET=6 with ETHTOOL_FLAG_STATS=4,
  reply 6; ETHTOOL_A_LINKSTATE_LINK=2 0, _EXT_STATE=5 0 (ETHTOOL_LINK_EXT_STATE_AUTONEG) and
  _EXT_SUBSTATE=6 1 (ETHTOOL_LINK_EXT_SUBSTATE_AN_NO_PARTNER_DETECTED), include/uapi/linux/
  ethtool.h: what mlx5e_get_link_ext_state() (en_ethtool.c, 5.10+) answers for PDDR status
  status opcode 2; no _EXT_DOWN_CNT (6.6+, not in 6.1).
Expected: port.state critical: mlx5_0/1 DOWN because auto-negotiation found no partner, with
the switch-port fix; it had a link this boot (carrier_up_count), so it is not called unused.
`

func TestLinkWhyFixture(t *testing.T) {
	const name = "port-down-autoneg"
	files := checktest.FixtureFiles(t, fecBase)
	files["meta.json"] = checktest.JSON(checktest.Meta("Synthetic: a ConnectX-6 Dx RoCE port DOWN whose netdev is up without carrier; the driver says auto-negotiation found no link partner",
		[]string{"fixtures/sysfs/fw-inbox-cx6dx", "include/uapi/linux/ethtool_netlink.h", "include/uapi/linux/ethtool.h", "net/ethtool/linkstate.c",
			"drivers/net/ethernet/mellanox/mlx5/core/en_ethtool.c", checktest.Generator(t)}))
	port := "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/infiniband/mlx5_0/ports/1/"
	nd := "root/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0/net/ens1f0np0/"
	for f, v := range map[string]string{
		port + "state": "1: DOWN", port + "phys_state": "3: Disabled",
		nd + "carrier": "0", nd + "operstate": "down", nd + "speed": "-1", nd + "flags": "0x1003",
		nd + "carrier_up_count": "2", nd + "carrier_down_count": "2",
	} {
		if _, ok := files[f]; !ok && f != nd+"flags" && f != nd+"carrier_up_count" && f != nd+"carrier_down_count" {
			t.Fatalf("%s: not in %s", f, fecBase)
		}
		files[f] = v + "\n"
	}
	down, st := false, ethtoolnl.ExtAutoneg
	m := ethtooltest.Model{Family: ethtoolFamily, Netdevs: []ethtooltest.Netdev{{Ifindex: 4, Ifname: "ens1f0np0",
		LinkState: &ethtoolnl.LinkState{Link: &down, ExtState: &st, ExtSubstate: 1}}}}
	conn := m.Conn()
	for _, req := range []host.Request{ethtoolnl.FamilyRequest(), ethtoolnl.LinkStateRequest(ethtoolFamily, "ens1f0np0")} {
		b, err := conn.Exchange(req)
		if err != nil {
			t.Fatal(err)
		}
		files["ethtool-netlink/"+req.Key()+".bin.hex"] = checktest.HexLines(b)
	}
	checktest.Generated(t, name, checktest.Txtar(checktest.GeneratedBy(t, name)+linkWhyComment, files))
}
