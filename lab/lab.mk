# lab.mk: targets that run rdmadiag against a real kernel RDMA stack (Soft-RoCE in a QEMU guest).
# Included by the top-level Makefile, which provides `build` (bin/rdmadiag, CGO_ENABLED=0).
#
#   make e2e            every scenario: `rdmadiag check --format json` in the guest (or the
#                       expectation's own "payload", e.g. probe-lab's labtest), asserted by
#                       lab/e2e (go test -tags lab) against lab/e2e/expect/<scenario>.json
#   make fixtures       every scenario: `rdmadiag record --redact` in the guest, stored in text
#                       form (lab/totxtar) as fixtures/sysfs/<scenario>/snapshot.txtar with a README.md
#   make lab-selftest   the e2e mechanism on the guest's own `rdma -j link` (needs no rdmadiag)
#   make lab-facts      lab/payloads/lab-facts in every scenario; output under lab/out/facts/
#   make e2e-speed      the whole-run benchmark (lab/payloads/speed in one healthy guest): rdmadiag
#                       check next to ibv_devinfo -v and rdma -j res show qp on 1 and 8 devices, with
#                       and without 20,000 QPs; prints the table and fails when a target is missed
#
# LAB_SCENARIOS="aer port-down" limits any of them to some scenarios. Outside CI a machine that
# cannot run the lab skips e2e with a message; with CI=true it fails.

# Not in the default set: probe-bandwidth, the strict bandwidth comparison, too close to its limit
# under emulation for CI (`make e2e-bandwidth`); devlink-netdevsim and ethtool-netdevsim, which
# first build netdevsim.ko out of tree from Debian's kernel source (`make e2e-netdevsim`; `make
# e2e-devlink` runs the first alone). Their recorded replies are replayed by `make test`
# (internal/snapshot/devlink_lab_test.go, internal/snapshot/ethtool_lab_test.go and the goldens of
# fixtures/sysfs/{devlink,ethtool}-netdevsim), so the devlink and ethtool decoders meet real kernel
# bytes in every CI run anyway.
LAB_OPTIONAL ?= probe-bandwidth pair-bandwidth pair-probe-mtu devlink-netdevsim ethtool-netdevsim
LAB_SCENARIOS ?= $(filter-out $(LAB_OPTIONAL),$(sort $(basename $(notdir $(wildcard lab/scenarios/*.sh)))))
LAB_GO_TEST = go test -tags lab -count=1 -timeout 60m -v -run 'TestLab$$|TestLab/' ./lab/e2e/

.PHONY: e2e e2e-bandwidth e2e-devlink e2e-netdevsim e2e-speed fixtures fixtures-netdevsim netdevsim-ko lab-selftest lab-facts

e2e: build lab-bins
	LAB_E2E_SCENARIOS="$(LAB_SCENARIOS)" $(LAB_GO_TEST)

e2e-bandwidth: build lab-bins
	LAB_E2E_SCENARIOS="probe-bandwidth pair-bandwidth" $(LAB_GO_TEST)

# The guest kernel must be unpacked (any scenario run does it) before netdevsim.ko can be built;
# lab/netdevsim-ko.sh then builds it and fetches the guest's ethtool into $(LAB_CACHE)/netdevsim
# (apt as root the first time, cached afterwards).
LAB_CACHE_DIR = $(or $(LAB_CACHE),lab/cache)
NETDEVSIM_SCENARIOS = devlink-netdevsim ethtool-netdevsim
netdevsim-ko:
	test -d $(LAB_CACHE_DIR)/root/lib/modules || LAB_QUIET=1 lab/vm.sh -s healthy -o lab/out/netdevsim-prep
	lab/netdevsim-ko.sh

e2e-devlink: build lab-bins netdevsim-ko
	LAB_E2E_SCENARIOS=devlink-netdevsim $(LAB_GO_TEST)

e2e-netdevsim: build lab-bins netdevsim-ko
	LAB_E2E_SCENARIOS="$(NETDEVSIM_SCENARIOS)" $(LAB_GO_TEST)

lab-selftest:
	LAB_E2E_SCENARIOS="$(LAB_SCENARIOS)" LAB_E2E_PAYLOAD='rdma -j link || echo []' LAB_E2E_FILES= \
	  LAB_E2E_EXPECT=testdata/rdma-link LAB_E2E_OUT=../out/selftest $(LAB_GO_TEST)

# probe-lab's guest is healthy's; what it tests is the probes, not a state worth a fixture.
# stalled-read's FIFO is a state to survive, not to record.
LAB_NO_FIXTURE ?= probe-lab probe-bandwidth devlink-netdevsim stalled-read pair-probe pair-probe-loss pair-probe-mtu pair-fleet pair-bandwidth watch

fixtures: build lab-bins
	lab/fixtures.sh $(filter-out $(LAB_NO_FIXTURE),$(LAB_SCENARIOS))

# The netdevsim scenarios' fixtures, after building netdevsim.ko: ethtool-netdevsim, and
# devlink-netdevsim too with LAB_NO_FIXTURE= (it stays listed above so that re-recording it is
# asked for, not a side effect).
fixtures-netdevsim: build lab-bins netdevsim-ko
	lab/fixtures.sh $(filter-out $(LAB_NO_FIXTURE),$(NETDEVSIM_SCENARIOS))

lab-facts:
	@for s in $(LAB_SCENARIOS); do \
	  LAB_QUIET=1 lab/vm.sh -s $$s -o lab/out/facts/$$s -f lab/payloads/lab-facts -- lab-facts || exit 1; \
	done

# One boot of the healthy scenario running lab/payloads/speed, with the lab's usual 1 GiB: with
# more, firmware.limits_probe's QP at rxe's reported limits is granted enough kernel memory for
# the guest's OOM killer to end the run (seen with 3 and 4 GiB, old and new builds alike), and
# 20,000 small QPs fit in 1 GiB. dummy.ko is
# taken from the unpacked guest kernel (any scenario run unpacks it) because the base initramfs
# carries only the RDMA modules. The table is printed again on the host from the samples, and its
# exit status says whether every target was met in every round. SPEED_QPS, SPEED_ROUNDS and
# SPEED_PROFILE are passed to the payload; SPEED_BEFORE=FILE (a build named rdmadiag-before) is
# timed next to bin/rdmadiag in the idle configurations.
SPEED_LAB_CACHE = $(or $(LAB_CACHE),lab/cache)
SPEED_OUT ?= lab/out/speed
e2e-speed: build lab-bins
	CGO_ENABLED=0 go build -o bin/labspeed ./lab/speed
	test -d $(SPEED_LAB_CACHE)/root/lib/modules || LAB_QUIET=1 lab/vm.sh -s healthy -o lab/out/speed-prep
	cp $$(ls $(SPEED_LAB_CACHE)/root/lib/modules/*/kernel/drivers/net/dummy.ko | head -1) bin/dummy.ko
	LAB_QUIET=1 LAB_MEM=$${LAB_MEM:-1024} LAB_TIMEOUT=$${LAB_TIMEOUT:-1800} lab/vm.sh -s healthy -o $(SPEED_OUT) \
	  -f bin/rdmadiag -f bin/labqp -f bin/labspeed -f bin/dummy.ko -f lab/payloads/speed $(if $(SPEED_BEFORE),-f $(SPEED_BEFORE)) -- \
	  'SPEED_QPS=$(or $(SPEED_QPS),20000) SPEED_ROUNDS=$(or $(SPEED_ROUNDS),3) SPEED_PROFILE=$(or $(SPEED_PROFILE),5) SPEED_PROBES=$(or $(SPEED_PROBES),1) speed'
	@test "$$(cat $(SPEED_OUT)/out/payload.rc)" = 0 || { tail -n 20 $(SPEED_OUT)/out/payload.stdout $(SPEED_OUT)/out/payload.stderr; exit 1; }
	bin/labspeed table $(SPEED_OUT)/out/speed.jsonl
