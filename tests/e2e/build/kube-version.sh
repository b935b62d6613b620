# Sourced by tests/e2e/build.sh and build-pods.sh: the bed's Kubernetes release and the ldflags
# that give its programs their version. Kubernetes reads its version from ldflags
# (hack/lib/version.sh sets the same variables in both packages); without them /version says
# v0.0.0 and Helm's kubeVersion checks fail.
KUBE_VERSION=v1.34.4   # k8s.io/kubernetes, kept equal to build/kube/go.mod
minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done
