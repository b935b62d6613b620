#!/usr/bin/env bash
# Builds (or reuses) the upstream programs the e2e runs, from the wrapper Go modules in build/.
# Prints the bin directory on stdout: a folder of symlinks to every program.
#
# Each wrapper module has its own cache entry, keyed by the sha256 of its go.mod, go.sum and the
# ldflags it is built with: cache/<module>-<key>/bin. Adding or bumping one module (say capi)
# builds only that module's programs; a warm run costs a hash and a stat per module.
#
# Why wrapper modules: `go install pkg@version` refuses modules whose go.mod has replace
# directives (Kubernetes, etcd, every Flux controller); a module of our own can require them and
# carry the replaces they need (copied from each upstream go.mod, see the comments in build/*/go.mod).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"
root="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-e2e"

. "$build/kube-version.sh"   # KUBE_VERSION and kube_ldflags
CAPI_VERSION=v1.14.0   # sigs.k8s.io/cluster-api, kept equal to build/capi/go.mod

# program  wrapper-module  package. The programs of one module are built by one `go build`
# (shared packages compile once: the two Cluster API managers share most of theirs).
programs=(
  "etcd etcd go.etcd.io/etcd/server/v3"
  # etcdutl: the restore of backup restore-plan (snapshot restore --bump-revision, etcd >= 3.5.10).
  "etcdutl etcd go.etcd.io/etcd/etcdutl/v3"
  "source-controller source-controller github.com/fluxcd/source-controller"
  "kustomize-controller kustomize-controller github.com/fluxcd/kustomize-controller"
  "helm-controller helm-controller github.com/fluxcd/helm-controller"
  "kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager"
  "kube-scheduler kube k8s.io/kubernetes/cmd/kube-scheduler"
  # kwok v0.8.0: the `kwok` controller alone (cmd/kwok), which plays the kubelet of fake Nodes.
  "kwok kwok sigs.k8s.io/kwok/cmd/kwok"
  # Makefile targets `managers` of cluster-api v1.14.0: bin/manager and bin/kubeadm-bootstrap-manager.
  "capi-manager capi sigs.k8s.io/cluster-api/core"
  "capi-kubeadm-bootstrap-manager capi sigs.k8s.io/cluster-api/bootstrap/kubeadm"
)

# Cluster API likewise (hack/scripts/release/version.sh, version::ldflags): its managers log it.
capi_ldflags="-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=$CAPI_VERSION"
capi_ldflags+=" -X sigs.k8s.io/cluster-api/version.gitTreeState=clean -X sigs.k8s.io/cluster-api/version.buildDate=1970-01-01T00:00:00Z"
ldflags_of() {
  case "$1" in
    kube) echo "$kube_ldflags" ;;
    capi) echo "$capi_ldflags" ;;
    *) echo "-s -w" ;;
  esac
}

# The file `go build -o DIR` writes for a main package: its last path element, or the one
# before when the last is a major version suffix (v2, v3, ...).
binary_of() {
  local base="${1##*/}"
  case "$base" in v[0-9]*) local rest="${1%/*}"; echo "${rest##*/}" ;; *) echo "$base" ;; esac
}

# The modules in first-seen order, and the cache bin folder of each.
mods=()
declare -A modbin
for p in "${programs[@]}"; do
  read -r name mod pkg <<<"$p"
  [ -n "${modbin[$mod]:-}" ] && continue
  key="$( (cat "$build/$mod/go.mod" "$build/$mod/go.sum"; ldflags_of "$mod") | sha256sum | cut -c1-16)"
  modbin[$mod]="$root/$mod-$key/bin"
  mods+=("$mod")
done

# One build at a time per cache: .ci/run starts this script in the background while Rust builds,
# and tests/e2e/run calls it again later; the second call waits here, then finds the programs built.
mkdir -p "$root"
# (flock is util-linux's: on a machine without it, e.g. macOS, calls are not serialised.)
if command -v flock >/dev/null 2>&1; then exec {lock}>"$root/.lock"; flock "$lock"; fi

start=$(date +%s)
built=0
for mod in "${mods[@]}"; do
  bin="${modbin[$mod]}"
  log="$(dirname "$bin")/build.log"
  names=() pkgs=()
  for p in "${programs[@]}"; do
    read -r name m pkg <<<"$p"
    # E2E_PROGRAMS (names, space-separated): build only those (tests/e2e/run sets it for a run of
    # E2E_ONLY=kamaji alone, which needs no Flux controller); the links below still name every program.
    if [ -n "${E2E_PROGRAMS:-}" ]; then case " $E2E_PROGRAMS " in *" $name "*) ;; *) continue ;; esac; fi
    [ "$m" = "$mod" ] && [ ! -x "$bin/$name" ] && names+=("$name") && pkgs+=("$pkg")
  done
  [ ${#names[@]} = 0 ] && continue
  built=1
  mkdir -p "$bin"
  tmp="$(mktemp -d "$bin/.build.XXXXXX")"
  echo "building ${names[*]} from module $mod (log: $log)" >&2
  t0=$(date +%s)
  # One package: -o names the file; several: -o names a folder, each binary named after the last
  # element of its package path that is not a major version (`go help build`: etcd's
  # go.etcd.io/etcd/etcdutl/v3 is written as `etcdutl`).
  if [ ${#pkgs[@]} = 1 ]; then out="$tmp/$(binary_of "${pkgs[0]}")"; else out="$tmp/"; fi
  if ! (cd "$build/$mod" && go build -p "${E2E_GO_PARALLEL:-2}" -trimpath -ldflags "$(ldflags_of "$mod")" \
        -o "$out" "${pkgs[@]}") >>"$log" 2>&1; then
    tail -30 "$log" >&2
    rm -rf "$tmp"
    echo "error: building ${names[*]} failed (log: $log)" >&2
    exit 1
  fi
  for i in "${!names[@]}"; do mv "$tmp/$(binary_of "${pkgs[$i]}")" "$bin/${names[$i]}"; done
  rm -rf "$tmp"
  echo "built ${names[*]} in $(( $(date +%s) - t0 ))s" | tee -a "$log" >&2
done
[ $built = 1 ] && echo "all built in $(( $(date +%s) - start ))s" >&2

# One folder the scenarios take as --bin: a symlink per program into its module's cache entry.
# Its name hashes the targets, so concurrent runs of different trees do not share it.
links="$(for p in "${programs[@]}"; do read -r name mod pkg <<<"$p"; echo "$name ${modbin[$mod]}/$name"; done)"
all="$root/bin-$(echo "$links" | sha256sum | cut -c1-16)"
if [ ! -d "$all" ]; then
  tmp="$(mktemp -d "$root/.bin.XXXXXX")"
  while read -r name target; do ln -s "$target" "$tmp/$name"; done <<<"$links"
  mv -T "$tmp" "$all" 2>/dev/null || rm -rf "$tmp"   # another run made it first: same content
fi
echo "$all"
