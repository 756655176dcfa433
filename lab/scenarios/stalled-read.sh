# stalled-read: the healthy guest with a read that never returns, as a firmware-backed sysfs read
# does on a wedged device: a FIFO with no writer is bind-mounted over rxe0's port rate file. The
# live run must still end by its --timeout, name the blocked read in the checks it cut short, and
# keep every other finding.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"

guest_setup() {
	mkfifo /tmp/stall && mount --bind /tmp/stall /sys/class/infiniband/rxe0/ports/1/rate
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ -p /sys/class/infiniband/rxe0/ports/1/rate ]
}
