#!/usr/bin/env bash
# cold-test.sh: how long `make test` takes on a fresh machine, phase by phase.
#
# It clones this repository (HEAD, or REV) into a new temporary folder and
# runs make test there with every cache empty and of its own: HOME, GOPATH
# (GOMODCACHE), GOCACHE, the npm cache and the tool cache (TOOLCACHE) all live
# in that folder, so nothing the machine has built or downloaded before is
# used. Machine settings that are not caches are kept: PATH, the Go
# environment file (GOPROXY, GOFLAGS, GOTOOLCHAIN), npm's user config,
# PYENV_ROOT. CI=true is set, as CI runs it (a test whose tool is missing
# fails rather than skips, so nothing is left out of the figure). make test is
# `make deps`, `make lint` and `make test-only` in that order (see the
# Makefile), and the script runs those three one after the other, printing
# for each
#   wall    elapsed time
#   cpu     user + system CPU time of everything it ran (getrusage of the
#           reaped children: what two idle cores divide; a process that
#           detaches from its parent, like a PostgreSQL server started with
#           pg_ctl, is not counted)
#   load    the 1-minute load average sampled every 5 s: at the start, mean, max
#   disk    what the caches hold at the end of the phase
# and their total. On a shared machine compare cpu, not wall: wall time grows
# with everyone else's load, CPU time much less.
#
# Options
#   --warm        then run make test again in the same clone with the caches
#                 now warm (a developer's second run) and print it the same way
#   --profile     wrap every compile, link and vet with a logger (go's
#                 -toolexec) and print where the CPU went: by tool, the
#                 packages compiled more than once (different versions or build
#                 lists of one import path), the costliest compiles and links,
#                 and the slowest test packages. The wrapper changes the build
#                 cache's keys, so a profiled run is for finding the time, not
#                 for the figure.
#   --keep        keep the temporary folder (clone, caches, logs); by default
#                 it is removed (it holds about 9 GB)
#   --dir DIR     make the temporary folder under DIR (default: $TMPDIR or /tmp)
#
# Usage: scripts/cold-test.sh [--warm] [--profile] [--keep] [--dir DIR] [REV]
set -euo pipefail

# The -toolexec wrapper: go runs `cold-test.sh TOOL ARGS...` for every tool
# action when --profile is on, with COLD_TEST_TOOLLOG naming the log.
if [[ -n "${COLD_TEST_TOOLLOG:-}" && "${1:-}" == /* ]]; then
  tool="$1"
  shift
  case " $* " in *" -V=full "* | *" -V "*) exec "$tool" "$@" ;; esac
  name="${tool##*/}"
  pkg=""
  prev=""
  for a in "$@"; do
    [[ "$prev" == "-p" ]] && pkg="$a"
    prev="$a"
  done
  if [[ -z "$pkg" && "$name" == vet ]]; then
    cfg="${*: -1}"
    pkg="$(sed -n 's/^ *"ImportPath": *"\([^"]*\)".*/\1/p' "$cfg" 2>/dev/null | head -1)"
  fi
  if [[ -z "$pkg" ]]; then
    prev=""
    for a in "$@"; do
      [[ "$prev" == "-o" ]] && pkg="$(basename "$a")"
      prev="$a"
    done
    pkg="${PWD#"$COLD_TEST_ROOT"/}:$pkg"
  fi
  exec /usr/bin/time -a -o "$COLD_TEST_TOOLLOG" \
    -f "${COLD_TEST_PHASE:-?}	$name	$pkg	%e	%U	%S" "$tool" "$@"
fi

warm=0 profile=0 keep=0 base="${TMPDIR:-/tmp}" rev=HEAD
while [[ $# -gt 0 ]]; do
  case "$1" in
    --warm) warm=1 ;;
    --profile) profile=1 ;;
    --keep) keep=1 ;;
    --dir) base="$2"; shift ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "cold-test.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) rev="$1" ;;
  esac
  shift
done
command -v /usr/bin/time >/dev/null || { echo "cold-test.sh: needs GNU time (apt-get install time)" >&2; exit 2; }
self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
repo="$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)"
commit="$(git -C "$repo" rev-parse --verify "$rev^{commit}")"

# The machine's settings that are configuration, not caches, read before HOME moves.
goenv="$(go env GOENV)"
npmrc="${NPM_CONFIG_USERCONFIG:-$HOME/.npmrc}"
pyenv="${PYENV_ROOT:-$HOME/.pyenv}"

tmp="$(mktemp -d "$base/cold-test.XXXXXX")"
sampler=""
cleanup() {
  [[ -n "$sampler" ]] && kill "$sampler" 2>/dev/null || true
  if [[ $keep == 0 ]]; then
    chmod -R u+w "$tmp" 2>/dev/null || true # the module cache is read-only
    rm -rf "$tmp"
  else
    echo "kept $tmp"
  fi
}
trap cleanup EXIT
mkdir -p "$tmp/home" "$tmp/logs"
git clone -q --no-hardlinks "$repo" "$tmp/eventpipe"
git -C "$tmp/eventpipe" checkout -q --detach "$commit"

export HOME="$tmp/home"
unset XDG_CACHE_HOME XDG_CONFIG_HOME
export GOPATH="$tmp/gopath" GOMODCACHE="$tmp/gopath/pkg/mod" GOCACHE="$tmp/gocache"
export TOOLCACHE="$tmp/home/.cache/eventpipe/tools"
export npm_config_cache="$tmp/npm-cache"
export CI=true
[[ -f "$goenv" ]] && export GOENV="$goenv"
[[ -f "$npmrc" ]] && export NPM_CONFIG_USERCONFIG="$npmrc"
[[ -d "$pyenv" ]] && export PYENV_ROOT="$pyenv"
if [[ $profile == 1 ]]; then
  export COLD_TEST_TOOLLOG="$tmp/logs/tools.tsv" COLD_TEST_ROOT="$tmp"
  export GOFLAGS="${GOFLAGS:-$(go env GOFLAGS)} -toolexec=$self"
fi

( while :; do echo "$(date +%s) $(cut -d' ' -f1 /proc/loadavg)"; sleep 5; done ) >"$tmp/logs/load" &
sampler=$!

# disk: the caches' sizes, in GB, as "modules 4.4 build 4.2 ...".
disk() {
  local out="" name dir
  for name in modules:"$GOMODCACHE" build:"$GOCACHE" tools:"$TOOLCACHE" npm:"$npm_config_cache" clone-tools:"$tmp/eventpipe/.tools"; do
    dir="${name#*:}"
    out+="$(printf '%s %.1f ' "${name%%:*}" "$(du -sb "$dir" 2>/dev/null | awk '{print $1/1e9}' || echo 0)")"
  done
  printf '%s' "${out% }"
}
# mmss SECONDS
mmss() { awk -v s="$1" 'BEGIN { printf "%d:%04.1f", int(s/60), s - 60*int(s/60) }'; }

cd "$tmp/eventpipe"
# The Makefile before make test-only existed: make test again (deps and lint warm).
testcmd=(make test-only)
make -n test-only >/dev/null 2>&1 || testcmd=(make test)

declare -A wall cpu
rows=()
# phase NAME COMMAND...: runs COMMAND with its output in logs/NAME.log, times it.
phase() {
  local name="$1" t0 t1 l0 rc=0
  shift
  l0="$(cut -d' ' -f1 /proc/loadavg)"
  t0="$(date +%s.%N)"
  echo "$(date +%T) $name: $*" >&2
  COLD_TEST_PHASE="$name" /usr/bin/time -o "$tmp/logs/$name.time" -f '%U %S' "$@" >"$tmp/logs/$name.log" 2>&1 || rc=$?
  t1="$(date +%s.%N)"
  wall[$name]="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
  cpu[$name]="$(tail -1 "$tmp/logs/$name.time" | awk '{ print $1 + $2 }')"
  local load
  load="$(awk -v a="${t0%.*}" -v b="${t1%.*}" -v l0="$l0" '$1 >= a && $1 <= b { n++; s += $2; if ($2 > m) m = $2 }
    END { if (!n) { s = l0; n = 1; m = l0 }; printf "%.1f/%.1f/%.1f", l0, s/n, m }' "$tmp/logs/load")"
  rows+=("$(printf '%-10s %9s %9s %15s  %s' "$name" "$(mmss "${wall[$name]}")" "$(mmss "${cpu[$name]}")" "$load" "$(disk)")")
  if [[ $rc != 0 ]]; then
    echo "cold-test.sh: $name failed (exit $rc); the end of its log ($tmp/logs/$name.log):" >&2
    tail -40 "$tmp/logs/$name.log" >&2
    keep=1
    report
    exit 1
  fi
}

report() {
  echo
  echo "cold make test of $(git -C "$repo" log -1 --format='%h %s' "$commit" | cut -c1-70)"
  echo "on $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), $(go env GOVERSION)"
  printf '%-10s %9s %9s %15s  %s\n' phase wall cpu "load start/mean/max" "caches after, GB"
  printf '%s\n' "${rows[@]}"
  local prefix label
  for prefix in "" warm-; do
    [[ -n "${wall[${prefix}tests]:-}" ]] || continue
    label="${prefix:-cold-}total"
    printf '%-10s %9s %9s\n' "${label/-/ }" \
      "$(mmss "$(awk -v a="${wall[${prefix}deps]}" -v b="${wall[${prefix}lint]}" -v c="${wall[${prefix}tests]}" 'BEGIN { print a + b + c }')")" \
      "$(mmss "$(awk -v a="${cpu[${prefix}deps]}" -v b="${cpu[${prefix}lint]}" -v c="${cpu[${prefix}tests]}" 'BEGIN { print a + b + c }')")"
  done
}

phase deps make deps
phase lint make lint
phase tests "${testcmd[@]}"
if [[ $warm == 1 ]]; then
  phase warm-deps make deps
  phase warm-lint make lint
  phase warm-tests "${testcmd[@]}"
fi
report

if [[ $profile == 1 ]]; then
  log="$tmp/logs/tools.tsv"
  echo
  echo "CPU seconds by phase and tool (the wrapped compile, link, vet, asm, cgo actions):"
  awk -F'\t' 'NF == 6 { c[$1 "\t" $2] += $5 + $6; n[$1 "\t" $2]++ }
    END { for (k in c) printf "  %-10s %-8s %8.0f s in %d actions\n", substr(k, 1, index(k, "\t") - 1), substr(k, index(k, "\t") + 1), c[k], n[k] }' "$log" | sort -k1,1 -k3,3nr
  echo
  echo "Import paths compiled more than once (other versions or build lists), by the CPU of all but the cheapest:"
  awk -F'\t' 'NF == 6 && $2 == "compile" { p = $3; sub(/ \[.*/, "", p); t = $5 + $6; c[p] += t; n[p]++; if (!(p in m) || t < m[p]) m[p] = t }
    END { for (p in c) if (n[p] > 1) { x += c[p] - m[p]; printf "  %7.1f s  %dx  %s\n", c[p] - m[p], n[p], p } ; printf "  %7.1f s  in all\n", x }' "$log" | sort -nr | sed -n '1,25p'
  echo
  echo "By module, the CPU of its compiles (all versions), the 20 largest:"
  awk -F'\t' 'NF == 6 && $2 == "compile" { p = $3; sub(/ \[.*/, "", p); n = split(p, e, "/");
      m = (e[1] ~ /\./) ? e[1] "/" e[2] "/" e[3] : "std"; if (e[1] ~ /^(golang.org|google.golang.org|cloud.google.com|go.opentelemetry.io|gopkg.in|k8s.io|sigs.k8s.io|go.etcd.io|cuelang.org)$/) m = e[1] "/" e[2];
      c[m] += $5 + $6 } END { for (m in c) printf "  %7.1f s  %s\n", c[m], m }' "$log" | sort -nr | sed -n '1,20p'
  echo
  echo "The 15 costliest compiles and the 15 costliest links (CPU s, wall s, phase):"
  awk -F'\t' 'NF == 6 && $2 == "compile" { printf "  compile %6.1f %6.1f  %-6s %s\n", $5 + $6, $4, $1, $3 }' "$log" | sort -k2,2nr | sed -n '1,15p'
  awk -F'\t' 'NF == 6 && $2 == "link" { printf "  link    %6.1f %6.1f  %-6s %s\n", $5 + $6, $4, $1, $3 }' "$log" | sort -k2,2nr | sed -n '1,15p'
fi
echo
echo "The 10 slowest test packages (go test's elapsed, the test binary's run):"
grep -hE '^(ok|FAIL)[[:space:]]' "$tmp/logs/tests.log" | awk '{ t = $3; sub(/s$/, "", t); printf "  %7.1f s  %s\n", t, $2 }' | sort -nr | sed -n '1,10p'
