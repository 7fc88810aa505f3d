#!/usr/bin/env bash
# Lines of non-test Go in this module, by `go list` (test files and other modules, such as
# tools/*, are not counted), in three parts: the product (what users build, import or run),
# examples, and test scaffolding (internal/testing/… and tests/…: packages only tests use).
# Run from the repository's root; pass a package pattern to count less than ./... .
set -euo pipefail
go list -f '{{.ImportPath}} {{.Dir}} {{join .GoFiles " "}}' "${1:-./...}" |
  while read -r pkg dir files; do
    [ -n "$files" ] || continue
    case "$pkg" in
      */internal/testing/* | */tests | */tests/*) part=scaffolding ;;
      */examples/*) part=examples ;;
      *) part=product ;;
    esac
    echo "$part $(cd "$dir" && cat $files | wc -l)"
  done |
  awk '{n[$1] += $2} END {printf "product %d\nexamples %d\nscaffolding %d\n", n["product"], n["examples"], n["scaffolding"]}'
