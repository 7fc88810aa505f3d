#!/usr/bin/env bash
# cold-run.sh: how long the README's run command takes to print its table on
# empty Go caches, as a new user's first run on a fresh machine does.
#
# It exports the committed tree (REV, default HEAD: a clean clone's files, which
# edits in this folder cannot disturb), takes the run command from that tree's
# README Quickstart (the first line of its sh block that starts with `go run`, so
# the figure is always the README's command), runs it there with a Go build cache
# and module cache of its own, both empty (GOFLAGS gains -modcacherw so they can
# be removed; GOPROXY is the environment's), and prints:
#   - wall: from start to exit (the table is the last thing printed);
#   - build: from start to the program's first line of output, go's own
#     "go: downloading" lines not counted (downloading modules and compiling;
#     the rest is the scenario itself);
#   - cpu: user+sys seconds of go, the compiler and the program, which a busy
#     machine changes far less than the wall clock;
#   - the load average before, after, and sampled every 5 s while it ran.
# The machine's other load makes the wall figure longer; quote it with the load.
#
# Usage: scripts/cold-run.sh [EXTRA ARGS to append to the run command]
#        REV=c9f9a11 RUN='go run ./cmd/eventpipe dev' scripts/cold-run.sh
#          (another revision and command: the previous release's, side by side)
set -euo pipefail
cd "$(dirname "$0")/.."
rev="${REV:-HEAD}"
sha="$(git rev-parse --short "$rev")"

tmp="$(mktemp -d)"
cleanup() {
  [ -n "${sampler:-}" ] && kill "$sampler" 2>/dev/null || true
  chmod -R u+w "$tmp" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export GOCACHE="$tmp/gocache" GOMODCACHE="$tmp/gomodcache" GOFLAGS="-modcacherw${GOFLAGS:+ $GOFLAGS}"
mkdir "$tmp/tree"
git archive "$rev" | tar -x -C "$tmp/tree"
cd "$tmp/tree"

cmd="${RUN:-$(awk '/^## Quickstart/{q=1} q && /^```sh/{b=1; next} b && /^```/{exit} b && /^go run /{sub(/ *#.*/, ""); print; exit}' README.md)}"
if [ -z "$cmd" ]; then
  echo "cold-run: no \`go run\` line in the README's Quickstart block" >&2
  exit 2
fi
cmd="$cmd${*:+ $*}"

load() { cut -d' ' -f1-3 /proc/loadavg; }
echo "command: $cmd (at $sha)"
echo "go: $(go version | cut -d' ' -f3-), $(nproc) cores, GOPROXY=$(go env GOPROXY)"
echo "load before: $(load)"
( while sleep 5; do cut -d' ' -f1 /proc/loadavg; done ) >"$tmp/samples" &
sampler=$!

start=$(date +%s%N)
# Each output line is stamped with the nanoseconds since start when it arrives.
set +e
/usr/bin/time -f '%U %S' -o "$tmp/cpu" bash -c "$cmd" 2>&1 |
  while IFS= read -r line; do printf '%s %s\n' "$(( $(date +%s%N) - start ))" "$line"; done >"$tmp/out"
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s%N)
kill "$sampler" 2>/dev/null || true
sampler=""

# The program's first line: go's own lines ("go: downloading …") come before it.
first=$(awk '$2 != "go:" {print $1; exit}' "$tmp/out")
secs() { awk -v n="$1" 'BEGIN{printf "%.1f", n/1e9}'; }
if [ "$rc" -ne 0 ]; then
  echo "the run command failed (exit $rc); its output:" >&2
  cut -d' ' -f2- "$tmp/out" >&2
  exit 1
fi
if ! grep -q 'nothing lost' "$tmp/out"; then
  echo "the run command printed no verdict; its output:" >&2
  cut -d' ' -f2- "$tmp/out" >&2
  exit 1
fi
read -r user sys <"$tmp/cpu"
wall=$(secs $((end - start)))
echo "wall: ${wall} s to the table (goal: at most 180 s on an idle 2-core machine)"
echo "build: $(secs "${first:-0}") s to the program's first line of output (downloading modules and compiling)"
echo "cpu: $(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.1f", u+s}') s user+sys (user ${user} s, sys ${sys} s)"
echo "load after: $(load); sampled 1-min load while running: $(awk '{s+=$1; if($1>m)m=$1; n++} END{if(n) printf "mean %.1f, max %.1f over %d samples", s/n, m, n; else print "none"}' "$tmp/samples")"
echo "caches it filled: modules $(du -sh "$GOMODCACHE" | cut -f1), build $(du -sh "$GOCACHE" | cut -f1)"
