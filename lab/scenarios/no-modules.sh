# no-modules: no RDMA kernel module is loaded at all (ib_core absent); the modules exist on disk.
NO_MODULES=1

guest_verify() {
	! grep -q '^ib_core ' /proc/modules && [ ! -e /sys/class/infiniband ]
}

guest_setup() {
	# Let the kernel autoload modules as a distribution does (modprobe_path defaults to
	# /sbin/modprobe, which this initramfs lacks), so that a check that would load ib_core
	# (opening an RDMA netlink socket does: MODULE_ALIAS_NET_PF_PROTO in netlink.c) is caught.
	for m in /sbin/modprobe /usr/sbin/modprobe /bin/modprobe; do
		if [ -x "$m" ]; then
			echo "$m" >/proc/sys/kernel/modprobe
			return 0
		fi
	done
	return 1
}
