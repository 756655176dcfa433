# healthy: rxe0 on eth0, port ACTIVE, GIDs populated, no PCIe or AER fault. The root port advertises
# exactly what the virtio endpoint trains at (2.5 GT/s x1), so no link looks degraded.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"

guest_verify() {
	lab_port_is rxe0 1 4 && [ -e /dev/infiniband/uverbs0 ]
}
