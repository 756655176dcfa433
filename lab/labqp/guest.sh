#!/bin/sh
# guest.sh: payload for the lab guest (lab/vm.sh) that records the qp/cq fixtures and runs the
# rdmadiag-versus-iproute2 comparison. Needs labqp and rdmadiag copied into the guest:
#
#   CGO_ENABLED=0 go build -o /tmp/labqp ./lab/labqp
#   CGO_ENABLED=0 go build -o /tmp/rdmadiag ./cmd/rdmadiag
#   lab/vm.sh -s healthy -o /tmp/lab-qp -f /tmp/labqp -f /tmp/rdmadiag -f lab/labqp/guest.sh -- guest.sh small
#   LAB_MEM=3072 LAB_TIMEOUT=900 lab/vm.sh -s healthy -o /tmp/lab-qp-big -f /tmp/labqp -f /tmp/rdmadiag \
#       -f lab/labqp/guest.sh -- guest.sh big
#
# small: 4 QPs in RTS, 3 in ERR, 1 in INIT on one CQ of depth 128 -> qp-err.tar.gz, cq-depth.tar.gz
# big N: N QPs (default 20000; rxe on 6.1 has max_qp 1048560, so it cannot be exhausted in a
#        guest) -> compare.json: rdmadiag check --only qp,cq against rdma res show qp -j,
#        interleaved runs, as a ratio of median wall times and of peak RSS
set -u
mode=${1:-small}
start_labqp() { # start_labqp ARGS...: run labqp in the background and wait until it holds its QPs
	rm -f /tmp/ready
	labqp -dev rxe0 -port 1 -ready /tmp/ready "$@" >/out/labqp.log 2>&1 &
	labqp_pid=$!
	i=0
	while [ ! -e /tmp/ready ]; do
		i=$((i + 1))
		if [ $i -gt 1200 ] || ! kill -0 $labqp_pid 2>/dev/null; then
			echo "labqp did not get ready"; cat /out/labqp.log; return 1
		fi
		sleep 0.1
	done
	cat /out/labqp.log
}
stop_labqp() { kill $labqp_pid; wait $labqp_pid; }

case $mode in
small)
	start_labqp -rts 4 -err 3 -init 1 -cq-depth 128 || exit 1
	rdma res show qp >/out/rdma-res-qp.txt
	rdma res show cq >/out/rdma-res-cq.txt
	ibv_devinfo -v -d rxe0 >/out/ibv_devinfo.txt
	rdmadiag record --redact -o /out/qp-err.tar.gz \
		--description "Lab (QEMU, Debian 12 kernel 6.1, rxe0): labqp holds 4 RC QPs in RTS, 3 moved to ERR, 1 in INIT, all on one CQ of depth 128. Recorded with rdmadiag record --redact while it held them."
	rdmadiag record --redact -o /out/cq-depth.tar.gz \
		--description "Lab (QEMU, Debian 12 kernel 6.1, rxe0): labqp holds 8 RC QPs on one CQ of depth 128; judged with --wr-concurrency 256. Recorded with rdmadiag record --redact while it held them."
	rdmadiag check --only qp,cq --format json >/out/check-qp.json
	rdmadiag check --only qp,cq --wr-concurrency 256 --format json >/out/check-cq.json
	stop_labqp
	;;
big)
	# Each user QP maps its send and receive queues: two mappings per QP, beyond the default
	# vm.max_map_count of 65530 at this scale.
	echo 1048576 >/proc/sys/vm/max_map_count
	n=${2:-20000}
	start_labqp -reset "$n" -rts 2 -err 1 -cq-depth 4096 || exit 1
	rdma res show | tee /out/rdma-res.txt
	nproc >/out/nproc.txt
	labqp -compare -runs 7 -a "rdma res show qp -j" -b "rdmadiag check --only qp,cq --format json --no-probe" >/out/compare.json
	cat /out/compare.json
	rdmadiag check --only qp,cq --no-probe --format json >/out/check-big.json
	stop_labqp
	;;
esac
