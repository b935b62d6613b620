"""A mirror of GitHub's release downloads for the CRDs the tests hold: what kaas-gitops fetches
with `KAAS_CRD_MIRROR` pointing here. Argument 1 is a CRD folder with its SOURCES.md (the
provenance table naming, for each CRD file, the upstream repository, the path in it and the
release tag); argument 2, optional, a file to append each requested path to (`-` for none);
argument 3, optional, `any-raw-tag`: serve a raw file at any tag from the tag the folder has
(for tests about images, whose Kamaji tags have no CRD files here).

It serves what those releases publish, assembled from the CRD files:
- `/<owner>/<repo>/releases/download/<tag>/<name>-components.yaml`: every CRD of that repository
  and tag (for cluster-api, `core-components.yaml` those under `core/` and
  `bootstrap-components.yaml` those under `bootstrap/`), with a Namespace and a Deployment
  holding a clusterctl variable around them, as the real files have;
- `/<owner>/<repo>/releases/download/<tag>/<controller>.crds.yaml` (Flux): the CRDs alone;
- `/<owner>/<repo>/releases/download/<tag>/<channel>-install.yaml` (the Gateway API): the files
  under `config/crd/<channel>/` named `gateway*.yaml`, in path order, each after `---` and a
  comment naming it, below the license header and a title, as gateway-api's
  `hack/build-install-yaml.sh` makes the release's file (v1.5.1; its standard channel also has
  CRDs and a ValidatingAdmissionPolicy this folder may lack);
- `/<owner>/<repo>/raw/<tag>/<path>`: one file of the repository at the tag (Kamaji's chart CRDs).
Anything else is 404. A row of SOURCES.md whose file the folder lacks is left out (crds.sh copies
the table of a shared folder that may hold more than tests/upstream/sources.tsv takes)."""

import http.server
import os
import re
import sys

from loopback import serve

ROW = re.compile(r"^\| `([^`]+\.yaml)` \| \w+ \| ([\w.-]+/[\w.-]+) \| `([^`]+)` \| `([^`]+)` \|")

crds = sys.argv[1]
log = sys.argv[2] if len(sys.argv) > 2 and sys.argv[2] != "-" else None
any_raw_tag = len(sys.argv) > 3 and sys.argv[3] == "any-raw-tag"
rows = []  # (file under crds, repo, upstream path, tag)
with open(os.path.join(crds, "SOURCES.md"), encoding="utf-8") as f:
    for line in f:
        m = ROW.match(line)
        if m and os.path.isfile(os.path.join(crds, m.group(1))):
            rows.append(m.groups())

AROUND_HEAD = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: mirror-system\n"
AROUND_TAIL = (
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: controller-manager\n"
    "  namespace: mirror-system\nspec:\n  template:\n    spec:\n      containers:\n"
    "      - name: manager\n        args:\n        - --diagnostics-address=${DIAGNOSTICS_ADDRESS:=:8443}\n"
)

# gateway-api v1.5.1 hack/boilerplate/boilerplate.sh.txt (its `YEAR` is gone, so the script's
# sed changes nothing).
LICENSE_HEADER = (
    "# Copyright The Kubernetes Authors.\n#\n"
    '# Licensed under the Apache License, Version 2.0 (the "License");\n'
    "# you may not use this file except in compliance with the License.\n"
    "# You may obtain a copy of the License at\n#\n"
    "#     http://www.apache.org/licenses/LICENSE-2.0\n#\n"
    "# Unless required by applicable law or agreed to in writing, software\n"
    '# distributed under the License is distributed on an "AS IS" BASIS,\n'
    "# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.\n"
    "# See the License for the specific language governing permissions and\n"
    "# limitations under the License.\n\n"
)
INSTALL = re.compile(r"^([a-z]+)-install\.yaml$")


def read(rel):
    with open(os.path.join(crds, rel), encoding="utf-8") as f:
        return f.read()


def document(text):
    text = text if text.endswith("\n") else text + "\n"
    return text if text.startswith("---") else "---\n" + text


def install(chosen, channel):
    """hack/build-install-yaml.sh: the header, then `---`, a comment and each file as it is
    (byte for byte the script's output on a checkout holding only these files)."""
    prefix = f"config/crd/{channel}/gateway"
    files = sorted((r[2], r[0]) for r in chosen
                   if r[2].startswith(prefix) and "/" not in r[2][len(prefix):])
    if not files:
        return None
    body = LICENSE_HEADER + f"#\n# Gateway API {channel.capitalize()} channel install\n#\n"
    for path, rel in files:
        body += f"---\n#\n# {path}\n#\n" + read(rel)
    return body


def asset(repo, tag, name):
    chosen = [r for r in rows if r[1] == repo and r[3] == tag]
    channel = INSTALL.match(name)
    if channel:
        return install(chosen, channel.group(1))
    if name == "core-components.yaml":
        chosen = [r for r in chosen if r[2].startswith("core/")]
    elif name == "bootstrap-components.yaml":
        chosen = [r for r in chosen if r[2].startswith("bootstrap/")]
    elif not (name.endswith("-components.yaml") or name.endswith(".crds.yaml")):
        return None
    if not chosen:
        return None
    body = "".join(document(read(r[0])) for r in sorted(chosen))
    if name.endswith("-components.yaml"):
        body = document(AROUND_HEAD) + body + document(AROUND_TAIL)
    return body


def raw(repo, tag, path):
    for r in rows:
        if r[1] == repo and (r[3] == tag or any_raw_tag) and r[2] == path:
            return read(r[0])
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(self.path + "\n")
        parts = self.path.lstrip("/").split("/")
        body = None
        if len(parts) == 6 and parts[2:4] == ["releases", "download"]:
            body = asset(parts[0] + "/" + parts[1], parts[4], parts[5])
        elif len(parts) > 4 and parts[2] == "raw":
            body = raw(parts[0] + "/" + parts[1], parts[3], "/".join(parts[4:]))
        if body is None:
            self.send_error(404)
            return
        data = body.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


serve(Handler)
