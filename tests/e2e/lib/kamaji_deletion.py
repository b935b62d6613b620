"""A tenant deleted through git on the running management cluster, in the two steps
docs/lifecycle.md gives for a tenant with its own etcd (issue 42 item 4). Run by lib/kamaji.py
last, on the tenant `acme` serving from its DataStore.

  1. `spec.decommissioned: true` in tenants/acme.yaml, rendered: the commit removes the Cluster,
     the KamajiControlPlane, the machines and the add-ons and keeps the namespace, the access
     Role and the etcd release with its backups. The removed objects are deleted as
     kustomize-controller's prune deletes what a commit drops from its inventory (stand-in: the
     bed applied them itself, so it prunes them itself; Flux's prune is proved in the main bed).
     The real controllers then do the rest: Cluster API deletes the control plane, the garbage
     collector the TenantControlPlane it owns, and Kamaji's finalizer drops the tenant's data
     and user from the DataStore, which still serves (internal/resources/datastore/
     datastore_setup.go deleteDB, deleteUser; internal/datastore/etcd.go DeleteDB deletes the
     prefix `/<schema>/`);
  2. the file deleted, rendered: the overlay is gone and the rest is pruned with the namespace;
     the etcd release's uninstall takes the chart's DataStore with it (stand-in: the bed deletes
     the DataStore object the chart renders), and Kamaji's DataStore finalizer lets it go now
     that no control plane uses it (controllers/datastore_controller.go).
"""
import json, os, re, time

from capi import standin
from kamaji import FLUX_GROUPS, TCP, TENANT, stop_tenant_processes, tenant_overlay
from kamaji_rebuild import prefix_count

CLUSTER_KINDS = ("Cluster", "KamajiControlPlane", "MachineDeployment")
DATASTORE = "datastores.kamaji.clastix.io"


def key(d):
    return (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"])


def users(bed):
    return set(bed.etcd_call("/v3/auth/user/list", {}).get("users", []))


def prune(c, objs):
    """What kustomize-controller does with the objects a commit drops (fluxcd/pkg ssa
    DeleteAll: background propagation, no wait); namespaces last, as it orders them."""
    for d in sorted(objs, key=lambda d: d["kind"] == "Namespace"):
        ns = ["-n", d["metadata"]["namespace"]] if d["metadata"].get("namespace") else []
        group = d["apiVersion"].rpartition("/")[0]
        r = c.kubectl("delete", "--ignore-not-found", "--wait=false", "--cascade=background", *ns,
                      f"{d['kind'].lower()}.{group}" if group else d["kind"].lower(), d["metadata"]["name"], check=False)
        # A kind this management cluster does not serve has no object to delete (Flux's, in the
        # bed the rebuild made: there the tenant's Flux objects were never applied).
        if r.returncode != 0 and "doesn't have a resource type" not in r.stderr:
            raise RuntimeError(f"deleting {d['kind']} {d['metadata']['name']}: {r.stderr.strip()}")


HELM_INSTALL_TIMEOUT = 300  # seconds: a HelmRelease's install timeout when spec.timeout is unset (Flux's 5m)


def holders(c):
    """The Flux objects left in the tenant's namespace, each with its Ready condition: what holds
    the namespace when it does not go."""
    out = []
    for kind in ("helmreleases.helm.toolkit.fluxcd.io", "kustomizations.kustomize.toolkit.fluxcd.io"):
        r = c.kubectl("get", "-n", TENANT, kind, "-o", "json", check=False)
        for o in (json.loads(r.stdout).get("items", []) if r.returncode == 0 and r.stdout else []):
            ready = [x for x in o.get("status", {}).get("conditions", []) if x.get("type") == "Ready"]
            why = f"{ready[0].get('reason')}: {ready[0].get('message', '')[:300]}" if ready else "no Ready condition"
            out.append(f"{o['kind']} {o['metadata']['name']} (suspend={o['spec'].get('suspend', False)}, {why})")
    return "left: " + ("; ".join(out) or "no Flux object")


def apply_changed(c, old, new):
    """What kustomize-controller applies of a commit before it prunes: the objects the commit
    changed (here: those the bed applied before), with the kinds this management cluster serves
    (Flux's only while the bed runs Flux)."""
    for k, d in new.items():
        if k not in old or old[k] == d:
            continue
        r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                      input=json.dumps(d), check=False)
        if r.returncode != 0 and not re.search(r"no matches for kind|resource mapping not found", r.stderr):
            raise RuntimeError(f"applying {d['kind']} {d['metadata']['name']}: {r.stderr.strip()}")


def gone(c, *args):
    return c.kubectl("get", *args, check=False).returncode != 0


def deleted_in_two_steps(e):
    bed, f = e.kamaji_bed, e.kamaji_state["fleet"]
    c, fails = bed.c, []
    tcp = c.get("-n", TENANT, TCP, TENANT)
    setup = tcp.get("status", {}).get("storage", {}).get("setup", {})
    schema, user, ds = setup.get("schema"), setup.get("user"), tcp["spec"].get("dataStore")
    if not (schema and user and ds):
        return [f"TenantControlPlane {TENANT}: no datastore setup in its status: {setup}"]
    prefix = f"/{schema}/"
    before = prefix_count(bed, prefix)
    if before == 0 or user not in users(bed):
        return [f"the DataStore holds {before} keys under {prefix} and users {sorted(users(bed))}: nothing to delete"]
    print(f"  before: {before} keys under {prefix}, etcd user {user}, DataStore {ds}", flush=True)

    # Step 1: decommission.
    path = os.path.join(f.dir, "tenants", f"{TENANT}.yaml")
    text = open(path).read()
    if "decommissioned:" in text or not re.search(r"^spec:\n", text, re.M):
        return [f"cannot decommission {path}: {text[:200]}"]
    old = {key(d): d for d in tenant_overlay(f, TENANT)}
    open(path, "w").write(re.sub(r"^spec:\n", "spec:\n  decommissioned: true\n", text, count=1, flags=re.M))
    f.render()
    sha = f.commit(f"{TENANT}: decommissioned")
    new = {key(d): d for d in tenant_overlay(f, TENANT)}
    dropped = [d for k, d in old.items() if k not in new]
    kinds = {d["kind"] for d in dropped}
    kept = sorted(k[0] for k in new)
    for kind in CLUSTER_KINDS:
        if kind not in kinds:
            fails.append(f"decommissioning {TENANT} did not drop its {kind}")
    if "Namespace" not in kept or not any(d["kind"] == "HelmRelease" and d["spec"]["chart"]["spec"]["chart"] == "kamaji-etcd"
                                          for d in new.values()):
        fails.append(f"decommissioning {TENANT} dropped its namespace or its etcd release; kept: {kept}")
    if fails:
        return fails
    print(f"  commit {sha[:8]} (decommissioned) drops {len(dropped)} objects ({', '.join(sorted(kinds))}), keeps {', '.join(kept)}",
          flush=True)
    standin("kustomize-controller's prune of the objects the commit dropped (the bed applied them, so it deletes them)")
    t0 = time.time()
    apply_changed(c, old, new)  # the access Kustomization, now suspended
    prune(c, dropped)
    # Kamaji deletes the tenant's Deployment and the datastore user its API server logs in as: the
    # stand-in processes of its containers stop as its Pods would.
    if not getattr(e, "kamaji_node", None):
        stop_tenant_processes(c)
    try:
        c.wait_for(f"TenantControlPlane {TENANT} finalized by Kamaji", lambda: gone(c, "-n", TENANT, TCP, TENANT), timeout=240, interval=2)
    except TimeoutError as ex:
        t = c.get("-n", TENANT, TCP, TENANT)
        return [f"{ex}: finalizers {t['metadata'].get('finalizers')}, deletionTimestamp {t['metadata'].get('deletionTimestamp')}; "
                f"kamaji log: {bed.log('kamaji')[-1200:]}"]
    e.r.figure("kamaji delete: decommission pruned -> TenantControlPlane finalized (datastore dropped)", f"{time.time() - t0:.1f}s")
    after = prefix_count(bed, prefix)
    if after:
        fails.append(f"{after} keys left under {prefix} after Kamaji finalized the TenantControlPlane (DeleteDB)")
    if user in users(bed):
        fails.append(f"etcd user {user} left after Kamaji finalized the TenantControlPlane (DeleteUser)")
    try:
        c.wait_for(f"Cluster {TENANT} deleted by Cluster API", lambda: gone(c, "-n", TENANT, "cluster.cluster.x-k8s.io", TENANT),
                   timeout=180, interval=2)
    except TimeoutError as ex:
        fails.append(f"{ex}: {json.dumps(c.get('-n', TENANT, 'cluster.cluster.x-k8s.io', TENANT).get('status', {}).get('conditions'))[:500]}")
    if gone(c, "namespace", TENANT) or gone(c, DATASTORE, ds):
        fails.append(f"the namespace {TENANT} or DataStore {ds} went with the cluster: the etcd must outlive Kamaji's cleanup")
    print(f"  Kamaji's finalizer ran: {after} keys under {prefix}, user {user} "
          f"{'left' if user in users(bed) else 'deleted'}; Cluster gone, namespace and DataStore {ds} kept", flush=True)
    if fails:
        return fails

    # Step 2: the file.
    os.remove(path)
    f.render()
    f.commit(f"{TENANT}: deleted")
    if os.path.exists(os.path.join(f.dir, "overlays", "tenants", TENANT)):
        return [f"render kept overlays/tenants/{TENANT} after its file was deleted"]
    standin(f"kustomize-controller's prune of the rest and helm-controller's uninstall of the etcd release "
            f"(the chart's DataStore {ds} deleted)")
    t1 = time.time()
    prune(c, [d for d in new.values() if d["apiVersion"].split("/")[0] not in FLUX_GROUPS])
    c.kubectl("delete", "--wait=false", DATASTORE, ds)
    # An add-on HelmRelease pruned while helm-controller still runs its install into the tenant
    # (the CNI waits for Nodes the tenant never got) keeps its finalizer until that action ends:
    # helm-controller reconciles one object at a time, the install waits up to the release's
    # timeout (5m, Flux's default: the render sets none), and only then does reconcileDelete skip
    # the uninstall, `<tenant>-kubeconfig` being gone (helm-controller v1.6.3
    # internal/controller/helmrelease_controller.go reconcileReleaseDeletion). The namespace may
    # take that long; the default bed's tenant refuses connections at once, real Pods' routes time out.
    try:
        c.wait_for(f"DataStore {ds} and namespace {TENANT} gone", lambda: gone(c, DATASTORE, ds) and gone(c, "namespace", TENANT),
                   timeout=180 + HELM_INSTALL_TIMEOUT, interval=2)
    except TimeoutError as ex:
        d = c.kubectl("get", DATASTORE, ds, "-o", "json", check=False).stdout
        n = c.kubectl("get", "namespace", TENANT, "-o", "json", check=False).stdout
        left = [f"{x['type']}: {x.get('message')}" for x in (json.loads(n).get("status", {}).get("conditions", []) if n else [])
                if x.get("status") == "True"]
        return [f"{ex}: DataStore {json.loads(d)['metadata'].get('finalizers') if d else 'gone'}, "
                f"usedBy {json.loads(d).get('status', {}).get('usedBy') if d else '-'}; namespace {TENANT}: "
                f"{left if n else 'gone'}; {holders(c)}"]
    e.r.figure("kamaji delete: file deleted -> namespace and DataStore gone", f"{time.time() - t1:.1f}s")
    print(f"  DataStore {ds} (Kamaji's finalizer released it: no control plane left) and namespace {TENANT} gone", flush=True)
    return fails
