"""What `kaas-gitops kubeconfig` reads of a tenant API server, on loopback over HTTPS
(`LOOPBACK_TLS=CERT:KEY`): `kube-public/cluster-info` as kubeadm writes it (a ConfigMap whose key
`kubeconfig` names the server and its CA; k8s.io/kubernetes `cmd/kubeadm/app/phases/bootstraptoken/
clusterinfo`), and `/version`. Anything else is 404.

    tenant_api.py CA_PEM_FILE

Every request's path is printed to stderr."""

import base64
import sys

from loopback import JsonHandler, not_found, serve

CA = base64.b64encode(open(sys.argv[1], "rb").read()).decode()
CLUSTER_INFO = f"""apiVersion: v1
kind: Config
clusters:
- name: ""
  cluster:
    certificate-authority-data: {CA}
    server: https://10.0.4.10:6443
contexts: []
users: []
"""


class Handler(JsonHandler):
    def do_GET(self):
        print(self.path, file=sys.stderr, flush=True)
        if self.path == "/api/v1/namespaces/kube-public/configmaps/cluster-info":
            code, body = 200, {"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": "cluster-info", "namespace": "kube-public"},
                               "data": {"kubeconfig": CLUSTER_INFO}}
        elif self.path == "/version":
            code, body = 200, {"major": "1", "minor": "34", "gitVersion": "v1.34.4"}
        else:
            code, body = not_found(self.path)
        self.reply(code, body)


serve(Handler)
