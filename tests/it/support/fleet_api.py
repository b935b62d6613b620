"""The lists `kaas-gitops upgrade` reads from a management cluster, on loopback: each tenant's
KamajiControlPlanes and MachineDeployments, as the Kubernetes API serves a list (paths and the
`<Kind>List` document of k8s.io/apimachinery `metav1.List`).

    fleet_api.py STATE_DIR

`STATE_DIR/<namespace>/<plural>.json` holds a JSON array of the objects of that list; a missing
file is an empty list, so a test changes what the cluster reports between runs by writing files.
Every request's path is printed to stderr."""

import json
import os
import sys

from loopback import JsonHandler, not_found, serve

STATE = sys.argv[1]


class Handler(JsonHandler):
    def do_GET(self):
        print(self.path, file=sys.stderr, flush=True)
        path = self.path.split("?", 1)[0]
        parts = path.strip("/").split("/")
        # /apis/<group>/<version>/namespaces/<namespace>/<plural>
        if len(parts) == 6 and parts[0] == "apis" and parts[3] == "namespaces":
            group, version, namespace, plural = parts[1], parts[2], parts[4], parts[5]
            file = os.path.join(STATE, namespace, plural + ".json")
            items = []
            if os.path.exists(file):
                with open(file) as f:
                    items = json.load(f)
            code, body = 200, {"apiVersion": f"{group}/{version}", "kind": "List",
                               "metadata": {"resourceVersion": "1"}, "items": items}
        else:
            code, body = not_found(path)
        self.reply(code, body)


serve(Handler)
