"""The two reads `kaas-gitops kubeconfig` makes of a management cluster, on loopback: a tenant's
Cluster API `Cluster` and its `<tenant>-kubeconfig` Secret, as the Kubernetes API serves them
(paths, JSON and the `Status` of a refusal as in k8s.io/apimachinery `metav1.Status`).

    management_api.py CA_BASE64

Tenant `acme` is provisioned (endpoint 10.0.4.10:6443, a kubeconfig whose CA is CA_BASE64);
`globex` is refused (403); `initech` has a Cluster without an endpoint; anything else is 404.
Every request's path is printed to stderr."""

import base64
import sys

from loopback import JsonHandler, serve

CA = sys.argv[1]
ADMIN = f"""apiVersion: v1
kind: Config
clusters:
- name: acme
  cluster:
    server: https://10.0.4.10:6443
    certificate-authority-data: {CA}
users:
- name: acme-admin
  user:
    client-certificate-data: Y2VydA==
    client-key-data: a2V5
contexts:
- name: acme-admin@acme
  context: {{cluster: acme, user: acme-admin}}
current-context: acme-admin@acme
"""


def status(code, reason, message):
    return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                  "message": message, "reason": reason, "code": code}


def cluster(name, endpoint):
    spec = {"controlPlaneEndpoint": endpoint} if endpoint else {}
    return 200, {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
                 "metadata": {"name": name, "namespace": name}, "spec": spec}


class Handler(JsonHandler):
    def do_GET(self):
        print(self.path, file=sys.stderr, flush=True)
        clusters = "/apis/cluster.x-k8s.io/v1beta2/namespaces/"
        if "/globex/" in self.path:
            code, body = status(403, "Forbidden", f'clusters.cluster.x-k8s.io "globex" is forbidden: User "me" cannot get resource "clusters" in API group "cluster.x-k8s.io" in the namespace "globex"')
        elif self.path == clusters + "acme/clusters/acme":
            code, body = cluster("acme", {"host": "10.0.4.10", "port": 6443})
        elif self.path == clusters + "initech/clusters/initech":
            code, body = cluster("initech", None)
        elif self.path == "/api/v1/namespaces/acme/secrets/acme-kubeconfig":
            code, body = 200, {"apiVersion": "v1", "kind": "Secret",
                               "metadata": {"name": "acme-kubeconfig", "namespace": "acme"},
                               "data": {"value": base64.b64encode(ADMIN.encode()).decode()}}
        else:
            code, body = status(404, "NotFound", f"{self.path} not found")
        self.reply(code, body)


serve(Handler)
