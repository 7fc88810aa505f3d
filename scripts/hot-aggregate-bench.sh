#!/usr/bin/env bash
# hot-aggregate-bench.sh: runs BenchmarkHotAggregate (consumer/engine) without coalescing
# (EVENTPIPE_COALESCE_MAX_WAITING=0: every delivery its own transaction, as before) and with
# it (the default), interleaved, ROUNDS times each, and prints the medians and the ratios:
# 1,000 latest-state messages for 1 and for 10 aggregates, 64 deliveries in flight, on the
# memory store modelling Firestore (20 ms commits, conflicting transactions aborted) and on
# a throwaway PostgreSQL that syncs (fsync and synchronous commit on, as Cloud SQL runs),
# where a lone delivery is decided in one statement (store.LatestWriter).
#
#   scripts/hot-aggregate-bench.sh            # 3 rounds
#   ROUNDS=5 scripts/hot-aggregate-bench.sh
#   PG_RUNS=10 scripts/hot-aggregate-bench.sh  # PostgreSQL runs per round (default 5)
#
# The machine may be shared: compare the ratios of interleaved runs, not single timings.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS="${ROUNDS:-3}"
PG_RUNS="${PG_RUNS:-5}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

go test -c -o "$tmp/engine.test" ./consumer/engine
for round in $(seq "$ROUNDS"); do
	for mode in before after; do
		echo "round $round/$ROUNDS: $mode" >&2
		bound=""
		[ "$mode" = before ] && bound=0
		# The benchmark reports its own metrics per sub-benchmark; keep "mode name value unit".
		# PostgreSQL's runs of 1,000 messages take a fraction of a second, so each round
		# averages PG_RUNS of them; one run on the Firestore model takes up to 15 s.
		for target in "store=mem-20ms 1" "store=postgres $PG_RUNS"; do
			set -- $target
			(cd consumer/engine && EVENTPIPE_COALESCE_MAX_WAITING="$bound" "$tmp/engine.test" \
				-test.run '^$' -test.bench "^BenchmarkHotAggregate\$/^$1\$" -test.benchtime "${2}x")
		done |
			awk -v mode="$mode" '/^BenchmarkHotAggregate\// {
				name = $1; sub(/^BenchmarkHotAggregate\//, "", name); sub(/-[0-9]+$/, "", name)
				for (i = 3; i < NF; i += 2) print mode, name, $(i + 1), $i
			}' >> "$tmp/results"
	done
done

# Medians per mode, sub-benchmark and metric, then one row per sub-benchmark and metric.
sort -k1,1 -k2,2 -k3,3 -k4,4g "$tmp/results" | awk '
	{ key = $1 " " $2 " " $3; v[key, ++n[key]] = $4 }
	END {
		for (key in n) {
			c = n[key]
			m = (c % 2) ? v[key, (c + 1) / 2] : (v[key, c / 2] + v[key, c / 2 + 1]) / 2
			print key, m
		}
	}' | sort > "$tmp/medians"

awk -v rounds="$ROUNDS" -v pgruns="$PG_RUNS" '
	{ med[$1, $2, $3] = $4; if (!($2 in seen)) { seen[$2] = 1; names[++n] = $2 } }
	# change says how after compares with before: a rate as after/before, a cost as
	# before/after ("fewer") or after/before ("more").
	function change(metric, b, a) {
		if (metric == "msgs/s") return (b > 0) ? sprintf("%.2fx", a / b) : "-"
		if (a == b) return "same"
		if (a == 0) return "none left"
		if (b == 0) return "new"
		return (b >= a) ? sprintf("%.1fx fewer", b / a) : sprintf("%.1fx more", a / b)
	}
	function show(metric, v) {
		if (metric == "msgs/s") return sprintf("%.0f", v)
		if (metric == "p99-ms") return sprintf("%.1f", v)
		return sprintf("%.3f", v)
	}
	END {
		printf "BenchmarkHotAggregate: median of %d interleaved rounds (PostgreSQL: %d runs of 1,000 messages per round); before = EVENTPIPE_COALESCE_MAX_WAITING=0 (no coalescing)\n\n", rounds, pgruns
		printf "| %-30s | %-15s | %9s | %9s | %-12s |\n", "sub-benchmark", "metric", "before", "after", "change"
		printf "| %-30s | %-15s | %9s | %9s | %-12s |\n", "---", "---", "---:", "---:", "---"
		split("writes/msg errors/msg tx-attempts/msg msgs/s p99-ms", metrics, " ")
		for (i = 1; i <= n; i++) {
			for (j = 1; j <= 5; j++) {
				m = metrics[j]; b = med["before", names[i], m]; a = med["after", names[i], m]
				printf "| %-30s | %-15s | %9s | %9s | %-12s |\n", names[i], m, show(m, b), show(m, a), change(m, b, a)
			}
		}
	}' "$tmp/medians"
