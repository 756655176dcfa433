# no-uverbs: rxe0 is registered and ACTIVE, but user-space verbs are impossible because the uverbs
# character device is missing (as in a container started without /dev/infiniband).
#
# Unloading ib_uverbs is not possible on this kernel: rdma_rxe itself depends on ib_uverbs
# (modules.dep: "rdma_rxe.ko: ib_uverbs.ko ib_core.ko ..."), so "rmmod ib_uverbs" fails with
# "Resource temporarily unavailable" (in use by rdma_ucm and rdma_rxe). The setup still tries (and
# logs the answer), leaves every module loaded, and removes the device node, which is the state a
# diagnosis has to recognise: kernel side complete, /dev/infiniband/uverbs0 absent.

guest_setup() {
	if rmmod ib_uverbs >>/out/lab/steps.log 2>&1; then
		lab_log "rmmod ib_uverbs succeeded"
	else
		lab_log "rmmod ib_uverbs refused (rdma_rxe holds it); removing /dev/infiniband/uverbs0 instead"
	fi
	rm -f /dev/infiniband/uverbs*
}

guest_verify() {
	lab_port_is rxe0 1 4 && [ ! -e /dev/infiniband/uverbs0 ] && grep -q '^ib_uverbs ' /proc/modules
}
