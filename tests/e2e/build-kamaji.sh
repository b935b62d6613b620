#!/usr/bin/env bash
# Builds (or reuses) the programs only the kamaji scenario (E2E_ONLY=kamaji) runs: Kamaji's manager
# (tag 26.8.2-edge) and the Kamaji control plane provider (v0.20.0). tests/e2e/run calls it only for
# that scenario, so the default e2e and .ci/run never build them. Prints the bin folder on stdout
# (symlinks `kamaji`, `kamaji-provider`, `kamaji-src`: the Kamaji tree built, whose charts/ the
# bed installs, `kine` and `nats-server`).
#
# Sources: the Go module at the pinned commit where the module proxy serves it (any machine with the
# public proxy); where the proxy refuses (this machine kind answers 403 for both modules) the same
# trees from $E2E_UPSTREAM_SRC (default ../shared/upstream-src beside the repository: byte-for-byte
# `git archive <commit>`, see its README). Either way the tree is copied into the cache first (the
# module cache and ../shared are read-only; `go build` writes go.sum).
#
# Cache: like build.sh, one entry per module, keyed by the sha256 of its go.mod, go.sum, the pinned
# commits and the ldflags: cache/<module>-<key>/bin. Each builds in its own upstream module (its own
# go.mod: Kamaji pins k8s.io/kubernetes v1.36.3, so it shares little with build/kube's v1.34.4), with
# the shared Go build cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
root="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-e2e"
src_fallback="${E2E_UPSTREAM_SRC:-$repo/../shared/upstream-src}"

KAMAJI_TAG=26.8.2-edge
KAMAJI_COMMIT=ddbabd87ed0e8d7c319414383e153c46f21733a9
KAMAJI_MODVER=v1.0.1-0.20260803063256-ddbabd87ed0e
# The provider v0.20.0's go.mod requires this Kamaji commit (no tag), its only module the proxy here
# refuses: one `replace github.com/clastix/kamaji => <this tree>` is the one change made to it.
PROVIDER_TAG=v0.20.0
PROVIDER_COMMIT=ce629592d4b2e159950c1941fa1e18dff3d2a832
PROVIDER_KAMAJI_MODVER=v1.0.1-0.20260330073609-e51909fae3f5

# Kamaji's Makefile (LD_FLAGS, passed to ko through .ko.yaml) sets these in internal/version.go;
# the manager logs them at start. GitDirty empty: the tree is the tag's. BuildTime: the commit's date.
kamaji_ldflags="-s -w -X github.com/clastix/kamaji/internal.GitCommit=${KAMAJI_COMMIT:0:7}"
kamaji_ldflags+=" -X github.com/clastix/kamaji/internal.GitTag=$KAMAJI_TAG -X github.com/clastix/kamaji/internal.GitDirty="
kamaji_ldflags+=" -X github.com/clastix/kamaji/internal.BuildTime=2026-08-03T06:32:56"
kamaji_ldflags+=" -X github.com/clastix/kamaji/internal.GitRepo=https://github.com/clastix/kamaji"
# The provider's Makefile and Dockerfile build with no ldflags (`go build -o manager main.go`).
provider_ldflags="-s -w"
# kine, the sidecar Kamaji runs beside a tenant API server on a MySQL, PostgreSQL or NATS
# DataStore (lib/kamaji_sql.py runs it as that container's stand-in): v0.11.11, the patch release
# after Kamaji's default image tag v0.11.10, which the module proxy does not serve. Not a newer
# one: from v0.16.5 on kine creates the NATS bucket Kamaji already made and stops (kaas-gitops
# refuses such a kine with a NATS DataStore; docs/datastores.md).
KINE_VERSION=v0.11.11
# nats-server, the NATS DataStore's server (JetStream) in lib/kamaji_sql.py: no Debian package.
NATS_VERSION=v2.15.3

mkdir -p "$root/src"
if command -v flock >/dev/null 2>&1; then exec {lock}>"$root/.lock-kamaji"; flock "$lock"; fi

# fetch <module> <version> <fallback folder> <dest>: copies the module's tree to <dest> once.
fetch() {
  local mod="$1" ver="$2" fallback="$3" dest="$4" dir
  [ -f "$dest/go.mod" ] && return 0
  rm -rf "$dest.tmp"
  if dir="$(GOFLAGS=-mod=mod go mod download -json "$mod@$ver" 2>/dev/null | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')" \
      && [ -n "$dir" ] && [ -f "$dir/go.mod" ]; then
    echo "source of $mod@$ver: module proxy" >&2
    cp -r "$dir" "$dest.tmp"
  elif [ -f "$src_fallback/$fallback/go.mod" ]; then
    echo "source of $mod@$ver: the module proxy refused it; copying $src_fallback/$fallback" >&2
    cp -r "$src_fallback/$fallback" "$dest.tmp"
  else
    echo "error: $mod@$ver: neither the module proxy nor $src_fallback/$fallback has it" \
      "(set E2E_UPSTREAM_SRC to a folder holding the trees of ../shared/upstream-src/README.md)" >&2
    exit 1
  fi
  chmod -R u+w "$dest.tmp"
  mv -T "$dest.tmp" "$dest"
}

kamaji_src="$root/src/kamaji-${KAMAJI_COMMIT:0:12}"
provider_kamaji_src="$root/src/kamaji-${PROVIDER_KAMAJI_MODVER##*-}"
provider_src="$root/src/cluster-api-control-plane-provider-kamaji-${PROVIDER_COMMIT:0:12}"
fetch github.com/clastix/kamaji "$KAMAJI_MODVER" "kamaji-$KAMAJI_TAG" "$kamaji_src"
fetch github.com/clastix/kamaji "$PROVIDER_KAMAJI_MODVER" "kamaji-${PROVIDER_KAMAJI_MODVER##*-}" "$provider_kamaji_src"
fetch github.com/clastix/cluster-api-control-plane-provider-kamaji "$PROVIDER_TAG" \
  "cluster-api-control-plane-provider-kamaji-$PROVIDER_TAG" "$provider_src"
if ! grep -q '^replace github.com/clastix/kamaji' "$provider_src/go.mod"; then
  (cd "$provider_src" && go mod edit -replace "github.com/clastix/kamaji=$provider_kamaji_src")
fi

# build <program> <source folder> <ldflags> <commits...>: prints the binary's path.
build() {
  local name="$1" src="$2" ldflags="$3"; shift 3
  local key bin log t0
  key="$( (cat "$src/go.mod" "$src/go.sum"; echo "$ldflags $*") | sha256sum | cut -c1-16)"
  bin="$root/$name-$key/bin"; log="$root/$name-$key/build.log"
  if [ ! -x "$bin/$name" ]; then
    mkdir -p "$bin"
    echo "building $name from $src (log: $log)" >&2
    t0=$(date +%s)
    # -mod=mod: go.sum gains the entries of the replaced tree's requirements, as `go build` in the
    # upstream checkout would.
    if ! (cd "$src" && CGO_ENABLED=0 go build -mod=mod -buildvcs=false -p "${E2E_GO_PARALLEL:-2}" -trimpath \
          -ldflags "$ldflags" -o "$bin/.$name.tmp" .) >>"$log" 2>&1; then
      tail -30 "$log" >&2
      echo "error: building $name failed (log: $log)" >&2
      exit 1
    fi
    mv "$bin/.$name.tmp" "$bin/$name"
    echo "built $name in $(( $(date +%s) - t0 ))s" | tee -a "$log" >&2
  fi
  echo "$bin/$name"
}

kamaji_bin="$(build kamaji "$kamaji_src" "$kamaji_ldflags" "$KAMAJI_COMMIT")"
provider_bin="$(build kamaji-provider "$provider_src" "$provider_ldflags" "$PROVIDER_COMMIT" "$PROVIDER_KAMAJI_MODVER")"
kine_src="$root/src/kine-$KINE_VERSION"
fetch github.com/k3s-io/kine "$KINE_VERSION" "kine-$KINE_VERSION" "$kine_src"
kine_bin="$(build kine "$kine_src" "-s -w" "$KINE_VERSION")"
nats_src="$root/src/nats-server-$NATS_VERSION"
fetch github.com/nats-io/nats-server/v2 "$NATS_VERSION" "nats-server-$NATS_VERSION" "$nats_src"
nats_bin="$(build nats-server "$nats_src" "-s -w" "$NATS_VERSION")"

all="$root/bin-kamaji-$(echo "$kamaji_bin $provider_bin $kamaji_src $kine_bin $nats_bin" | sha256sum | cut -c1-16)"
if [ ! -d "$all" ]; then
  tmp="$(mktemp -d "$root/.bin.XXXXXX")"
  ln -s "$kamaji_bin" "$tmp/kamaji"; ln -s "$provider_bin" "$tmp/kamaji-provider"; ln -s "$kamaji_src" "$tmp/kamaji-src"
  ln -s "$kine_bin" "$tmp/kine"; ln -s "$nats_bin" "$tmp/nats-server"
  mv -T "$tmp" "$all" 2>/dev/null || rm -rf "$tmp"
fi
echo "$all"
