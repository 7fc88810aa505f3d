#!/usr/bin/env bash
# Push-path throughput: the idempotent consumer (memory store, default routes,
# JSON logging) against a bare net/http handler that only reads and strictly
# decodes the push envelope (the same decoder), from consumer/push's
# BenchmarkPushPath, two ways: "handler" calls ServeHTTP directly (the
# handlers' own CPU), "http" posts to a loopback net/http server (what a
# Pub/Sub push costs).
#
# The goal (idempotent >= 50% of the bare handler's throughput) is set on
# "http", a push as Pub/Sub sends it: that is the cost a deployment pays per
# message. "handler" is the diagnostic view of the same work without the
# transport, where the bare handler's share of the whole is smallest; it has
# no goal (docs/benchmarks.md, "Push path", says why).
#
# What "% of the bare handler" means here, for each way:
#   100 * (bare ns/op) / (idempotent ns/op)
# that is the idempotent handler's throughput (messages per second, two
# parallel workers on this machine's GOMAXPROCS) as a share of the bare
# handler's, both measured by one compiled test binary in one round, back to
# back, on the same messages. Each half sends the same fixed number of
# messages (-test.benchtime ${count}x), cycling through 16,384 distinct ones:
# with the default 40,000 the idempotent handler applies 16,384 (each writes
# its document and its dedupe marker) and answers 23,616 redeliveries as
# duplicates, whatever its speed (a time-based benchtime would give a faster
# handler more duplicates). The bare handler does no JSON work beyond the
# envelope, so the share is what routing, the two keys, the store
# transaction, the log line and the JSON response cost on top of it.
#
# Beside it the script prints the same share of CPU time: 100 * (bare
# cpu-ns/op) / (idempotent cpu-ns/op), the process's user and system CPU
# time per message (the benchmark's cpu-ns/op, from getrusage: every
# goroutine, the collector's and over HTTP the client's included). On an
# idle machine the two agree; on a loaded one, where the test binary gets
# a varying part of two cores, wall time swings with the load and CPU time
# much less, so the CPU share is the steadier view of the same cost.
#
# The script runs that in rounds and prints each round's shares and the
# medians over the rounds, which a load swing on a shared machine moves
# less than any single round. With BASE set to another source tree (e.g. a
# `git worktree add /tmp/base <commit>`), each round runs that tree's binary
# first and this one's next, and both are reported: a comparison under the
# same load.
#
# Usage: [BASE=dir] scripts/consumer-bench.sh [count] [rounds]   (defaults 40000, 3)
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-40000}"
rounds="${2:-3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
trees=()
if [[ -n "${BASE:-}" ]]; then
  (cd "$BASE" && go test -c -o "$tmp/base.test" ./consumer/push)
  trees+=(base)
fi
go test -c -o "$tmp/this.test" ./consumer/push
trees+=(this)
out=""
for _ in $(seq "$rounds"); do
  for tree in "${trees[@]}"; do
    out+="$(cd consumer/push && "$tmp/$tree.test" -test.run '^$' \
      -test.bench '^BenchmarkPushPath$/^(http|handler)$/^(bare|idempotent)$' \
      -test.benchtime "${count}x" -test.benchmem | sed -n "s/^BenchmarkPushPath/$tree BenchmarkPushPath/p")"$'\n'
  done
done
echo "$out" | grep 'BenchmarkPushPath'
echo "$out" | awk -v trees="${trees[*]}" '
  $2 ~ /^BenchmarkPushPath\// {
    split($2, name, "/"); kind = name[2]; variant = name[3]; sub(/-[0-9]+$/, "", variant)
    n = ++seen[$1, kind, variant]
    for (f = 4; f <= NF; f++) {
      if ($f == "ns/op") ns[$1, kind, variant, n] = $(f - 1)
      if ($f == "cpu-ns/op") cpu[$1, kind, variant, n] = $(f - 1)
    }
    kinds[kind] = 1
  }
  # median sorts the m values of v and returns their median.
  function median(v, m,    x, y, t) {
    for (x = 2; x <= m; x++) { t = v[x]; for (y = x - 1; y >= 1 && v[y] > t; y--) v[y + 1] = v[y]; v[y + 1] = t }
    return (m % 2) ? v[(m + 1) / 2] : (v[m / 2] + v[m / 2 + 1]) / 2
  }
  END {
    nt = split(trees, tree, " ")
    for (kind in kinds) for (t = 1; t <= nt; t++) {
      tr = tree[t]; m = 0; c = 0; line = ""; cline = ""
      split("", ratio); split("", cratio)
      for (r = 1; (tr, kind, "bare", r) in ns && (tr, kind, "idempotent", r) in ns; r++) {
        ratio[++m] = 100 * ns[tr, kind, "bare", r] / ns[tr, kind, "idempotent", r]
        line = line sprintf(" %.0f%%", ratio[m])
        if ((tr, kind, "bare", r) in cpu && (tr, kind, "idempotent", r) in cpu) {
          cratio[++c] = 100 * cpu[tr, kind, "bare", r] / cpu[tr, kind, "idempotent", r]
          cline = cline sprintf(" %.0f%%", cratio[c])
        }
      }
      if (m == 0) continue
      goal = (kind == "http") ? "goal >= 50%" : "no goal: the handler alone, see docs/benchmarks.md"
      printf "%s %s: idempotent keeps %.0f%% of bare throughput (median of %d rounds:%s; %s)\n", tr, kind, median(ratio, m), m, line, goal
      if (c > 0) printf "%s %s: bare CPU time per message is %.0f%% of idempotent%s (median of %d rounds:%s)\n", tr, kind, median(cratio, c), "\x27s", c, cline
    }
  }' | sort
