# no-uverbs: rxe0 is registered and ACTIVE, but user-space verbs are impossible because the uverbs
# character device is missing (as in a container started without /dev/infiniband).
#
# Unloading ib_uverbs is not possible on this kernel: rdma_rxe itself depends on ib_uverbs
# (modules.dep: "rdma_rxe.ko: ib_uverbs.ko ib_core.ko ..."), so "rmmod rdma_ucm ib_uverbs" fails with
# "in use". The setup still tries it (and logs the answer) and then removes the device node, which is
# the state a diagnosis has to recognise: kernel side present, /dev/infiniband/uverbs0 absent.

guest_setup() {
	rmmod rdma_ucm >>/out/lab/steps.log 2>&1 || true
	if rmmod ib_uverbs >>/out/lab/steps.log 2>&1; then
		lab_log "rmmod ib_uverbs succeeded"
	else
		lab_log "rmmod ib_uverbs refused (rdma_rxe holds it); removing /dev/infiniband/uverbs0 instead"
	fi
	rm -f /dev/infiniband/uverbs*
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ ! -e /dev/infiniband/uverbs0 ]
}
