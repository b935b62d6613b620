"""An upgrade through git on the real Cluster API controllers (issue 29), in the CAPI bed of
lib/capi.py with Flux's own source- and kustomize-controller beside them.

A fleet of one tenant, `umbrella` (no HelmRelease: its control plane on the shared DataStore, no
CNI), is pushed to git and applied by Flux through the real CAPI webhooks; the real core manager
builds its MachineDeployment's Machines and the real kubeadm bootstrap manager their bootstrap
data. Then `kaas-gitops upgrade --to`, run as a scheduled job would run it, writes one step per
run, each committed and pushed, and `kaas-gitops wait` is the gate between them:

1. the control plane step (the pools held at the old version): Flux applies it, no Machine rolls,
   and `wait` holds until the KamajiControlPlane reports the new version;
2. the pools' step, written only once the cluster runs the control plane at it: Flux applies it,
   the real core manager rolls the MachineDeployment to a new MachineSet, and `wait` returns only
   once every Machine runs the new version and no old one is left;
3. the next minor's control plane step, refused by Kamaji: `wait` exits 1 naming the control plane
   and the webhook's words, and the chain stops there;
4. the tenant's file removed in git: Flux prunes it, Cluster API's finalizers run, the namespace goes.

Stand-ins, each printed with "stand-in" when written: the tenant's API server (a real
kube-apiserver for Kamaji's TenantControlPlane), what the Kamaji provider writes (the Secrets, the
KamajiControlPlane's status and conditions, as v0.20.0's controller writes them), what CAPMOX
writes on each ProxmoxMachine (its provider ID and `initialization.provisioned`), and what a
kubelet writes (the Node, Ready, in the tenant's API server). Everything else is the real
controllers' work: the Machines, MachineSets, their rollout, the bootstrap data, the Nodes'
references and deletion, the Cluster's and MachineDeployment's conditions `wait` reads.
"""
import json, os, subprocess, threading, time, uuid

from capi import standin
from fleet import Fleet

TENANT = "umbrella"
FROM, CP_TO, NEXT = "v1.32.9", "v1.33.5", "v1.34.2"  # kaas.yaml spec.upgrades.kubernetesReleases
MACHINES = "machines.cluster.x-k8s.io"
MACHINESETS = "machinesets.cluster.x-k8s.io"
PMS = "proxmoxmachines.infrastructure.cluster.x-k8s.io"
KCP = "kamajicontrolplanes.controlplane.cluster.x-k8s.io"
# What a kubelet reports, and what Cluster API v1.14.0's NodeHealthy condition reads: Ready and the
# three pressure conditions (core/reconcilers/machine/machine_controller_status.go,
# summarizeNodeConditions); without the pressure ones the Machine stays Ready=Unknown.
NODE_CONDITIONS = (("Ready", "True", "KubeletReady"), ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                   ("DiskPressure", "False", "KubeletHasNoDiskPressure"), ("PIDPressure", "False", "KubeletHasSufficientPID"))


def fill(d):
    """The example's platform with one tenant, umbrella, derived from initech: two fixed
    replicas (no autoscaler HelmRelease) and no CNI add-on (a HelmRelease that could not get
    Ready here), so that `wait` judges only what Flux and Cluster API do."""
    Fleet.example(d)
    tenants = os.path.join(d, "tenants")
    src = open(os.path.join(tenants, "initech.yaml")).read()
    for name in os.listdir(tenants):
        os.remove(os.path.join(tenants, name))
    tenant = (src.replace("name: initech", f"name: {TENANT}").replace("10.0.7.", "10.0.8.")
              .replace("autoscaling: {min: 1, max: 3}", "replicas: 2").rstrip("\n") + "\n  addons: {cni: none}\n")
    if "replicas: 2" not in tenant or f"version: {FROM}" not in tenant:
        raise RuntimeError("could not derive umbrella from tenants/initech.yaml")
    open(os.path.join(tenants, f"{TENANT}.yaml"), "w").write(tenant)


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def kamaji_status(c, version, created=("True", "Succeeded", "")):
    """Stand-in for what cluster-api-control-plane-provider-kamaji v0.20.0 writes
    (controllers/kamajicontrolplane_controller.go): `version` copied from the TenantControlPlane
    (which Kamaji moves once the new API servers run), `ready` true while Ready or Upgrading, the
    conditions it tracks, and `Available` from `ready`. A refused TenantControlPlane update returns
    early with TenantControlPlaneCreated=False and leaves the rest as it was."""
    t = now()
    cond = lambda typ, st="True", reason="Succeeded", msg="": {  # noqa: E731
        "type": typ, "status": st, "reason": reason, "message": msg, "lastTransitionTime": t}
    status = {"version": version, "ready": True, "initialization": {"controlPlaneInitialized": True},
              "replicas": 1, "readyReplicas": 1, "availableReplicas": 1, "upToDateReplicas": 1,
              "conditions": [cond("TenantControlPlaneCreated", *created), cond("TenantControlPlaneAddressReady"),
                             cond("KamajiControlPlaneIsInitialized"), cond("KubeadmResourcesCreated"),
                             cond("KamajiControlPlaneIsReady"), cond("Available", reason="Available")]}
    c.kubectl("patch", "-n", TENANT, KCP, TENANT, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": status}))


class Infra(threading.Thread):
    """Stand-in for CAPMOX and the kubelets: each ProxmoxMachine gets a provider ID and
    `initialization.provisioned` (CAPMOX v0.9.0 api/v1alpha2 proxmoxmachine_types.go), and each
    Machine that has one gets a Ready Node of that provider ID in the tenant's API server, its
    kubelet at the Machine's version. The real core manager then finds the Node by provider ID
    (its Machine's nodeRef) and, on a rollout, drains and deletes the old ones."""

    def __init__(self, c, tenant_kubeconfig, tenant=TENANT):
        super().__init__(daemon=True)
        self.c, self.tk, self.ns = c, tenant_kubeconfig, tenant
        self.stop, self.errors, self.said = threading.Event(), [], set()

    def tenant(self, *args, input=None):
        return subprocess.run(["kubectl", "--kubeconfig", self.tk, *args], input=input,
                              capture_output=True, text=True, check=True).stdout

    def run(self):
        while not self.stop.is_set():
            try:
                self.step()
            except Exception as ex:  # noqa: BLE001 - reported by the scenario
                self.errors.append(f"{type(ex).__name__}: {str(ex)[:300]}")
            self.stop.wait(2)

    def step(self):
        c = self.c
        for pm in c.get("-n", self.ns, PMS)["items"]:
            name = pm["metadata"]["name"]
            if pm["metadata"].get("deletionTimestamp"):
                continue
            if not pm["spec"].get("providerID"):
                pid = f"proxmox://{uuid.uuid5(uuid.NAMESPACE_DNS, name)}"
                c.kubectl("patch", "-n", self.ns, PMS, name, "--type=merge", "-p", json.dumps({"spec": {"providerID": pid}}))
            if not pm.get("status", {}).get("initialization", {}).get("provisioned"):
                if "pm" not in self.said:
                    self.said.add("pm")
                    standin("CAPMOX: each ProxmoxMachine's spec.providerID and status.initialization.provisioned")
                c.kubectl("patch", "-n", self.ns, PMS, name, "--subresource=status", "--type=merge", "-p", json.dumps(
                    {"status": {"initialization": {"provisioned": True}, "vmStatus": "ready",
                                "addresses": [{"type": "InternalIP", "address": "10.0.8.20"}]}}))
        nodes = {n["spec"].get("providerID") for n in json.loads(self.tenant("get", "nodes", "-o", "json"))["items"]}
        for m in c.get("-n", self.ns, MACHINES)["items"]:
            pid = m["spec"].get("providerID")
            if not pid or pid in nodes or m["metadata"].get("deletionTimestamp"):
                continue
            if "node" not in self.said:
                self.said.add("node")
                standin("the kubelets: a Ready Node per Machine, by its provider ID, in the tenant's API server")
            name = m["metadata"]["name"]
            self.tenant("apply", "--server-side", "-f", "-", input=json.dumps(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"providerID": pid}}))
            t = now()
            self.tenant("patch", "node", name, "--subresource=status", "--type=merge", "-p", json.dumps({"status": {
                "conditions": [{"type": typ, "status": st, "reason": reason, "message": "stand-in kubelet",
                                "lastHeartbeatTime": t, "lastTransitionTime": t} for typ, st, reason in NODE_CONDITIONS],
                "nodeInfo": {"kubeletVersion": m["spec"]["version"], "machineID": "", "systemUUID": "", "bootID": "",
                             "kernelVersion": "", "osImage": "", "containerRuntimeVersion": "", "kubeProxyVersion": "",
                             "operatingSystem": "linux", "architecture": "amd64"}}}))


def machines(c):
    return [m for m in c.get("-n", TENANT, MACHINES)["items"] if not m["metadata"].get("deletionTimestamp")]


def describe_machines(c):
    return [f"{m['metadata']['name']} {m['spec'].get('version')} {m.get('status', {}).get('phase')}"
            f"{' node ' + m['status']['nodeRef']['name'] if m.get('status', {}).get('nodeRef') else ''}"
            for m in c.get("-n", TENANT, MACHINES)["items"]]


class Wait:
    """`kaas-gitops wait` running in the background, as the CI job after a merge runs it."""

    def __init__(self, f, *args):
        self.p = subprocess.Popen([f.kaas, "--repo", f.dir, "--color", "never", "wait", TENANT,
                                   "--kubeconfig", f.c.kubeconfig, *args],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.started = time.time()

    def done(self):
        return self.p.poll() is not None

    def result(self, timeout):
        out, err = self.p.communicate(timeout=timeout)
        self.ended = time.time()
        return self.p.returncode, err


def upgrade_through_git(e):
    """See the module's text: the control plane step, `wait` holding for it, the pools' step rolled
    by the real core manager, `wait` returning only then, and a refused next step."""
    bed = e.capi_bed
    c = bed.c
    fails = []
    t0 = time.time()
    c.install_crds(keep_installed=True)  # Flux's and the platform's other kinds, beside CAPI's own
    c.start_flux(helm=False)
    c.wait_for("source- and kustomize-controller started", lambda: all(
        "Starting workers" in open(os.path.join(c.logs, f"{n}.log"), errors="replace").read()
        for n in ("source-controller", "kustomize-controller")), timeout=90)
    f = e.new_fleet("capi-upgrade", fill)
    f.c = c  # this fleet's Flux is the CAPI bed's
    f.render()
    sha = f.commit_push(f"{TENANT} at {FROM}")
    e.bootstrap(f, open_gate=True, cluster=c)
    secs, state = f.wait_ready(sha, timeout=300)
    if not all(s[0] for s in state.values()):
        return [f"Flux did not apply the fleet in the CAPI bed: {e.describe(state)}"]
    e.r.figure("capi upgrade: Flux (in the CAPI bed) applied the one-tenant fleet through the CAPI webhooks",
               f"{time.time() - t0:.1f}s")

    port = bed.start_tenant_apiserver(TENANT)
    bed.kamaji_standins(TENANT, TENANT, port, FROM)
    kamaji_status(c, FROM)
    infra = Infra(c, bed.tenant_kubeconfig_file(port))
    infra.start()
    try:
        return fails + steps(e, f, c, infra)
    finally:
        infra.stop.set()
        if infra.errors:
            print(f"  stand-in infrastructure errors (last 3): {infra.errors[-3:]}", flush=True)


def steps(e, f, c, infra):
    fails = []
    kc = ("--kubeconfig", c.kubeconfig)
    # Before any step: the cluster as built by the real controllers is what `wait` calls done.
    t0 = time.time()
    w = f.kaas_gitops("wait", TENANT, "--timeout", "240s", *kc, check=False)
    if w.returncode != 0 or "clusters caught up" not in w.stderr:
        return [f"wait before the upgrade exited {w.returncode}: {w.stderr.strip()[-600:]}; machines: {describe_machines(c)}"]
    e.r.figure(f"capi upgrade: Machines built -> `wait` done at {FROM} (Cluster Available, MachineDeployment rolled out, "
               "from the real controllers' status)", f"{time.time() - t0:.1f}s")
    fails += status_from_controllers(f, kc)
    old = {m["metadata"]["name"] for m in machines(c)}
    sets = {s["metadata"]["name"] for s in c.get("-n", TENANT, MACHINESETS)["items"]}
    print(f"  at {FROM}: Machines {describe_machines(c)}", flush=True)

    # Step 1: the control plane alone.
    up = f.kaas_gitops("upgrade", "--to", "v1.33", TENANT, *kc, check=False)
    print("  upgrade --to v1.33 (1st run):\n    " + "\n    ".join((up.stderr + up.stdout).strip().splitlines()[-4:]), flush=True)
    if up.returncode != 0 or "control plane first" not in up.stderr + up.stdout:
        return [f"the first `upgrade --to v1.33` exited {up.returncode}: {(up.stderr + up.stdout).strip()[-500:]}"]
    cp_sha = f.commit_push(f"{TENANT}: control plane to {CP_TO}")
    w = Wait(f, "--reconcile", "--timeout", "300s")
    f.wait_ready(cp_sha, names={"kaas-tenant-" + TENANT}, timeout=180)
    kcp = c.get("-n", TENANT, KCP, TENANT)
    if kcp["spec"]["version"] != CP_TO:
        fails.append(f"after Flux applied the control plane step the KamajiControlPlane asks for {kcp['spec']['version']}")
    time.sleep(10)  # a cluster that would roll the pools now would have a new MachineSet by then
    new_sets = {s["metadata"]["name"] for s in c.get("-n", TENANT, MACHINESETS)["items"]} - sets
    if new_sets:
        fails.append(f"the control plane step rolled the pools: new MachineSets {sorted(new_sets)}")
    if w.done():
        code, err = w.result(5)
        return fails + [f"wait returned ({code}) before the control plane ran {CP_TO}: {err.strip()[-400:]}"]
    # Kamaji upgrading: ready stays true, the version is still the old one.
    standin(f"Kamaji upgrading {TENANT}: KamajiControlPlane status ready, version still {FROM}")
    kamaji_status(c, FROM)
    time.sleep(6)
    if w.done():
        code, err = w.result(5)
        return fails + [f"wait returned ({code}) while the control plane was still upgrading: {err.strip()[-400:]}"]
    standin(f"Kamaji done: KamajiControlPlane status.version {CP_TO}")
    written = time.time()
    kamaji_status(c, CP_TO)
    code, err = w.result(120)
    print("  wait after the control plane step:\n    " + "\n    ".join(err.strip().splitlines()[-4:]), flush=True)
    if code != 0 or w.ended < written:
        fails.append(f"wait after the control plane step exited {code}: {err.strip()[-500:]}")
    if f"waiting: KamajiControlPlane {TENANT}/{TENANT}" not in err:
        fails.append(f"wait never said it waited for the control plane: {err.strip()[-500:]}")
    e.r.figure("capi upgrade: control plane at its version -> `wait` returned", f"{w.ended - written:.1f}s")

    # Step 2: the pools, released only now that the cluster runs the control plane at CP_TO.
    up = f.kaas_gitops("upgrade", "--to", "v1.33", TENANT, *kc, check=False)
    print("  upgrade --to v1.33 (2nd run):\n    " + "\n    ".join((up.stderr + up.stdout).strip().splitlines()[-4:]), flush=True)
    if up.returncode != 0 or f"pools {FROM} -> {CP_TO}" not in up.stderr + up.stdout:
        return fails + [f"the second `upgrade --to v1.33` exited {up.returncode}: {(up.stderr + up.stdout).strip()[-500:]}"]
    pool_sha = f.commit_push(f"{TENANT}: pools to {CP_TO}")
    w = Wait(f, "--reconcile", "--timeout", "420s")
    rolled_at = None
    while not w.done() and time.time() - w.started < 430:
        ms = machines(c)
        if rolled_at is None and ms and all(m["spec"].get("version") == CP_TO for m in ms) and not old & {m["metadata"]["name"] for m in ms}:
            rolled_at = time.time()
        time.sleep(1)
    code, err = w.result(30)
    ms = c.get("-n", TENANT, MACHINES)["items"]
    print("  wait after the pools' step:\n    " + "\n    ".join(err.strip().splitlines()[-4:]), flush=True)
    print(f"  Machines now: {describe_machines(c)}", flush=True)
    if code != 0 or "clusters caught up" not in err:
        return fails + [f"wait after the pools' step exited {code}: {err.strip()[-600:]}; machines: {describe_machines(c)}"]
    if "waiting: MachineDeployment " not in err:
        fails.append(f"wait never said it waited for the MachineDeployment's rollout: {err.strip()[-500:]}")
    wrong = [m["metadata"]["name"] for m in ms if m["spec"].get("version") != CP_TO or not m.get("status", {}).get("nodeRef")]
    left = old & {m["metadata"]["name"] for m in ms}
    if len(ms) != 2 or wrong or left:
        fails.append(f"wait returned with Machines {describe_machines(c)} (want 2 new ones at {CP_TO} with Nodes, none of {sorted(old)})")
    if rolled_at is None:
        fails.append("the rollout was never seen complete before wait returned")
    applied = c.get("-n", "flux-system", "kustomization", f"kaas-tenant-{TENANT}")["status"].get("lastAppliedRevision", "")
    if not applied.endswith(pool_sha):
        fails.append(f"kaas-tenant-{TENANT} applied {applied}, not the pools' step {pool_sha}")
    e.r.figure(f"capi upgrade: pools' step pushed -> Machines rolled to {CP_TO} by the real core manager and `wait` returned",
               f"{w.ended - w.started:.1f}s")
    nodes = json.loads(subprocess.run(["kubectl", "--kubeconfig", infra.tk, "get", "nodes", "-o", "json"],
                                      capture_output=True, text=True, check=True).stdout)["items"]
    if {n["metadata"]["name"] for n in nodes} & old:
        fails.append(f"the old Machines' Nodes are still in the tenant: {sorted({n['metadata']['name'] for n in nodes} & old)}")

    # A third run: arrived, nothing to write.
    up = f.kaas_gitops("upgrade", "--to", "v1.33", TENANT, *kc, check=False)
    status = subprocess.run(["git", "-C", f.dir, "status", "--porcelain"], capture_output=True, text=True).stdout
    if up.returncode != 0 or status.strip():
        fails.append(f"a third `upgrade --to v1.33` exited {up.returncode} and changed {status.strip()[:200]}: {up.stderr.strip()[-300:]}")

    # Flux's next reconcile of the tenant, after the real controllers and webhooks had their say:
    # nothing to change (no field fight between Flux's apply and a defaulting webhook or controller).
    fails += flux_applies_nothing(c)

    # Step 3: the next minor, refused by Kamaji.
    up = f.kaas_gitops("upgrade", "--to", "v1.34", TENANT, *kc, check=False)
    if up.returncode != 0 or f"{CP_TO} -> {NEXT}" not in up.stderr + up.stdout:
        return fails + [f"`upgrade --to v1.34` exited {up.returncode}: {(up.stderr + up.stdout).strip()[-500:]}"]
    next_sha = f.commit_push(f"{TENANT}: control plane to {NEXT}")
    f.poke()
    f.wait_ready(next_sha, names={"kaas-tenant-" + TENANT}, timeout=180)
    message = 'admission webhook "vtenantcontrolplane.kb.io" denied the request: unable to upgrade to a version newer than v1.33'
    standin(f"Kamaji refuses {NEXT}: TenantControlPlaneCreated=False with its webhook's words, ready left true")
    kamaji_status(c, CP_TO, created=("False", "Pending", message))
    t0 = time.time()
    w = f.kaas_gitops("wait", TENANT, "--timeout", "90s", *kc, check=False)
    last = w.stderr.strip().splitlines()[-1] if w.stderr.strip() else ""
    print(f"  wait on the refused step: exit {w.returncode} after {time.time() - t0:.0f}s: {last[:300]}", flush=True)
    if w.returncode != 1 or f"KamajiControlPlane {TENANT}/{TENANT} is Failed" not in last or "denied the request" not in last \
            or time.time() - t0 > 80:
        fails.append(f"wait on the refused step exited {w.returncode} after {time.time() - t0:.0f}s: {last[:400]}")
    up = f.kaas_gitops("upgrade", "--to", "v1.34", TENANT, *kc, check=False)
    print(f"  upgrade --to v1.34 after the refusal: exit {up.returncode}: {(up.stderr + up.stdout).strip()[-300:]}", flush=True)
    if up.returncode != 1 or "denied the request" not in up.stderr + up.stdout:
        fails.append(f"`upgrade --to v1.34` after Kamaji refused the step exited {up.returncode}, want 1 naming why: "
                     f"{(up.stderr + up.stdout).strip()[-400:]}")
    fails += [f"stand-in infrastructure: {x}" for x in infra.errors[-3:]]
    return fails + deleted_through_git(e, f, c)


def status_from_controllers(f, kc):
    """`status` on what the real controllers wrote: the Cluster's phase and Available condition
    (core manager), the MachineDeployment's replicas (core manager), the KamajiControlPlane's
    version (the stand-in's, as the provider writes it)."""
    r = f.kaas_gitops("status", TENANT, "-o", "json", *kc, check=False)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return [f"status -o json printed no JSON (exit {r.returncode}): {r.stderr.strip()[-300:]}"]
    row = next((x for x in doc.get("rows", []) if x["name"] == TENANT), {})
    got = {o["kind"]: (o["state"], o["summary"]) for o in row.get("objects", [])}
    want = {"Cluster": ("ready", "Provisioned"), "KamajiControlPlane": ("ready", f"{FROM}, initialized"),
            "MachineDeployment": ("ready", "2/2 ready")}
    print(f"  status {TENANT} on the controllers' statuses: {got}", flush=True)
    return [f"status shows {TENANT}'s {k} as {got.get(k)}, want {v}" for k, v in want.items() if got.get(k) != v]


def deleted_through_git(e, f, c):
    """The tenant's file removed in git: Flux prunes its Kustomization, whose prune deletes every
    object it applied; the real core manager's finalizers run (the Cluster, its MachineDeployment,
    MachineSets and Machines, each Machine's Node drained and deleted in the tenant's API server)
    and the namespace goes, with nothing left stuck."""
    os.remove(os.path.join(f.dir, "tenants", f"{TENANT}.yaml"))
    f.render()
    sha = f.commit_push(f"{TENANT} decommissioned")
    f.poke()
    t0 = time.time()
    gone = lambda: c.kubectl("get", "namespace", TENANT, check=False).returncode != 0  # noqa: E731
    try:
        c.wait_for(f"namespace {TENANT} gone after Flux pruned it", gone, timeout=240, interval=2)
    except TimeoutError as ex:
        left = [f"{k} {o['metadata']['name']} finalizers={o['metadata'].get('finalizers')}"
                for k in (MACHINES, MACHINESETS, "clusters.cluster.x-k8s.io", "machinedeployments.cluster.x-k8s.io")
                for o in c.get("-n", TENANT, k)["items"]]
        return [f"{ex}; left: {left}"]
    e.r.figure(f"capi upgrade: {TENANT} removed in git -> pruned by Flux, CAPI finalizers run, namespace gone",
               f"{time.time() - t0:.1f}s")
    ks = {k["metadata"]["name"] for k in c.get("-n", "flux-system", "kustomizations")["items"]}
    fails = [f"Kustomization kaas-tenant-{TENANT} still exists after the prune"] if f"kaas-tenant-{TENANT}" in ks else []
    root = c.get("-n", "flux-system", "kustomization", "flux-system")["status"].get("lastAppliedRevision", "")
    if not root.endswith(sha):
        fails.append(f"the root Kustomization applied {root}, not the deletion {sha}")
    return fails


def flux_applies_nothing(c):
    """Asks kustomize-controller to reconcile the tenant again and reads its own account of the
    apply (v1.9.4 internal/controller/kustomization_controller.go logs "server-side apply
    completed" with each object's action): every object must come out `unchanged`."""
    log = os.path.join(c.logs, "kustomize-controller.log")
    start = os.path.getsize(log)
    c.kubectl("annotate", "--overwrite", "-n", "flux-system", f"kustomization/kaas-tenant-{TENANT}",
              f"reconcile.fluxcd.io/requestedAt=e2e-{time.time()}")

    def applied():
        with open(log, errors="replace") as fh:
            fh.seek(start)
            return next((ln for ln in fh if "server-side apply completed" in ln and f"kaas-tenant-{TENANT}" in ln), None)
    try:
        line = c.wait_for(f"kaas-tenant-{TENANT} reconciled again", applied, timeout=120, interval=1)
    except TimeoutError as ex:
        return [str(ex)]
    # zap's console encoding: the message, then the structured fields as one JSON object.
    try:
        output = json.loads(line[line.index("{"):])["output"]
    except (ValueError, KeyError) as ex:
        return [f"could not read kustomize-controller's apply log ({ex}): {line[:300]}"]
    changed = {k: v for k, v in output.items() if v != "unchanged"}
    print(f"  Flux's next apply of {TENANT}: {len(output)} objects, changed: {changed or 'none'}", flush=True)
    return [f"Flux's next apply of {TENANT} after the controllers' work changed {changed}"] if changed else []


def run(e, r, ok):
    name = ("capi upgrade: through git and Flux, `upgrade --to` steps the control plane first, `wait` holds until it runs the "
            "version, then the pools roll new Machines through the real core manager and `wait` returns only then; "
            "a refused step fails `wait` and stops the chain")
    rbac = "capi upgrade: Flux in the CAPI bed ran as its ServiceAccounts under flux2's manifests/rbac: no request refused"
    if ok:
        r.run(name, upgrade_through_git, e)
        if "kustomize-controller" in e.capi_bed.c.procs:
            r.run(rbac, e.capi_bed.c.forbidden, ["source-controller", "kustomize-controller"])
        else:
            r.not_run(rbac, "Flux never started in the CAPI bed (see the scenario before)")
    else:
        r.not_run(name, "the bootstrap scenario before it failed")
        r.not_run(rbac, "the bootstrap scenario before it failed")
