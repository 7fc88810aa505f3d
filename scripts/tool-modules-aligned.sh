#!/usr/bin/env bash
# tool-modules-aligned.sh BASE OTHER [MODULE...]: checks that the tool module OTHER builds
# its tools with every module they share with BASE's tools at BASE's version, but for the
# MODULEs named (those OTHER needs at another version). make lint runs it on tools/pulumi
# (the Pulumi CLI) and tools/pulumi-yaml (the YAML language host): Go's build cache reuses
# a compiled package only when its whole dependency tree is the same, so a module held at
# another version makes a cold make deps compile it, and everything above it, twice.
# Only modules that provide packages to the tools' builds count (go list -deps tool).
# Exits 1 naming each module out of line and the command that aligns it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 BASE OTHER [MODULE...]" >&2; exit 2; }
base=$1 other=$2
shift 2
used() { (cd "$1" && go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' tool) | sort -u; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
used "$base" >"$tmp/base"
used "$other" >"$tmp/other"
printf '%s\n' "$@" >"$tmp/except"
out=$(join "$tmp/base" "$tmp/other" | awk -v base="$base" -v other="$other" 'NR == FNR { except[$1] = 1; next }
  $2 != $3 && !($1 in except) { printf "  %s is %s in %s, %s in %s: cd %s && go get %s@%s && go mod tidy\n", $1, $3, other, $2, base, other, $1, $2 }' \
  "$tmp/except" -)
if [ -n "$out" ]; then
  echo "$other is out of line with $base (or, if $other needs the newer version, name the module to $0 in the Makefile):"
  echo "$out"
  exit 1
fi
