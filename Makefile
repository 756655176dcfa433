# rdmadiag: build, test, lint, demo. `make test` is what CI and a new user run; the QEMU lab
# targets (e2e, fixtures) come from lab/lab.mk.
GO        ?= go
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
BIN       := bin/rdmadiag
STATICCHECK_VERSION := v0.8.2

.PHONY: all build test lint fmt-check vet staticcheck demo golden fuzz bench clean lab-bins image e2e-slurm

all: lint test

build:
	@echo ">> building $(BIN)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rdmadiag

test:
	@echo ">> running unit, parser, golden and round-trip tests"
	$(GO) test -count=1 ./...
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

# Rewrite every fixture's golden outputs; review the diff before committing.
golden:
	$(GO) test ./cmd/rdmadiag -run TestGolden -update

fuzz:
	@echo ">> fuzzing each parser for 20s"
	$(GO) test ./internal/kmod -run XXX -fuzz FuzzParseModules -fuzztime 20s
	$(GO) test ./internal/kmsg -run XXX -fuzz 'FuzzParse$$' -fuzztime 20s
	$(GO) test ./internal/kmsg -run XXX -fuzz FuzzParseSyslog -fuzztime 20s
	$(GO) test ./internal/kmsg -run XXX -fuzz FuzzParseDmesg -fuzztime 20s
	$(GO) test ./internal/nldev -run XXX -fuzz FuzzDecode -fuzztime 20s
	$(GO) test ./internal/optfile -run XXX -fuzz FuzzPolicy -fuzztime 20s
	$(GO) test ./internal/optfile -run XXX -fuzz FuzzMatrix -fuzztime 20s
	$(GO) test ./internal/optfile -run XXX -fuzz FuzzWRProfile -fuzztime 20s
	$(GO) test ./report -run XXX -fuzz FuzzFleetFormats -fuzztime 20s
	$(GO) test ./internal/fleet -run XXX -fuzz FuzzParse -fuzztime 20s
	$(GO) test ./checks/pcie -run XXX -fuzz FuzzParseACS -fuzztime 20s
	$(GO) test ./checks/port -run XXX -fuzz FuzzParseDefaultRoutes -fuzztime 20s

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
	CGO_ENABLED=0 $(GO) build -o bin/labqp ./checks/qp/labqp
	CGO_ENABLED=0 $(GO) build -o bin/labtest ./probe/labtest
