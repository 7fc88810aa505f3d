# eventpipe build and test entry points. `make test` is the README's test command and
# what .ci/run calls: it installs everything the tests need, then runs them all.
GO      ?= go
TOOLS   := $(CURDIR)/.tools
# The whole suite must stay well under CI's budget; the timeout is a backstop, not a target.
TESTTIMEOUT ?= 25m
# The Terraform and OpenTofu CLIs the Terraform plan fixtures are made with (see
# policies/testdata/terraform/README.md), built from their Go modules into $(TOOLS)/bin.
TERRAFORM_VERSION := 1.5.7
TOFU_VERSION      := 1.9.0
# The policy runtimes the tests hold to eventpipe check's verdicts, and the Rego linter
# (pinned in tools/regal/go.mod: its @version cannot be installed with go install here).
CONFTEST_VERSION := v0.71.1
OPA_VERSION      := v1.22.0
REGAL_VERSION    := v0.38.1

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
	@# Terraform and OpenTofu, only when missing or of another version. OpenTofu's go.mod has a
	@# replace directive, so it is built in its module's folder (as its release build does)
	@# rather than with go install.
	@CHECKPOINT_DISABLE=1 $(TOOLS)/bin/terraform version 2>/dev/null | grep -qx "Terraform v$(TERRAFORM_VERSION)" || { \
	  echo "building terraform v$(TERRAFORM_VERSION)"; \
	  GOBIN=$(TOOLS)/bin CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w" github.com/hashicorp/terraform@v$(TERRAFORM_VERSION); }
	@$(TOOLS)/bin/tofu version 2>/dev/null | grep -qx "OpenTofu v$(TOFU_VERSION)" || { \
	  echo "building tofu v$(TOFU_VERSION)"; \
	  $(GO) mod download github.com/opentofu/opentofu@v$(TOFU_VERSION) && \
	  cd "$$($(GO) env GOMODCACHE)/github.com/opentofu/opentofu@v$(TOFU_VERSION)" && \
	  CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o $(TOOLS)/bin/tofu ./cmd/tofu; }
	@# conftest, opa and regal, only when missing or of another version.
	@$(GO) version -m $(TOOLS)/bin/conftest 2>/dev/null | grep -qE "^\s+mod\s+github.com/open-policy-agent/conftest\s+$(CONFTEST_VERSION)\s" || { \
	  echo "installing conftest $(CONFTEST_VERSION)"; \
	  GOBIN=$(TOOLS)/bin $(GO) install github.com/open-policy-agent/conftest@$(CONFTEST_VERSION); }
	@$(GO) version -m $(TOOLS)/bin/opa 2>/dev/null | grep -qE "^\s+mod\s+github.com/open-policy-agent/opa\s+$(OPA_VERSION)\s" || { \
	  echo "installing opa $(OPA_VERSION)"; \
	  GOBIN=$(TOOLS)/bin $(GO) install github.com/open-policy-agent/opa@$(OPA_VERSION); }
	@$(GO) version -m $(TOOLS)/bin/regal 2>/dev/null | grep -qE "^\s+mod\s+github.com/open-policy-agent/regal\s+$(REGAL_VERSION)\s" || { \
	  echo "installing regal $(REGAL_VERSION)"; \
	  cd tools/regal && GOBIN=$(TOOLS)/bin $(GO) install tool; }
	mkdir -p $(TOOLS)/firestore-emulator && cp tools/firestore-emulator/package.json tools/firestore-emulator/package-lock.json $(TOOLS)/firestore-emulator/ && npm ci --prefix $(TOOLS)/firestore-emulator --no-audit --no-fund

## lint: gofmt and go vet (also with every build tag the repo uses); opa fmt and Regal on
## the rules (.regal/config.yaml).
lint:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags gcp ./tests/
	@out="$$($(TOOLS)/bin/opa fmt --list policies)"; \
	if [ -n "$$out" ]; then echo "opa fmt needed on:"; echo "$$out"; exit 1; fi
	$(TOOLS)/bin/regal lint --no-color policies

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
