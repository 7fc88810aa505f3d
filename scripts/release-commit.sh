#!/usr/bin/env bash
# release-commit.sh [VERSION|previous]: prints the commit of a release, read from history.
# A release is the commit that set internal/release.Tag to its version (release.Tag is the
# one home of the version; every release bumps it). VERSION (vX.Y.Z) names one release;
# "previous" (the default) is the release the code at HEAD is measured and upgraded
# against: the newest release commit that is not HEAD's own, i.e. the commit that set
# release.Tag to the value it had before HEAD's, or, while HEAD still carries an already
# released Tag, the commit that set that Tag.
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
  head=$(git rev-parse HEAD)
  # Skip HEAD's own bump. The newest remaining release commit is the previous release
  # when it set HEAD's Tag (HEAD is work after that release) or an older Tag (HEAD, or
  # the working tree, bumped the Tag and is the next release).
  out=$(releases | awk -v head="$head" '$1 != head { print $1; exit }')
else
  out=$(releases | awk -v tag="$want" '$2 == tag { print $1; exit }')
fi
if [ -z "$out" ]; then
  echo "release-commit.sh: no commit in history set release.Tag to ${want}" >&2
  exit 2
fi
echo "$out"
