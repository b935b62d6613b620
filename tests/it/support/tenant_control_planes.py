"""The one read `kaas-gitops adopt` makes of a management cluster, on loopback: a tenant's Kamaji
`TenantControlPlane` (kamaji.clastix.io/v1alpha1), as the Kubernetes API serves it, with the
datastore names Kamaji set up in `status.storage.setup` (clastix/kamaji 26.8.2-edge
`api/v1alpha1/tenantcontrolplane_status.go`).

    tenant_control_planes.py UID

Tenant `acme` was created before kaas-gitops named its datastore names: Kamaji named both after
its UID (`internal/webhook/handlers/tcp_defaults.go:88-94`), here UID. Anything else is 404.
Every request's path is printed to stderr."""

import sys

from loopback import JsonHandler, not_found, serve

UID = sys.argv[1]
BASE = "/apis/kamaji.clastix.io/v1alpha1/namespaces/"


class Handler(JsonHandler):
    def do_GET(self):
        print(self.path, file=sys.stderr, flush=True)
        if self.path == BASE + "acme/tenantcontrolplanes/acme":
            code, body = 200, {
                "apiVersion": "kamaji.clastix.io/v1alpha1", "kind": "TenantControlPlane",
                "metadata": {"name": "acme", "namespace": "acme", "uid": UID},
                "spec": {"dataStore": "acme-etcd", "dataStoreSchema": UID, "dataStoreUsername": UID},
                "status": {"storage": {"driver": "etcd", "dataStoreName": "acme-etcd",
                                       "setup": {"schema": UID, "user": UID}}},
            }
        else:
            code, body = not_found(self.path)
        self.reply(code, body)


serve(Handler)
