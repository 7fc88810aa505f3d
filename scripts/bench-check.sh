#!/usr/bin/env bash
# bench-check.sh: times `eventpipe check` against plain conftest v0.71.1 running the same
# rules through the same entry (conftest test --policy policies --namespace eventpipe) on
# the same generated plan of N resources (default 10,000, half of them subscriptions), in
# one run, interleaved, and prints the ratio; then times `eventpipe check --stack prod`
# (render offline and check). Both tools must report the same findings first, or the
# timing means nothing.
#
#   scripts/bench-check.sh            # N=10000, 5 runs each, median wall time
#   N=2000 RUNS=9 scripts/bench-check.sh
#
# conftest is the one `make deps` installs into .tools/bin. The machine may be shared: the
# medians of interleaved runs are compared, never single timings.
set -euo pipefail
cd "$(dirname "$0")/.."

N="${N:-10000}"
RUNS="${RUNS:-5}"
conftest=".tools/bin/conftest"
if [ ! -x "$conftest" ]; then
	echo "$conftest is missing: run make deps" >&2
	exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "building eventpipe and the plan generator ..." >&2
go build -o "$tmp/eventpipe" ./cmd/eventpipe
go build -o "$tmp/genplan" ./policies/internal/benchgen/genplan
"$tmp/genplan" -n "$N" > "$tmp/plan.json"
conftest_args=(test --policy policies --namespace eventpipe --no-color)

# Both tools must report the same findings: rule id and resource of every deny and warning.
"$tmp/eventpipe" check "$tmp/plan.json" -o json 2>/dev/null |
	jq -r '.findings[] | "\(.level) \(.ruleId) \(.urn)"' | sort > "$tmp/eventpipe.txt" || true
"$conftest" "${conftest_args[@]}" -o json "$tmp/plan.json" |
	jq -r '.[] | (.failures // [] | .[] | "deny \(.metadata.id) \(.metadata.urn)"), (.warnings // [] | .[] | "warn \(.metadata.id) \(.metadata.urn)")' |
	sort > "$tmp/conftest.txt" || true
findings="$(wc -l < "$tmp/eventpipe.txt")"
if [ "$findings" -eq 0 ] || ! cmp -s "$tmp/eventpipe.txt" "$tmp/conftest.txt"; then
	echo "the findings differ: eventpipe $findings, conftest $(wc -l < "$tmp/conftest.txt")" >&2
	diff "$tmp/eventpipe.txt" "$tmp/conftest.txt" | head >&2
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

ep_times=() ct_times=() prod_times=()
for _ in $(seq "$RUNS"); do
	ep_times+=("$(time_ms "$tmp/eventpipe" check "$tmp/plan.json")")
	ct_times+=("$(time_ms "$conftest" "${conftest_args[@]}" "$tmp/plan.json")")
	prod_times+=("$(time_ms "$tmp/eventpipe" check --stack prod)")
done
ep_ms="$(printf '%s\n' "${ep_times[@]}" | median)"
ct_ms="$(printf '%s\n' "${ct_times[@]}" | median)"
prod_ms="$(printf '%s\n' "${prod_times[@]}" | median)"

echo "plan: $N resources ($((N / 2)) subscriptions), the same $findings findings from both"
echo "eventpipe check: median ${ep_ms} ms of ${RUNS} runs [${ep_times[*]}]"
echo "conftest $(go version -m "$conftest" | awk '$1 == "mod" {print $3}') (same rules, --namespace eventpipe): median ${ct_ms} ms of ${RUNS} runs [${ct_times[*]}]"
echo "eventpipe check --stack prod: median ${prod_ms} ms of ${RUNS} runs [${prod_times[*]}]"
awk -v e="$ep_ms" -v c="$ct_ms" -v p="$prod_ms" 'BEGIN {
	printf "ratio conftest/eventpipe: %.2f (1 or more: eventpipe check is at least as fast)\n", c / e
	printf "goals: ratio >= 1.0 %s; under 1.5 s %s; --stack prod under 150 ms %s\n",
		(c >= e ? "MET" : "NOT MET"), (e < 1500 ? "MET" : "NOT MET"), (p < 150 ? "MET" : "NOT MET")
}'
