# probe-lab: the verbs probes against the healthy guest's rxe0, driven by lab/labtest: every probe
# passes; over 7 rounds of one probe run next to one ib_write_bw run (same message size, writes in
# flight and iterations, every write signaled, both in MiB/s), the median of the rounds' ratios is
# at least 0.5 (labtest -bw-min-ratio 0.5; bandwidth within 20% of ib_write_bw is asserted by probe-bandwidth,
# `make e2e-bandwidth`); 20 probe runs cut short at different stages (injected error, deadline, Ctrl-C) leave no
# QP, CQ, MR or PD of the process behind according to `rdma res show` (matched by the process's
# thread ids: the kernel records the creating thread) and no uverbs fd open. The payload (set in
# lab/e2e/expect/probe-lab.json) prints labtest's JSON summary; its log goes to payload.stderr.
: "${RP_SPEED:=2_5}" "${RP_WIDTH:=1}"
LAB_FILES="${LAB_BIN:-${LAB:-.}/../bin}/labtest"

guest_verify() {
	lab_port_is rxe0 1 4 && [ -e /dev/infiniband/uverbs0 ] && command -v ib_write_bw >/dev/null
}
