# no-provider: rxe0 and /dev/infiniband/uverbs0 are there, but libibverbs has no user-space provider
# for rxe (librxe-rdmav34.so deleted), so ibv_get_device_list() finds no device.
LAB_PROVIDER=/usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so

guest_setup() {
	rm -f "$LAB_PROVIDER"
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ -e /dev/infiniband/uverbs0 ] && [ ! -e "$LAB_PROVIDER" ] &&
		! ibv_devices 2>/dev/null | grep -q rxe0
}
