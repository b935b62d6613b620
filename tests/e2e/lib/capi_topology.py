"""Topology mode on the real Cluster API topology controller (issue 32), in the CAPI bed of
lib/capi.py (its core manager runs with ClusterTopology=true).

The platform's rendered ClusterClass `proxmox-standard` of tests/fixtures/topology, with its
templates, and the fixture tenant `epsilon` built from it are applied as Flux applies them
(server-side apply through the real webhooks). The real topology controller (in capi-manager)
then creates the KamajiControlPlane, the ProxmoxCluster and one MachineDeployment per pool with
their cloned machine and bootstrap templates, running the class's patches; the test compares what
it created, read from the API server, with what the tenant file asked for. The fixture's epsilon
has one plain pool; the scenario gives it the per-pool wiring that the fixture's alpha shows on
Hetzner (whose CRDs the bed does not have): an autoscaled pool with labels and a taint, a fixed
pool with a taint without value, and a value for the class's `workerCores` variable.

Stand-ins: what the Kamaji provider writes on the KamajiControlPlane's status (its version and
replicas: the provider's controller cannot run here), and cluster-autoscaler's change of an
autoscaled MachineDeployment's replicas. Each is printed with "stand-in" when it is written.
"""
import json, os, shutil, time

import yaml

from capi import condition, kustomize, second_apply_changes_nothing, standin
from fleet import MAIN

FIXTURE = os.path.join(MAIN, "tests", "fixtures", "topology")
TENANT, CLASS = "epsilon", "proxmox-standard"
WORKER_CLASS = "default-worker"  # src/render/topology/mod.rs WORKER_CLASS
FIXTURE_POOLS = "  workers:\n    - name: md-0\n      replicas: 1\n"
SCENARIO_POOLS = FIXTURE_POOLS + """\
    - name: burst
      autoscaling: {min: 0, max: 5}
      labels: {workload: burst, tier: "on"}
      taints:
        - {key: workload, value: burst, effect: NoSchedule}
    - name: gpu
      replicas: 2
      taints:
        - {key: nvidia.com/gpu, effect: NoExecute}
"""
WORKER_CORES = 3
BUMP_TO = "v1.33.4"

# cluster-api v1.14.0 api/core/v1beta2 (common_types.go): what the topology controller and the
# MachineDeployment webhook read and write.
MD_NAME_LABEL = "topology.cluster.x-k8s.io/deployment-name"
CLONED_FROM = "cluster.x-k8s.io/cloned-from-name"
AS_MIN = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
AS_MAX = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
TOPOLOGY_MANAGER = "capi-topology"  # core/reconcilers/topology/cluster/structuredmerge: TopologyManagerName

MDS = "machinedeployments.cluster.x-k8s.io"
KCPS = "kamajicontrolplanes.controlplane.cluster.x-k8s.io"
KCTS = "kubeadmconfigtemplates.bootstrap.cluster.x-k8s.io"
PMTS = "proxmoxmachinetemplates.infrastructure.cluster.x-k8s.io"
PCS = "proxmoxclusters.infrastructure.cluster.x-k8s.io"


def fixture(d):
    """The topology fixture's platform and tenants; epsilon with the scenario's pools."""
    shutil.copy(os.path.join(FIXTURE, "kaas.yaml"), d)
    shutil.copytree(os.path.join(FIXTURE, "tenants"), os.path.join(d, "tenants"))
    p = os.path.join(d, "tenants", f"{TENANT}.yaml")
    src = open(p).read()
    if FIXTURE_POOLS not in src or "  topology:\n    class: proxmox-standard\n" not in src:
        raise RuntimeError(f"tests/fixtures/topology/tenants/{TENANT}.yaml changed: update lib/capi_topology.py")
    src = src.replace(FIXTURE_POOLS, SCENARIO_POOLS)
    src = src.replace("    class: proxmox-standard\n", f"    class: proxmox-standard\n    variables: {{workerCores: {WORKER_CORES}}}\n")
    open(p, "w").write(src)


def apply(c, objs):
    """As kustomize-controller: one server-side apply, through the real webhooks."""
    return c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)


def class_objects(f):
    """The class, the Namespace it lives in and the four templates it names, as rendered."""
    plat = kustomize(os.path.join(f.dir, "overlays", "platform"))
    cc = next((d for d in plat if d["kind"] == "ClusterClass" and d["metadata"]["name"] == CLASS), None)
    if cc is None:
        raise RuntimeError(f"overlays/platform has no ClusterClass {CLASS}")
    spec = cc["spec"]
    md = next(m for m in spec["workers"]["machineDeployments"] if m["class"] == WORKER_CLASS)
    refs = {"controlPlane": spec["controlPlane"]["templateRef"], "infrastructure": spec["infrastructure"]["templateRef"],
            "bootstrap": md["bootstrap"]["templateRef"], "machine": md["infrastructure"]["templateRef"]}
    templates = {}
    for role, ref in refs.items():
        t = next((d for d in plat if d["kind"] == ref["kind"] and d["metadata"]["name"] == ref["name"]), None)
        if t is None:
            raise RuntimeError(f"ClusterClass {CLASS} names {ref['kind']}/{ref['name']}, not in overlays/platform")
        templates[role] = t
    ns = cc["metadata"]["namespace"]
    nsobj = next((d for d in plat if d["kind"] == "Namespace" and d["metadata"]["name"] == ns), None)
    if nsobj is None:
        raise RuntimeError(f"overlays/platform has no Namespace {ns} for the classes")
    return cc, templates, [nsobj, *templates.values(), cc]


def node_labels(labels):
    """The labels the kubelet may set itself: src/render/workers.rs kubelet_labels drops the
    kubernetes.io and k8s.io domains (the NodeRestriction admission plugin's)."""
    out = {}
    for k, v in (labels or {}).items():
        prefix = k.split("/", 1)[0] if "/" in k else ""
        if not (prefix.endswith("kubernetes.io") or prefix.endswith("k8s.io")):
            out[k] = str(v)
    return out


def subset(want, have):
    """want's fields all in have (the API server's defaults may add others)."""
    if isinstance(want, dict):
        return isinstance(have, dict) and all(k in have and subset(v, have[k]) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(have, list) and len(want) == len(have) and all(subset(w, h) for w, h in zip(want, have))
    return want == have


def owns(obj, manager, field):
    """Whether `manager`'s managed fields of obj name spec.<field>."""
    for m in obj["metadata"].get("managedFields", []):
        if m.get("manager") == manager and f"f:{field}" in m.get("fieldsV1", {}).get("f:spec", {}):
            return True
    return False


def mds_by_pool(c):
    return {m["metadata"].get("labels", {}).get(MD_NAME_LABEL): m for m in c.get("-n", TENANT, MDS)["items"]}


def kcp_status_standin(c, kcp, version):
    """What the Kamaji provider v0.20.0 writes on the KamajiControlPlane once Kamaji's
    TenantControlPlane runs `version` (controllers/kamajicontrolplane_controller.go: status
    version, replicas and initialization), which the topology controller reads to decide whether
    the control plane is provisioned, upgrading or stable (cluster-api v1.14.0
    internal/contract/controlplane.go IsProvisioning, IsUpgrading)."""
    n = kcp["spec"].get("replicas", 1)
    standin(f"Kamaji's KamajiControlPlane {TENANT}/{kcp['metadata']['name']} status: initialized, version {version}, {n} replicas ready")
    c.kubectl("patch", "-n", TENANT, KCPS, kcp["metadata"]["name"], "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"controlPlaneInitialized": True}, "ready": True,
                                           "version": version, "replicas": n, "readyReplicas": n,
                                           "availableReplicas": n, "upToDateReplicas": n}}))


def topology_reconciled(cluster):
    cond = condition(cluster, "TopologyReconciled")
    return f"{cond.get('status')} {cond.get('reason')}: {cond.get('message', '')}"


def cluster_from_class(e):
    """The rendered ClusterClass through the real ClusterClass webhook and reconciler; the tenant's
    Cluster through the real Cluster webhooks; the real topology controller creates the control
    plane, the infrastructure cluster and each pool's MachineDeployment with their templates,
    which are compared with the tenant file."""
    bed = e.capi_bed
    c = bed.c
    f = e.new_fleet("capi-topology", fixture)
    f.render()
    tenant = yaml.safe_load(open(os.path.join(f.dir, "tenants", f"{TENANT}.yaml")))["spec"]
    version = tenant["kubernetes"]["version"]
    cc, templates, platform = class_objects(f)
    r = apply(c, platform)
    if r.returncode != 0:
        return [f"the rendered ClusterClass {CLASS} or its templates were refused: {r.stderr.strip()[:800]}"]
    print(f"  applied {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in platform)} through the real webhooks", flush=True)
    ns = cc["metadata"]["namespace"]

    def class_ready():
        live = c.get("-n", ns, "clusterclass.cluster.x-k8s.io", CLASS)
        cond = condition(live, "VariablesReady")
        if live.get("status", {}).get("observedGeneration") != live["metadata"]["generation"] or not cond:
            return None
        if cond["status"] != "True":
            raise AssertionError(f"VariablesReady {cond['status']} {cond.get('reason')}: {cond.get('message')}")
        return live

    try:
        live_cc = c.wait_for(f"ClusterClass {CLASS} reconciled (VariablesReady)", class_ready, timeout=90, interval=1)
    except TimeoutError as ex:
        return [f"{ex}; conditions: {c.get('-n', ns, 'clusterclass.cluster.x-k8s.io', CLASS).get('status', {}).get('conditions')}"]
    print(f"  ClusterClass {CLASS}: {[(x['type'], x['status']) for x in live_cc['status'].get('conditions', [])]}, "
          f"{len(live_cc['status'].get('variables', []))} variables", flush=True)

    objs = [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", TENANT)) if d["kind"] in ("Namespace", "Cluster")]
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    t0 = time.time()
    r = apply(c, objs)
    if r.returncode != 0:
        return [f"the rendered Cluster {TENANT} was refused by the Cluster webhooks: {r.stderr.strip()[:800]}"]
    warnings = [x for x in r.stderr.splitlines() if x.startswith("Warning")]
    print(f"  applied Cluster {TENANT} (class {CLASS}, {version}){'; ' + '; '.join(warnings) if warnings else ''}", flush=True)

    def control_plane():
        live = c.get("-n", TENANT, "cluster.cluster.x-k8s.io", TENANT)
        cp, infra = live["spec"].get("controlPlaneRef", {}), live["spec"].get("infrastructureRef", {})
        if not cp.get("name") or not infra.get("name"):
            return None
        return live, c.get("-n", TENANT, KCPS, cp["name"]), c.get("-n", TENANT, PCS, infra["name"])

    try:
        _, kcp, pc = c.wait_for("the topology controller's KamajiControlPlane and ProxmoxCluster", control_plane, timeout=120, interval=1)
    except TimeoutError as ex:
        return [f"{ex}; Cluster: {topology_reconciled(c.get('-n', TENANT, 'cluster.cluster.x-k8s.io', TENANT))}"]
    e.r.figure("capi topology: Cluster applied -> control plane and infrastructure cluster created", f"{time.time() - t0:.1f}s")
    fails = []
    # The VIP the render allocated from the platform's pool (kaas.lock `vips:`).
    vip = next((v["address"] for v in yaml.safe_load(open(os.path.join(f.dir, "kaas.lock"))).get("vips", [])
                if v["tenant"] == TENANT), None)
    cp_replicas = (tenant.get("controlPlane") or {}).get("replicas", 2)  # docs/reference/tenant.md: default 2
    kspec = kcp["spec"]
    want = {
        "version (the tenant's kubernetes.version)": (kspec.get("version"), version),
        "replicas (the tenant's controlPlane.replicas)": (kspec.get("replicas"), cp_replicas),
        "dataStoreName (patch kaas-datastore)": (kspec.get("dataStoreName"), f"{TENANT}-etcd"),
        "network.serviceAddress (patch kaas-endpoint)": (kspec.get("network", {}).get("serviceAddress"), vip),
        "network.serviceAnnotations (patch kaas-endpoint)": (kspec.get("network", {}).get("serviceAnnotations"),
                                                             {"metallb.io/loadBalancerIPs": vip}),
        "cloned from the class's KamajiControlPlaneTemplate": (kcp["metadata"].get("annotations", {}).get(CLONED_FROM),
                                                               templates["controlPlane"]["metadata"]["name"]),
    }
    fails += [f"KamajiControlPlane {kcp['metadata']['name']} {k}: {have!r}, want {w!r}" for k, (have, w) in want.items() if have != w]
    for k, v in templates["controlPlane"]["spec"]["template"]["spec"].items():
        if k != "network" and not subset(v, kspec.get(k)):
            fails.append(f"KamajiControlPlane {kcp['metadata']['name']} spec.{k} {kspec.get(k)!r}, the class's template says {v!r}")
    print(f"  KamajiControlPlane {kcp['metadata']['name']}: version {kspec.get('version')}, replicas {kspec.get('replicas')}, "
          f"dataStoreName {kspec.get('dataStoreName')}, serviceAddress {kspec.get('network', {}).get('serviceAddress')}", flush=True)
    tspec = templates["infrastructure"]["spec"]["template"]["spec"]
    pdiff = [k for k, v in tspec.items() if not subset(v, pc["spec"].get(k))]
    if pdiff or pc["metadata"].get("annotations", {}).get(CLONED_FROM) != templates["infrastructure"]["metadata"]["name"]:
        fails.append(f"ProxmoxCluster {pc['metadata']['name']} differs from the class's template in {pdiff} or is not cloned from it: "
                     f"{pc['metadata'].get('annotations')}")
    print(f"  ProxmoxCluster {pc['metadata']['name']}: cloned from {templates['infrastructure']['metadata']['name']}, "
          f"allowedNodes {pc['spec'].get('allowedNodes')}, ipv4Config {pc['spec'].get('ipv4Config')}", flush=True)

    pools = tenant["workers"]

    def all_mds():
        mds = mds_by_pool(c)
        return mds if all(p["name"] in mds for p in pools) else None

    # A control plane that does not exist yet counts as stable, so the first reconcile creates the
    # MachineDeployments too (cluster-api v1.14.0 exp/topology/desiredstate/desired_state.go
    # computeControlPlaneVersion, computeMachineDeploymentVersion).
    try:
        mds = c.wait_for(f"{len(pools)} MachineDeployments of the topology controller", all_mds, timeout=120, interval=1)
    except TimeoutError as ex:
        return fails + [f"{ex}; Cluster: {topology_reconciled(c.get('-n', TENANT, 'cluster.cluster.x-k8s.io', TENANT))}"]
    e.r.figure("capi topology: Cluster applied -> every pool's MachineDeployment", f"{time.time() - t0:.1f}s")
    # The control plane up at its version: what the upgrade scenario after this one starts from.
    kcp_status_standin(c, kcp, version)
    extra = sorted(set(mds) - {p["name"] for p in pools})
    if extra:
        fails.append(f"MachineDeployments for no pool of the tenant file: {extra}")
    for pool in pools:
        fails += check_pool(c, pool, mds[pool["name"]], version, templates)
    fails += second_apply_changes_nothing(c, platform + objs)
    e.capi_topology = {"fleet": f, "kcp": kcp["metadata"]["name"], "version": version}
    return fails


def check_pool(c, pool, md, version, templates):
    """One pool's MachineDeployment, cloned templates and node wiring against the tenant file."""
    name, fails = pool["name"], []
    where = f"pool {name}: MachineDeployment {md['metadata']['name']}"
    spec = md["spec"]
    if not md["metadata"]["name"].startswith(f"{TENANT}-{name}-"):
        fails.append(f"{where}: not named <cluster>-<pool>-<random> (the topology controller's default)")
    if spec["template"]["spec"].get("version") != version:
        fails.append(f"{where}: version {spec['template']['spec'].get('version')}, want {version}")
    ann = md["metadata"].get("annotations", {})
    if "autoscaling" in pool:
        lo, hi = pool["autoscaling"]["min"], pool["autoscaling"]["max"]
        if (ann.get(AS_MIN), ann.get(AS_MAX)) != (str(lo), str(hi)):
            fails.append(f"{where}: autoscaler annotations {ann.get(AS_MIN)!r}..{ann.get(AS_MAX)!r}, want {lo}..{hi}")
        # The MachineDeployment webhook defaults a new one's replicas to the min size
        # (cluster-api v1.14.0 core/webhooks/admission/machinedeployment.go
        # calculateMachineDeploymentReplicas); the topology controller must not own them.
        if spec.get("replicas") != lo:
            fails.append(f"{where}: replicas {spec.get('replicas')}, want the min size {lo} (webhook default)")
        if owns(md, TOPOLOGY_MANAGER, "replicas"):
            fails.append(f"{where}: the topology controller owns spec.replicas of an autoscaled pool")
        size = f"autoscaled {ann.get(AS_MIN)}..{ann.get(AS_MAX)}, replicas {spec.get('replicas')} (not the topology's)"
    else:
        if spec.get("replicas") != pool["replicas"]:
            fails.append(f"{where}: replicas {spec.get('replicas')}, want {pool['replicas']}")
        if AS_MIN in ann or AS_MAX in ann:
            fails.append(f"{where}: autoscaler annotations on a fixed pool: {ann}")
        size = f"replicas {spec.get('replicas')}"
    # The class: both templates are the topology controller's clones of the class's default-worker ones.
    bref, iref = spec["template"]["spec"]["bootstrap"]["configRef"], spec["template"]["spec"]["infrastructureRef"]
    kct = c.get("-n", TENANT, KCTS, bref["name"])
    pmt = c.get("-n", TENANT, PMTS, iref["name"])
    for obj, role in ((kct, "bootstrap"), (pmt, "machine")):
        src = obj["metadata"].get("annotations", {}).get(CLONED_FROM)
        if src != templates[role]["metadata"]["name"]:
            fails.append(f"{where}: {obj['kind']} {obj['metadata']['name']} cloned from {src}, "
                         f"want class {WORKER_CLASS}'s {templates[role]['metadata']['name']}")
    cores = pmt["spec"]["template"]["spec"].get("numCores")
    for k, v in templates["machine"]["spec"]["template"]["spec"].items():
        if k != "numCores" and not subset(v, pmt["spec"]["template"]["spec"].get(k)):
            fails.append(f"{where}: ProxmoxMachineTemplate spec.template.spec.{k} {pmt['spec']['template']['spec'].get(k)!r}, the class's says {v!r}")
    if cores != WORKER_CORES:
        fails.append(f"{where}: ProxmoxMachineTemplate numCores {cores}, want the tenant's workerCores {WORKER_CORES} (patch worker-cores)")
    # Node labels and taints: the kaasNodeLabels / kaasNodeTaints overrides through the class's
    # patches into the cloned KubeadmConfigTemplate (src/render/topology/patches.rs node_patches).
    reg = kct["spec"]["template"]["spec"].get("joinConfiguration", {}).get("nodeRegistration", {})
    args = {a["name"]: a.get("value") for a in reg.get("kubeletExtraArgs", [])}
    if not str(args.get("provider-id", "")).startswith("proxmox://"):
        fails.append(f"{where}: the kubelet's provider-id (patch kaas-proxmox) is missing: {args}")
    want_labels = node_labels(pool.get("labels"))
    have = args.get("node-labels")
    have_labels = dict(kv.split("=", 1) for kv in have.split(",")) if have else {}
    if have_labels != want_labels:
        fails.append(f"{where}: --node-labels {have!r}, want {want_labels}")
    want_taints = sorted((t["key"], t.get("value"), t["effect"]) for t in pool.get("taints", []))
    have_taints = sorted((t["key"], t.get("value"), t["effect"]) for t in reg.get("taints", []) or [])
    if have_taints != want_taints:
        fails.append(f"{where}: nodeRegistration.taints {reg.get('taints')}, want {pool.get('taints', [])}")
    mlabels = md["metadata"].get("labels", {})
    missing = {k: v for k, v in (pool.get("labels") or {}).items() if mlabels.get(k) != str(v)}
    if missing:
        fails.append(f"{where}: the pool's labels {missing} are not on the MachineDeployment")
    print(f"  {name}: {md['metadata']['name']} {version}, {size}; {kct['kind']} {kct['metadata']['name']} "
          f"(from {templates['bootstrap']['metadata']['name']}): --node-labels={have!r}, taints={reg.get('taints')}; "
          f"{pmt['kind']} {pmt['metadata']['name']}: numCores {cores}", flush=True)
    return fails


def version_bump_sequenced(e):
    """The topology tenant's version bumped by one minor and rendered: the real topology
    controller upgrades the control plane first and holds every MachineDeployment at the old
    version while the control plane reports the old one (cluster-api v1.14.0
    exp/topology/desiredstate/desired_state.go computeMachineDeploymentVersion:
    IsControlPlaneStableOrWaitingForWorkersUpgrade); once the KamajiControlPlane reports the new
    version (a stand-in: Kamaji is not here), the MachineDeployments follow, one at a time
    (upgrade concurrency 1, exp/topology/scope/upgradetracker.go). An autoscaled pool's replicas,
    changed by the autoscaler (a stand-in), survive every reconcile of the upgrade."""
    bed = e.capi_bed
    c = bed.c
    st = e.capi_topology
    f, old = st["fleet"], st["version"]
    p = os.path.join(f.dir, "tenants", f"{TENANT}.yaml")
    src = open(p).read()
    if f"    version: {old}\n" not in src:
        return [f"no `version: {old}` in tenants/{TENANT}.yaml"]
    tenant = yaml.safe_load(src)["spec"]
    auto = next(w for w in tenant["workers"] if "autoscaling" in w)
    mds = mds_by_pool(c)
    scaled = auto["autoscaling"]["min"] + 1
    standin(f"cluster-autoscaler scales MachineDeployment {mds[auto['name']]['metadata']['name']} (pool {auto['name']}) to {scaled}")
    c.kubectl("patch", "-n", TENANT, MDS, mds[auto["name"]]["metadata"]["name"], "--type=merge",
              "--field-manager=cluster-autoscaler", "-p", json.dumps({"spec": {"replicas": scaled}}))
    # cluster-api v1.14.0 exp/topology/scope/state.go IsUpgrading: a MachineDeployment counts
    # as upgrading (and so takes the one upgrade slot) only while one of its Machines runs
    # another version; one whose Machines do not exist yet takes none. The bump waits until
    # every pool has its Machines, or a second pool may start at once, as upstream allows.
    def machines_exist():
        have = c.get("-n", TENANT, "machines.cluster.x-k8s.io")["items"]
        short = {n: m["spec"].get("replicas", 0) for n, m in mds_by_pool(c).items()
                 if sum(1 for x in have if x["metadata"].get("labels", {}).get("cluster.x-k8s.io/deployment-name")
                        == m["metadata"]["name"]) < m["spec"].get("replicas", 0)}
        return not short
    try:
        c.wait_for("every pool's Machines created", machines_exist, timeout=120, interval=1)
    except TimeoutError as ex:
        return [str(ex)]
    open(p, "w").write(src.replace(f"    version: {old}\n", f"    version: {BUMP_TO}\n", 1))
    f.render()
    cluster = [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", TENANT)) if d["kind"] == "Cluster"]
    if cluster[0]["spec"]["topology"]["version"] != BUMP_TO:
        return [f"the render did not bump the Cluster: {cluster[0]['spec']['topology']['version']}"]
    r = apply(c, cluster)
    if r.returncode != 0:
        return [f"the bumped Cluster was refused: {r.stderr.strip()[:800]}"]
    print(f"  applied Cluster {TENANT} at {BUMP_TO} (was {old})", flush=True)
    get_cluster = lambda: c.get("-n", TENANT, "cluster.cluster.x-k8s.io", TENANT)  # noqa: E731
    pools = [w["name"] for w in tenant["workers"]]

    def cp_first():
        kcp = c.get("-n", TENANT, KCPS, st["kcp"])
        msg = condition(get_cluster(), "TopologyReconciled").get("message", "")
        # A reconcile that saw the control plane upgrading and held the workers.
        # (core/reconcilers/topology/cluster/status.go reconcileTopologyReconciledCondition)
        if (kcp["spec"].get("version") == BUMP_TO and f"{kcp['kind']} upgrading to version {BUMP_TO}" in msg
                and "pending upgrade" in msg):
            return kcp, msg
        return None

    t0 = time.time()
    try:
        kcp, msg = c.wait_for(f"KamajiControlPlane spec.version {BUMP_TO} with the workers held", cp_first, timeout=90, interval=1)
    except TimeoutError as ex:
        return [f"{ex}; Cluster: {topology_reconciled(get_cluster())}"]
    e.r.figure("capi topology: version bump -> control plane at the new version", f"{time.time() - t0:.1f}s")
    fails = []
    held = {n: m["spec"]["template"]["spec"]["version"] for n, m in mds_by_pool(c).items()}
    print(f"  KamajiControlPlane {st['kcp']} spec.version {kcp['spec']['version']} (status {kcp.get('status', {}).get('version')}); "
          f"MachineDeployments {held}; TopologyReconciled: {' '.join(msg.split())}", flush=True)
    early = [n for n, v in held.items() if v != old]
    if early:
        fails.append(f"MachineDeployments {early} moved before the control plane reported {BUMP_TO}: {held}")
    kcp_status_standin(c, kcp, BUMP_TO)

    def workers_follow():
        now = {n: m["spec"]["template"]["spec"]["version"] for n, m in mds_by_pool(c).items()}
        return now if any(v == BUMP_TO for v in now.values()) else None

    t1 = time.time()
    try:
        now = c.wait_for(f"a MachineDeployment at {BUMP_TO}", workers_follow, timeout=90, interval=1)
    except TimeoutError as ex:
        return fails + [f"{ex}; Cluster: {topology_reconciled(get_cluster())}"]
    e.r.figure("capi topology: control plane stand-in at the new version -> first MachineDeployment follows", f"{time.time() - t1:.1f}s")
    msg = condition(get_cluster(), "TopologyReconciled").get("message", "")
    print(f"  MachineDeployments {now}; TopologyReconciled: {' '.join(msg.split())}", flush=True)
    first = pools[0]
    if now.get(first) != BUMP_TO:
        fails.append(f"the first pool {first} is not the first to follow the control plane: {now}")
    if list(now.values()).count(BUMP_TO) > 1:
        fails.append(f"more than one MachineDeployment upgrading at once (concurrency 1): {now}")
    md = mds_by_pool(c)[auto["name"]]
    if md["spec"].get("replicas") != scaled or owns(md, TOPOLOGY_MANAGER, "replicas"):
        fails.append(f"pool {auto['name']}: replicas {md['spec'].get('replicas')} (the autoscaler stand-in set {scaled}); "
                     f"topology controller owns replicas: {owns(md, TOPOLOGY_MANAGER, 'replicas')}")
    else:
        print(f"  pool {auto['name']}: the autoscaler's replicas {scaled} kept through the upgrade", flush=True)
    return fails


def run(e, r, ok):
    """The two topology scenarios, after the CAPI bed's first scenario started the bed."""
    first = "capi topology: the real topology controller builds the tenant from the rendered ClusterClass as its file asks"
    bump = ("capi topology: a version bump upgrades the control plane first, then the MachineDeployments "
            "(real topology controller; the autoscaler's replicas kept)")
    if not ok:
        r.not_run(first, "the bootstrap scenario before it failed")
        r.not_run(bump, "the bootstrap scenario before it failed")
        return
    if r.run(first, cluster_from_class, e):
        r.run(bump, version_bump_sequenced, e)
    else:
        r.not_run(bump, "the topology scenario before it failed")
