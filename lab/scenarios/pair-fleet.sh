# pair-fleet: a fleet of six hosts on one switch, one link between two of them bad. Six veth
# pairs join h0..h5 (192.0.2.10-15/24, a Soft-RoCE device rxh0..rxh5 on each) to a Linux bridge
# standing in for the switch; as in pair-probe, everything stays in the initial namespace (rdma_rxe
# of 6.1 knows no other) with the local table behind one routing table per interface. A tc u32
# filter drops what h1 and h2 send each other and nothing else: a bad path between two hosts
# that are both fine with everyone else. The payload (lab/payloads/pair-fleet) runs the plan of
# `rdmadiag probe plan` (3 rounds, the three pairs of a round at once) and `rdmadiag fleet --pairs`
# must name h1 <-> h2 as the bad link and no bad host.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
LAB_FILES="${LAB:-.}/payloads/pair-fleet"
# A variant may clear the bad link (LAB_FLEET_BAD=) and take one host's link down
# (LAB_FLEET_DOWN=N, pair-fleet-down); the payload sees the latter.
: "${LAB_FLEET_BAD=1 2}" "${LAB_FLEET_DOWN=}"
export LAB_FLEET_DOWN

lab_fleet_ready() {
	for i in 0 1 2 3 4 5; do
		[ "$i" = "${1:-}" ] && continue
		lab_port_is "rxh$i" 1 4 || return 1
		g=$(cat "/sys/class/infiniband/rxh$i/ports/1/gids/1" 2>/dev/null) && [ -n "$g" ] &&
			[ "$g" != 0000:0000:0000:0000:0000:0000:0000:0000 ] || return 1
	done
}

guest_setup() {
	ip=/usr/bin/ip
	modprobe veth && modprobe bridge && modprobe sch_prio && modprobe cls_u32 && modprobe act_gact || return 1
	echo 0 >/proc/sys/net/ipv4/conf/all/rp_filter || return 1
	$ip link add br0 type bridge && $ip link set br0 up || return 1
	for i in 0 1 2 3 4 5; do
		$ip link add "h$i" type veth peer name "p$i" || return 1
		$ip link set "p$i" master br0 && $ip link set "p$i" up || return 1
		for k in rp_filter accept_local arp_ignore; do
			v=1; [ "$k" = rp_filter ] && v=0
			echo "$v" >"/proc/sys/net/ipv4/conf/h$i/$k" || return 1
		done
		$ip addr add "192.0.2.1$i/24" dev "h$i" && $ip link set "h$i" up || return 1
		$ip rule add pref "$((10 + i))" oif "h$i" lookup "$((100 + i))" || return 1
		$ip route add 192.0.2.0/24 dev "h$i" src "192.0.2.1$i" table "$((100 + i))" || return 1
		rdma link add "rxh$i" type rxe netdev "h$i" || return 1
	done
	$ip rule add pref 100 lookup local && $ip rule del pref 0 || return 1
	lab_wait 30 "rxh0..rxh5 ACTIVE with RoCE v2 GIDs" lab_fleet_ready || return 1
	if [ -n "$LAB_FLEET_BAD" ]; then
		set -- $LAB_FLEET_BAD
		for x in "$1:$2" "$2:$1"; do
			from=${x%:*} to=${x#*:}
			/usr/bin/tc qdisc add dev "h$from" root handle 1: prio &&
				/usr/bin/tc filter add dev "h$from" parent 1: protocol ip prio 1 u32 match ip dst "192.0.2.1$to/32" action drop || return 1
		done
	fi
	if [ -n "$LAB_FLEET_DOWN" ]; then
		$ip link set "h$LAB_FLEET_DOWN" down || return 1
		lab_wait 30 "rxh$LAB_FLEET_DOWN/1 DOWN" lab_port_is "rxh$LAB_FLEET_DOWN" 1 1 || return 1
	fi
}

guest_verify() {
	if [ -n "$LAB_FLEET_DOWN" ]; then
		lab_fleet_ready "$LAB_FLEET_DOWN" && lab_port_is "rxh$LAB_FLEET_DOWN" 1 1
		return
	fi
	lab_fleet_ready && ping -c 1 -W 2 -I h0 192.0.2.13 >/dev/null 2>&1 && ! ping -c 1 -W 1 -I h1 192.0.2.12 >/dev/null 2>&1
}
