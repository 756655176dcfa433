# no-device: the RDMA modules (ib_core, ib_uverbs, rdma_rxe, rdma_ucm, ib_umad) are loaded but no
# RDMA device is registered: /sys/class/infiniband exists and is empty.
NO_RXE=1

guest_verify() {
	grep -q '^ib_core ' /proc/modules && grep -q '^rdma_rxe ' /proc/modules &&
		[ -d /sys/class/infiniband ] && [ -z "$(ls /sys/class/infiniband)" ]
}
