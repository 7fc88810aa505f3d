#!/usr/bin/env bash
# compile-sharing.sh BUILD...: how many packages a cold build cache compiles for a sequence of
# builds, and how many of each build's packages an earlier build already compiled. Go's build
# cache reuses a compiled package only when the package and every package below it come from
# the same module versions (with the same flags, which make deps, lint and test-only keep), so
# this counts, without compiling anything, what a cold `make test` compiles per step: a count
# the machine's load does not change (scripts/cold-test.sh --profile times the same compiles).
#
# A BUILD is DIR:PATTERN, listed with go list -deps in DIR: a tool module and `tool`
# (tools/opa:tool), the eventpipe module and its packages with their tests and BUILDTAGS
# (.:./...), or MODULE@VERSION:PACKAGE for what `go install PACKAGE@VERSION` builds, in that
# module's own go.mod (github.com/open-policy-agent/conftest@v0.71.1:.).
# Prints per build: packages, those outside the standard library, those it compiles (not
# reused from an earlier build) and their Go source in MB (a rough measure of the CPU).
#
# make test's order today:
#   scripts/compile-sharing.sh tools/opa:tool tools/regal:tool tools/pulumi:tool \
#     tools/pulumi-yaml:tool .:./... tools/sdkgen:.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 DIR:PATTERN..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fmt='{{.ImportPath}}	{{with .Module}}{{.Path}}@{{.Version}}{{end}}	{{join .Deps ","}}	{{.Dir}}	{{join .GoFiles ","}},{{join .CgoFiles ","}}'
n=0
for b in "$@"; do
  dir=${b%%:*} pat=${b#*:} n=$((n + 1))
  args=("$pat")
  [ "$dir" = . ] && args=(-test -tags "${BUILDTAGS-}" "$pat")
  case "$dir" in
    *@*)
      # The module is the main module there: give its packages the version go install uses.
      mdir=$(go mod download -json "$dir" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
      (cd "$mdir" && go list -e -deps -f "$fmt" "${args[@]}") |
        awk -F'\t' -v OFS='\t' -v mod="$dir" 'BEGIN { split(mod, m, "@") } $2 == m[1] "@" { $2 = mod } 1' ;;
    *) (cd "$dir" && go list -e -deps -f "$fmt" "${args[@]}") ;;
  esac >"$tmp/$n"
  echo "$b" >"$tmp/$n.name"
done
python3 - "$tmp" "$n" <<'EOF'
import os, sys
tmp, n = sys.argv[1], int(sys.argv[2])
seen = set()
total = [0, 0.0]
print(f"{'build':44s} {'packages':>8s} {'non-std':>8s} {'compiled':>8s} {'source MB':>9s}")
for i in range(1, n + 1):
    pk = {}
    for line in open(f"{tmp}/{i}"):
        imp, mod, deps, d, files = line.rstrip("\n").split("\t")
        size = sum(os.path.getsize(os.path.join(d, f)) for f in files.split(",") if f)
        pk[imp] = (mod, [x for x in deps.split(",") if x], size)
    compiled, mb = 0, 0.0
    for imp, (mod, deps, size) in pk.items():
        # A compile's identity: the package and every package below it, with their modules.
        key = frozenset([(imp, mod)] + [(x, pk[x][0]) for x in deps if x in pk])
        if key not in seen and mod:
            compiled += 1
            mb += size / 1e6
        seen.add(key)
    name = open(f"{tmp}/{i}.name").read().strip()
    nonstd = sum(1 for m, _, _ in pk.values() if m)
    print(f"{name:44s} {len(pk):8d} {nonstd:8d} {compiled:8d} {mb:9.1f}")
    total[0] += compiled
    total[1] += mb
print(f"{'total':44s} {'':8s} {'':8s} {total[0]:8d} {total[1]:9.1f}")
EOF
