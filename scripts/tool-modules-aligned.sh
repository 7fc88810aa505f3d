#!/usr/bin/env bash
# tool-modules-aligned.sh BASE OTHER [MODULE...]: checks that the tool module OTHER builds
# its tools with every module they share with BASE's build at BASE's version, but for the
# MODULEs named (those OTHER needs at another version). Go's build cache reuses a compiled
# package only when its whole dependency tree is the same, so a module held at another
# version makes a cold make deps (or its tests) compile it, and everything above it, twice.
# Only modules that provide packages to the builds count (go list -deps).
#
# BASE is a tool module (its tools: go list -deps tool), or . for the eventpipe module
# itself (its packages and tests with the build tags in BUILDTAGS, which the Makefile
# passes: as make lint vets and make test-only compiles them). make lint runs it on
#   tools/pulumi and tools/pulumi-yaml (the Pulumi CLI and the YAML language host),
#   . and tools/opa (opa and conftest: at the eventpipe module's OPA and its versions),
#   . and tools/regal (Regal: all but OPA and gobwas/glob, which it needs at its own).
# Against ., a module OTHER needs at a newer version than the eventpipe module's is not
# reported: OTHER cannot go lower (Go takes the highest version required), and raising it
# in the eventpipe module is that module's choice, not a tool's.
# Exits 1 naming each module out of line and the command that aligns it.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 BASE OTHER [MODULE...]" >&2; exit 2; }
base=$1 other=$2
shift 2
used() {
  local args=(tool)
  [ "$1" = . ] && args=(-test -tags "${BUILDTAGS-}" ./...)
  (cd "$1" && go list -deps -f '{{with .Module}}{{.Path}} {{.Version}}{{end}}' "${args[@]}") | sort -u
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
used "$base" >"$tmp/base"
used "$other" >"$tmp/other"
printf '%s\n' "$@" >"$tmp/except"
# Newer is sort -V's order, which is Go's for releases and pseudo-versions (not for a
# pre-release, which it puts after its release).
join "$tmp/base" "$tmp/other" | while read -r mod bv ov; do
  [ "$bv" = "$ov" ] && continue
  grep -qxF "$mod" "$tmp/except" && continue
  if [ "$base" = . ] && [ "$(printf '%s\n%s\n' "$bv" "$ov" | sort -V | tail -1)" = "$ov" ]; then continue; fi
  printf '  %s is %s in %s, %s in %s: cd %s && go get %s@%s && go mod tidy\n' "$mod" "$ov" "$other" "$bv" "$base" "$other" "$mod" "$bv"
done >"$tmp/out"
if [ -s "$tmp/out" ]; then
  echo "$other is out of line with $base (or, if $other needs that version, name the module to $0 in the Makefile):"
  cat "$tmp/out"
  exit 1
fi
