// The Go modules of the upstream releases whose files the tests read (sources.tsv maps each file
// to its module): each require line is the pinned version, go.sum pins the bytes. Nothing here
// is built: crds.sh and charts.sh only download the modules and copy files out of them.
//
// Releases whose tag is not semver have a pseudo-version naming the tag's commit:
// clastix/kamaji 26.8.2-edge = ddbabd87ed0e, kubernetes/autoscaler
// cluster-autoscaler-chart-9.59.0 = 5a0b98e45f89. clastix/kamaji-etcd has no go.mod: the proxy
// serves its tag as a module all the same.
//
// go.sum's lines for kamaji, kamaji-etcd, cluster-api-provider-hetzner,
// cluster-api-provider-metal-stack and cluster-autoscaler were computed from the upstream git
// repositories at those commits with golang.org/x/mod/zip.CreateFromVCS (git archive plus the go
// command's module zip rules; done the same way for helm-controller v1.6.3 it gives the proxy's
// hashes exactly): the module proxy of the machine they were written on refused those five. Should the real proxy's bytes differ, go stops crds.sh and
// charts.sh with its checksum mismatch error; nothing passes unverified.
module kaas-gitops.dev/tests/upstream

go 1.26.5

require (
	github.com/clastix/cluster-api-control-plane-provider-kamaji v0.20.0
	github.com/clastix/kamaji v1.0.1-0.20260803063256-ddbabd87ed0e
	github.com/clastix/kamaji-etcd v0.17.0
	github.com/fluxcd/helm-controller v1.6.3
	github.com/fluxcd/kustomize-controller v1.9.4
	github.com/fluxcd/source-controller v1.9.1
	github.com/ionos-cloud/cluster-api-provider-proxmox v0.9.0
	github.com/metal-stack/cluster-api-provider-metal-stack v0.8.0
	github.com/nutanix-cloud-native/cluster-api-provider-nutanix v1.10.3
	github.com/syself/cluster-api-provider-hetzner v1.1.8
	k8s.io/autoscaler/cluster-autoscaler v0.0.0-20260721211944-5a0b98e45f89
	sigs.k8s.io/cluster-api v1.14.0
	sigs.k8s.io/cluster-api-addon-provider-helm v0.6.4
	sigs.k8s.io/cluster-api-operator v0.28.0
	sigs.k8s.io/cluster-api-provider-aws/v2 v2.11.1
	sigs.k8s.io/cluster-api-provider-kubevirt v0.11.2
	sigs.k8s.io/cluster-api-provider-packet v0.9.0
	sigs.k8s.io/gateway-api v1.5.1
)
