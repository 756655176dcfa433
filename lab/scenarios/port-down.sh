# port-down: the netdev under rxe0 is administratively down, so rxe0/1 goes DOWN (asynchronously).

guest_setup() {
	ip link set eth0 down
	lab_wait 30 "rxe0/1 DOWN" lab_port_is rxe0 1 1
}

guest_verify() {
	lab_port_is rxe0 1 1
}
