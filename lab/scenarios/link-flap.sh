# link-flap: the guest NIC's link went down and came back four times within a few seconds, and
# rxe0/1 followed it each time; the port is ACTIVE again at the end.
#
# The flaps come from the emulated hardware: the QEMU monitor's `set_link n0 off|on` clears and
# sets the virtio-net link status bit and raises a config interrupt, virtio_net switches the
# carrier (netif_carrier_off/on: carrier_down_count and carrier_up_count grow), and rdma_rxe, told
# by NETDEV_CHANGE, logs "infiniband rxe0: set down" / "set active" and counts link_downed.
# virtio_net itself logs no link line. `ip link set eth0 down` would not do: it leaves the carrier
# alone, so only rxe would see it.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
LAB_FLAPS=4

# Runs on the host (bash), with the monitor socket as $1.
host_step_flap() {
	for _ in $(seq "$LAB_FLAPS"); do
		printf 'set_link n0 off\n' | socat -t 2 - "UNIX-CONNECT:$1"
		sleep 1
		printf 'set_link n0 on\n' | socat -t 2 - "UNIX-CONNECT:$1"
		sleep 1
	done
}

lab_flapped() { # the carrier went down LAB_FLAPS times and is up again, and rxe0/1 is ACTIVE
	[ "$(cat /sys/class/net/eth0/carrier_down_count)" -ge "$((down0 + LAB_FLAPS))" ] &&
		[ "$(cat /sys/class/net/eth0/carrier)" = 1 ] && lab_port_is rxe0 1 4
}

guest_setup() {
	down0=$(cat /sys/class/net/eth0/carrier_down_count) || return 1
	lab_host_step flap 60 "$LAB_FLAPS link flaps on eth0, rxe0/1 ACTIVE again" lab_flapped
}

guest_verify() {
	[ "$(cat /sys/class/net/eth0/carrier_down_count)" -ge "$LAB_FLAPS" ] && lab_port_is rxe0 1 4 &&
		[ "$(cat /sys/class/infiniband/rxe0/ports/1/hw_counters/link_downed)" -ge "$LAB_FLAPS" ]
}
