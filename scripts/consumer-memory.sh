#!/usr/bin/env bash
# Peak memory of the consumer binary under maximum-size messages: for 1, 5,
# 10 and 20 concurrent 10 MB Pub/Sub pushes, a fresh consumer process (with
# the GOMEMLIMIT the Cloud Run component gives a 1 GiB container) receives
# them at once; the benchmark reports the process's peak resident memory
# (VmHWM), what each message added over the idle process (MiB and as a
# multiple of its push body) and the budget consumer/limits sizes instances
# by (PerMessageBytes).
# Usage: scripts/consumer-memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
go test -run '^$' -bench '^BenchmarkPushMemory$' -benchtime 1x ./cmd/consumer |
  awk '/^BenchmarkPushMemory\// {
    n = $1; sub(/^BenchmarkPushMemory\/messages=/, "", n); sub(/-[0-9]+$/, "", n)
    for (i = 3; i < NF; i += 2) v[$(i + 1)] = $i
    printf "%2s x 10 MB at once: peak RSS %6.1f MiB, %5.1f MiB per message (%.2fx its push body; budget %.1f MiB)\n",
      n, v["peak-MiB"], v["MiB/msg"], v["x-body/msg"], v["budget-MiB/msg"]
  }'
