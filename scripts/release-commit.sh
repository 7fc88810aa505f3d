#!/usr/bin/env bash
# release-commit.sh [VERSION|previous]: prints the commit of a release, read from history.
# A release is the commit that set internal/release.Tag to its version (release.Tag is the
# one home of the version; every release bumps it). VERSION (vX.Y.Z) names one release;
# "previous" (the default) is the release the code at HEAD is measured and upgraded
# against. HEAD's release.Tag names the release being prepared (every release bumps it
# once and its CHANGELOG.md section collects the changes since the previous one), so the
# previous release is the newest commit that set release.Tag to another value; while the
# Tag has never been bumped since a release, it is the commit that set it.
# Exits 2, saying why, on a shallow clone or when no release is found.
set -euo pipefail
cd "$(dirname "$0")/.."
file=internal/release/release.go
if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  echo "release-commit.sh: this clone is shallow; run git fetch --unshallow to read the release history" >&2
  exit 2
fi
# Commits that changed the Tag line, newest first, each with the Tag it left.
releases() {
  git log --format=%H -G'^const Tag = ' -- "$file" | while read -r c; do
    printf '%s %s\n' "$c" "$(git show "$c:$file" | sed -n 's/^const Tag = "\(.*\)"$/\1/p')"
  done
}
want=${1:-previous}
if [ "$want" = previous ]; then
  tag=$(sed -n 's/^const Tag = "\(.*\)"$/\1/p' "$file")
  out=$(releases | awk -v tag="$tag" '
    $2 != tag { print $1; found = 1; exit }
    { same = $1 }
    END { if (!found && same != "") print same }')
else
  out=$(releases | awk -v tag="$want" '$2 == tag { print $1; exit }')
fi
if [ -z "$out" ]; then
  echo "release-commit.sh: no commit in history set release.Tag to ${want}" >&2
  exit 2
fi
echo "$out"
