# qp-err: labqp holds 4 RC QPs in RTS, 3 in ERR and 1 in INIT on one CQ of depth 128 (rxe grants
# 255) while the payload runs; the kernel's GSI QP1 stays in RTS.
LAB_FILES="${LAB_BIN:-${LAB:-.}/../bin}/labqp"

guest_setup() {
	labqp -dev rxe0 -rts 4 -err 3 -init 1 -cq-depth 128 -ready /tmp/qp.ready >/out/lab/labqp.log 2>&1 &
	lab_wait 30 "labqp ready" test -e /tmp/qp.ready
}

guest_verify() {
	rdma res show qp | grep -q 'state ERR' && rdma res show qp | grep -q 'state RTS'
}
