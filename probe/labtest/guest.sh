#!/bin/sh
# Guest script for the verbs probe lab test: runs inside the rxe-vm.sh guest
# (rxe0 on eth0, 10.0.2.15) with the labtest binary copied to /usr/bin.
#   CGO_ENABLED=0 go build -o labtest ./probe/labtest
#   WORKDIR=/tmp/rxe-verbs /work/shared/lab/rxe-vm.sh probe/labtest/guest.sh labtest
rdma link show
ibv_devinfo -d rxe0 | grep -E 'fw_ver|state|active_mtu|link_layer'
cat /sys/class/infiniband/rxe0/ports/1/gid_attrs/types/1 /sys/class/infiniband/rxe0/ports/1/gids/1
labtest -dev rxe0 -port 1 ${LABTEST_ARGS:-}
