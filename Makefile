# eventpipe build and test entry points. `make test` is the README's test command and
# what .ci/run calls: it installs everything the tests need, then runs them all.
GO      ?= go
# Tools the tests run are built once per machine and version into TOOLCACHE, and linked
# into this clone's .tools/bin, so a fresh clone on the same machine rebuilds nothing.
TOOLCACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/eventpipe/tools
TOOLS   := $(CURDIR)/.tools
# The whole suite must stay well under CI's budget; the timeout is a backstop, not a target.
TESTTIMEOUT ?= 25m
# The Terraform and OpenTofu CLIs the Terraform plan fixtures are made with: their one home
# is the fixtures' stamp (see policies/testdata/terraform/README.md), which also holds the
# digest of the plans' inputs. make deps builds the CLIs (about 40 minutes of compiling on
# 2 cores) only when that digest shows the plans must be made again, or when they are
# already in TOOLCACHE.
FIXTURESTAMP      := policies/testdata/terraform/inputs.txt
TERRAFORM_VERSION := $(shell sed -n 's/^terraform //p' $(FIXTURESTAMP))
TOFU_VERSION      := $(shell sed -n 's/^tofu //p' $(FIXTURESTAMP))
# The policy runtimes the tests hold to eventpipe check's verdicts, and the Rego linter. opa
# and conftest are built from tools/opa, at the eventpipe module's OPA (go.mod, its one home),
# and Regal from tools/regal, at the OPA Regal asks for (it does not build with ours) and
# that OPA's gobwas/glob (v0.2.3; it does not build with v1.0.0); both
# hold every other module they share with the eventpipe module at its version, so OPA, grpc,
# protobuf, otel and the rest are compiled once for the tools and the tests
# (scripts/tool-modules-aligned.sh checks it in lint). The tools' folders in TOOLCACHE are
# named by their version and their module's go.sum (toolsum), so a change of any version
# they build with builds them again.
OPA_VERSION      := $(shell sed -n 's/^\tgithub.com\/open-policy-agent\/opa \(v[^ ]*\).*/\1/p' go.mod)
CONFTEST_VERSION := $(shell sed -n 's/^\(require \|\t\)github.com\/open-policy-agent\/conftest \(v[^ ]*\).*/\2/p' tools/opa/go.mod)
REGAL_VERSION    := $(shell sed -n 's/^\(require \|\t\)github.com\/open-policy-agent\/regal \(v[^ ]*\).*/\2/p' tools/regal/go.mod)
toolsum = $(shell sha256sum tools/$(1)/go.sum | cut -c1-12)
# The Pulumi CLI the real-engine tests run (pinned in tools/pulumi/go.mod, whose replace
# line `go install pkg@version` refuses), and the YAML language host (pinned in
# tools/pulumi-yaml/go.mod, which holds the modules it shares with the CLI at the CLI's
# versions, so a cold build compiles them once: scripts/tool-modules-aligned.sh).
PULUMI_VERSION      := $(shell sed -n 's/^\tgithub.com\/pulumi\/pulumi\/pkg\/v3 \(v[^ ]*\).*/\1/p' tools/pulumi/go.mod)
PULUMI_YAML_VERSION := $(shell sed -n 's/^require github.com\/pulumi\/pulumi-yaml \(v[^ ]*\).*/\1/p' tools/pulumi-yaml/go.mod)
# Every build tag the repo's files use (gcp: the real-GCP run, tests/cloud_gcp_test.go). make
# lint vets once with all of them, which covers every file, and fails if a file is still left
# out (a `!tag` constraint): each vet pass analyses every dependency afresh, so one pass, not
# one per tag.
BUILDTAGS := gcp
# Link flags of the tools make deps builds: no symbol table, no DWARF (faster links).
TOOLLDFLAGS := -s -w
# Committed files larger than this must be listed in .large-files (fixtures only).
MAXFILEBYTES := 1048576

.PHONY: test test-only deps lint vet fmt run build

# cached-tool NAME,VERSION,BINARY,COMMAND: unless TOOLCACHE/NAME-VERSION/BINARY exists, run
# COMMAND (in the shell, $$dir is that folder) to build it there; then link it into .tools/bin.
define cached-tool
	@dir=$(TOOLCACHE)/$(1)-$(2); test -x $$dir/$(3) || { \
	  echo "building $(1) $(2) into $$dir"; $(4); }; \
	ln -sfn $$dir/$(3) $(TOOLS)/bin/$(notdir $(3))
endef

# npm-install NAME: npm ci of tools/NAME into .tools/NAME, unless the lock file installed
# there last is this one (a second make test reinstalls nothing).
define npm-install
	@dir=$(TOOLS)/$(1); cmp -s tools/$(1)/package-lock.json $$dir/.installed-lock.json 2>/dev/null && test -d $$dir/node_modules || { \
	  mkdir -p $$dir && cp tools/$(1)/package.json tools/$(1)/package-lock.json $$dir/ && \
	  echo "npm ci --prefix $$dir" && npm ci --prefix $$dir --no-audit --no-fund && \
	  cp tools/$(1)/package-lock.json $$dir/.installed-lock.json; }
endef

## test: install test dependencies, check formatting and vet, run every test: make deps,
## make lint and make test-only, one after the other also under make -j
## (scripts/cold-test.sh times each).
test:
	@$(MAKE) --no-print-directory deps
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory test-only

## TESTFIRST: the packages longest in a full run (scripts/cold-test.sh's per-package times,
## docs/benchmarks.md#cold-make-test), started first, as QUICKFIRST does for make quick; and
## four at a time (-p 4): internal/cli, cmd/consumer and examples/handlers mostly wait on
## pstest, the consumer's drains and its handlers, and one run per core left the cores idle.
TESTFIRST = ./tests/engine ./internal/cli ./cmd/consumer ./cmd/eventpipe ./policies/analyzer
## test-only: run every test, with what make deps installed. go test's own vet pass is off:
## make lint has just run go vet's full set of analyzers, of which go test's is a subset, and
## each pass analyses every dependency again (about 30 s of CPU). The test binaries are linked
## without symbol table and DWARF (-s): a third less CPU per link, and no test reads them
## (stack traces use the runtime's own tables).
test-only:
	$(GO) test -count=1 -vet=off -ldflags=-s -timeout $(TESTTIMEOUT) -p 4 $$($(GO) list $(TESTFIRST) ./...)

## deps: download Go modules and install the tools tests need. After the system packages,
## two lanes run side by side: the Go tool builds one after another (each go install keeps
## both cores busy; two at once would compile the standard library and the modules they
## share twice), and beside them the downloads and npm installs, which mostly wait on the
## network and the disk.
deps: deps-system
	@mkdir -p $(TOOLS)/bin $(TOOLCACHE)
	@$(MAKE) --no-print-directory -j2 --output-sync=line deps-tools deps-fetch

.PHONY: deps-system deps-tools deps-fetch
deps-system:
	@# System tools the tests use: PostgreSQL 15 binaries (throwaway clusters), jq and curl
	@# (runbook and README examples), Node/npm (Firestore emulator, TypeScript), python3
	@# (the generated Python SDK). Installed only if missing.
	@missing=""; test -x /usr/lib/postgresql/15/bin/initdb || missing="$$missing postgresql-15"; \
	for t in jq curl npm python3; do command -v $$t >/dev/null || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then echo "installing:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi

# deps-tools: conftest, opa and regal; the Pulumi CLI (about 10 minutes of compiling on 2
# cores; built from source it knows no version unless told, and the Automation API checks
# it) and its YAML language host. Linked without the symbol table and DWARF (-s -w): no
# test debugs them, and the linker's DWARF work is a large share of linking a 100 MB CLI.
deps-tools:
	$(call cached-tool,conftest,$(CONFTEST_VERSION)-$(call toolsum,opa),conftest,cd tools/opa && GOBIN=$$dir $(GO) install -ldflags "$(TOOLLDFLAGS)" github.com/open-policy-agent/conftest)
	$(call cached-tool,opa,$(OPA_VERSION)-$(call toolsum,opa),opa,cd tools/opa && GOBIN=$$dir $(GO) install -ldflags "$(TOOLLDFLAGS)" github.com/open-policy-agent/opa)
	$(call cached-tool,regal,$(REGAL_VERSION)-$(call toolsum,regal),regal,cd tools/regal && GOBIN=$$dir $(GO) install -ldflags "$(TOOLLDFLAGS)" tool)
	$(call cached-tool,pulumi,$(PULUMI_VERSION),bin/pulumi,cd tools/pulumi && GOBIN=$$dir/bin $(GO) install -ldflags "$(TOOLLDFLAGS) -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$(PULUMI_VERSION)" tool)
	$(call cached-tool,pulumi-language-yaml,$(PULUMI_YAML_VERSION),pulumi-language-yaml,cd tools/pulumi-yaml && GOBIN=$$dir $(GO) install -ldflags "$(TOOLLDFLAGS)" tool)
	@# Terraform and OpenTofu: linked when this machine has them, built only when the
	@# fixtures' inputs changed since their plans were made (then the plans must be made
	@# again, with these CLIs). OpenTofu's go.mod has a replace directive, so it is built in
	@# its module's folder (as its release build does) rather than with go install.
	@tf=$(TOOLCACHE)/terraform-$(TERRAFORM_VERSION); tofu=$(TOOLCACHE)/tofu-$(TOFU_VERSION); \
	if test -x $$tf/terraform && test -x $$tofu/tofu; then :; \
	elif $(GO) run ./internal/testing/tffixtures/cmd/tffixtures-stamp check . ; then \
	  echo "terraform and tofu: not built (the fixture plans are current for their inputs; see $(FIXTURESTAMP))"; exit 0; \
	else \
	  test -x $$tf/terraform || { echo "building terraform v$(TERRAFORM_VERSION) into $$tf"; \
	    GOBIN=$$tf CGO_ENABLED=0 $(GO) install -trimpath -ldflags "-s -w" github.com/hashicorp/terraform@v$(TERRAFORM_VERSION); } && \
	  test -x $$tofu/tofu || { echo "building tofu v$(TOFU_VERSION) into $$tofu"; \
	    $(GO) mod download github.com/opentofu/opentofu@v$(TOFU_VERSION) && \
	    cd "$$($(GO) env GOMODCACHE)/github.com/opentofu/opentofu@v$(TOFU_VERSION)" && \
	    CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o $$tofu/tofu ./cmd/tofu; }; \
	fi; \
	if test -x $$tf/terraform && test -x $$tofu/tofu; then \
	  ln -sfn $$tf/terraform $(TOOLS)/bin/terraform && ln -sfn $$tofu/tofu $(TOOLS)/bin/tofu; fi

# deps-fetch: the module downloads, the tools' ahead of their builds in the order deps-tools
# builds them, then this module's and those of the SDK
# generator (tools/sdkgen, its own module: see its doc comment); and the npm installs: the
# Firestore emulator, TypeScript and the Pulumi Node.js SDK the generated TypeScript SDK
# compiles against (tools/tsc).
deps-fetch:
	cd tools/opa && $(GO) mod download
	cd tools/regal && $(GO) mod download
	cd tools/pulumi && $(GO) mod download
	cd tools/pulumi-yaml && $(GO) mod download
	$(GO) mod download
	cd tools/sdkgen && $(GO) mod download
	$(call npm-install,firestore-emulator)
	$(call npm-install,tsc)

## lint: gofmt and go vet (one pass, with every build tag the repo uses); opa fmt and Regal on
## the rules (.regal/config.yaml).
lint:
	@big="$$(git ls-files -z | xargs -0 stat -c '%s %n' 2>/dev/null | \
	  awk -v max=$(MAXFILEBYTES) '$$1 > max {print $$2}' | grep -vxF -f .large-files || true)"; \
	if [ -n "$$big" ]; then echo "committed files over $(MAXFILEBYTES) bytes (build outputs? list fixtures in .large-files):"; echo "$$big"; exit 1; fi
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	@out="$$($(GO) list -tags '$(BUILDTAGS)' -f '{{if .IgnoredGoFiles}}{{.ImportPath}}: {{.IgnoredGoFiles}}{{end}}' ./...)"; \
	if [ -n "$$out" ]; then echo "go vet -tags '$(BUILDTAGS)' leaves out these files (a build constraint excludes them: add its tag to BUILDTAGS):"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(BUILDTAGS)' ./...
	cd tools/sdkgen && $(GO) vet ./...
	scripts/tool-modules-aligned.sh tools/pulumi tools/pulumi-yaml github.com/pulumi/pulumi/pkg/v3 github.com/pulumi/pulumi/sdk/v3
	BUILDTAGS='$(BUILDTAGS)' scripts/tool-modules-aligned.sh . tools/opa
	BUILDTAGS='$(BUILDTAGS)' scripts/tool-modules-aligned.sh . tools/regal github.com/open-policy-agent/opa github.com/gobwas/glob
	@out="$$($(TOOLS)/bin/opa fmt --list policies)"; \
	if [ -n "$$out" ]; then echo "opa fmt needed on:"; echo "$$out"; exit 1; fi
	$(TOOLS)/bin/regal lint --no-color policies

## run: the README's run command.
run:
	$(GO) run ./cmd/eventpipe-dev

## build: build every binary.
build:
	$(GO) build ./...

.PHONY: build-consumer
## build-consumer: the static consumer binary, built exactly as the Dockerfile builds it.
build-consumer:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags="-s -w -buildid=" -o bin/consumer ./cmd/consumer

.PHONY: quick
## quick: the contributors' loop, minutes on a warm machine: the unit tests and the store
## conformance suite on memory and bbolt (go test -short: no PostgreSQL cluster, Firestore
## emulator, policy tools or Pulumi engine; tests/ and make test run those). make test
## stays the full suite.
## go test starts the packages' test runs in the order it is given them, -p at a time: the
## packages longest under -short (QUICKFIRST, measured with go test -json,
## docs/benchmarks.md#quick-loop-make-quick) start first, so no long one starts last and
## sets the wall time alone. go list keeps that order and lists each package once. -p 4, not
## one per core: the two longest (internal/cli, devpipe) mostly wait on pstest's pull retries.
QUICKFIRST = ./internal/cli ./devpipe ./policies/tfmodel ./internal/testing/tfgen ./consumer/store/boltstore ./consumer/store/memstore ./cmd/consumer ./spec ./cmd/eventpipe ./policies/evaluate ./policies ./policies/check ./provider
QUICKPKGS = $$($(GO) list $(QUICKFIRST) ./... | grep -v -e '/tests$$' -e '/tests/' -e '/internal/testing/pgtest$$' -e '/internal/testing/fsemulator$$')
quick:
	$(GO) test -short -count=1 -p 4 $(QUICKPKGS)
