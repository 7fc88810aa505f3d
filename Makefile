# eventpipe build and test entry points. `make test` is the README's test command and
# what .ci/run calls: it installs everything the tests need, then runs them all.
GO      ?= go
TOOLS   := $(CURDIR)/.tools
# The whole suite must stay well under CI's budget; the timeout is a backstop, not a target.
TESTTIMEOUT ?= 25m

.PHONY: test deps lint vet fmt run build

## test: install test dependencies, check formatting and vet, run every test.
test: deps lint
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) ./...

## deps: download Go modules and install the tools tests need.
deps:
	@# System tools the tests use: PostgreSQL 15 binaries (throwaway clusters), jq and curl
	@# (runbook and README examples), Node/npm (Firestore emulator). Installed only if missing.
	@missing=""; test -x /usr/lib/postgresql/15/bin/initdb || missing="$$missing postgresql-15"; \
	for t in jq curl npm; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi
	$(GO) mod download
	mkdir -p $(TOOLS)/firestore-emulator && cp tools/firestore-emulator/package.json tools/firestore-emulator/package-lock.json $(TOOLS)/firestore-emulator/ && npm ci --prefix $(TOOLS)/firestore-emulator --no-audit --no-fund

## lint: gofmt and go vet (also with every build tag the repo uses).
lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags gcp ./tests/

## run: the README's run command.
run:
	$(GO) run ./cmd/eventpipe dev

## build: build every binary.
build:
	$(GO) build ./...

.PHONY: build-consumer
## build-consumer: the static consumer binary, built exactly as the Dockerfile builds it.
build-consumer:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags="-s -w" -o bin/consumer ./cmd/consumer
