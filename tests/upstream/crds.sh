#!/usr/bin/env bash
# Prints a folder holding every CRD the tests validate against (`<group>/<plural>.yaml`, one per
# file, with a SOURCES.md table naming each file's upstream repository, path, tag and commit):
#
#   crds.sh            ../shared/crds when it is there, plus the CRDs it lacks; else all of them
#                      from the Go modules of the upstream releases (sources.tsv says which file
#                      comes from which module; go.mod/go.sum pin the versions and the bytes)
#   crds.sh DIR        DIR instead of ../shared/crds
#   crds.sh --modules  all of them from the Go modules, even when ../shared/crds is there
#                      (check.sh compares the two)
#
# The folder is made anew under $TMPDIR on each call; the caller removes it.
set -euo pipefail
prog=crds.sh
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
case "${1:-}" in
  --modules) up_assemble crd - modules ;;
  "") if [ -d "$up_shared/crds" ]; then up_assemble crd "$up_shared/crds" shared; else up_assemble crd - modules; fi ;;
  -*) echo "usage: crds.sh [DIR | --modules]" >&2; exit 2 ;;
  *) [ -d "$1" ] || up_die "no CRD folder at $1"; up_assemble crd "$1" shared ;;
esac
