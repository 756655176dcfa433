# rdmadiag: build, test, lint, demo. `make test` is what CI and a new user run; the QEMU lab
# targets (e2e, fixtures) come from lab/lab.mk.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)
# The build date (UTC); SOURCE_DATE_EPOCH fixes it for reproducible builds (make package sets it
# to the commit's time). ":=" evaluates each once per make run.
DATE      ?= $(shell date -u -d "@$${SOURCE_DATE_EPOCH:-$$(date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
VERSION   := $(VERSION)
COMMIT    := $(COMMIT)
DATE      := $(DATE)
LDFLAGS   := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
BIN       := bin/rdmadiag
STATICCHECK_VERSION := v0.8.2

.PHONY: all build check-linkage test test-slow soak lint fmt-check vet staticcheck demo regen golden fuzz bench clean lab-bins image e2e-slurm captures \
	docs install package test-package e2e-prometheus

all: lint test

# No cgo (CGO_ENABLED=0): no C toolchain or rdma-core headers at build time, and the binary needs
# nothing on a host but the C library. It is not a static binary: the verbs probes dlopen
# libibverbs at run time (internal/verbs, through purego), which needs the system's dynamic loader,
# so the binary names glibc's libc, libdl and libpthread (without symbol versions: any glibc).
build:
	@echo ">> building $(BIN)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rdmadiag
	@$(MAKE) --no-print-directory check-linkage

# Refuse a binary that needs any shared library but those three (a cgo build, a new dependency
# linking C code). readelf is binutils'; without it the packaging test checks the same.
LINKAGE := libc.so.6 libdl.so.2 libpthread.so.0
check-linkage:
	@if command -v readelf >/dev/null; then \
	  libs=$$(LC_ALL=C readelf -d $(BIN) | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | xargs); \
	  test "$$libs" = "$(LINKAGE)" || { echo "$(BIN) needs [$$libs], want only [$(LINKAGE)]"; exit 1; }; \
	  if LC_ALL=C readelf -V $(BIN) | grep -q GLIBC_; then echo "$(BIN) needs versioned glibc symbols"; exit 1; fi; \
	fi

test:
	@echo ">> running unit, parser, golden and round-trip tests"
	$(GO) test -count=1 -timeout 30m ./...
	@echo ">> deployment files: manifests decoded strictly with the Kubernetes API types, systemd units"
	cd deploy && $(GO) test -count=1 ./...

# The tests that write every fixture again (recording each and judging the recording, redacting
# each, packing each back into text): minutes on two cores, so `make test` runs them on the
# sample internal/slowtest names and this target, which CI runs too, on every fixture.
SLOW_TESTS := ^(TestRoundTripRoot|TestRoundTripSnapshot|TestRedactKeepsVerdict|TestPackTxtarFixtures)$$
test-slow:
	@echo ">> round trips, redaction and text packing of every fixture"
	RDMADIAG_SLOW=1 $(GO) test -count=1 -timeout 30m -run '$(SLOW_TESTS)' ./cli ./internal/snapshot

# An hour of watch's default schedule in compressed time over 8 devices (about 40 s): resident
# size under 30 MiB and not growing, SIGTERM within 1 s (cmd/rdmadiag/soak_test.go).
soak:
	@echo ">> watch soak: an hour of polls in compressed time"
	RDMADIAG_SOAK=1 $(GO) test -count=1 -v -run '^TestSoak$$' ./cmd/rdmadiag

lint: fmt-check vet staticcheck

fmt-check:
	@echo ">> checking gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo ">> go vet"
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...
	cd packaging && $(GO) vet ./...

staticcheck:
	@echo ">> staticcheck $(STATICCHECK_VERSION)"
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd deploy && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd packaging && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The main job: this host when it has RDMA devices, the embedded demo snapshot otherwise.
# It prints the exit code, which is the verdict (a make target cannot fail on 1-3 and still be
# the first thing a new user runs).
demo: build
	@echo ">> ./$(BIN) demo"
	@./$(BIN) demo; code=$$?; \
	echo ">> exit code $$code (0 healthy, 1 warnings, 2 critical, 3 could not check: see \"Exit codes\" in README.md)"; \
	test $$code -le 3

# Rewrite everything generated from the code, then review `git diff` before committing: the
# synthetic fixtures whose generator is a test calling checktest.Generated (found by name, as
# `make fuzz` finds its targets, so a new generator needs no Makefile change; each runs with
# -gen, the flag checktest gives every test binary that imports it), then the goldens of every
# fixture. `make golden` is the same.
regen:
	@git grep -l 'checktest.Generated(' -- '*_test.go' | xargs -n1 dirname | sort -u | while read -r d; do \
	  run=$$(git grep -l 'checktest.Generated(' -- "$$d/*_test.go" | grep "^$$d/[^/]*$$" | \
	    xargs sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' | paste -sd'|'); \
	  echo ">> generate ./$$d ($$run)"; \
	  $(GO) test "./$$d" -count=1 -run "^($$run)\$$" -gen || exit 1; \
	done
	@echo ">> goldens of every fixture"
	$(GO) test ./cli -count=1 -run TestGolden -update

golden: regen

# Every fuzz target of the repository, found by name: a new decoder's target runs without a
# Makefile change. FUZZTIME=2m make fuzz for a longer run.
FUZZTIME ?= 20s
fuzz:
	@git grep -l '^func Fuzz' -- '*_test.go' | sort | while read -r f; do \
	  d=./$$(dirname "$$f"); \
	  for fn in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$f"); do \
	    echo ">> fuzz $$d $$fn ($(FUZZTIME))"; \
	    $(GO) test "$$d" -run XXX -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) || exit 1; \
	  done; \
	done

bench:
	$(GO) test -run XXX -bench . -benchmem ./internal/nldev/... ./checks/...

clean:
	rm -rf bin build lab/out

# --- install and packages ------------------------------------------------------------------
# The manual page and the shell completions are generated from the built binary's commands.
DOCS := build/docs
docs: build
	@echo ">> manual page and shell completions in $(DOCS)"
	@mkdir -p $(DOCS)
	./$(BIN) man > $(DOCS)/rdmadiag.1
	./$(BIN) completion bash > $(DOCS)/rdmadiag.bash
	./$(BIN) completion zsh > $(DOCS)/_rdmadiag
	./$(BIN) completion fish > $(DOCS)/rdmadiag.fish

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, the manual page, bash, zsh and fish
# completions, the Slurm health check, the systemd service and timer (not enabled) and the
# examples (the site plugins among them). The packages are this tree with PREFIX=/usr, and an
# empty /etc/rdmadiag/checks.d (packaging/nfpm.yaml), which make install leaves alone.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
SBINDIR    ?= $(PREFIX)/sbin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
DOCDIR     ?= $(DATADIR)/doc/rdmadiag
UNITDIR    ?= $(PREFIX)/lib/systemd/system
ZSHCOMPDIR ?= $(DATADIR)/zsh/site-functions
# deploy/ names the binary where a manual install puts it; installed copies name $(BINDIR).
BINPATH_SED := sed 's|/usr/local/bin/rdmadiag|$(BINDIR)/rdmadiag|g'
install: docs
	@echo ">> installing into $(DESTDIR)$(PREFIX)"
	install -D -m 0755 $(BIN) $(DESTDIR)$(BINDIR)/rdmadiag
	install -D -m 0644 $(DOCS)/rdmadiag.1 $(DESTDIR)$(MANDIR)/man1/rdmadiag.1
	install -D -m 0644 $(DOCS)/rdmadiag.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/rdmadiag
	install -D -m 0644 $(DOCS)/_rdmadiag $(DESTDIR)$(ZSHCOMPDIR)/_rdmadiag
	install -D -m 0644 $(DOCS)/rdmadiag.fish $(DESTDIR)$(DATADIR)/fish/vendor_completions.d/rdmadiag.fish
	install -D -m 0755 deploy/slurm/rdmadiag-healthcheck $(DESTDIR)$(SBINDIR)/rdmadiag-healthcheck
	install -d $(DESTDIR)$(UNITDIR) $(DESTDIR)$(DOCDIR)/examples/npd $(DESTDIR)$(DOCDIR)/examples/nhc \
	  $(DESTDIR)$(DOCDIR)/examples/kubernetes $(DESTDIR)$(DOCDIR)/examples/plugins
	for u in rdmadiag-textfile.service rdmadiag-textfile.timer rdmadiag-watch.service; do \
	  $(BINPATH_SED) deploy/systemd/$$u > $(DESTDIR)$(UNITDIR)/$$u && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; done
	install -m 0644 README.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/examples/*.json $(DESTDIR)$(DOCDIR)/examples/
	$(BINPATH_SED) deploy/npd/rdmadiag-plugin-monitor.json > $(DESTDIR)$(DOCDIR)/examples/npd/rdmadiag-plugin-monitor.json
	chmod 0644 $(DESTDIR)$(DOCDIR)/examples/npd/rdmadiag-plugin-monitor.json
	install -m 0644 deploy/nhc/rdmadiag.nhc $(DESTDIR)$(DOCDIR)/examples/nhc/
	install -m 0644 deploy/kubernetes/*.yaml $(DESTDIR)$(DOCDIR)/examples/kubernetes/
	install -m 0755 examples/plugins/ib-pkey.sh examples/plugins/rail-names.py $(DESTDIR)$(DOCDIR)/examples/plugins/

# make package: build/rdmadiag_<version>-1_<arch>.deb and build/rdmadiag-<version>-1.<arch>.rpm from
# the tree `make install PREFIX=/usr` stages, with nfpm (packaging/go.mod pins it; no rpm or dpkg
# tools needed). The package version is VERSION without its leading v, '-' turned into '+', and
# 0.0.0+git in front when it is no release number (a commit id). File times are the commit's. The
# architecture is the build machine's: the manual page is generated by running the binary.
PKGROOT        := build/pkgroot
PKG_ARCH       := $(shell $(GO) env GOARCH)
PKG_VERSION    ?= $(shell echo '$(VERSION)' | sed -e 's/^v//' -e 's/-/+/g' -e '/^[0-9][0-9]*\.[0-9]/!s/^/0.0.0+git/')
PKG_MAINTAINER ?= rdmadiag developers <https://github.com/rdmadiag/rdmadiag>
PKG_EPOCH      ?= $(shell git log -1 --format=%ct 2>/dev/null || date +%s)
package:
	rm -rf $(PKGROOT) build/rdmadiag_*.deb build/rdmadiag-*.rpm
	SOURCE_DATE_EPOCH=$(PKG_EPOCH) $(MAKE) --no-print-directory install DESTDIR=$(abspath $(PKGROOT)) PREFIX=/usr VERSION=$(VERSION)
	@echo ">> packaging $(PKG_VERSION) for $(PKG_ARCH)"
	cd packaging && for p in deb rpm; do \
	  SOURCE_DATE_EPOCH=$(PKG_EPOCH) PKGROOT=$(abspath $(PKGROOT)) GOARCH=$(PKG_ARCH) PKG_VERSION='$(PKG_VERSION)' \
	  PKG_MAINTAINER='$(PKG_MAINTAINER)' CGO_ENABLED=0 $(GO) tool nfpm package --config nfpm.yaml --packager $$p --target ../build/ || exit 1; done

# Installs the .deb into scratch roots (dpkg -x; dpkg --root as root) and runs the installed
# binary; unpacks the .rpm and runs it too. About half a minute once nfpm is compiled; without
# cgo, so that no C code (a zstd binding) is compiled for it.
test-package: package
	cd packaging && RDMADIAG_PKGDIR=$(abspath build) RDMADIAG_PKGROOT=$(abspath $(PKGROOT)) \
	  RDMADIAG_PKG_VERSION='$(PKG_VERSION)' CGO_ENABLED=0 $(GO) test -count=1 ./...

# Container images for deploy/kubernetes (deploy/container/Containerfile): the tool, and
# node-problem-detector with the tool as its plugin. Push them and set the manifests' image.
CONTAINER ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE     ?= registry.example.com/rdmadiag/rdmadiag
IMAGE_ARGS = --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE)
image:
	@test -n "$(CONTAINER)" || { echo "image: needs podman or docker"; exit 1; }
	$(CONTAINER) build -f deploy/container/Containerfile --target rdmadiag $(IMAGE_ARGS) -t $(IMAGE):$(VERSION) .
	$(CONTAINER) build -f deploy/container/Containerfile --target npd $(IMAGE_ARGS) -t $(IMAGE)-npd:$(VERSION) .

# deploy/slurm/rdmadiag-healthcheck as the HealthCheckProgram of a real one-node Slurm on localhost
# (Debian's slurm-wlm and munge, installed when missing; needs root, about a minute): the node
# drains on a critical snapshot, resumes on a healthy one, and a node drained by someone else stays.
# Then deploy/slurm/rdmadiag-pairs.sbatch under sbatch on six slurmds on localhost (about 25 s),
# the probe alone stood in for: fleet names the planted bad link, then the planted bad node.
e2e-slurm: build
	deploy/slurm/test/e2e-slurm.sh
	deploy/slurm/test/e2e-slurm-pairs.sh

# A real Prometheus server (Debian's prometheus package) scrapes a running `rdmadiag watch`
# and answers a query on what it scraped (internal/watch/prometheus_test.go).
e2e-prometheus:
	RDMADIAG_PROMETHEUS=1 $(GO) test -count=1 -run TestWatchPrometheusScrape -v ./internal/watch

# Fixtures from public captures of real machines (fixtures/captures/<name>/: ibstat, lspci, kernel
# logs quoted in bug reports) -> fixtures/sysfs/real-<name>/, then their goldens. CAPTURES="a b"
# for some of them. No QEMU, no root.
captures: build
	lab/captures.sh $(CAPTURES)
	$(GO) test ./cli -count=1 -run TestGolden -update

-include lab/lab.mk

# Helper programs the lab scenarios run in the guest (qp-err, cq-depth hold QPs and CQs;
# probe-lab runs the verbs probes against ib_write_bw).
lab-bins:
	CGO_ENABLED=0 $(GO) build -o bin/labqp ./lab/labqp
	CGO_ENABLED=0 $(GO) build -o bin/labtest ./lab/labtest
