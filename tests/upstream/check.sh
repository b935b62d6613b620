#!/usr/bin/env bash
# Proves the fallback: what crds.sh and charts.sh assemble from the Go modules of the upstream
# releases (a plain clone has nothing else) is byte for byte what ../shared holds. tests/run runs
# it whenever ../shared is there, so every run with ../shared checks the path a clean clone takes.
#
# Compared: every file (diff -r; SOURCES.md aside, whose prose differs), and for the CRDs the
# provenance table of SOURCES.md (file, kind, repository, path, tag, commit), which
# tests/it/support/release_mirror.py serves release assets from.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shared="$(cd "$here/../.." && pwd)/../shared"
fail() { echo "check.sh: error: $*" >&2; exit 1; }
[ -d "$shared/crds" ] || [ -d "$shared/charts" ] || fail "no ../shared/crds or ../shared/charts to compare the Go modules with"

made=()
trap 'rm -rf "${made[@]}"' EXIT
# The provenance rows of a SOURCES.md, one per line, sorted.
rows() {
  sed -n 's/^| `\([^`]*\.yaml\)` | \([A-Za-z0-9]*\) | \([^ |]*\) | `\([^`]*\)` | `\([^`]*\)` | `\([0-9a-f]\{40\}\)` |.*/\1 \2 \3 \4 \5 \6/p' "$1" | sort
}
# The rows of the files folder $1 holds: ../shared/crds may name more CRDs than the tests read
# (sources.tsv lists those; crds.sh copies only them), and those are compared once listed.
rows_held() {
  rows "$1/SOURCES.md" | while read -r file rest; do
    if [ -e "$1/$file" ]; then echo "$file $rest"; fi
  done
}

summary=() missing=()
for what in crds charts; do
  [ -d "$shared/$what" ] || continue
  a="$("$here/$what.sh")" || fail "$what.sh (from ../shared/$what) failed"
  made+=("$a")
  # UP_PARTIAL=1: a module the proxy refuses is a warning, and listed in $b/.missing.
  b="$(UP_PARTIAL=1 "$here/$what.sh" --modules)" || fail "$what.sh --modules failed (see above)"
  made+=("$b")
  if [ -f "$b/.missing" ]; then
    while read -r dest; do
      missing+=("$what/$dest")
      rm -rf "${a:?}/$dest"
      if [ "$what" = crds ]; then
        grep -vF "\`$dest\`" "$a/SOURCES.md" >"$a/SOURCES.md.new" || true
        mv "$a/SOURCES.md.new" "$a/SOURCES.md"
      fi
    done <"$b/.missing"
    rm "$b/.missing"
    find "$a" -mindepth 1 -depth -type d -empty -delete  # folders only the unchecked files were in
  fi
  diff -r -x SOURCES.md "$a" "$b" >&2 || fail "../shared/$what and the Go modules differ (above: ../shared/$what, then the modules)"
  if [ "$what" = crds ]; then
    diff <(rows_held "$a") <(rows_held "$b") >&2 ||
      fail "tests/upstream/sources.tsv and ../shared/crds/SOURCES.md name different sources (above: ../shared, then sources.tsv)"
  fi
  summary+=("$what: $(find "$a" -type f ! -name SOURCES.md | wc -l | tr -d ' ') files")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "check.sh: the rest of ../shared equals the Go modules (${summary[*]}), but these could not be checked, their modules were not to be had from the Go module proxy: ${missing[*]}" >&2
  exit 3
fi
echo "upstream: ../shared = the Go modules of tests/upstream/go.mod, byte for byte (${summary[*]})"
