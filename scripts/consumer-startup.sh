#!/usr/bin/env bash
# Consumer binary size and start-up time: builds cmd/consumer exactly as
# `make build-consumer` (and the Dockerfile) do, prints its size, then runs
# it N times (default 9) and prints the median time from exec to the first
# 200 from GET /healthz. Goals: < 40 MB and < 100 ms.
# Usage: scripts/consumer-startup.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-9}"
make -s build-consumer >/dev/null
bin="$PWD/bin/consumer"
size=$(stat -c %s "$bin")
printf 'binary: %s, %d bytes (%.1f MB; goal < 40 MB)\n' "$bin" "$size" "$(awk -v s="$size" 'BEGIN{print s/1048576}')"
if command -v file >/dev/null; then file -b "$bin" | sed 's/^/binary: /'; fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
times=()
for i in $(seq 1 "$runs"); do
  port=$((20000 + RANDOM % 20000))
  start=$(date +%s%N)
  PORT=$port EVENTPIPE_STORE="bbolt://$tmp/run$i.db" "$bin" >"$tmp/log$i" 2>&1 &
  pid=$!
  # Poll with bash's /dev/tcp (no process spawned per probe).
  until { exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'GET /healthz HTTP/1.0\r\n\r\n' >&3 && head -1 <&3 | grep -q ' 200 '; } 2>/dev/null; do
    exec 3>&- 3<&- 2>/dev/null || true
    if ! kill -0 "$pid" 2>/dev/null; then echo "consumer exited:"; cat "$tmp/log$i"; exit 1; fi
  done
  end=$(date +%s%N)
  exec 3>&- 3<&- 2>/dev/null || true
  kill -TERM "$pid"; wait "$pid" || true
  times+=($(( (end - start) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
median=${sorted[$(( ${#sorted[@]} / 2 ))]}
printf 'exec -> healthy (us, %d runs): %s\n' "$runs" "${sorted[*]}"
printf 'median exec -> healthy: %.1f ms (goal < 100 ms)\n' "$(awk -v m="$median" 'BEGIN{print m/1000}')"
