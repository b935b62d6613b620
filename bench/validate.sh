#!/usr/bin/env bash
# How fast `kaas-gitops validate` is on a large fleet: renders a fleet of $TENANTS tenants (default
# 1000, copies of the example tenants) with the real release binary, then times `validate` with
# and without the kustomize build and prints objects per second. Figures only, no thresholds.
#
# Anchor: kubeconform checks 50,714 resources in 6.7 s with 8 workers (~7,600 resources/s), with
# no Kamaji schemas, no CEL rules, no cross-object rules and no line numbers.
#
# Usage: bench/validate.sh            (CRDs from $KAAS_CRDS, else ../shared/crds)
#        TENANTS=200 bench/validate.sh
set -euo pipefail

tenants=${TENANTS:-1000}
root=$(cd "$(dirname "$0")/.." && pwd)
crds=${KAAS_CRDS:-$root/../shared/crds}
[ -d "$crds" ] || { echo "no CRD folder at $crds: set KAAS_CRDS" >&2; exit 2; }

cargo build --release --quiet --manifest-path "$root/Cargo.toml"
bin=$root/target/release/kaas-gitops

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root/kaas.yaml" "$root/base" "$work/"
# Room for one VIP per tenant.
sed -i 's|pools: \[.*\]|pools: ["10.16.0.0/16"]|' "$work/kaas.yaml"
mkdir "$work/tenants"
examples=(acme globex initech)
for i in $(seq 1 "$tenants"); do
  name=$(printf 't%04d' "$i")
  src=${examples[$((i % 3))]}
  # Same tenant under a new name; a fixed endpoint host would collide, so the pool allocates one.
  sed -e "s/^  name: $src\$/  name: $name/" -e '/endpoint: {host:/d' \
    "$root/tenants/$src.yaml" > "$work/tenants/$name.yaml"
done

now() { date +%s.%N; }
t0=$(now)
"$bin" --repo "$work" render -q
t1=$(now)
objects=$(find "$work/overlays" "$work/flux" -name '*.yaml' ! -name kustomization.yaml | wc -l)
folders=$(find "$work/overlays" "$work/flux" -name kustomization.yaml | wc -l)

run() { # label, args...
  local label=$1; shift
  local s e code=0
  s=$(now)
  "$bin" --repo "$work" validate --crds "$crds" -v "$@" > /dev/null 2> "$work/.stderr" || code=$?
  e=$(now)
  awk -v l="$label" -v n="$objects" -v s="$s" -v e="$e" -v c="$code" \
    'BEGIN { t = e - s; printf "%-34s %6.2f s  %8.0f objects/s  (exit %d)\n", l, t, n / t, c }'
  grep -E '^  [A-Za-z ]+: [0-9]+ ms$' "$work/.stderr" | sed 's/^/    /'
}

echo "fleet: $tenants tenants, $objects objects in $folders kustomize folders ($(nproc) cores)"
awk -v s="$t0" -v e="$t1" 'BEGIN { printf "render:                            %6.2f s\n", e - s }'
run "validate --no-kustomize" --no-kustomize
run "validate (with kustomize build)"
echo "anchor: kubeconform 50714 resources in 6.7 s with 8 workers = 7569 resources/s"
