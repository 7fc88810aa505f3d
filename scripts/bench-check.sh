#!/usr/bin/env bash
# bench-check.sh: times `eventpipe check` against plain conftest v0.71.1 running the same
# rules through the same entry (conftest test --policy policies --namespace eventpipe) on
# the same generated resources (N, default 10,000, half of them subscriptions) in three
# documents: a `pulumi preview --json`, a `pulumi stack export` and a `terraform show
# -json` plan (internal/testing/benchgen), interleaved, and prints a table of medians and
# ratios; then times `eventpipe check --stack prod` (render offline and check). On every
# document both tools must report the same findings first, or the timing means nothing.
#
# Then the for_each section: a for_each module's plan written as Terraform writes it
# (benchgen.GenerateForEachTerraform: module instances, instance keys, references indexed
# by each.key, planned_values and configuration) and a preview of the same resources, at
# about 1,000, 5,000 and 10,000 changes (SIZES), interleaved: the time per change of each,
# the plan's ratio at the largest size to the smallest (linear time keeps it near 1), the
# plan's ratio to its own preview, and the peak memory (GNU time's maximum resident set).
#
#   scripts/bench-check.sh            # N=10000, 5 runs each, median wall time
#   N=2000 RUNS=9 scripts/bench-check.sh
#   FOREACH_ONLY=1 RUNS=3 scripts/bench-check.sh   # only the for_each section
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

# foreach_section times eventpipe check on the for_each plan and its preview at SIZES.
foreach_section() {
	local sizes=(${SIZES:-1000 5000 10000}) n f run
	for n in "${sizes[@]}"; do
		for f in foreach-terraform foreach-preview; do
			"$tmp/genplan" -n "$n" -format "$f" > "$tmp/$f-$n.json"
		done
		# Both documents hold the same resources: the same findings, rule and resource name.
		for f in foreach-terraform foreach-preview; do
			"$tmp/eventpipe" check "$tmp/$f-$n.json" -o json 2>/dev/null |
				jq -r '.findings[] | "\(.level) \(.ruleId)"' | sort | uniq -c > "$tmp/$f-$n.counts" || true
		done
		if ! cmp -s "$tmp/foreach-terraform-$n.counts" "$tmp/foreach-preview-$n.counts"; then
			echo "for_each $n: the plan's and the preview's findings differ" >&2
			diff "$tmp/foreach-terraform-$n.counts" "$tmp/foreach-preview-$n.counts" >&2
			exit 1
		fi
	done
	declare -A ms kb
	for run in $(seq "$RUNS"); do
		for n in "${sizes[@]}"; do
			for f in foreach-terraform foreach-preview; do
				local out start end
				start="$(now_ns)"
				/usr/bin/time -f '%M' -o "$tmp/mem" "$tmp/eventpipe" check "$tmp/$f-$n.json" > /dev/null 2>&1 || true
				out="$(tail -1 "$tmp/mem")"
				end="$(now_ns)"
				ms[$f-$n]+="$(((end - start) / 1000000)) "
				kb[$f-$n]+="$out "
			done
		done
	done
	echo
	echo "for_each module plan vs. a preview of the same resources; medians of ${RUNS} interleaved runs"
	echo
	echo "| changes | plan ms | plan µs/change | preview ms | preview µs/change | plan / preview | plan peak MB |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	local first="" last="" ratio=""
	for n in "${sizes[@]}"; do
		local changes t p mem
		changes="$(jq '.resource_changes | length' "$tmp/foreach-terraform-$n.json")"
		t="$(echo "${ms[foreach-terraform-$n]}" | median)"
		p="$(echo "${ms[foreach-preview-$n]}" | median)"
		mem="$(echo "${kb[foreach-terraform-$n]}" | tr ' ' '\n' | sort -n | tail -1)"
		awk -v c="$changes" -v t="$t" -v p="$p" -v m="$mem" -v tr="${ms[foreach-terraform-$n]}" -v pr="${ms[foreach-preview-$n]}" \
			'BEGIN { sub(/ +$/, "", tr); sub(/ +$/, "", pr); printf "| %d | %d [%s] | %.0f | %d [%s] | %.0f | %.2f | %.0f |\n", c, t, tr, 1000 * t / c, p, pr, 1000 * p / c, t / p, m / 1024 }'
		[ -z "$first" ] && first="$(awk -v t="$t" -v c="$changes" 'BEGIN { print t / c }')"
		last="$(awk -v t="$t" -v c="$changes" 'BEGIN { print t / c }')"
		ratio="$(awk -v t="$t" -v p="$p" 'BEGIN { print t / p }')"
		lastmem="$mem"
	done
	awk -v f="$first" -v l="$last" -v r="$ratio" -v m="$lastmem" 'BEGIN {
		printf "goals: time per change at the largest size <= 1.2x at the smallest (%.2fx) %s; plan <= 1.5x its preview at the largest size (%.2fx) %s; peak memory < 1 GB (%.0f MB) %s\n",
			l / f, (l <= 1.2 * f ? "MET" : "NOT MET"), r, (r <= 1.5 ? "MET" : "NOT MET"), m / 1024, (m < 1048576 ? "MET" : "NOT MET")
	}'
}
for f in "${formats[@]}"; do
	"$tmp/genplan" -n "$N" -format "$f" > "$tmp/$f.json"
done
conftest_args=(test --policy policies --namespace eventpipe --no-color)
if [ -n "${FOREACH_ONLY:-}" ]; then
	now_ns() { date +%s%N; }
	median() { tr ' ' '\n' | sort -n | awk 'NF {a[++n]=$1} END {print a[int((n+1)/2)]}'; }
	foreach_section
	exit 0
fi

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

foreach_section
