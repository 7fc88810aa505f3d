#!/usr/bin/env bash
# The consumer's speed, this tree side by side with the previous release
# (scripts/release-commit.sh names its commit; it is checked out in a temporary
# `git worktree`, removed at exit, never committed), in the same interleaved rounds.
# Two parts; `make test` runs neither.
#
# 1. Push path (PART=push): the idempotent consumer (memory store, default routes,
# JSON logging) against a bare net/http handler that only reads and strictly
# decodes the push envelope (the same decoder), from consumer/push's
# BenchmarkPushPath, two ways: "handler" calls ServeHTTP directly (the
# handlers' own CPU), "http" posts to a loopback net/http server (what a
# Pub/Sub push costs).
#
# The goals (issue 35: idempotent >= 60% of the bare handler's throughput, at
# most 11.3 KB allocated per message) are set on "http", a push as Pub/Sub
# sends it: that is the cost a deployment pays per message. "handler" is the
# diagnostic view of the same work without the transport, where the bare
# handler's share of the whole is smallest; it has no goal
# (docs/benchmarks.md, "Push path", says why).
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
# much less, so the CPU share is the steadier view of the same cost. And the
# bytes allocated per message (B/op, which no load moves) of each tree.
#
# 2. PostgreSQL (PART=pg): the consumer binaries of both trees, each its own
# process with a PostgreSQL store, against the bare loop
# (internal/testing/pushload: the fastest correct apply a pgx program makes of
# the same messages, the marker insert and the conditional document upsert in
# one statement, one round trip), on one throwaway PostgreSQL 15 that syncs
# (fsync and synchronous_commit on, as Cloud SQL runs). Per round, at 8 and 64
# concurrent pushes, each contender sends the same 6,000 messages over 1,000
# documents on a database of its own, in an order that turns from round to
# round; then each consumer once more 30,000 messages for its memory after
# them. Beside them runs the bare HTTP endpoint (pushload.BareHTTP, command
# barehttp: net/http, encoding/json and the bare loop's statement, its own
# process as the consumers are), which shows how much of the gap is HTTP
# itself. It prints messages per second, p50 and p99, the consumer's resident
# memory after the run and CPU per message, then the ratios (each the median
# of the rounds' ratios): each consumer against the bare loop (goals: 0.8 at 8
# and at 64, p99 at 8 within 2x) and against the bare HTTP endpoint (throughput
# and process CPU per message), the bare HTTP endpoint against the bare loop,
# and this tree against the previous release.
#
# The script runs each part in rounds and prints each round's figures and the
# medians over the rounds, which a load swing on a shared machine moves less
# than any single round.
#
# Usage: [BASE=dir|none] [PART=push|pg|all] [MESSAGES=6000] [MEMORY_MESSAGES=30000]
#        scripts/consumer-bench.sh [count] [rounds]   (defaults 40000, 3)
# BASE is the tree to compare with (default: a worktree of the previous release;
# none: this tree alone).
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-40000}"
rounds="${2:-3}"
part="${PART:-all}"
tmp="$(mktemp -d)"
worktree=""
cleanup() {
  if [[ -n "$worktree" ]]; then git worktree remove --force "$worktree" >/dev/null 2>&1 || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
base="${BASE:-}"
if [[ -z "$base" ]]; then
  commit="$(scripts/release-commit.sh previous)"
  worktree="$tmp/base"
  git worktree add --detach --quiet "$worktree" "$commit"
  base="$worktree"
  echo "previous release: $commit ($(git show -s --format=%cs "$commit"))"
elif [[ "$base" == none ]]; then
  base=""
fi
echo "this tree: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' with uncommitted changes'); load average $(cut -d' ' -f1-3 /proc/loadavg)"

push_part() {
  local trees=() out=""
  if [[ -n "$base" ]]; then
    (cd "$base" && go test -c -o "$tmp/base.test" ./consumer/push)
    trees+=(base)
  fi
  go test -c -o "$tmp/this.test" ./consumer/push
  trees+=(this)
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
        if ($f == "B/op") bytes[$1, kind, variant, n] = $(f - 1)
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
        tr = tree[t]; m = 0; c = 0; b = 0; line = ""; cline = ""
        split("", ratio); split("", cratio); split("", bv)
        for (r = 1; (tr, kind, "bare", r) in ns && (tr, kind, "idempotent", r) in ns; r++) {
          ratio[++m] = 100 * ns[tr, kind, "bare", r] / ns[tr, kind, "idempotent", r]
          line = line sprintf(" %.0f%%", ratio[m])
          if ((tr, kind, "bare", r) in cpu && (tr, kind, "idempotent", r) in cpu) {
            cratio[++c] = 100 * cpu[tr, kind, "bare", r] / cpu[tr, kind, "idempotent", r]
            cline = cline sprintf(" %.0f%%", cratio[c])
          }
          bv[++b] = bytes[tr, kind, "idempotent", r]
        }
        if (m == 0) continue
        goal = (kind == "http") ? "goal >= 60%" : "no goal: the handler alone, see docs/benchmarks.md"
        printf "%s %s: idempotent keeps %.0f%% of bare throughput (median of %d rounds:%s; %s)\n", tr, kind, median(ratio, m), m, line, goal
        if (c > 0) printf "%s %s: bare CPU time per message is %.0f%% of idempotent%s (median of %d rounds:%s)\n", tr, kind, median(cratio, c), "\x27s", c, cline
        bgoal = (kind == "http") ? "; goal <= 11300" : ""
        printf "%s %s: idempotent allocates %d B per message (median of %d rounds%s)\n", tr, kind, median(bv, b), b, bgoal
        if (tr == "this") { thisb[kind] = median(bv, b) } else { baseb[kind] = median(bv, b) }
      }
      for (kind in kinds) if (kind in thisb && kind in baseb) {
        printf "this/base %s: bytes allocated per message %.2f\n", kind, thisb[kind] / baseb[kind]
        # Both trees against one yardstick: each round, the idempotent
        # handlers time for time, and the previous release against the
        # bare handler of this tree (the bare handler of each tree is the
        # one its test file defines, and the two need not cost the same).
        m = 0; split("", tv); split("", sv); line = ""
        for (r = 1; ("this", kind, "idempotent", r) in ns && ("base", kind, "idempotent", r) in ns && ("this", kind, "bare", r) in ns; r++) {
          tv[++m] = ns["this", kind, "idempotent", r] / ns["base", kind, "idempotent", r]
          sv[m] = 100 * ns["this", kind, "bare", r] / ns["base", kind, "idempotent", r]
          line = line sprintf(" %.2f", tv[m])
        }
        if (m == 0) continue
        printf "this/base %s: idempotent time per message %.2f (median of %d rounds:%s)\n", kind, median(tv, m), m, line
        printf "base %s: against this tree%s bare handler, idempotent keeps %.0f%% of bare throughput (median of %d rounds)\n", kind, "\x27s", median(sv, m), m
      }
    }' | sort
}

pg_part() {
  go build -o "$tmp/pushload" ./internal/testing/pushload/cmd/pushload
  go build -o "$tmp/barehttp" ./internal/testing/pushload/cmd/barehttp
  go build -o "$tmp/consumer-this" ./cmd/consumer
  local consumers=()
  if [[ -n "$base" ]]; then
    (cd "$base" && go build -o "$tmp/consumer-base" ./cmd/consumer)
    consumers+=("base=$tmp/consumer-base")
  fi
  consumers+=("this=$tmp/consumer-this")
  "$tmp/pushload" -rounds "$rounds" -messages "${MESSAGES:-6000}" -memory-messages "${MEMORY_MESSAGES:-30000}" \
    -concurrency 8,64 -bare-http "$tmp/barehttp" "${consumers[@]}"
}

case "$part" in
  push) push_part ;;
  pg) pg_part ;;
  all) push_part; echo; pg_part ;;
  *) echo "PART=$part: use push, pg or all" >&2; exit 2 ;;
esac
