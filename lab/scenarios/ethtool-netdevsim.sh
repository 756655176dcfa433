# ethtool-netdevsim: healthy (rxe0 ACTIVE on eth0) plus a second RoCE port, rxe1, on a netdevsim
# port netdev whose driver answers ethtool netlink FEC_GET, so that port.link_quality and
# port.transceiver read what a real kernel sends for a driver with FEC but without FEC statistics
# or module EEPROM access.
#
# Linux 6.1's netdevsim (drivers/net/netdevsim/ethtool.c) implements get_fecparam and
# set_fecparam (FEC_SET: the requested mode becomes the active one), pause parameters and pause
# statistics, coalescing, rings and channels; it has no get_fec_stats (FEC_GET with
# ETHTOOL_FLAG_STATS returns the statistics nest with empty arrays, net/ethtool/fec.c), no
# get_module_info/get_module_eeprom(_by_page) (MODULE_EEPROM_GET answers EOPNOTSUPP,
# net/ethtool/eeprom.c), no link settings and no `ethtool -S` strings. The FEC is set to RS with
# Debian 12's ethtool (netlink FEC_SET). The netdev has carrier from its creation (netdevsim never
# switches it), so rxe1 comes up ACTIVE once the netdev is up; its IPv4 address is from
# TEST-NET-1 (RFC 5737) and reaches nothing.
# Debian's kernel has no netdevsim and the guest no ethtool: run lab/netdevsim-ko.sh first.
LAB_FILES="${LAB_CACHE:-${LAB:-.}/cache}/netdevsim/netdevsim.ko ${LAB_CACHE:-${LAB:-.}/cache}/netdevsim/ethtool"

# nsim_netdev: the name of netdevsim1's port netdev (eth1 in this guest).
nsim_netdev() { ls /sys/bus/netdevsim/devices/netdevsim1/net/ 2>/dev/null | head -1; }

guest_setup() {
	modprobe psample || return 1
	insmod /usr/bin/netdevsim.ko || return 1
	echo "1 1" >/sys/bus/netdevsim/new_device || return 1
	lab_wait 30 "netdevsim1 port netdev registered" test -n "$(nsim_netdev)" || return 1
	nd=$(nsim_netdev)
	ip link set "$nd" up || return 1
	ip addr add 192.0.2.1/24 dev "$nd" || return 1
	ethtool --set-fec "$nd" encoding rs || return 1
	lab_log "ethtool --show-fec $nd: $(ethtool --show-fec "$nd" 2>&1 | tr '\n' ';')"
	lab_log "ethtool -m $nd: $(ethtool -m "$nd" 2>&1 | tr '\n' ';')"
	rdma link add rxe1 type rxe netdev "$nd" || return 1
	lab_wait 30 "rxe1/1 ACTIVE" lab_port_is rxe1 1 4 || return 1
	lab_wait 30 "rxe1/1 RoCE v2 GID of 192.0.2.1" lab_gid_ready rxe1 1 1
}

guest_verify() {
	nd=$(nsim_netdev)
	[ -n "$nd" ] && lab_port_is rxe0 1 4 && lab_port_is rxe1 1 4 && [ -e /dev/infiniband/uverbs1 ] &&
		[ "$(cat /sys/class/infiniband/rxe1/ports/1/gid_attrs/ndevs/1)" = "$nd" ] &&
		ethtool --show-fec "$nd" | grep -q '^Active FEC encoding: RS' &&
		! ethtool -m "$nd" >/dev/null 2>&1
}
