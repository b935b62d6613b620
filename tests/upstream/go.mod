// Upstream files the tests need beside ../shared/crds, taken from the Go modules of the
// releases kaas-gitops renders; go.sum pins their bytes. Nothing here is built: crds.sh only
// downloads the modules and copies files out of them.
module kaas-gitops.dev/tests/upstream

go 1.26.5

require sigs.k8s.io/cluster-api-operator v0.28.0
