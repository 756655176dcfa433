#!/bin/sh
# Guest script for the verbs probe lab test. It runs inside the rxe-vm.sh
# guest (rxe0 on eth0, 10.0.2.15) with the labtest binary in /usr/bin:
#
#   CGO_ENABLED=0 go build -o /tmp/labtest/labtest ./probe/labtest
#   # ib_write_bw needs libpci.so.3, which rxe-vm.sh does not fetch yet:
#   (cd /tmp/labtest && apt-get download libpci3 && dpkg -x libpci3_*.deb x &&
#    cp -L x/usr/lib/x86_64-linux-gnu/libpci.so.3 .)
#   WORKDIR=/tmp/rxe-verbs /work/shared/lab/rxe-vm.sh "$PWD/probe/labtest/guest.sh" \
#       /tmp/labtest/labtest /tmp/labtest/libpci.so.3
#
# LABTEST_ARGS passes extra flags (e.g. -perftest=false -cleanup-runs 0).
if [ -f /usr/bin/libpci.so.3 ]; then cp /usr/bin/libpci.so.3 /usr/lib/x86_64-linux-gnu/; fi
rdma link show
ibv_devinfo -d rxe0 | grep -E 'fw_ver|state|active_mtu|link_layer'
ls /sys/class/infiniband/rxe0/
cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1 /sys/class/infiniband/rxe0/ports/1/gids/1
labtest -dev rxe0 -port 1 ${LABTEST_ARGS:-}
