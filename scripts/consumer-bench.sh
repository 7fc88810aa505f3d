#!/usr/bin/env bash
# Push-path throughput: the idempotent consumer (memory store, seed routes,
# JSON logging) against a bare net/http handler that only decodes the push
# envelope, in the same `go test -bench` run. Prints each pair's ratio
# (idempotent throughput as a share of bare; the goal is >= 50%).
# Usage: scripts/consumer-bench.sh [benchtime]   (default 2s)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime="${1:-2s}"
out="$(go test ./consumer/push -run '^$' -bench '^BenchmarkPushPath$' -benchtime "$benchtime" -count 1)"
echo "$out" | grep '^BenchmarkPushPath'
echo "$out" | awk '
  /^BenchmarkPushPath\// {
    split($1, name, "/"); kind = name[2]; variant = name[3]; sub(/-[0-9]+$/, "", variant)
    ns[kind, variant] = $3
  }
  END {
    for (k in ns) { split(k, parts, SUBSEP); kinds[parts[1]] = 1 }
    for (kind in kinds) {
      b = ns[kind, "bare"]; i = ns[kind, "idempotent"]
      if (b == "" || i == "") continue
      printf "%s: bare %d ns/op, idempotent %d ns/op -> idempotent keeps %.0f%% of bare throughput (goal >= 50%%)\n", kind, b, i, 100 * b / i
    }
  }'
