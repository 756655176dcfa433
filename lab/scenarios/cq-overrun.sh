# cq-overrun: labqp overruns a CQ for real, as an application that under-sizes its CQ does: one
# self-connected RC QP completes 32 receives and 32 signaled sends into a CQ of 1 entry that is
# never polled. rxe raises IBV_EVENT_CQ_ERR for every lost completion and the responder moves the
# QP to ERR (rxe_resp.c: a failed completion post is a CQ overflow error). Two healthy RTS QPs on
# a CQ of 128 stay next to it. rxe on 6.1 logs nothing on an overrun, so the evidence is the QP in
# ERR and the CQ of depth 1 against the declared concurrency.
LAB_FILES="${LAB_BIN:-${LAB:-.}/../bin}/labqp"

guest_setup() {
	labqp -dev rxe0 -rts 2 -cq-depth 128 -overrun 32 -overrun-cq 1 -ready /tmp/qp.ready >/out/lab/labqp.log 2>&1 &
	lab_wait 30 "labqp ready" test -e /tmp/qp.ready
	lab_wait 30 "overrun QP in ERR" sh -c "rdma res show qp | grep -q 'state ERR'"
}

guest_verify() {
	rdma res show qp | grep -q 'state ERR' && rdma res show cq | grep -q 'cqe 1 .*comm labqp'
}
