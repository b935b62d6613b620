"""`kaas-gitops upgrade --to` on the real Kamaji pair (issue 42 item 4). Run by lib/kamaji.py once
the tenant `acme` serves, on the bed it leaves. The upgrade reads only what the real controllers
write: the KamajiControlPlane's status from the real provider, the MachineDeployment's from the
real Cluster API core manager.

  1. the pools healthy at the tenant's version: the real kubeadm bootstrap manager writes each
     worker's bootstrap data (its token in the tenant API server, through `acme-kubeconfig`), the
     stand-in CAPMOX provisions the ProxmoxMachines and the stand-in kubelets register a Ready Node
     per Machine in the tenant API server (lib/capi_upgrade.py Infra), the real core manager finds
     them by provider ID. `upgrade --to v1.34`, run as a scheduled job runs it, writes nothing and
     says what it waits for until then, and then writes the control plane step;
  2. that step applied (as kustomize-controller applies a commit): the provider moves the
     TenantControlPlane, Kamaji's webhook admits one minor up, Kamaji rolls the tenant's
     Deployment to the new images and reports the version, and the provider copies it into the
     KamajiControlPlane's `status.version`;
  3. `upgrade --to` again: the gate opens on that real status and writes the pools' step;
  4. a step Kamaji refuses (refused_by_kamaji): `kaas-gitops status` reads the real provider's
     condition as Failed with the webhook's words.

`wait` is not run here: it waits for Flux's Kustomizations, and Flux does not apply this bed's
tenant (the bed applies it; lib/capi_upgrade.py runs `wait` through Flux on the CAPI bed).
"""
import json, os, re, subprocess, time

from capi import standin
from capi_upgrade import MACHINES, Infra
from kamaji import FLUX_GROUPS, KCP, TCP, TENANT, tenant_overlay
from kamaji_flux import route_load_balancer

TARGET = "v1.34"  # kaas.yaml spec.upgrades.kubernetesReleases: v1.34.2, one minor above acme's v1.33.4


def machines(c):
    return [m for m in c.get("-n", TENANT, MACHINES)["items"] if not m["metadata"].get("deletionTimestamp")]


def upgrade_to(f, c):
    return subprocess.run([f.kaas, "--repo", f.dir, "--color", "never", "upgrade", "--to", TARGET, TENANT,
                           "--kubeconfig", c.kubeconfig], capture_output=True, text=True)


def version_in(path):
    m = re.search(r"^  kubernetes:\n    version: (\S+)", open(path).read(), re.M)
    return m.group(1) if m else None


def apply_tenant(c, f):
    """The tenant's overlay as rendered now, applied as kustomize-controller applies a commit;
    returns its KamajiControlPlane."""
    objs = [d for d in tenant_overlay(f, TENANT) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    return next(d for d in objs if d["kind"] == "KamajiControlPlane")


def upgrade_on_real_pair(e):
    bed, f = e.kamaji_bed, e.kamaji_state["fleet"]
    kubeconfig = os.path.join(bed.work, f"{TENANT}-kubeconfig")
    relay = route_load_balancer(e, kubeconfig, "Cluster API's managers")
    infra = Infra(bed.c, kubeconfig, TENANT)
    infra.start()
    try:
        return steps(e, bed, f)
    finally:
        infra.stop.set()
        infra.join(timeout=10)
        if infra.errors:
            print(f"  stand-in infrastructure errors (last 3): {infra.errors[-3:]}", flush=True)
        if relay is not None:
            relay.close()


def steps(e, bed, f):
    c, fails = bed.c, []
    path = os.path.join(f.dir, "tenants", f"{TENANT}.yaml")
    before = version_in(path)
    t0 = time.time()
    said = []

    # 1. Nothing is written until the cluster reports the tenant healthy at its version.
    def written():
        r = upgrade_to(f, c)
        if r.returncode != 0:
            raise RuntimeError(f"upgrade --to {TARGET} exited {r.returncode}: {r.stderr.strip()[:600]}")
        if version_in(path) != before:
            return r
        said.append(r.stdout.strip().splitlines()[1:2])
        return None
    try:
        r = c.wait_for(f"`upgrade --to {TARGET}` writes the control plane step (the pools healthy at {before})", written,
                       timeout=300, interval=5)
    except (TimeoutError, RuntimeError) as ex:
        return [f"{ex}; last plan: {said[-1:] }; Machines: {[m['metadata']['name'] + ' ' + str(m.get('status', {}).get('phase')) for m in machines(c)]}"]
    if said:
        print(f"  upgrade --to {TARGET} before the pools were healthy ({len(said)} runs, nothing written): {said[0]}", flush=True)
    to = version_in(path)
    plan = r.stdout.strip()
    print(f"  upgrade --to {TARGET}: {plan.splitlines()[1:2]}", flush=True)
    if "control plane first" not in plan:
        fails.append(f"the first step written is not the control plane's: {plan[:400]}")
    running = [m["metadata"]["name"] for m in machines(c) if m.get("status", {}).get("nodeRef") and m["status"].get("phase") == "Running"]
    print(f"  Machines Running with their Node in the tenant (Cluster API's nodeRef): {running}", flush=True)
    if not running:
        fails.append("the control plane step was written while no Machine of the pool ran")
    e.r.figure("kamaji upgrade: pools' Machines provisioned -> `upgrade --to` wrote the control plane step", f"{time.time() - t0:.1f}s")

    # 2. The step applied: the real pair moves the control plane.
    sha = f.commit(f"{TENANT}: control plane to {to}")
    t1 = time.time()
    e.kamaji_state["kcp"] = apply_tenant(c, f)

    def rolled():
        d = c.get("-n", TENANT, "deployment", TENANT)
        images = [x["image"] for x in d["spec"]["template"]["spec"]["containers"] if x["name"] == "kube-apiserver"]
        st = d.get("status", {})
        return images if images and images[0].endswith(":" + to) and st.get("updatedReplicas") == st.get("replicas") == \
            st.get("availableReplicas") and st.get("observedGeneration") == d["metadata"]["generation"] else None

    def tcp_at():
        t = c.get("-n", TENANT, TCP, TENANT)
        v = t.get("status", {}).get("kubernetesResources", {}).get("version", {})
        return v if v.get("version") == to and v.get("status") == "Ready" else None

    def kcp_at():
        k = c.get("-n", TENANT, KCP, TENANT)
        return k["status"] if k.get("status", {}).get("version") == to and k["status"].get("ready") else None
    try:
        images = c.wait_for(f"Kamaji rolls Deployment {TENANT} to {to}", rolled, timeout=240, interval=2)
        v = c.wait_for(f"TenantControlPlane {TENANT} Ready at {to} (Kamaji)", tcp_at, timeout=240, interval=2)
        st = c.wait_for(f"KamajiControlPlane {TENANT} status.version {to} (the provider)", kcp_at, timeout=240, interval=2)
    except TimeoutError as ex:
        t = c.get("-n", TENANT, TCP, TENANT)
        k = c.get("-n", TENANT, KCP, TENANT)
        return fails + [f"{ex}; TenantControlPlane spec {t['spec']['kubernetes']['version']} status "
                        f"{json.dumps(t.get('status', {}).get('kubernetesResources', {}).get('version'))}; KamajiControlPlane status "
                        f"{json.dumps(k.get('status'))[:600]}; kamaji log: {bed.log('kamaji')[-800:]}"]
    e.r.figure(f"kamaji upgrade: control plane step {before} -> {to} applied -> KamajiControlPlane reports {to} (real pair)",
               f"{time.time() - t1:.1f}s")
    print(f"  commit {sha[:8]}: Deployment {TENANT} rolled to {images[0]}; TenantControlPlane {v.get('status')} at "
          f"{v.get('version')}; KamajiControlPlane status.version {st['version']}", flush=True)

    # 3. The gate opens on the real status.
    r = upgrade_to(f, c)
    plan = r.stdout.strip()
    print(f"  upgrade --to {TARGET} once the provider reported {to}: {plan.splitlines()[1:2]}", flush=True)
    if r.returncode != 0 or f"pools {before} -> {to}" not in plan:
        fails.append(f"`upgrade --to {TARGET}` did not write the pools' step once the control plane ran {to}: "
                     f"exit {r.returncode}: {plan[:400]} {r.stderr.strip()[:300]}")
    else:
        f.commit(f"{TENANT}: pools to {to}")
        standin("the pools' step is written, not applied (rolling Machines is the CAPI bed's capi upgrade scenario)")
    return fails + refused_by_kamaji(e, bed, f, to)


def refused_by_kamaji(e, bed, f, to):
    """4. A step Kamaji's webhook refuses: `render` never writes one (it refuses a skipped minor
    itself), so the KamajiControlPlane is applied by hand with the next minor but one, as someone
    bypassing git would. The real provider's TenantControlPlane update is denied by Kamaji's
    webhook (internal/webhook/handlers/tcp_version.go: "non-sequential"), the provider writes
    TenantControlPlaneCreated=False for that generation, and `kaas-gitops status` (which `wait`
    and `upgrade --to` judge with, status::health) calls the control plane Failed with the
    webhook's words. The rendered object is applied again afterwards."""
    c, fails = bed.c, []
    major, minor = (int(x) for x in to.lstrip("v").split(".")[:2])
    skip = f"v{major}.{minor + 2}.0"
    kcp = json.loads(json.dumps(e.kamaji_state["kcp"]))
    kcp["spec"]["version"] = skip
    standin(f"a hand-applied KamajiControlPlane asking {skip} (two minors up from {to}): what no render writes")
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-", input=json.dumps(kcp))

    def refused():
        k = c.get("-n", TENANT, KCP, TENANT)
        cond = next((x for x in k.get("status", {}).get("conditions", []) if x["type"] == "TenantControlPlaneCreated"), {})
        return (k, cond) if cond.get("status") == "False" and "denied the request" in cond.get("message", "") and \
            cond.get("observedGeneration") == k["metadata"]["generation"] else None
    try:
        k, cond = c.wait_for(f"the provider: TenantControlPlaneCreated=False (Kamaji's webhook refuses {skip})", refused,
                             timeout=120, interval=2)
    except TimeoutError as ex:
        k = c.get("-n", TENANT, KCP, TENANT)
        return [f"{ex}; conditions {json.dumps(k.get('status', {}).get('conditions'))[:800]}"]
    print(f"  the provider's condition for generation {k['metadata']['generation']}: TenantControlPlaneCreated=False "
          f"{cond.get('reason')}: {cond.get('message')[:240]}", flush=True)
    tcp = c.get("-n", TENANT, TCP, TENANT)
    if tcp["spec"]["kubernetes"]["version"] != to:
        fails.append(f"the TenantControlPlane moved to {tcp['spec']['kubernetes']['version']} although Kamaji refused {skip}")
    r = subprocess.run([f.kaas, "--repo", f.dir, "--color", "never", "status", TENANT, "--kubeconfig", c.kubeconfig],
                       capture_output=True, text=True)
    line = next((x for x in r.stdout.splitlines() if "KamajiControlPlane" in x or "Failed" in x), r.stdout.strip()[:300])
    print(f"  kaas-gitops status {TENANT}: {line.strip()[:300]}", flush=True)
    if "Failed" not in r.stdout or "non-sequential" not in r.stdout:
        fails.append(f"`kaas-gitops status {TENANT}` does not call the refused control plane Failed with Kamaji's words: "
                     f"exit {r.returncode}: {r.stdout.strip()[:600]} {r.stderr.strip()[:300]}")
    e.kamaji_state["kcp"] = apply_tenant(c, f)
    return fails
