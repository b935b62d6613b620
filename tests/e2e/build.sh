#!/usr/bin/env bash
# Builds (or reuses) the upstream programs the e2e runs, from the wrapper Go modules in build/.
# Prints the bin directory on stdout. Binaries are cached outside the repository, keyed by the
# sha256 of every wrapper go.mod and go.sum, so a warm run costs a hash and a stat.
#
# Why wrapper modules: `go install pkg@version` refuses modules whose go.mod has replace
# directives (Kubernetes, etcd, every Flux controller); a module of our own can require them and
# carry the replaces they need (copied from each upstream go.mod, see the comments in build/*/go.mod).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/build"

KUBE_VERSION=v1.34.4   # k8s.io/kubernetes, kept equal to build/kube/go.mod
key="$(cd "$build" && cat */go.mod */go.sum | sha256sum | cut -c1-16)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-e2e/$key"
bin="$cache/bin"
log="$cache/build.log"
mkdir -p "$bin"

# program  wrapper-module  package
programs=(
  "etcd etcd go.etcd.io/etcd/server/v3"
  "source-controller source-controller github.com/fluxcd/source-controller"
  "kustomize-controller kustomize-controller github.com/fluxcd/kustomize-controller"
  "helm-controller helm-controller github.com/fluxcd/helm-controller"
  "kube-apiserver kube k8s.io/kubernetes/cmd/kube-apiserver"
  "kube-controller-manager kube k8s.io/kubernetes/cmd/kube-controller-manager"
)

# Kubernetes reads its version from ldflags (hack/lib/version.sh sets the same variables in both
# packages); without them /version says v0.0.0 and Helm's kubeVersion checks fail.
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

start=$(date +%s)
built=0
for p in "${programs[@]}"; do
  read -r name mod pkg <<<"$p"
  [ -x "$bin/$name" ] && continue
  built=1
  flags="-s -w"
  [ "$mod" = kube ] && flags="$kube_ldflags"
  echo "building $name from $pkg (log: $log)" >&2
  t0=$(date +%s)
  if ! (cd "$build/$mod" && go build -p "${E2E_GO_PARALLEL:-2}" -trimpath -ldflags "$flags" -o "$bin/$name.tmp" "$pkg") >>"$log" 2>&1; then
    tail -30 "$log" >&2
    echo "error: building $name failed (log: $log)" >&2
    exit 1
  fi
  mv "$bin/$name.tmp" "$bin/$name"
  echo "built $name in $(( $(date +%s) - t0 ))s" | tee -a "$log" >&2
done
[ $built = 1 ] && echo "all built in $(( $(date +%s) - start ))s" | tee -a "$log" >&2
echo "$bin"
