#!/usr/bin/env bash
# Push-path throughput: the idempotent consumer (memory store, default routes,
# JSON logging) against a bare net/http handler that only decodes the push
# envelope, in the same `go test -bench` run. Each round runs the four
# sub-benchmarks in turn, so a pair's bare and idempotent halves run back to
# back; the script prints each round's ratio (idempotent throughput as a
# share of bare; the goal is >= 50%) and the median over the rounds, which a
# load swing on a shared machine moves less than any single round.
# Usage: scripts/consumer-bench.sh [benchtime] [rounds]   (defaults 2s, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
benchtime="${1:-2s}"
rounds="${2:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/push.test" ./consumer/push
out=""
for _ in $(seq "$rounds"); do
  out+="$(cd consumer/push && "$tmp/push.test" -test.run '^$' -test.bench '^BenchmarkPushPath$' -test.benchtime "$benchtime")"$'\n'
done
echo "$out" | grep '^BenchmarkPushPath'
echo "$out" | awk '
  /^BenchmarkPushPath\// {
    split($1, name, "/"); kind = name[2]; variant = name[3]; sub(/-[0-9]+$/, "", variant)
    n = ++seen[kind, variant]
    ns[kind, variant, n] = $3
    kinds[kind] = 1
  }
  END {
    for (kind in kinds) {
      m = 0
      for (r = 1; (kind, "bare", r) in ns && (kind, "idempotent", r) in ns; r++) {
        b = ns[kind, "bare", r]; i = ns[kind, "idempotent", r]
        ratio[++m] = 100 * b / i
        printf "%s round %d: bare %d ns/op, idempotent %d ns/op -> %.0f%%\n", kind, r, b, i, ratio[m]
      }
      if (m == 0) continue
      # insertion sort, then the median
      for (x = 2; x <= m; x++) { v = ratio[x]; for (y = x - 1; y >= 1 && ratio[y] > v; y--) ratio[y + 1] = ratio[y]; ratio[y + 1] = v }
      med = (m % 2) ? ratio[(m + 1) / 2] : (ratio[m / 2] + ratio[m / 2 + 1]) / 2
      printf "%s: idempotent keeps %.0f%% of bare throughput (median of %d rounds; goal >= 50%%)\n", kind, med, m
    }
  }'
