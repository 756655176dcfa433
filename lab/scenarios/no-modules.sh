# no-modules: no RDMA kernel module is loaded at all (ib_core absent); the modules exist on disk.
NO_MODULES=1

guest_verify() {
	! grep -q '^ib_core ' /proc/modules && [ ! -e /sys/class/infiniband ]
}
