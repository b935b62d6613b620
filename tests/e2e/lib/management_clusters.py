"""Several management clusters from one repository (issue 46, docs/management-clusters.md): two
management API servers, each with its own Flux (source-, kustomize- and helm-controller under
flux2's RBAC), each bootstrapped on its own entry point of the one repository (`./flux` on the
default cluster `eu-1`, `./flux/us-1` on `us-1`). Tenants placed on either apply only where they
belong; `status` and `wait` read each cluster with `--management-cluster`; a change of placement
is refused before anything is written.

No Kamaji or Cluster API controller runs in these two beds (as in the main bed's example
scenarios): the platform's health gate is turned off by the bed's root Kustomization, and the
tenants' objects are checked as applied."""
import copy, json, os, shutil, subprocess, time

from fleet import Fleet, git

NAME = ("management clusters: two management API servers, each with its own Flux on its own entry "
        "point of one repository; tenants apply only where placed; status and wait per cluster; a move refused")

# eu-1's kubeconfig context is named here; us-1's is given with `--context-of`.
CLUSTERS = """
  managementClusters:
  - name: eu-1
    labels: {region: eu}
    context: eu-1
  - name: us-1
    labels: {region: us}
"""
ON_EU = {"kaas-kamaji", "kaas-platform", "kaas-tenant-acme", "kaas-tenant-globex", "kaas-tenant-hooli"}
ON_US = {"kaas-kamaji", "kaas-platform", "kaas-tenant-initech"}
TENANTS = {"acme", "globex", "hooli", "initech"}


def without_helm_releases(text):
    """A tenant with no HelmRelease (fixed pools, no add-ons, the shared datastore), so that `wait`
    on it can finish: here no kubelet runs and no tenant cluster exists, so a HelmRelease is never
    Ready. initech is one but for its autoscaled pool."""
    text = text.replace("autoscaling: {min: 1, max: 3}", "replicas: 2")
    return text.rstrip("\n") + "\n  addons: {cni: none}\n"


def fill(d):
    Fleet.example(d)
    p = os.path.join(d, "kaas.yaml")
    text = open(p).read()
    open(p, "w").write(text.rstrip("\n") + "\n" + CLUSTERS.lstrip("\n"))
    p = os.path.join(d, "tenants", "initech.yaml")
    initech = without_helm_releases(open(p).read())
    # hooli: initech's twin on the default cluster (no placement), its own machine addresses.
    hooli = initech.replace("name: initech", "name: hooli").replace("10.0.7.", "10.0.9.")
    open(os.path.join(d, "tenants", "hooli.yaml"), "w").write(hooli)
    open(p, "w").write(initech.replace("\nspec:\n", "\nspec:\n  placement: {selector: {region: us}}\n", 1))


def merged_kubeconfig(path, beds):
    """One kubeconfig with a context per management cluster ({name: bed}), as an operator's."""
    cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "", "clusters": [], "users": [], "contexts": []}
    for name, bed in beds.items():
        one = json.load(open(bed.c.kubeconfig))
        cfg["clusters"].append({"name": name, "cluster": one["clusters"][0]["cluster"]})
        cfg["users"].append({"name": name, "user": one["users"][0]["user"]})
        cfg["contexts"].append({"name": name, "context": {"cluster": name, "user": name}})
    json.dump(cfg, open(path, "w"))
    return path


def namespaces(c):
    return {n["metadata"]["name"] for n in c.get("namespaces")["items"]}


def status_rows(f, kubeconfig, *args):
    r = f.kaas_gitops("status", "--kubeconfig", kubeconfig, *args, "--format", "json", check=False)
    try:
        doc = json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.returncode, None, r.stderr
    return r.returncode, [row["name"] for row in doc.get("rows", [])], r.stderr


def two_clusters(a, b):
    fails = []
    f = a.new_fleet("mc", fill)
    f.render()
    placements = open(os.path.join(f.dir, "kaas.lock")).read()
    for t, mc in (("acme", "eu-1"), ("globex", "eu-1"), ("hooli", "eu-1"), ("initech", "us-1")):
        if f"- tenant: {t}\n  managementCluster: {mc}\n" not in placements:
            fails.append(f"kaas.lock does not place {t} on {mc}: {placements[placements.find('placements'):][:300]}")
    sha = f.commit_push("one repository, two management clusters")
    # The same repository, read by us-1's own Flux.
    fb = copy.copy(f)
    fb.c = b.c
    t0 = time.time()
    a.bootstrap(f, open_gate=True)
    b.bootstrap(fb, open_gate=True, path="./flux/us-1")
    f.poke()
    fb.poke()
    for bed, fleet, want, name in ((a, f, ON_EU, "eu-1"), (b, fb, ON_US, "us-1")):
        _, state = fleet.wait_ready(sha, want | {"flux-system"}, timeout=240)
        fails += [f"{name}: {x}" for x in bed.describe(state)]
        extra = set(fleet.kustomizations()) - want - {"flux-system"}
        if extra:
            fails.append(f"{name}'s Flux applied Kustomizations placed elsewhere: {sorted(extra)}")
    a.r.figure("management clusters: push -> both clusters' Kustomizations Ready at it", f"{time.time() - t0:.1f}s")
    eu, us = namespaces(a.c), namespaces(b.c)
    if eu & TENANTS != {"acme", "globex", "hooli"}:
        fails.append(f"eu-1 holds the tenant namespaces {sorted(eu & TENANTS)}, want acme, globex and hooli")
    if us & TENANTS != {"initech"}:
        fails.append(f"us-1 holds the tenant namespaces {sorted(us & TENANTS)}, want initech")
    if b.c.kubectl("get", "-n", "initech", "clusters.cluster.x-k8s.io", "initech", check=False).returncode != 0:
        fails.append("us-1 has no Cluster initech")

    # status and wait, one management cluster each.
    for kubeconfig, args, want in ((a.c.kubeconfig, (), ["platform", "acme", "globex", "hooli"]),
                                   (b.c.kubeconfig, ("--management-cluster", "us-1"), ["platform", "initech"])):
        code, rows, err = status_rows(f, kubeconfig, *args)
        if code != 0 or rows != want:
            fails.append(f"status {' '.join(args)}: exit {code}, rows {rows}, want {want}: {err.strip()[-300:]}")
    for kubeconfig, tenant, args in ((a.c.kubeconfig, "hooli", ()),
                                     (b.c.kubeconfig, "initech", ("--management-cluster", "us-1"))):
        w = f.kaas_gitops("wait", tenant, "--flux-only", "--timeout", "120s", "--kubeconfig", kubeconfig, *args, check=False)
        if w.returncode != 0 or f"Ready at {sha}" not in w.stderr:
            fails.append(f"wait {tenant} {' '.join(args)}: exit {w.returncode}: {w.stderr.strip()[-400:]}")
    w = f.kaas_gitops("wait", "acme", "--timeout", "10s", "--kubeconfig", b.c.kubeconfig,
                      "--management-cluster", "us-1", check=False)
    if w.returncode != 1 or "no tenant `acme` is rendered" not in w.stderr:
        fails.append(f"wait acme on us-1 (placed on eu-1): exit {w.returncode}, want 1 naming it: {w.stderr.strip()[-300:]}")

    # Both at once: one kubeconfig, a context per cluster, one table saying where each runs.
    both = merged_kubeconfig(os.path.join(a.work, "both.kubeconfig"), {"eu-1": a, "us-1": b})
    r = f.kaas_gitops("status", "--all-management-clusters", "--kubeconfig", both, "--context-of", "us-1=us-1",
                      "--format", "json", check=False)
    try:
        doc = json.loads(r.stdout)
        where = {(c["name"], row["name"]) for c in doc["managementClusters"] for row in c["rows"]}
    except (json.JSONDecodeError, KeyError) as ex:
        where = f"unreadable: {ex}"
    want = {("eu-1", "platform"), ("eu-1", "acme"), ("eu-1", "globex"), ("eu-1", "hooli"),
            ("us-1", "platform"), ("us-1", "initech")}
    if r.returncode != 0 or where != want:
        fails.append(f"status --all-management-clusters: exit {r.returncode}, rows {where}: {r.stderr.strip()[-300:]}")
    r = f.kaas_gitops("status", "--all-management-clusters", "--kubeconfig", both, "--context-of", "us-1=us-1", check=False)
    print("  status --all-management-clusters:\n    " + "\n    ".join(r.stdout.strip().splitlines()[:8]), flush=True)
    if "MANAGEMENT CLUSTER" not in r.stdout:
        fails.append(f"the table has no column for the management cluster: {r.stdout[:300]}")
    w = f.kaas_gitops("wait", "hooli", "initech", "--all-management-clusters", "--flux-only", "--timeout", "120s",
                      "--kubeconfig", both, "--context-of", "us-1=us-1", check=False)
    if w.returncode != 0 or "ok: 2 management cluster(s) at the revision" not in w.stderr:
        fails.append(f"wait --all-management-clusters: exit {w.returncode}: {w.stderr.strip()[-400:]}")

    # A running tenant asking for the other cluster: refused, nothing written.
    p = os.path.join(f.dir, "tenants", "initech.yaml")
    before = open(p).read()
    open(p, "w").write(before.replace("{selector: {region: us}}", "{selector: {region: eu}}"))
    r = f.kaas_gitops("render", check=False)
    changed = git(f.dir, "status", "--porcelain").split("\n")
    if r.returncode != 1 or "runs on management cluster `us-1` (kaas.lock)" not in r.stderr:
        fails.append(f"a move of initech to eu-1: render exit {r.returncode}: {r.stderr.strip()[-400:]}")
    if [c for c in changed if c.strip() and not c.endswith("tenants/initech.yaml")]:
        fails.append(f"the refused render changed files: {changed}")
    open(p, "w").write(before)
    return fails


def run(e, r):
    beds = []
    try:
        try:
            for _ in range(2):
                bed = type(e)(e.a, r)  # the driver's class: two more beds, same binaries
                beds.append(bed)
                bed.start()
        except Exception as ex:  # noqa: BLE001
            r.not_run(NAME, f"the management clusters' test beds did not start: {ex}")
            return
        r.run(NAME, two_clusters, *beds)
        r.run("management clusters: both Fluxes ran as their ServiceAccounts under flux2's manifests/rbac: no request refused",
              lambda: beds[0].flux_rbac_held() + beds[1].flux_rbac_held())
    finally:
        if r.results and r.results[-1][1] == "FAIL":
            for bed in beds:
                print(bed.c.tail_logs(30), flush=True)
        for bed in beds:
            bed.c.stop()
            if not os.environ.get("E2E_KEEP"):
                shutil.rmtree(bed.work, ignore_errors=True)
