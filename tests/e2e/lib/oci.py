"""OCI delivery on the test bed (`spec.flux.delivery.mode: oci`): Debian's docker-registry on
loopback (plain HTTP, so the rendered OCIRepositories carry `insecure: true`), `kaas-gitops
publish`, and the reads the OCI scenarios and the benchmark assert on: each Kustomization's
expected revision (the platform at the commit, each tenant at its artifact), kustomize-
controller's per-Kustomization reconcile counts, and the registry's request log."""
import json, os, re, subprocess, time, urllib.request

from cluster import free_port

REGISTRY_BIN = "/usr/bin/docker-registry"
DELIVERY_ANCHOR = "    interval: 10m\n"


def start_registry(cluster):
    """A docker-registry on a free loopback port with its own storage, its access log on (each
    request one line), spawned through the cluster so that Cluster.stop() ends it."""
    if not os.path.isfile(REGISTRY_BIN):
        raise RuntimeError(f"{REGISTRY_BIN} is missing: apt-get install -y docker-registry (.ci/run does)")
    port = free_port()
    d = os.path.join(cluster.work, "registry")
    os.makedirs(d, exist_ok=True)
    cfg = os.path.join(d, "config.yml")
    open(cfg, "w").write(
        "version: 0.1\nlog:\n  level: warn\n  accesslog: {disabled: false}\n"
        f"storage:\n  filesystem:\n    rootdirectory: {d}/storage\n  delete: {{enabled: true}}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n")
    cluster.spawn("docker-registry", [REGISTRY_BIN, "serve", cfg])
    cluster.wait_for("docker-registry /v2/", lambda: urllib.request.urlopen(
        f"http://127.0.0.1:{port}/v2/", timeout=2).status == 200, timeout=20)
    return f"127.0.0.1:{port}"


def registry_requests(cluster):
    """{method: count} of the requests the registry logged so far."""
    text = open(os.path.join(cluster.logs, "docker-registry.log"), errors="replace").read()
    out = {}
    for m in re.finditer(r'"(GET|HEAD|POST|PUT|PATCH|DELETE) /v2/', text):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return out


def use_oci(d, host):
    """Edits kaas.yaml in d to deliver tenants through host (after the `flux.interval` line)."""
    p = os.path.join(d, "kaas.yaml")
    text = open(p).read()
    if text.count(DELIVERY_ANCHOR) != 1 or "delivery:" in text:
        raise RuntimeError("kaas.yaml has no single `    interval: 10m` line under spec.flux to add the delivery after")
    open(p, "w").write(text.replace(DELIVERY_ANCHOR, DELIVERY_ANCHOR +
                                    f"    delivery:\n      mode: oci\n      oci: {{repository: {host}/kaas/tenants, insecure: true}}\n"))


def publish(fleet, *args):
    """`kaas-gitops publish -o json` at HEAD: (seconds, document). Raises when it fails."""
    t0 = time.time()
    r = fleet.kaas_gitops("publish", "-o", "json", *args, check=False)
    secs = time.time() - t0
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        raise RuntimeError(f"publish printed no JSON (exit {r.returncode}): {r.stderr}{r.stdout}")
    if r.returncode != 0:
        raise RuntimeError(f"publish exited {r.returncode}: {doc.get('message')}: {doc.get('diagnostics')}")
    return secs, doc


def ask_reconcile(fleet):
    """What CI runs after `publish`: `kaas-gitops wait --reconcile`, which asks Flux to fetch only
    the sources behind HEAD (the changed tenants' OCIRepositories, the GitRepository) at once,
    instead of waiting for their interval (`oci.interval`, 5m). Here only its request is wanted:
    `--timeout 1s` ends the wait itself (this bed's HelmReleases never get Ready). Returns the
    line it printed about what it asked."""
    r = fleet.kaas_gitops("wait", "--reconcile", "--flux-only", "--kubeconfig", fleet.c.kubeconfig,
                          "--timeout", "1s", check=False)
    line = next((x for x in r.stderr.splitlines() if "reconcile" in x and ("asked" in x or "nothing" in x)), None)
    if line is None:
        raise RuntimeError(f"`wait --reconcile` asked nothing (exit {r.returncode}): {r.stderr}{r.stdout}")
    return line.strip()


def requested_at(cluster):
    """{(kind, name): reconcile.fluxcd.io/requestedAt} of every OCIRepository and Kustomization in
    flux-system: what `wait --reconcile` (or anyone) last asked."""
    out = {}
    for kind in ("ocirepositories", "kustomizations"):
        for o in cluster.get("-n", "flux-system", kind)["items"]:
            out[(o["kind"], o["metadata"]["name"])] = (o["metadata"].get("annotations") or {}).get("reconcile.fluxcd.io/requestedAt")
    return out


def expected_revisions(fleet, sha, doc):
    """{Kustomization name: the revision it must apply}: tenants their artifact, the rest the commit."""
    want = {n: f"main@sha1:{sha}" for n in fleet.expected_kustomizations()}
    for t in doc["tenants"]:
        want[f"kaas-tenant-{t['tenant']}"] = t["revision"]
    return want


def metrics_addr(cluster, name):
    for a in cluster.procs[name].args:
        if a.startswith("--metrics-addr="):
            return a.split("=", 1)[1]
    raise RuntimeError(f"{name} runs without --metrics-addr")


def reconcile_counts(cluster, controllers=None):
    """{Kustomization name: reconciles so far} from every kustomize-controller's
    `gotk_reconcile_duration_seconds_count` (fluxcd/pkg runtime/metrics, one series per object)."""
    names = controllers or [n for n in cluster.procs if n.startswith("kustomize-controller")]
    out = {}
    pat = re.compile(r'^gotk_reconcile_duration_seconds_count\{([^}]*)\} ([0-9.e+]+)$', re.M)
    for n in names:
        text = urllib.request.urlopen(f"http://{metrics_addr(cluster, n)}/metrics", timeout=10).read().decode()
        for m in pat.finditer(text):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            if labels.get("kind") == "Kustomization":
                out[labels["name"]] = out.get(labels["name"], 0) + int(float(m.group(2)))
    return out


def reconciled_since(before, after):
    """Names whose reconcile count grew, with by how much."""
    return {n: c - before.get(n, 0) for n, c in after.items() if c > before.get(n, 0)}


def tags_name_whole_content(host, doc):
    """For every tenant of a publish document: what its tag names now, and whether every blob of
    that manifest is in the registry. Returns a list of problems."""
    problems = []
    for t in doc["tenants"]:
        repo = t["reference"].split("/", 1)[1].rsplit(":", 1)[0]
        req = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/latest",
                                     headers={"Accept": "application/vnd.oci.image.manifest.v1+json"})
        try:
            m = json.loads(urllib.request.urlopen(req, timeout=10).read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                continue  # never published: the OCIRepository waits, it names nothing
            raise
        for blob in [m["config"], *m["layers"]]:
            r = urllib.request.Request(f"http://{host}/v2/{repo}/blobs/{blob['digest']}", method="HEAD")
            try:
                urllib.request.urlopen(r, timeout=10)
            except urllib.error.HTTPError as e:
                problems.append(f"{repo}:latest names blob {blob['digest']}, which the registry answers {e.code} for")
    return problems


def kill_publish_midway(fleet, after_seconds):
    """Starts `publish` and SIGKILLs it after `after_seconds` (or when it ends first). Returns
    whether it was killed."""
    p = subprocess.Popen([fleet.kaas, "--repo", fleet.dir, "--color", "never", "publish", "-o", "json"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        p.wait(timeout=after_seconds)
        return False
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return True
