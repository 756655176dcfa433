# cq-depth-rxe: labqp holds 8 RC QPs in RTS on one CQ requested with depth 128, which rxe on 6.1 grants
# as 255; judged with --wr-concurrency 256 it must be critical with a recommended depth of 512.
LAB_FILES="${LAB_BIN:-${LAB:-.}/../bin}/labqp"

guest_setup() {
	labqp -dev rxe0 -rts 8 -cq-depth 128 -ready /tmp/qp.ready >/out/lab/labqp.log 2>&1 &
	lab_wait 30 "labqp ready" test -e /tmp/qp.ready
}

guest_verify() {
	rdma res show cq | grep -q 'cqe 255 .*comm labqp'
}
