#!/usr/bin/env bash
# Prints a folder holding every CRD the tests validate against: the upstream CRDs of
# ../shared/crds (or $1), plus the ones that folder lacks, copied byte for byte out of the Go
# module of the release that publishes them (go.sum in this folder pins the module's bytes):
#   - operator.cluster.x-k8s.io IPAMProvider, cluster-api-operator v0.28.0
#     config/crd/bases/operator.cluster.x-k8s.io_ipamproviders.yaml (kaas-gitops renders the
#     in-cluster IPAM provider for Proxmox, which CAPMOX needs).
# The folder is made anew under $TMPDIR on each call and its path printed on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shared="${1:-$here/../../../shared/crds}"
[ -d "$shared" ] || { echo "crds.sh: no CRD folder at $shared" >&2; exit 1; }
command -v go >/dev/null 2>&1 || { echo "crds.sh: go is not installed (it fetches the upstream modules)" >&2; exit 1; }
dir=$(cd "$here" && go mod download -json sigs.k8s.io/cluster-api-operator | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$dir" ] && [ -d "$dir" ] || { echo "crds.sh: could not download sigs.k8s.io/cluster-api-operator" >&2; exit 1; }
out="$(mktemp -d "${TMPDIR:-/tmp}/kaas-crds.XXXXXX")"
cp -R "$shared"/. "$out"/
chmod -R u+w "$out"
cp "$dir/config/crd/bases/operator.cluster.x-k8s.io_ipamproviders.yaml" "$out/operator.cluster.x-k8s.io/ipamproviders.yaml"
# Its provenance, in SOURCES.md's table format (the tests' release mirror reads that table).
version=$(cd "$here" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api-operator)
[ -f "$out/SOURCES.md" ] && printf '| `operator.cluster.x-k8s.io/ipamproviders.yaml` | IPAMProvider | kubernetes-sigs/cluster-api-operator | `config/crd/bases/operator.cluster.x-k8s.io_ipamproviders.yaml` | `%s` | (Go module) |\n' "$version" >> "$out/SOURCES.md"
echo "$out"
