# rdmadiag: build, test, lint, demo. `make test` is what CI and a new user run; the QEMU lab
# targets (e2e, fixtures) come from lab/lab.mk.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/rdmadiag
STATICCHECK_VERSION := v0.8.2

.PHONY: all build test lint fmt-check vet staticcheck demo regen golden fuzz bench clean lab-bins image e2e-slurm

all: lint test

build:
	@echo ">> building $(BIN)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rdmadiag

test:
	@echo ">> running unit, parser, golden and round-trip tests"
	$(GO) test -count=1 -timeout 30m ./...
	@echo ">> deployment files: manifests decoded strictly with the Kubernetes API types, systemd units"
	cd deploy && $(GO) test -count=1 ./...

lint: fmt-check vet staticcheck

fmt-check:
	@echo ">> checking gofmt"
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo ">> go vet"
	$(GO) vet ./...
	cd deploy && $(GO) vet ./...

staticcheck:
	@echo ">> staticcheck $(STATICCHECK_VERSION)"
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	cd deploy && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

# The main job: this host when it has RDMA devices, the embedded demo snapshot otherwise.
demo: build
	@echo ">> rdmadiag demo"
	./$(BIN) demo || test $$? -le 3

# Rewrite everything generated from the code, then review `git diff` before committing: the
# synthetic fixtures whose generator is a test calling checktest.Generated (found by name, as
# `make fuzz` finds its targets, so a new generator needs no Makefile change; each runs with its
# package's -gen flag), then the goldens of every fixture. `make golden` is the same.
regen:
	@git grep -l 'checktest.Generated(' -- '*_test.go' | xargs -n1 dirname | sort -u | while read -r d; do \
	  run=$$(git grep -l 'checktest.Generated(' -- "$$d/*_test.go" | grep "^$$d/[^/]*$$" | \
	    xargs sed -n 's/^func \(Test[A-Za-z0-9_]*\)(.*/\1/p' | paste -sd'|'); \
	  echo ">> generate ./$$d ($$run)"; \
	  $(GO) test "./$$d" -count=1 -run "^($$run)\$$" -gen || exit 1; \
	done
	@echo ">> goldens of every fixture"
	$(GO) test ./cmd/rdmadiag -count=1 -run TestGolden -update

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
	rm -rf bin lab/out

# Container images for deploy/kubernetes (deploy/container/Containerfile): the tool, and
# node-problem-detector with the tool as its plugin. Push them and set the manifests' image.
CONTAINER ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE     ?= registry.example.com/rdmadiag/rdmadiag
image:
	@test -n "$(CONTAINER)" || { echo "image: needs podman or docker"; exit 1; }
	$(CONTAINER) build -f deploy/container/Containerfile --target rdmadiag --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .
	$(CONTAINER) build -f deploy/container/Containerfile --target npd --build-arg VERSION=$(VERSION) -t $(IMAGE)-npd:$(VERSION) .

# deploy/slurm/rdmadiag-healthcheck as the HealthCheckProgram of a real one-node Slurm on localhost
# (Debian's slurm-wlm and munge, installed when missing; needs root, about a minute): the node
# drains on a critical snapshot, resumes on a healthy one, and a node drained by someone else stays.
e2e-slurm: build
	deploy/slurm/test/e2e-slurm.sh

-include lab/lab.mk

# Helper programs the lab scenarios run in the guest (qp-err, cq-depth hold QPs and CQs;
# probe-lab runs the verbs probes against ib_write_bw).
lab-bins:
	CGO_ENABLED=0 $(GO) build -o bin/labqp ./lab/labqp
	CGO_ENABLED=0 $(GO) build -o bin/labtest ./lab/labtest
