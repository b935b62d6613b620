#!/usr/bin/env bash
# Builds (or reuses) the programs of the real-Pods bed (issue 42 stage 2, opt-in:
# E2E_ONLY=kamaji E2E_KAMAJI_PODS=1 tests/e2e/run): a kubelet and a kube-proxy for one real Node on
# containerd, the sandbox's pause program, and konnectivity's proxy-server and proxy-agent for the
# TenantControlPlane's Pods. tests/e2e/run calls it only then: the default e2e and .ci/run never do.
# Prints the bin folder on stdout (symlinks kubelet, kube-proxy, pause, proxy-server, proxy-agent).
#
# - kubelet and kube-proxy: the wrapper module build/kube of the bed's kube-apiserver (same
#   k8s.io/kubernetes v1.34.4, same replaces, same ldflags), read through `-modfile=node.mod`:
#   node.mod/node.sum are go.mod/go.sum plus the two tools and the few modules only they import (no
#   version differs), so build.sh's cache key for build/kube is unchanged and the packages the
#   three control plane programs already compiled come from the Go build cache.
# - pause: Kubernetes' own build/pause/linux/pause.c from the same k8s.io/kubernetes module, static
#   (as its Makefile builds it, with VERSION set).
# - proxy-server, proxy-agent: sigs.k8s.io/apiserver-network-proxy v0.33.0 (build/konnectivity).
#
# Cache: like build.sh, one entry per module keyed by the sha256 of its mod/sum files and flags.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
root="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-e2e"

. "$build/kube-version.sh"   # KUBE_VERSION and kube_ldflags, as build.sh builds them
PAUSE_VERSION=3.10        # the sandbox image name the bed's containerd asks: registry.k8s.io/pause:3.10


mkdir -p "$root"
if command -v flock >/dev/null 2>&1; then exec {lock}>"$root/.lock-pods"; flock "$lock"; fi
start=$(date +%s)
built=0

# gobuild <cache name> <module dir> <modfile> <ldflags> <name=package>...: builds the missing ones.
gobuild() {
  local cname="$1" dir="$2" modfile="$3" ldflags="$4"; shift 4
  local sum="${modfile%.mod}.sum" key bin log t0 tmp names=() pkgs=() np
  key="$( (cat "$dir/$modfile" "$dir/$sum"; echo "$ldflags") | sha256sum | cut -c1-16)"
  bin="$root/$cname-$key/bin"; log="$root/$cname-$key/build.log"
  for np in "$@"; do
    [ -x "$bin/${np%%=*}" ] || { names+=("${np%%=*}"); pkgs+=("${np#*=}"); }
  done
  if [ ${#names[@]} -gt 0 ]; then
    built=1
    mkdir -p "$bin"
    tmp="$(mktemp -d "$bin/.build.XXXXXX")"
    echo "building ${names[*]} from $dir ($modfile; log: $log)" >&2
    t0=$(date +%s)
    if ! (cd "$dir" && go build -modfile="$modfile" -p "${E2E_GO_PARALLEL:-2}" -trimpath \
          -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}") >>"$log" 2>&1; then
      tail -30 "$log" >&2; rm -rf "$tmp"
      echo "error: building ${names[*]} failed (log: $log)" >&2
      exit 1
    fi
    for i in "${!names[@]}"; do mv "$tmp/$(basename "${pkgs[$i]}")" "$bin/${names[$i]}"; done
    rm -rf "$tmp"
    echo "built ${names[*]} in $(( $(date +%s) - t0 ))s" | tee -a "$log" >&2
  fi
  for np in "$@"; do echo "${np%%=*} $bin/${np%%=*}"; done
}

links=""
# The environment of build.sh (cgo as go defaults it): the packages kube-apiserver compiled are reused.
links+="$(gobuild kube-node "$build/kube" node.mod "$kube_ldflags" \
  kubelet=k8s.io/kubernetes/cmd/kubelet kube-proxy=k8s.io/kubernetes/cmd/kube-proxy)"$'\n'
links+="$(gobuild konnectivity "$build/konnectivity" go.mod "-s -w" \
  proxy-server=sigs.k8s.io/apiserver-network-proxy/cmd/server proxy-agent=sigs.k8s.io/apiserver-network-proxy/cmd/agent)"$'\n'

# pause: the C program of the pause image (build/pause/linux/pause.c, Makefile: -Os -Wall -Werror
# -static -DVERSION=v$(TAG)-$(REV)), from the module cache.
src="$(cd "$build/kube" && GOFLAGS=-mod=mod go mod download -modfile=node.mod -json "k8s.io/kubernetes@$KUBE_VERSION" \
  | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')/build/pause/linux/pause.c"
[ -f "$src" ] || { echo "error: no $src" >&2; exit 1; }
key="$( (cat "$src"; echo "$PAUSE_VERSION") | sha256sum | cut -c1-16)"
pbin="$root/pause-$key/bin"
if [ ! -x "$pbin/pause" ]; then
  command -v cc >/dev/null || { echo "error: no C compiler for pause.c" >&2; exit 1; }
  mkdir -p "$pbin"; built=1
  cc -Os -Wall -Werror -static -DVERSION="v$PAUSE_VERSION-kaas-e2e" -o "$pbin/.pause.tmp" "$src"
  mv "$pbin/.pause.tmp" "$pbin/pause"
  echo "built pause from $src" >&2
fi
links+="pause $pbin/pause"
[ $built = 1 ] && echo "pods programs built in $(( $(date +%s) - start ))s" >&2

all="$root/bin-pods-$(echo "$links" | sha256sum | cut -c1-16)"
if [ ! -d "$all" ]; then
  tmp="$(mktemp -d "$root/.bin.XXXXXX")"
  while read -r name target; do [ -n "$name" ] && ln -s "$target" "$tmp/$name"; done <<<"$links"
  mv -T "$tmp" "$all" 2>/dev/null || rm -rf "$tmp"
fi
echo "$all"
