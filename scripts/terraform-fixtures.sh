#!/usr/bin/env bash
# Regenerates the Terraform plan fixtures of policies/testdata/terraform: for every case
# folder (one with an expected.yaml.txt), each CLI its `clis:` line names plans the case's
# configuration with the stand-in google provider (internal/testing/tfprovider) and writes
# `CLI show -json` of the plan to CASE/CLI.plan.json.txt. A case with a before/ folder is
# planned against the state of applying before/ first (updates, replacements, deletions);
# a case's plan-args file holds extra arguments to plan (-refresh-only).
#
# Usage: scripts/terraform-fixtures.sh [OUTDIR] [CASE...]
#   OUTDIR  where CASE/CLI.plan.json.txt go (default: the fixtures folder itself)
#   CASE    only these cases (default: all)
# Environment: TERRAFORM, TOFU (default .tools/bin/terraform, .tools/bin/tofu, installed
# by `make deps` at the versions policies/testdata/terraform/inputs.txt pins), JOBS (cases
# planned at once, default 2).
#
# After regenerating every case into the fixtures folder itself it rewrites inputs.txt, the
# stamp `make deps` and the tests compare with the inputs' digest (internal/testing/tffixtures).
#
# Only what changes from run to run is normalised (cmd/tfplan-normalise): the plan's
# "timestamp" and the order of its "relevant_attributes".
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
fixtures=$repo/policies/testdata/terraform
out=$(mkdir -p "${1:-$fixtures}" && cd "${1:-$fixtures}" && pwd)
shift || true
terraform=${TERRAFORM:-$repo/.tools/bin/terraform}
tofu=${TOFU:-$repo/.tools/bin/tofu}
jobs=${JOBS:-2}

for bin in "$terraform" "$tofu"; do
  [ -x "$bin" ] || { echo "$bin not found: run make deps" >&2; exit 2; }
done
# The plans are made with the versions the stamp pins, and no others.
stamp() { (cd "$repo" && go run ./internal/testing/tffixtures/cmd/tffixtures-stamp "$@"); }
tf_version=$(CHECKPOINT_DISABLE=1 "$terraform" version -json | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p')
tofu_version=$("$tofu" version -json | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p')
for pin in "terraform $tf_version" "tofu $tofu_version"; do
  read -r cli have <<<"$pin"
  want=$(stamp version "$repo" "$cli")
  [ "$have" = "$want" ] || { echo "$cli is $have but inputs.txt pins $want: run make deps" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The stand-in provider, in a filesystem mirror under both registries' addresses (tofu
# resolves hashicorp/google to registry.opentofu.org), as google and google-beta.
version=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' "$repo/internal/testing/tfprovider/provider.go")
platform=$(cd "$repo" && go env GOOS)_$(cd "$repo" && go env GOARCH)
(cd "$repo" && go build -o "$work/provider" ./internal/testing/tfprovider/cmd/terraform-provider-google &&
  go build -o "$work/tfplan-normalise" ./internal/testing/tffixtures/cmd/tfplan-normalise)
for host in registry.terraform.io registry.opentofu.org; do
  for name in google google-beta; do
    dir=$work/mirror/$host/hashicorp/$name/$version/$platform
    mkdir -p "$dir"
    cp "$work/provider" "$dir/terraform-provider-${name}_v$version"
  done
done
cat >"$work/cli.tfrc" <<EOF
provider_installation {
  filesystem_mirror {
    path = "$work/mirror"
  }
}
EOF
export TF_CLI_CONFIG_FILE=$work/cli.tfrc CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1 TF_INPUT=0
unset TF_DATA_DIR TF_WORKSPACE TF_CLI_ARGS TF_CLI_ARGS_init TF_CLI_ARGS_plan TF_CLI_ARGS_apply TF_LOG

all=1
if [ $# -gt 0 ]; then
  all=0
  cases=("$@")
else
  cases=()
  for f in "$fixtures"/*/expected.yaml.txt; do cases+=("$(basename "$(dirname "$f")")"); done
fi

# Each CLI works in its own copy of the fixtures: each writes its own lock files and state.
for cli in terraform tofu; do
  mkdir -p "$work/$cli"
  cp -r "$fixtures/." "$work/$cli/"
done

# plan_case CASE CLI: plans CASE with CLI and writes OUT/CASE/CLI.plan.json.txt.
plan_case() {
  local case=$1 cli=$2 bin dir log args
  case $cli in
    terraform) bin=$terraform ;;
    tofu) bin=$tofu ;;
    *) echo "$case: unknown CLI $cli in expected.yaml.txt" >&2; return 1 ;;
  esac
  dir=$work/$cli/$case
  log=$work/$cli-$case.log
  {
    if [ -d "$dir/before" ]; then
      (cd "$dir/before" && "$bin" init -no-color && "$bin" apply -auto-approve -no-color)
      mv "$dir/before/terraform.tfstate" "$dir/terraform.tfstate"
    fi
    # A case's plan-args file adds arguments to plan (-refresh-only, say).
    args=()
    if [ -f "$dir/plan-args" ]; then read -r -a args <"$dir/plan-args"; fi
    (cd "$dir" && "$bin" init -no-color && "$bin" plan -no-color "${args[@]}" -out=plan.bin)
  } >"$log" 2>&1 || { echo "$case: $cli failed:" >&2; cat "$log" >&2; return 1; }
  mkdir -p "$out/$case"
  (cd "$dir" && "$bin" show -json plan.bin) >"$dir/plan.json" &&
    "$work/tfplan-normalise" <"$dir/plan.json" >"$out/$case/$cli.plan.json.txt" ||
    { echo "$case: $cli show failed" >&2; return 1; }
  echo "$case: $cli.plan.json.txt"
}

# Each case's CLIs come from its expected.yaml.txt: `clis: [terraform, tofu]`.
failed=0
running=0
for case in "${cases[@]}"; do
  [ -f "$fixtures/$case/expected.yaml.txt" ] || { echo "$case: no $fixtures/$case/expected.yaml.txt" >&2; exit 2; }
  clis=$(sed -n 's/^clis: *\[\(.*\)\] *$/\1/p' "$fixtures/$case/expected.yaml.txt" | tr -d ' ' | tr ',' ' ')
  [ -n "$clis" ] || { echo "$case: expected.yaml.txt has no clis: line" >&2; exit 2; }
  for cli in $clis; do
    if [ "$running" -ge "$jobs" ]; then
      wait -n || failed=1
      running=$((running - 1))
    fi
    plan_case "$case" "$cli" &
    running=$((running + 1))
  done
done
while [ "$running" -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
if [ "$failed" = 0 ] && [ "$out" = "$fixtures" ] && [ "$all" = 1 ]; then
  stamp write "$repo" "terraform=$tf_version" "tofu=$tofu_version"
  echo "inputs.txt: stamped"
fi
exit $failed
