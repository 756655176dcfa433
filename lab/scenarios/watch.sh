# watch: rdmadiag watch on the healthy guest while its RDMA stack changes under it (the payload,
# lab/payloads/watch-lab, sets eth0 down and up, restarts watch mid-fault, writes an mlx5 fatal
# health line into the kernel log and deletes rxe0), asserting that each condition sets and
# clears in time: port down seen within 2 s of the change, a fatal log line within 1 s, SIGTERM
# obeyed within 1 s, the condition kept across a restart.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
LAB_FILES="${LAB:-.}/payloads/watch-lab"

guest_verify() {
	lab_port_is rxe0 1 4 && command -v wget >/dev/null
}
