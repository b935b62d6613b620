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
from kamaji import FLUX_GROUPS, KCP, TCP, start_containers

N = 10


def fill(d):
    from fleet import Fleet
    Fleet.example(d)
    tenants = os.path.join(d, "tenants")
    src = open(os.path.join(tenants, "initech.yaml")).read()
    for name in os.listdir(tenants):
        os.remove(os.path.join(tenants, name))
    for i in range(1, N + 1):
        name = f"t{i:02d}"
        text = src.replace("name: initech", f"name: {name}").replace("10.0.7.", f"10.0.{40 + i}.")
        if f"name: {name}" not in text or "shared: default" not in text:
            raise RuntimeError("could not derive the benchmark tenants from tenants/initech.yaml")
        open(os.path.join(tenants, f"{name}.yaml"), "w").write(text)


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
    return ds["metadata"]["name"]


def ten_tenants(e):
    bed = e.kamaji_bed
    c, fails = bed.c, []
    f = e.new_fleet("kamaji-fleet", fill)
    f.render()
    names = [f"t{i:02d}" for i in range(1, N + 1)]
    ds = shared_datastore(bed, f)
    objs = []
    for t in names:
        objs += [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", t)) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    kcps = {d["metadata"]["namespace"]: d for d in objs if d["kind"] == "KamajiControlPlane"}
    if set(kcps) != set(names) or any(k["spec"].get("dataStoreName") != ds for k in kcps.values()):
        return [f"the rendered tenants do not all use DataStore {ds}: {[(n, k['spec'].get('dataStoreName')) for n, k in kcps.items()]}"]
    host = {t: f"127.0.0.{10 + i}" for i, t in enumerate(names, 1)}
    with open(bed.hosts, "a") as h:  # the file bind-mounted into Kamaji's mount namespace: edited in place
        h.write("".join(f"{host[t]} {t}.{t}.svc\n" for t in names))
    standin(f"cluster DNS for Kamaji: <t>.<t>.svc -> 127.0.0.11..{10 + N} (one loopback address per tenant API server)")
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    t0 = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    print(f"  applied {len(objs)} rendered objects of {N} tenants on DataStore {ds} at once", flush=True)
    for t in names:
        c.kubectl("patch", "-n", t, "proxmoxcluster", t, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    standin(f"CAPMOX's ProxmoxCluster status.initialization.provisioned=true for the {N} tenants")

    started, ready, done = {}, {}, {}

    def conditions(k):
        return {x["type"]: x["status"] for x in k.get("status", {}).get("conditions", [])}

    def step():
        """One pass of the stand-in kubelet and the checks, over every tenant not done yet."""
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
        return len(done) == N or None
    try:
        c.wait_for(f"{N} tenants: TenantControlPlanes Ready and <tenant>-kubeconfig reaching each", step, timeout=900, interval=2)
    except (TimeoutError, RuntimeError) as ex:
        return [f"{ex}; started {sorted(started)}, Ready {sorted(ready)}, kubeconfig usable {sorted(done)}; "
                f"kamaji log: {bed.log('kamaji')[-800:]}"]
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
