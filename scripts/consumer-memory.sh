#!/usr/bin/env bash
# Peak memory of the consumer binary under maximum-size messages, in the
# Cloud Run component's default 512 MiB container: a fresh consumer process
# (with the GOMEMLIMIT the component gives that container) receives at once
# as many 10 MB Pub/Sub pushes as the component lets it take
# (limits.MaxConcurrency), once valid messages (applied) and once poison
# ones (matching no route, with megabyte-long keys). For each, the
# benchmark reports the process's peak resident memory (VmHWM) as MiB and
# as a share of the container, what each message added over the idle
# process (MiB and as a multiple of its push body) and the budget
# consumer/limits sizes instances by (PerMessageBytes). A peak at 85 % of
# the container or more fails the benchmark.
# Usage: scripts/consumer-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench '^BenchmarkPushMemory$' -benchtime 1x ./cmd/consumer |
  awk '/^BenchmarkPushMemory\// {
    name = $1; sub(/^BenchmarkPushMemory\//, "", name); sub(/-[0-9]+$/, "", name)
    split(name, parts, "/"); kind = parts[1]; n = parts[2]
    sub(/^kind=/, "", kind); sub(/^messages=/, "", n)
    for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
    printf "%-6s %2s x 10 MB at once in 512 MiB: peak RSS %6.1f MiB = %4.1f %% of the container, %5.1f MiB per message (%.2fx its push body; budget %.1f MiB)\n",
      kind, n, v["peak-MiB"], v["peak-%container"], v["MiB/msg"], v["x-body/msg"], v["budget-MiB/msg"]
  }
  /^(--- FAIL|FAIL|ok|panic)/ || /memory_bench_test.go/ { print }'
