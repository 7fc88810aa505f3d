#!/usr/bin/env bash
# bench-check.sh: times `eventpipe check` against plain conftest v0.71.1 running the same
# rules through the same entry (conftest test --policy policies --namespace eventpipe) on
# the same generated resources (N, default 10,000, half of them subscriptions) in three
# documents: a `pulumi preview --json`, a `pulumi stack export` and a `terraform show
# -json` plan (internal/testing/benchgen), interleaved, and prints a table of medians and
# ratios; then times `eventpipe check --stack prod` (render offline and check). On every
# document both tools must report the same findings first, or the timing means nothing.
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

formats=(preview export terraform)
echo "building eventpipe and the plan generator ..." >&2
go build -o "$tmp/eventpipe" ./cmd/eventpipe
go build -o "$tmp/genplan" ./internal/testing/benchgen/genplan
for f in "${formats[@]}"; do
	"$tmp/genplan" -n "$N" -format "$f" > "$tmp/$f.json"
done
conftest_args=(test --policy policies --namespace eventpipe --no-color)

# Both tools must report the same findings on each document: rule id and resource of every
# deny and warning.
for f in "${formats[@]}"; do
	"$tmp/eventpipe" check "$tmp/$f.json" -o json 2>/dev/null |
		jq -r '.findings[] | "\(.level) \(.ruleId) \(.urn)"' | sort > "$tmp/$f.eventpipe.txt" || true
	"$conftest" "${conftest_args[@]}" -o json "$tmp/$f.json" |
		jq -r '.[] | (.failures // [] | .[] | "deny \(.metadata.id) \(.metadata.urn)"), (.warnings // [] | .[] | "warn \(.metadata.id) \(.metadata.urn)")' |
		sort > "$tmp/$f.conftest.txt" || true
	findings="$(wc -l < "$tmp/$f.eventpipe.txt")"
	if [ "$findings" -eq 0 ] || ! cmp -s "$tmp/$f.eventpipe.txt" "$tmp/$f.conftest.txt"; then
		echo "$f: the findings differ: eventpipe $findings, conftest $(wc -l < "$tmp/$f.conftest.txt")" >&2
		diff "$tmp/$f.eventpipe.txt" "$tmp/$f.conftest.txt" | head >&2
		exit 1
	fi
done

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

median() { tr ' ' '\n' | sort -n | awk 'NF {a[++n]=$1} END {print a[int((n+1)/2)]}'; }

declare -A ep ct
prod_times=()
for _ in $(seq "$RUNS"); do
	for f in "${formats[@]}"; do
		ep[$f]+="$(time_ms "$tmp/eventpipe" check "$tmp/$f.json") "
		ct[$f]+="$(time_ms "$conftest" "${conftest_args[@]}" "$tmp/$f.json") "
	done
	prod_times+=("$(time_ms "$tmp/eventpipe" check --stack prod)")
done
prod_ms="$(printf '%s\n' "${prod_times[@]}" | median)"

echo "documents: $N resources ($((N / 2)) subscriptions), $(wc -l < "$tmp/preview.eventpipe.txt") findings, the same from both tools on each"
echo "conftest $(go version -m "$conftest" | awk '$1 == "mod" {print $3}'), same rules (--namespace eventpipe); medians of ${RUNS} interleaved runs, ms"
echo
echo "| document | eventpipe check | conftest | conftest / eventpipe | eventpipe / preview |"
echo "| --- | --- | --- | --- | --- |"
preview_ms="$(echo "${ep[preview]}" | median)"
for f in "${formats[@]}"; do
	e="$(echo "${ep[$f]}" | median)"
	c="$(echo "${ct[$f]}" | median)"
	awk -v f="$f" -v e="$e" -v c="$c" -v p="$preview_ms" -v er="${ep[$f]}" -v cr="${ct[$f]}" \
		'BEGIN { sub(/ +$/, "", er); sub(/ +$/, "", cr); printf "| %s | %d [%s] | %d [%s] | %.2f | %.2f |\n", f, e, er, c, cr, c / e, e / p }'
	eval "ep_$f=$e ct_$f=$c"
done
echo
echo "eventpipe check --stack prod: median ${prod_ms} ms of ${RUNS} runs [${prod_times[*]}]"
awk -v p="$ep_preview" -v cp="$ct_preview" -v t="$ep_terraform" -v ctf="$ct_terraform" -v s="$prod_ms" 'BEGIN {
	printf "goals: preview ratio >= 1.0 %s; preview under 1.5 s %s; terraform <= 1.5x preview %s; terraform conftest/eventpipe >= 2.0 %s; --stack prod under 150 ms %s\n",
		(cp >= p ? "MET" : "NOT MET"), (p < 1500 ? "MET" : "NOT MET"), (t <= 1.5 * p ? "MET" : "NOT MET"),
		(ctf >= 2 * t ? "MET" : "NOT MET"), (s < 150 ? "MET" : "NOT MET")
}'
