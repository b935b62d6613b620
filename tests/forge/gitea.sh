#!/usr/bin/env bash
# Builds (or reuses) the Gitea server the forge tests open pull requests on (tests/it/forge.rs),
# from its Go module, and prints the path of the binary on stdout. Cached outside the repository
# like the e2e's programs (tests/e2e/build.sh), keyed by the version, so a warm run costs a stat.
#
# Gitea's default SQLite driver is modernc.org/sqlite (pure Go, models/db/driver_sqlite_modernc.go,
# `//go:build !sqlite_mattn`), so no cgo and no build tags are needed; without the `bindata` tag
# the server reads its templates and options from its work path, which the tests point at the
# module's source folder (read-only in the module cache; Gitea writes only under its data path).
#
#   tests/forge/gitea.sh           build when missing, print the binary's path
#   tests/forge/gitea.sh --built   print the path only when it is built, else exit 1 (the tests)
set -euo pipefail

GITEA_VERSION=v1.27.3   # code.gitea.io/gitea; its go.mod names the module gitea.dev
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-forge/gitea-$GITEA_VERSION"
bin="$cache/bin/gitea"
log="$cache/build.log"
if [ "${1:-}" = --built ]; then
  if [ -x "$bin" ] && [ -s "$cache/work-path" ]; then echo "$bin"; exit 0; fi
  echo "error: the Gitea server is not built ($bin); tests/run builds it (tests/forge/gitea.sh)" >&2
  exit 1
fi
mkdir -p "$cache/bin"
# One build at a time: .ci/run starts this script in the background while Rust builds, and
# tests/run calls it again before `cargo test`; the second call waits here, then finds it built.
# (flock is util-linux's: on a machine without it, e.g. macOS, calls are not serialised.)
if command -v flock >/dev/null 2>&1; then exec {lock}>"$cache/.lock"; flock "$lock"; fi

src="$(go mod download -json "code.gitea.io/gitea@$GITEA_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$src" ] || [ ! -d "$src" ]; then
  echo "error: the Go module proxy did not give code.gitea.io/gitea@$GITEA_VERSION" >&2
  exit 1
fi
if [ ! -x "$bin" ]; then
  echo "building gitea $GITEA_VERSION from its Go module (log: $log)" >&2
  t0=$(date +%s)
  if ! (cd "$src" && GOFLAGS=-mod=mod CGO_ENABLED=0 go build -p "${E2E_GO_PARALLEL:-2}" -trimpath \
        -ldflags "-s -w -X main.Version=${GITEA_VERSION#v}" -o "$bin.tmp" .) >>"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "error: building gitea failed (log: $log)" >&2
    exit 1
  fi
  mv "$bin.tmp" "$bin"
  echo "built gitea in $(( $(date +%s) - t0 ))s" | tee -a "$log" >&2
fi
# The work path the server needs for its templates and options (see above).
echo "$src" > "$cache/work-path"
echo "$bin"
