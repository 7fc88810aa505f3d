#!/usr/bin/env bash
# bench-check.sh: times `eventpipe check` with every rule against conftest v0.71.1 running
# one equivalent dead-letter rule, on the same generated plan of N resources (default
# 10,000, half of them subscriptions), in one run, and prints the ratio. It also times
# `eventpipe check --evaluator topdown` (OPA's reference evaluator instead of the default
# IR interpreter), interleaved with the others, and prints that ratio too.
#
#   scripts/bench-check.sh            # N=10000, 5 runs each, median wall time
#   N=2000 RUNS=3 scripts/bench-check.sh
#
# conftest is installed with `go install` into a cache folder (never into go.mod). The machine may be
# shared: the medians of several interleaved runs are compared, never single timings.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-10000}"
RUNS="${RUNS:-5}"
CONFTEST_VERSION="${CONFTEST_VERSION:-v0.71.1}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "building eventpipe and the plan generator ..." >&2
go build -o "$tmp/eventpipe" ./cmd/eventpipe
go build -o "$tmp/genplan" ./policies/internal/benchgen/genplan
# conftest is installed once per version into a cache folder (its own GOBIN, not go.mod).
cache="${XDG_CACHE_HOME:-$HOME/.cache}/eventpipe-bench/conftest-$CONFTEST_VERSION"
conftest="$cache/conftest"
if [ ! -x "$conftest" ]; then
	echo "installing conftest $CONFTEST_VERSION into $cache ..." >&2
	mkdir -p "$cache"
	(cd "$tmp" && GOBIN="$cache" GOFLAGS=-mod=mod go install "github.com/open-policy-agent/conftest@$CONFTEST_VERSION")
fi

"$tmp/genplan" -n "$N" > "$tmp/plan.json"

# The conftest side: one rule, the core dead-letter check (DLQ subscriptions exempt, as in
# EP001), on the raw preview document.
mkdir -p "$tmp/policy"
cat > "$tmp/policy/deadletter.rego" <<'REGO'
package main

import rego.v1

deny contains msg if {
	some step in input.steps
	state := step.newState
	state.type == "gcp:pubsub/subscription:Subscription"
	not state.inputs.deadLetterPolicy
	not state.inputs.labels.eventpipe_role == "dlq"
	msg := sprintf("%s has no dead-letter policy", [step.urn])
}
REGO

# Both tools must find the same missing dead-letter policies, or the timing means nothing.
ep_count="$("$tmp/eventpipe" check "$tmp/plan.json" -o json 2>/dev/null | grep -c '"ruleId": "EP001"' || true)"
ct_count="$("$conftest" test --policy "$tmp/policy" --no-color -o json "$tmp/plan.json" | grep -c 'has no dead-letter policy' || true)"
if [ "$ep_count" -eq 0 ] || [ "$ep_count" != "$ct_count" ]; then
	echo "findings differ: eventpipe EP001=$ep_count conftest=$ct_count" >&2
	exit 1
fi

# Both evaluators must print the same report.
"$tmp/eventpipe" check "$tmp/plan.json" -o json > "$tmp/ir.json" 2>/dev/null || true
"$tmp/eventpipe" check "$tmp/plan.json" -o json --evaluator topdown > "$tmp/topdown.json" 2>/dev/null || true
if ! cmp -s "$tmp/ir.json" "$tmp/topdown.json"; then
	echo "the ir and topdown evaluators' reports differ" >&2
	exit 1
fi

# now_ns prints a monotonic-enough wall clock in nanoseconds.
now_ns() { date +%s%N; }

# time_ms runs a command (exit 0 or 1 expected: findings) and prints its wall time in ms.
time_ms() {
	local start end code=0
	start="$(now_ns)"
	"$@" > /dev/null 2>&1 || code=$?
	end="$(now_ns)"
	if [ "$code" -gt 1 ]; then
		echo "command failed with exit $code: $*" >&2
		exit 1
	fi
	echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

ep_times=() ct_times=() td_times=()
for _ in $(seq "$RUNS"); do
	ep_times+=("$(time_ms "$tmp/eventpipe" check "$tmp/plan.json")")
	ct_times+=("$(time_ms "$conftest" test --policy "$tmp/policy" --no-color "$tmp/plan.json")")
	td_times+=("$(time_ms "$tmp/eventpipe" check --evaluator topdown "$tmp/plan.json")")
done
ep_ms="$(printf '%s\n' "${ep_times[@]}" | median)"
ct_ms="$(printf '%s\n' "${ct_times[@]}" | median)"
td_ms="$(printf '%s\n' "${td_times[@]}" | median)"
rules="$("$tmp/eventpipe" check --list-rules | tail -n +2 | wc -l)"

echo "plan: $N resources ($((N / 2)) subscriptions), $ep_count missing dead-letter policies found by both"
echo "eventpipe check ($rules rules): median ${ep_ms} ms of ${RUNS} runs [${ep_times[*]}]"
echo "conftest $CONFTEST_VERSION (1 rule): median ${ct_ms} ms of ${RUNS} runs [${ct_times[*]}]"
echo "eventpipe check --evaluator topdown: median ${td_ms} ms of ${RUNS} runs [${td_times[*]}]"
awk -v e="$ep_ms" -v c="$ct_ms" -v t="$td_ms" 'BEGIN {
	printf "ratio conftest/eventpipe: %.2f (above 1 means eventpipe with every rule is faster)\n", c / e
	printf "ratio topdown/ir evaluator: %.2f\n", t / e
	printf "goal: faster than conftest %s; under 1 s %s\n", (e < c ? "MET" : "NOT MET"), (e < 1000 ? "MET" : "NOT MET")
}'
