# pair-probe: two hosts on one wire. A veth pair (va 192.0.2.1/24, vb 192.0.2.2/24, MTU 1500)
# with one Soft-RoCE device on each end (rxa on va, rxb on vb); the payload runs
# `rdmadiag probe --listen` on rxa and `rdmadiag probe --peer` on rxb, whose TCP side channel
# goes over the loopback, as a management network beside the fabric. rdma_rxe of Linux 6.1
# routes and receives RoCE in the initial network namespace only (ip_route_output_key(&init_net)
# and the UDP tunnel socket on init_net in drivers/infiniband/sw/rxe/rxe_net.c), so the two ends
# cannot live in two namespaces; instead the local routing table is moved behind per-interface
# rules, so that what rxb sends to 192.0.2.1 leaves through vb and crosses the wire to va
# (accept_local, no reverse-path filter). LAB_PAIR_LOSS (a netem loss percentage on va and vb)
# and LAB_PAIR_MTU (the MTU of vb) make it a bad wire, LAB_PAIR_SWITCH_MTU puts a bridge whose
# ports carry only that MTU between them; pair-probe-loss and pair-probe-mtu set those.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
: "${LAB_PAIR_LOSS:=}" "${LAB_PAIR_MTU:=}" "${LAB_PAIR_SWITCH_MTU:=}"

lab_pair_gid() { # DEV: its GID index 1 is set
	g=$(cat "/sys/class/infiniband/$1/ports/1/gids/1" 2>/dev/null) && [ -n "$g" ] &&
		[ "$g" != 0000:0000:0000:0000:0000:0000:0000:0000 ]
}

lab_pair_ready() {
	lab_port_is rxa 1 4 && lab_port_is rxb 1 4 && lab_pair_gid rxa && lab_pair_gid rxb
}

guest_setup() {
	# iproute2's ip and tc (/usr/bin), not busybox's applet: policy routing rules and netem.
	ip=/usr/bin/ip
	modprobe veth 2>/dev/null
	if [ -n "$LAB_PAIR_SWITCH_MTU" ]; then
		# A switch between them: each end on a veth pair to a bridge port whose MTU is
		# LAB_PAIR_SWITCH_MTU, the ends at 9000 (RoCE MTU 4096); veth drops what is larger than
		# its peer's MTU, as a switch port drops frames above its own.
		modprobe bridge || return 1
		$ip link add br0 type bridge && $ip link set br0 up || return 1
		$ip link add va type veth peer name pa && $ip link add vb type veth peer name pb || return 1
		for p in pa pb; do
			$ip link set "$p" mtu "$LAB_PAIR_SWITCH_MTU" && $ip link set "$p" master br0 && $ip link set "$p" up || return 1
		done
		$ip link set va mtu 9000 && $ip link set vb mtu 9000 || return 1
	else
		$ip link add va type veth peer name vb || return 1
	fi
	for k in all/rp_filter va/rp_filter vb/rp_filter; do echo 0 >"/proc/sys/net/ipv4/conf/$k" || return 1; done
	for d in va vb; do
		echo 1 >"/proc/sys/net/ipv4/conf/$d/accept_local" && echo 1 >"/proc/sys/net/ipv4/conf/$d/arp_ignore" || return 1
	done
	$ip addr add 192.0.2.1/24 dev va && $ip addr add 192.0.2.2/24 dev vb || return 1
	if [ -n "$LAB_PAIR_MTU" ]; then $ip link set vb mtu "$LAB_PAIR_MTU" || return 1; fi
	$ip link set va up && $ip link set vb up || return 1
	# What leaves through vb (or va) is routed by its own table to the far end; the local table
	# comes after, so that a packet arriving on va for 192.0.2.1 is still delivered.
	$ip rule add pref 100 lookup local && $ip rule del pref 0 || return 1
	$ip rule add pref 10 oif vb lookup 10 && $ip rule add pref 11 oif va lookup 11 || return 1
	$ip route add 192.0.2.1 dev vb src 192.0.2.2 table 10 && $ip route add 192.0.2.2 dev va src 192.0.2.1 table 11 || return 1
	rdma link add rxa type rxe netdev va && rdma link add rxb type rxe netdev vb || return 1
	lab_wait 30 "rxa/1 and rxb/1 ACTIVE with RoCE v2 GIDs" lab_pair_ready || return 1
	if [ -n "$LAB_PAIR_LOSS" ]; then
		# The ends know each other's MAC (static neighbours), as after a ping before the wire went
		# bad: the QPs connect, and the loss shows as writes that are never acknowledged.
		$ip neigh replace 192.0.2.1 lladdr "$(cat /sys/class/net/va/address)" dev vb nud permanent &&
			$ip neigh replace 192.0.2.2 lladdr "$(cat /sys/class/net/vb/address)" dev va nud permanent || return 1
		modprobe sch_netem || return 1
		/usr/bin/tc qdisc add dev va root netem loss "$LAB_PAIR_LOSS%" && /usr/bin/tc qdisc add dev vb root netem loss "$LAB_PAIR_LOSS%" || return 1
	fi
	return 0
}

guest_verify() {
	lab_pair_ready && [ "$(/usr/bin/ip route get 192.0.2.1 oif vb | head -1 | grep -c 'dev vb')" = 1 ] &&
		{ [ -z "$LAB_PAIR_SWITCH_MTU" ] || [ "$(cat /sys/class/net/pa/mtu)" = "$LAB_PAIR_SWITCH_MTU" ]; }
}
