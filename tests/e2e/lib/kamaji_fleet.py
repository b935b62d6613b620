"""Ten tenants at once on the real Kamaji pair, on the platform's shared DataStore (issue 42: its
benchmark, and a shared DataStore on the real pair). Run by lib/kamaji.py last, on the bed it
leaves (the stand-in kubelet only: E2E_KAMAJI_PODS=1 runs one tenant).

A fleet of N tenants `t01`..`tNN`, each derived from the example's `initech` (shared DataStore
`default`, one control plane replica, a LoadBalancer address from the pool), is rendered and all
its tenant objects are applied at once, as Flux applies a commit. Then, per tenant: Kamaji writes
the Deployment, the bed starts its API server as the stand-in kubelet would (one kube-apiserver
process on a loopback address of its own, 127.0.0.<10+i>, which Kamaji's cluster DNS stand-in
names), Kamaji marks the TenantControlPlane Ready and the provider writes `<tenant>-kubeconfig`,
which must reach it. The shared DataStore `default` is the kamaji chart's kamaji-etcd sub-chart
(`kamaji-etcd.deploy: true`): a stand-in etcd as for the dedicated one. Measured: applied -> all
N kubeconfigs usable, and each tenant's own time.
"""
import base64, json, os, re, subprocess, time

from capi import kustomize, standin, yaml_docs
from kamaji import FLUX_GROUPS, KCP, TCP, from_initech, start_containers

N = 10


def fill(d):
    def pool(i):
        """Tenant i on the shared DataStore, with an address pool of its own."""
        return lambda t: t.replace("10.0.7.", f"10.0.{40 + i}.") if "shared: default" in t else None
    from_initech(d, {f"t{i:02d}": pool(i) for i in range(1, N + 1)})


def shared_datastore(bed, f):
    """The platform's shared DataStore `default`: the kamaji release's kamaji-etcd sub-chart values
    as a release of their own (the sub-chart renders the same DataStore)."""
    kamaji = next(d for d in kustomize(os.path.join(f.dir, "overlays", "platform", "kamaji"))
                  if d["kind"] == "HelmRelease" and d["metadata"]["name"] == "kamaji")
    values = kamaji["spec"]["values"]["kamaji-etcd"]
    release = {"metadata": {"name": values.get("fullnameOverride", "kamaji-etcd"), "namespace": kamaji["spec"].get(
        "targetNamespace", kamaji["metadata"]["namespace"])}, "spec": {"values": values}}
    ds, secrets, _ = bed.datastore_standin(release)
    bed.c.kubectl("apply", "--server-side", "--field-manager=helm-controller", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": secrets + [ds]}))
    return ds["metadata"]["name"], release


def tenant_objects(f, names):
    """The tenants' rendered objects Flux's kustomize-controller applies (its Flux objects aside)."""
    objs = []
    for t in names:
        objs += [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", t)) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    return sorted(objs, key=lambda d: d["kind"] != "Namespace")


def apply_tenants(c, objs, names):
    """All at once, as Flux applies a commit; then the stand-in for CAPMOX's infrastructure status."""
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    for t in names:
        c.kubectl("patch", "-n", t, "proxmoxcluster", t, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    standin(f"CAPMOX's ProxmoxCluster status.initialization.provisioned=true for the {len(names)} tenants")


def conditions(k):
    return {x["type"]: x["status"] for x in k.get("status", {}).get("conditions", [])}


def serve(bed, names, host, t0):
    """The stand-in kubelet and the checks, until every tenant's TenantControlPlane is Ready and
    its `<tenant>-kubeconfig` reaches its API server. Returns (started, ready, done): seconds after
    t0 (and the API server's port, the kubeconfig's address)."""
    c = bed.c
    started, ready, done = {}, {}, {}

    def step():
        """One pass over every tenant not done yet."""
        for t in names:
            if t in done:
                continue
            if t not in started:
                k = c.get("-n", t, KCP, t)
                cond = conditions(k)
                if cond.get("TenantControlPlaneCreated") == "True" and cond.get("TenantControlPlaneAddressReady") == "True" \
                        and c.kubectl("get", "-n", t, "deployment", t, check=False).returncode == 0:
                    port = start_containers(bed, t, host[t], controller_manager=False, quiet=True)
                    if isinstance(port, list):
                        raise RuntimeError(f"{t}: {port}")
                    started[t] = (time.time() - t0, port)
                continue
            if t not in ready:
                v = c.get("-n", t, TCP, t).get("status", {}).get("kubernetesResources", {}).get("version", {})
                if v.get("status") == "Ready":
                    ready[t] = time.time() - t0
                continue
            k = c.get("-n", t, KCP, t)
            r = c.kubectl("get", "-n", t, "secret", f"{t}-kubeconfig", "-o", "json", check=False)
            if not (k.get("status", {}).get("ready") and r.returncode == 0):
                continue
            path = os.path.join(bed.work, f"{t}-kubeconfig")
            open(path, "wb").write(base64.b64decode(json.loads(r.stdout)["data"]["value"]))
            server = yaml_docs(open(path).read())[0]["clusters"][0]["cluster"]["server"]
            vip = re.sub(r"^https://|:\d+$", "", server)
            p = subprocess.run(["kubectl", "--kubeconfig", path, "--server", f"https://{host[t]}:{started[t][1]}",
                                "--tls-server-name", vip, "get", "--raw", "/version"], capture_output=True, text=True)
            if p.returncode == 0:
                done[t] = (time.time() - t0, vip)
        return len(done) == len(names) or None
    try:
        c.wait_for(f"{len(names)} tenants: TenantControlPlanes Ready and <tenant>-kubeconfig reaching each", step,
                   timeout=900, interval=2)
    except (TimeoutError, RuntimeError) as ex:
        raise type(ex)(f"{ex}; started {sorted(started)}, Ready {sorted(ready)}, kubeconfig usable {sorted(done)}") from ex
    return started, ready, done


def tenant_kubectl(bed, fl, t, *args):
    """kubectl against tenant t's API server process with its admin kubeconfig (bed.work/<t>-kubeconfig)."""
    return subprocess.run(["kubectl", "--kubeconfig", os.path.join(bed.work, f"{t}-kubeconfig"),
                           "--server", f"https://{fl['host'][t]}:{fl['ports'][t]}", "--tls-server-name", fl["vips"][t], *args],
                          capture_output=True, text=True)


def ten_tenants(e):
    bed = e.kamaji_bed
    c, fails = bed.c, []
    f = e.new_fleet("kamaji-fleet", fill)
    f.render()
    names = [f"t{i:02d}" for i in range(1, N + 1)]
    ds, release = shared_datastore(bed, f)
    objs = tenant_objects(f, names)
    kcps = {d["metadata"]["namespace"]: d for d in objs if d["kind"] == "KamajiControlPlane"}
    if set(kcps) != set(names) or any(k["spec"].get("dataStoreName") != ds for k in kcps.values()):
        return [f"the rendered tenants do not all use DataStore {ds}: {[(n, k['spec'].get('dataStoreName')) for n, k in kcps.items()]}"]
    host = {t: f"127.0.0.{10 + i}" for i, t in enumerate(names, 1)}
    with open(bed.hosts, "a") as h:  # the file bind-mounted into Kamaji's mount namespace: edited in place
        h.write("".join(f"{host[t]} {t}.{t}.svc\n" for t in names))
    standin(f"cluster DNS for Kamaji: <t>.<t>.svc -> 127.0.0.11..{10 + N} (one loopback address per tenant API server)")
    t0 = time.time()
    apply_tenants(c, objs, names)
    print(f"  applied {len(objs)} rendered objects of {N} tenants on DataStore {ds} at once", flush=True)

    try:
        started, ready, done = serve(bed, names, host, t0)
    except (TimeoutError, RuntimeError) as ex:
        return [f"{ex}; kamaji log: {bed.log('kamaji')[-800:]}"]
    e.kamaji_fleet = {"fleet": f, "names": names, "host": host, "ports": {t: started[t][1] for t in names},
                      "vips": {t: done[t][1] for t in names}, "release": release}
    total = max(s for s, _ in done.values())
    vips = sorted(v for _, v in done.values())
    if len(set(vips)) != N:
        fails.append(f"the {N} kubeconfigs do not name {N} addresses: {vips}")
    schemas = {c.get("-n", t, TCP, t)["status"]["storage"]["setup"]["schema"] for t in names}
    if len(schemas) != N:
        fails.append(f"{N} tenants share DataStore {ds} with {len(schemas)} schemas: {sorted(schemas)}")
    print(f"  {N} tenants on {ds}: schemas {sorted(schemas)}; addresses {vips[0]}..{vips[-1]}", flush=True)
    print("  per tenant (s after the apply): " + ", ".join(
        f"{t} api {started[t][0]:.0f} / Ready {ready[t]:.0f} / kubeconfig {done[t][0]:.0f}" for t in names), flush=True)
    e.r.figure(f"kamaji fleet: {N} tenants applied at once -> every TenantControlPlane Ready and <tenant>-kubeconfig usable",
               f"{total:.1f}s")
    e.r.figure(f"kamaji fleet: {N} tenants, median applied -> kubeconfig usable",
               f"{sorted(s for s, _ in done.values())[N // 2]:.1f}s")
    return fails


def ten_tenants_recovered(e):
    """Issue 45's recovery, for ten tenants: the ten tenants of ten_tenants each hold a ConfigMap
    `survivor`; the shared DataStore is snapshotted (etcdctl snapshot save), one more ConfigMap
    `late` is written; then the management cluster and the DataStore are lost (every process
    SIGKILLed, both data dirs deleted: lib/kamaji_rebuild.py lose_management_cluster). The
    DataStore comes back from the snapshot (etcdutl restore with --bump-revision
    --mark-compacted), a new management bed starts with the fleet's platform, Flux starts on it and
    applies every tenant from the fleet's git repository (the rendered `kaas-tenant-<t>`
    Kustomizations), and every tenant must serve its `survivor` (same UID) and not `late`.
    Measured: loss -> every tenant serves its data."""
    from kamaji import PROVIDER
    from kamaji_rebuild import (BUMP, LATE, SURVIVOR, datastore_from_git, lose_management_cluster, new_bed, restore_datastore,
                                revision, snapshot_save, start_from_git)
    fl, old = e.kamaji_fleet, e.kamaji_bed
    f, names, fails = fl["fleet"], fl["names"], []
    uids = {}
    for t in names:
        r = tenant_kubectl(old, fl, t, "create", "configmap", SURVIVOR, "-n", "default", f"--from-literal=tenant={t}", "-o", "json")
        if r.returncode != 0:
            return [f"{t}: writing ConfigMap default/{SURVIVOR}: {r.stderr.strip()[:300]}"]
        uids[t] = json.loads(r.stdout)["metadata"]["uid"]
    snap = os.path.join(e.work, "kamaji-fleet-snapshot.db")
    t = time.time()
    at_snapshot = revision(old)  # before: the tenants write on while the snapshot is taken
    snapshot_save(old, snap)
    e.r.figure(f"kamaji fleet recovery: the shared DataStore of {len(names)} tenants snapshotted (etcdctl snapshot save)",
               f"{time.time() - t:.1f}s, {os.path.getsize(snap)} bytes, taken at revision {at_snapshot} or later")
    r = tenant_kubectl(old, fl, names[0], "create", "configmap", LATE, "-n", "default")
    if r.returncode != 0:
        return [f"{names[0]}: writing ConfigMap default/{LATE}: {r.stderr.strip()[:300]}"]
    print(f"  {len(names)} tenants each hold ConfigMap default/{SURVIVOR}; {names[0]} also {LATE}, written after the snapshot",
          flush=True)

    t_loss = time.time()
    lose_management_cluster(old, None)
    lost_data = old.ds_argv[old.ds_argv.index("--data-dir") + 1]
    subprocess.run(["rm", "-rf", lost_data], check=True)
    print(f"  the shared DataStore lost too: its data dir {lost_data} deleted", flush=True)
    new = new_bed(e, old, "kamaji-fleet-rebuilt")
    t = time.time()
    restore_datastore(old, new, snap)
    new.ds_argv = new.c.procs[f"etcd-{old.ds_name}"].args
    restored = revision(new)
    e.r.figure("kamaji fleet recovery: the shared DataStore restored (etcdutl --bump-revision --mark-compacted, etcd serving)",
               f"{time.time() - t:.1f}s, revision {restored}")
    if restored < at_snapshot + BUMP:
        fails.append(f"the restored DataStore is at revision {restored}, not past the snapshot's {at_snapshot} + {BUMP}")
    e.r.figure("kamaji fleet recovery: new management bed start (fresh etcd, CAPI managers, Kamaji chart + manager, provider)",
               f"{start_from_git(new, f):.1f}s")
    c = new.c
    c.kubectl("apply", "--server-side", "--field-manager=helm-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": datastore_from_git(new, old, fl["release"])}))
    with open(new.hosts, "a") as h:
        h.write("".join(f"{fl['host'][t]} {t}.{t}.svc\n" for t in names))
    t_apply = flux_applies_tenants(e, new, f, names)
    try:
        started, _, done = serve(new, names, fl["host"], t_apply)
    except (TimeoutError, RuntimeError) as ex:
        return fails + [f"{ex}; kamaji log: {new.log('kamaji')[-800:]}"]
    fl["ports"], fl["vips"] = {t: started[t][1] for t in names}, {t: done[t][1] for t in names}
    served = {}
    for t in names:
        r = tenant_kubectl(new, fl, t, "get", "configmap", SURVIVOR, "-n", "default", "-o", "json")
        served[t] = json.loads(r.stdout)["metadata"]["uid"] if r.returncode == 0 else None
        if served[t] != uids[t]:
            fails.append(f"{t}: the recovered tenant serves ConfigMap default/{SURVIVOR} as "
                         f"{served[t] or r.stderr.strip()[:200]}, not uid {uids[t]} written before the loss")
    t_served = time.time()
    r = tenant_kubectl(new, fl, names[0], "get", "configmap", LATE, "-n", "default", "-o", "name")
    if r.returncode == 0:
        fails.append(f"{names[0]} serves ConfigMap default/{LATE}, written after the snapshot: its data is not the snapshot's")
    print(f"  every tenant serves its {SURVIVOR} again: {sum(served[t] == uids[t] for t in names)}/{len(names)}; "
          f"{names[0]}'s {LATE} not served: {r.returncode != 0}", flush=True)
    e.r.figure(f"kamaji fleet recovery: {len(names)} tenants' Flux Kustomizations applied -> every tenant serves its data again",
               f"{t_served - t_apply:.1f}s")
    e.r.figure(f"kamaji fleet recovery: management cluster and shared DataStore lost -> all {len(names)} tenants serve their "
               "data again", f"{t_served - t_loss:.1f}s")
    return fails + [f"recovered bed: {x}" for x in c.forbidden(["kamaji", PROVIDER])]


def flux_applies_tenants(e, bed, f, names):
    """Flux on the new management bed (source- and kustomize-controller under flux2's RBAC,
    lib/cluster.py start_flux), the fleet repository on a loopback git server, and the rendered
    `flux/kustomization-kaas-tenant-<t>.yaml` of each tenant with a GitRepository `flux-system`
    for it: kustomize-controller applies every tenant's overlay from git. Their `dependsOn:
    kaas-platform` is dropped (stand-in, printed): the bed started the platform layer itself.
    Returns the time the Kustomizations were applied."""
    from fleet import serve_git
    c = bed.c
    t0 = time.time()
    c.install_crds(keep_installed=True)
    c.start_flux(helm=False)
    c.wait_for("Flux's source- and kustomize-controller started", lambda: all(
        "Starting workers" in open(os.path.join(c.logs, f"{n}.log"), errors="replace").read()
        for n in ("source-controller", "kustomize-controller")), timeout=120)
    port = serve_git(c, e.git_root)
    f.url = f"http://127.0.0.1:{port}/{os.path.basename(f.bare)}"
    subprocess.run(["git", "-C", f.dir, "remote", "set-url", "origin", f.url], check=True)
    sha = f.commit_push(f"{len(names)} tenants")
    e.r.figure("kamaji fleet recovery: Flux started on the new management bed (CRDs, source- and kustomize-controller, git "
               "server)", f"{time.time() - t0:.1f}s")
    kustomizations = []
    for t in names:
        k = yaml_docs(open(os.path.join(f.dir, "flux", f"kustomization-kaas-tenant-{t}.yaml")).read())[0]
        k["spec"].pop("dependsOn", None)
        kustomizations.append(k)
    standin("kaas-platform's readiness for the tenant Kustomizations (their dependsOn dropped): the bed started the "
            "platform layer itself")
    git = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
           "metadata": {"name": "flux-system", "namespace": "flux-system"},
           "spec": {"interval": "1m", "url": f.url, "ref": {"branch": "main"}}}
    t_apply = time.time()
    c.kubectl("apply", "--server-side", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [git, *kustomizations]}))
    print(f"  Flux: GitRepository flux-system -> {f.url} at {sha[:12]}, Kustomizations "
          f"{', '.join(k['metadata']['name'] for k in kustomizations)}", flush=True)

    def applied():
        missing = [t for t in names if c.kubectl("get", "-n", t, "proxmoxcluster", t, check=False).returncode != 0]
        if missing:
            return None
        for t in names:
            c.kubectl("patch", "-n", t, "proxmoxcluster", t, "--subresource=status", "--type=merge",
                      "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
        return True
    try:
        c.wait_for(f"kustomize-controller applies the {len(names)} tenants from git", applied, timeout=300, interval=2)
    except TimeoutError as ex:
        raise TimeoutError(f"{ex}; kustomize-controller log: {bed.log('kustomize-controller')[-800:]}") from ex
    standin(f"CAPMOX's ProxmoxCluster status.initialization.provisioned=true for the {len(names)} tenants")
    e.r.figure(f"kamaji fleet recovery: Kustomizations applied -> kustomize-controller applied all {len(names)} tenants from git",
               f"{time.time() - t_apply:.1f}s")
    return t_apply
