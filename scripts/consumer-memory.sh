#!/usr/bin/env bash
# Peak memory of the consumer binary under maximum-size messages, in the
# Cloud Run component's default 512 MiB container, side by side with the
# previous release: a fresh consumer process (with the GOMEMLIMIT the
# component gives that container) receives at once as many 10 MB Pub/Sub
# pushes as the component lets it take (limits.MaxConcurrency), once valid
# messages (applied) and once poison ones (matching no route, with
# megabyte-long keys). The previous release (scripts/release-commit.sh) is
# built from a git worktree of its commit in a temporary directory (removed
# at exit) and gets the same pushes in the same run, the two binaries taking
# turns (BenchmarkPushMemory's rounds). For each run the script prints the
# process's peak resident memory (VmHWM) as MiB and as a share of the
# container, what each message added over the idle process (MiB and as a
# multiple of its push body) and the budget consumer/limits reserves for
# it (PerMessageBytes); then, per kind, the mean per message of each binary
# and their ratio. A peak of this code at 85 % of the container or more
# fails the benchmark.
# Usage: scripts/consumer-memory.sh [rounds]   (default 2 per binary)
# CONSUMER_MEMORY_PREVIOUS=none skips the previous release.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}
args=(-consumer.memory-rounds "$rounds")
if [ "${CONSUMER_MEMORY_PREVIOUS:-}" != none ]; then
  commit=$(scripts/release-commit.sh)
  tmp=$(mktemp -d)
  trap 'git worktree remove --force "$tmp/previous" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
  git worktree add --detach "$tmp/previous" "$commit" >/dev/null 2>&1
  (cd "$tmp/previous" && go build -o "$tmp/consumer-previous" ./cmd/consumer)
  echo "previous release: $commit"
  args+=(-consumer.previous "$tmp/consumer-previous")
fi
go test -run '^$' -bench '^BenchmarkPushMemory$' -benchtime 1x ./cmd/consumer -args "${args[@]}" |
  awk '/^BenchmarkPushMemory\// {
    name = $1; sub(/^BenchmarkPushMemory\//, "", name); sub(/-[0-9]+$/, "", name)
    split(name, parts, "/"); kind = parts[1]; n = parts[2]; round = parts[3]; bin = parts[4]
    sub(/^kind=/, "", kind); sub(/^messages=/, "", n); sub(/^round=/, "", round); sub(/^binary=/, "", bin)
    for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
    printf "%-6s %-8s round %s: %2s x 10 MB at once in 512 MiB: peak RSS %6.1f MiB = %4.1f %% of the container, %5.1f MiB per message (%.2fx its push body; budget %.1f MiB)\n",
      kind, bin, round, n, v["peak-MiB"], v["peak-%container"], v["MiB/msg"], v["x-body/msg"], v["budget-MiB/msg"]
    sum[kind, bin] += v["MiB/msg"]; x[kind, bin] += v["x-body/msg"]; runs[kind, bin]++
    if (!(kind in seen)) { seen[kind] = 1; kinds[++nk] = kind }
  }
  /^(--- FAIL|FAIL|ok|panic)/ || /memory_bench_test.go/ { print }
  END {
    for (k = 1; k <= nk; k++) {
      kind = kinds[k]
      c = runs[kind, "current"] ? sum[kind, "current"] / runs[kind, "current"] : 0
      line = sprintf("%-6s mean per message: current %.1f MiB (%.2fx its push body)", kind, c, x[kind, "current"] / runs[kind, "current"])
      if (runs[kind, "previous"]) {
        p = sum[kind, "previous"] / runs[kind, "previous"]
        line = line sprintf(", previous release %.1f MiB (%.2fx): ratio current/previous %.2f", p, x[kind, "previous"] / runs[kind, "previous"], c / p)
      }
      print line
    }
  }'
