# devlink-netdevsim: healthy (rxe0 ACTIVE) plus one netdevsim devlink instance,
# netdevsim/netdevsim1, so that the devlink client reads what a real kernel sends: the family,
# the instance dump, devlink info (driver "netdevsim") and the health reporters "empty" and
# "dummy", whose diagnose writes every fmsg value type (drivers/net/netdevsim/health.c).
# Debian's kernel has no netdevsim: run lab/netdevsim-ko.sh first, which builds it from Debian's
# linux-source-6.1 for the guest kernel.
LAB_FILES="${LAB_CACHE:-${LAB:-.}/cache}/netdevsim/netdevsim.ko"

guest_setup() {
	modprobe psample || return 1
	insmod /usr/bin/netdevsim.ko || return 1
	echo "1 1" >/sys/bus/netdevsim/new_device || return 1
	lab_wait 30 "netdevsim1 registered" test -e /sys/bus/netdevsim/devices/netdevsim1
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ -e /dev/infiniband/uverbs0 ] && [ -e /sys/bus/netdevsim/devices/netdevsim1 ]
}
