"""The platform gate on real availability (issue 32), in a bed of its own (E2E_ONLY=availability).

The main bed has no node: no Pod ever runs, so no HelmRelease that waits for a workload becomes
Ready and the scenarios there open the platform gate by a patch. This bed adds the real
kube-scheduler and kwok (lib/cluster.py Cluster.start_nodes): three fake Nodes whose kubelet kwok
plays, so Pods are bound, "run" and turn Ready, Job Pods succeed, PVCs of kwok's StorageClass are
bound, and kube-controller-manager writes Deployment, StatefulSet and Job status from them. kwok
runs no container: whatever a container must *do* (a hook Job's kubectl creating Secrets, a
webhook server answering the API server, an operator writing status) never happens.

cert-manager's CRDs are installed (from its v1.21.2 chart, crds.enabled), so that the kamaji chart's
Issuer and Certificate apply; its controller does not run: it cannot be built here (cert-manager
v1.21's cmd/controller is the module github.com/cert-manager/cert-manager/controller-binary, which
the Go module proxy does not serve, and it needs github.com/Venafi/vcert/v5, every version of which
the proxy here refuses; internal/apis/config/controller/v1alpha1/defaults.go imports the Venafi
controllers, so there is no build without it).

The example fleet is pushed with the platform gate as rendered (not opened). The scenario reports,
for every HelmRelease of the platform and the tenants, whether helm-controller made it Ready and,
for those it did not, the reason from its status, with the evidence the other controllers wrote;
it asserts what the gate does with that. Then it opens the gate as the main bed does, to see the
tenants' own HelmReleases on these nodes. Asserted: kwok and the scheduler make Pods run and the
kamaji HelmRelease Ready; kaas-kamaji health-checks that release and is Ready exactly when it is;
kaas-platform depends on kaas-kamaji, applies the ControlPlaneProvider only after the release is
Ready and its TenantControlPlane CRD exists (creation times), is Ready exactly when what it
health-checks is, and holds the tenants otherwise; every HelmRelease that is not Ready is so for a cause this bed explains (a
tenant's kubeconfig Secret, which only a running Kamaji writes; a PVC of a StorageClass the bed
does not have); every Ready one has its Deployments and StatefulSets ready.

What was seen (example fleet, 2026-12): kaas-kamaji Ready once the kamaji release was; the
ControlPlaneProvider created 9 s after that release turned Ready and 63 s after the
TenantControlPlane CRD; the gate stays closed for real, on the ControlPlaneProvider alone (its
Ready condition is cluster-api-operator's, which does not run here); kamaji, both
autoscalers and globex-etcd are Ready on kwok's Pods, which a kubelet would not start (the webhook
and etcd certificates are cert-manager's, the etcd certificates of a tenant are made by a hook
Job's containers, which kwok completes without running, the autoscalers mount the tenant
kubeconfig Secret); acme-etcd waits on StorageClass `fast`; the cilium releases fail on the tenant
kubeconfig Secret.
"""
import json, os, shutil, time

import yaml

from cluster import CHARTS, SHARED, sh
from fleet import Fleet

CERT_MANAGER = "github.com/cert-manager/cert-manager@v1.21.2"
# The Go modules whose files this scenario reads (lib/modules.py; tests/e2e/run downloads them).
MODULES = (CERT_MANAGER,)
NODES = 3
# The platform's Flux Kustomizations, in the order they apply (e2e.py PLATFORM_KUSTOMIZATIONS).
PLATFORM = ("kaas-kamaji", "kaas-platform")


def cond(obj, kind):
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def install_cert_manager_crds(c, helm, gomodcache):
    """cert-manager's CRDs as its chart installs them with crds.enabled=true (v1.21.2,
    deploy/charts/cert-manager/templates/crd-*.yaml; deploy/crds/README.md says those files are
    the source, not for installing)."""
    chart = os.path.join(gomodcache, CERT_MANAGER, "deploy", "charts", "cert-manager")
    if not os.path.isdir(chart):
        raise RuntimeError(f"{CERT_MANAGER} is not in the Go module cache (tests/e2e/run downloads it)")
    shows = [a for f in sorted(os.listdir(os.path.join(chart, "templates"))) if f.startswith("crd-")
             for a in ("--show-only", f"templates/{f}")]
    out = sh([helm, "template", "cert-manager", chart, "--namespace", "cert-manager",
                    "--set", "crds.enabled=true", *shows])
    crds = [d for d in yaml.safe_load_all(out) if d and d.get("kind") == "CustomResourceDefinition"]
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": crds}))

    def established():
        return all(cond(c.get("crd", d["metadata"]["name"]), "Established").get("status") == "True" for d in crds)
    c.wait_for("cert-manager CRDs Established", established, timeout=60, interval=1)
    return len(crds)


class Evidence:
    """What the controllers wrote about the workloads of one namespace, by Helm release (Helm
    annotates every object it creates with meta.helm.sh/release-name)."""

    def __init__(self, c, ns):
        self.c, self.ns = c, ns
        g = lambda kind: c.get("-n", ns, kind)["items"]  # noqa: E731
        self.deployments, self.statefulsets, self.jobs = g("deployments"), g("statefulsets"), g("jobs")
        self.replicasets, self.pods, self.pvcs, self.secrets = g("replicasets"), g("pods"), g("persistentvolumeclaims"), g("secrets")
        self.certificates = g("certificates.cert-manager.io")
        self.events = g("events")

    @staticmethod
    def release_of(obj):
        return obj["metadata"].get("annotations", {}).get("meta.helm.sh/release-name")

    def pods_of(self, release):
        """The Pods of the release's Deployments (through their ReplicaSets) and StatefulSets."""
        dep_of = {rs["metadata"]["name"]: o["name"] for rs in self.replicasets
                  for o in rs["metadata"].get("ownerReferences", []) if o["kind"] == "Deployment"}
        mine = {("Deployment", d["metadata"]["name"]) for d in self.deployments if self.release_of(d) == release}
        mine |= {("StatefulSet", s["metadata"]["name"]) for s in self.statefulsets if self.release_of(s) == release}
        out = []
        for p in self.pods:
            for o in p["metadata"].get("ownerReferences", []):
                kind, name = o["kind"], o["name"]
                if kind == "ReplicaSet":
                    kind, name = "Deployment", dep_of.get(name)
                if (kind, name) in mine:
                    out.append(p)
        return out

    def completed_jobs(self):
        """Jobs the job controller reported Completed (an Event: hook Jobs are gone once Helm's
        hook-delete-policy hook-succeeded has run)."""
        return sorted({e["involvedObject"]["name"] for e in self.events
                       if e["involvedObject"].get("kind") == "Job" and e.get("reason") == "Completed"})

    def pvc_warning(self, name):
        why = [e["message"] for e in self.events if e["involvedObject"].get("kind") == "PersistentVolumeClaim"
               and e["involvedObject"].get("name") == name and e.get("type") == "Warning"]
        return why[-1] if why else None

    def workloads(self):
        out = []
        for d in self.deployments:
            a = cond(d, "Available")
            out.append(f"Deployment {d['metadata']['name']}: Available={a.get('status')} "
                       f"({d.get('status', {}).get('availableReplicas', 0)}/{d['spec'].get('replicas', 1)} available)")
        for s in self.statefulsets:
            out.append(f"StatefulSet {s['metadata']['name']}: {s.get('status', {}).get('readyReplicas', 0)}/"
                       f"{s['spec'].get('replicas', 1)} ready")
        for j in self.jobs:
            done = [k["type"] for k in j.get("status", {}).get("conditions", []) if k["status"] == "True"]
            out.append(f"Job {j['metadata']['name']}: {done or 'running'}")
        for name in self.completed_jobs():
            if not any(j["metadata"]["name"] == name for j in self.jobs):
                out.append(f"Job {name}: Completed (job-controller's event; Helm deleted the hook Job)")
        for p in self.pvcs:
            phase = p.get("status", {}).get("phase")
            why = self.pvc_warning(p["metadata"]["name"]) if phase != "Bound" else None
            out.append(f"PVC {p['metadata']['name']}: {phase} (storageClass {p['spec'].get('storageClassName')})"
                       + (f": {why}" if why else ""))
        return out

    def blocking(self, release):
        """Why the release's workloads are not ready: unscheduled Pods and their unbound PVCs."""
        out = []
        for p in self.pods_of(release):
            if cond(p, "Ready").get("status") == "True":
                continue
            sched = cond(p, "PodScheduled")
            line = f"Pod {p['metadata']['name']} {p.get('status', {}).get('phase')}"
            if sched.get("status") == "False":
                line += f", not scheduled: {sched.get('message')}"
            for v in p["spec"].get("volumes", []):
                claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
                pvc = next((x for x in self.pvcs if x["metadata"]["name"] == claim), None)
                if pvc is not None and pvc.get("status", {}).get("phase") != "Bound":
                    line += (f"; PVC {claim} {pvc.get('status', {}).get('phase')} (storageClass "
                             f"{pvc['spec'].get('storageClassName')}): {self.pvc_warning(claim)}")
            out.append(line)
        return out

    def missing_storage_class(self, release):
        return any("storageclass.storage.k8s.io" in b and "not found" in b for b in self.blocking(release))

    def what_kwok_hides(self, release):
        """What a kubelet would have refused and kwok does not look at: a Pod that mounts a Secret
        that does not exist (kwok turns it Ready; a kubelet leaves it ContainerCreating), and the
        release's Certificates, which no cert-manager controller issues here."""
        have = {s["metadata"]["name"]: set((s.get("data") or {}).keys()) for s in self.secrets}
        missing = {}
        for p in self.pods_of(release):
            if cond(p, "Ready").get("status") != "True":
                continue
            for v in p["spec"].get("volumes", []):
                refs = [(v["secret"].get("secretName"), v["secret"])] if v.get("secret") else []
                refs += [(x["secret"].get("name"), x["secret"])
                         for x in (v.get("projected") or {}).get("sources", []) if x.get("secret")]
                for name, ref in refs:
                    if not name or ref.get("optional"):
                        continue
                    if name not in have:
                        why = f"Secret {name}, which does not exist"
                    else:
                        # A kubelet fails a volume whose items name a key the Secret lacks (an
                        # empty Secret that cert-manager was to fill).
                        keys = sorted({i["key"] for i in ref.get("items", [])} - have[name])
                        if not keys:
                            continue
                        why = f"keys {keys} of Secret {name}, which it does not have"
                    missing.setdefault(why, set()).add(p["metadata"]["name"])
        out = [f"Pods {sorted(ps)} mount {why}" for why, ps in sorted(missing.items())]
        certs = [x["metadata"]["name"] for x in self.certificates
                 if self.release_of(x) == release and cond(x, "Ready").get("status") != "True"]
        if certs:
            out.append(f"Certificates {certs} never issued")
        return out


def helmreleases(c):
    return {(h["metadata"]["namespace"], h["metadata"]["name"]): h for h in c.get("-A", "helmreleases")["items"]}


def release_name(h):
    return h["spec"].get("releaseName") or h["metadata"]["name"]


def target_ns(h):
    return h["spec"].get("targetNamespace") or h["metadata"]["namespace"]


def wait_settled(c, keys, timeout):
    """Until helm-controller has a verdict on every HelmRelease (Ready True or False; Unknown while
    an action runs; False with SourceNotReady only until source-controller has built its chart,
    every chart being served here), or one that waits can be seen never to get there: a Pod of its
    release waits for a PVC of a StorageClass that does not exist (Helm would wait out its 5m
    timeout)."""
    def verdict(h):
        rd = cond(h, "Ready")
        return rd.get("status") == "True" or (rd.get("status") == "False" and (
            rd.get("reason") != "SourceNotReady" or "no artifact available for HelmRepository" in rd.get("message", "")))
    t0 = time.time()
    while time.time() - t0 < timeout:
        c.check_alive()
        hrs = helmreleases(c)
        pending = [k for k in keys if k not in hrs or not verdict(hrs[k])]
        if all(k in hrs and "kubeConfig" not in hrs[k]["spec"]
               and Evidence(c, target_ns(hrs[k])).missing_storage_class(release_name(hrs[k])) for k in pending):
            break
        time.sleep(3)
    return time.time() - t0


def table(c, hrs, expected, ks_state):
    """One row per HelmRelease of the render (expected: (ns, name) -> Kustomization):
    (name, verdict, helm-controller's message, evidence)."""
    rows, evidence = [], {}
    for key in sorted(expected):
        ns, name = key
        h = hrs.get(key)
        if h is None:
            k = expected[key]
            s = ks_state.get(k, (False, None, "not on the API server", None))
            rows.append((f"{ns}/{name}", "not applied", f"Kustomization {k}: {s[1]}: {(s[2] or '')[:200]}", []))
            continue
        r = cond(h, "Ready")
        ev = None
        if "kubeConfig" not in h["spec"]:
            ev = evidence.setdefault(target_ns(h), Evidence(c, target_ns(h)))
        if r.get("status") == "True":
            verdict, more = "Ready", (ev.what_kwok_hides(release_name(h)) if ev else [])
        else:
            verdict = f"not Ready ({r.get('status')}, {r.get('reason')})"
            more = ev.blocking(release_name(h)) if ev else []
        rows.append((f"{ns}/{name}", verdict, (r.get("message") or "")[:400], more))
    return rows, evidence


def print_table(title, rows, evidence):
    print(f"  {title}", flush=True)
    w = max(len(r[0]) for r in rows)
    for name, verdict, why, more in rows:
        print(f"    {name:<{w}}  {verdict}: {why}", flush=True)
        for m in more:
            print(f"    {'':<{w}}    {'kwok hides: ' if verdict == 'Ready' else 'waits for: '}{m}", flush=True)
    for ns, ev in sorted(evidence.items()):
        print(f"    namespace {ns}:", flush=True)
        for line in ev.workloads():
            print(f"      {line}", flush=True)


def expected_helmreleases(f):
    """(namespace, name) -> the Kustomization that applies it, from the rendered repository."""
    out = {}
    for k in f.expected_kustomizations() - {"flux-system"}:
        path = yaml.safe_load(open(os.path.join(f.dir, "flux", f"kustomization-{k}.yaml")))["spec"]["path"]
        for o in f.rendered_objects(path):
            if o["kind"] == "HelmRelease":
                out[(o["metadata"]["namespace"], o["metadata"]["name"])] = k
    return out


def serve_cilium(bed):
    """The Cilium chart in the loopback chart repository as /cilium, for the tenants' CNI
    HelmReleases (the main bed serves only /clastix and /autoscaler). It is in ../shared/charts
    but not in tests/upstream/sources.tsv (no Go module ships it), so KAAS_CHARTS may lack it:
    then ../shared's, else none (those releases then wait on their HelmRepository). Returns
    whether it is served."""
    for charts in (CHARTS, os.path.join(SHARED, "charts")):
        src = os.path.join(charts, "cilium")
        if os.path.isfile(os.path.join(src, "Chart.yaml")):
            break
    else:
        print("  no Cilium chart in KAAS_CHARTS or ../shared/charts: the cilium releases get no chart", flush=True)
        return False
    d = os.path.join(bed.work, "charts", "cilium")
    os.makedirs(d, exist_ok=True)
    sh([bed.helm, "package", src, "-d", d])
    sh([bed.helm, "repo", "index", d, "--url", f"http://127.0.0.1:{bed.chart_port}/cilium"])
    return True


def platform_gate(e, r):
    t0 = time.time()
    bed = e.avail_bed = type(e)(e.a, r)
    bed.start(nodes=NODES)
    c = bed.c
    n = install_cert_manager_crds(c, bed.helm, c.gomodcache)
    print(f"  {n} cert-manager CRDs installed (its controller does not run here)", flush=True)
    cilium = serve_cilium(bed)
    fails = []

    def fill(d):
        Fleet.example(d)
        if not cilium:
            return
        p = os.path.join(d, "kaas.yaml")
        text = open(p).read()
        if "https://helm.cilium.io" not in text:
            raise RuntimeError("kaas.yaml no longer names https://helm.cilium.io: update serve_cilium's rewrite")
        open(p, "w").write(text.replace("https://helm.cilium.io", f"http://127.0.0.1:{bed.chart_port}/cilium"))
    f = bed.new_fleet("example", fill)
    f.kaas_gitops("render")
    sha = f.commit_push("the example repository, rendered")
    expected = expected_helmreleases(f)
    bed.bootstrap(f, open_gate=False)
    f.poke()
    f.wait_source(sha)

    # ---- the gate as rendered ----------------------------------------------------------------
    platform_hrs = [k for k, ks in expected.items() if ks in PLATFORM]
    wait_settled(c, platform_hrs, timeout=180)

    # The platform's health checks end after the e2e's HEALTH_TIMEOUT (60s): their verdicts.
    # kaas-kamaji first; kaas-platform applies only once kaas-kamaji is Ready (dependsOn).
    def verdict(name):
        def check():
            k = c.get("-n", "flux-system", "kustomization", name)
            rd = cond(k, "Ready")
            at = k.get("status", {}).get("lastAttemptedRevision") == f"main@sha1:{sha}"
            return k if at and (rd.get("status") == "True" or rd.get("reason") == "HealthCheckFailed") else None
        return check
    kamaji_ks = c.wait_for("kaas-kamaji's health check verdict", verdict("kaas-kamaji"), timeout=150, interval=2)
    kready = cond(kamaji_ks, "Ready")
    if kready.get("status") == "True":
        platform = c.wait_for("kaas-platform's health check verdict", verdict("kaas-platform"), timeout=150, interval=2)
    else:
        platform = c.get("-n", "flux-system", "kustomization", "kaas-platform")
    secs, state = f.wait_ready(sha, timeout=0)
    rows, evidence = table(c, helmreleases(c), expected, state)
    print_table("gate as rendered (closed): every HelmRelease of the render", rows, evidence)

    # kwok and the scheduler at work: the kamaji Deployment Available, written by the real
    # deployment controller from a Pod that kwok turned Ready on a Node the scheduler chose.
    pods = c.get("-A", "pods")["items"]
    running = [p for p in pods if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName", "").startswith("kwok-node-")]
    available = [f"{d['metadata']['namespace']}/{d['metadata']['name']}" for d in c.get("-A", "deployments")["items"]
                 if cond(d, "Available").get("status") == "True"]
    print(f"  {len(running)} Pods Running on kwok Nodes; Deployments Available: {available}", flush=True)
    if not running or not available:
        fails.append(f"kwok and kube-scheduler made no Pod run ({len(running)}) or no Deployment Available ({available})")

    # The gates, as rendered: kaas-kamaji checks the kamaji HelmRelease, kaas-platform depends on
    # kaas-kamaji and checks the ControlPlaneProvider (issue 41, item 4).
    kamaji_checks = [(h.get("kind"), h.get("name")) for h in kamaji_ks["spec"].get("healthChecks", [])]
    platform_checks = [(h.get("kind"), h.get("name")) for h in platform["spec"].get("healthChecks", [])]
    if kamaji_checks != [("HelmRelease", "kamaji")]:
        fails.append(f"kaas-kamaji health-checks {kamaji_checks}, want the kamaji HelmRelease alone")
    if platform_checks != [("ControlPlaneProvider", "kamaji")]:
        fails.append(f"kaas-platform health-checks {platform_checks}, want the kamaji ControlPlaneProvider alone")
    if platform["spec"].get("dependsOn") != [{"name": "kaas-kamaji"}]:
        fails.append(f"kaas-platform does not depend on kaas-kamaji: {platform['spec'].get('dependsOn')}")

    pready = cond(platform, "Ready")
    kamaji = helmreleases(c).get(("kamaji-system", "kamaji"))
    kamaji_ready = kamaji is not None and cond(kamaji, "Ready").get("status") == "True"
    if not kamaji_ready:
        fails.append(f"the kamaji HelmRelease is not Ready on kwok's Nodes: {cond(kamaji or {}, 'Ready').get('message')}")
    if kamaji_ready != (kready.get("status") == "True"):
        fails.append(f"kaas-kamaji is Ready={kready.get('status')} ({kready.get('reason')}: {kready.get('message')}), "
                     f"but the kamaji HelmRelease it checks is Ready={kamaji_ready}")
    cpp = c.kubectl("get", "-n", "kamaji-system", "controlplaneproviders.operator.cluster.x-k8s.io", "kamaji", "-o", "json", check=False)
    cpp = json.loads(cpp.stdout) if cpp.returncode == 0 else None
    cpp_ready = cpp is not None and cond(cpp, "Ready").get("status") == "True"
    # The order itself: the ControlPlaneProvider (from which cluster-api-operator starts the
    # provider) reaches the API server only after Kamaji's TenantControlPlane CRD is served and
    # the kamaji release is Ready.
    if cpp is not None:
        crd = c.get("crd", "tenantcontrolplanes.kamaji.clastix.io")
        created, crd_created = cpp["metadata"]["creationTimestamp"], crd["metadata"]["creationTimestamp"]
        released = cond(kamaji or {}, "Ready").get("lastTransitionTime") or "~"
        print(f"  TenantControlPlane CRD created {crd_created}; kamaji HelmRelease Ready since {released}; "
              f"ControlPlaneProvider created {created}", flush=True)
        if not crd_created <= released <= created:
            fails.append(f"the ControlPlaneProvider was created at {created}, before the kamaji release was Ready "
                         f"({released}; its TenantControlPlane CRD at {crd_created})")
    elif kready.get("status") == "True":
        fails.append("kaas-kamaji is Ready but kaas-platform did not apply the ControlPlaneProvider")
    print(f"  kaas-kamaji: Ready={kready.get('status')} {kready.get('reason')}: {(kready.get('message') or '')[:300]}", flush=True)
    print(f"  kaas-platform: Ready={pready.get('status')} {pready.get('reason')}: {(pready.get('message') or '')[:400]}", flush=True)
    print(f"  their health checks: HelmRelease kamaji-system/kamaji Ready={kamaji_ready}; ControlPlaneProvider "
          f"kamaji-system/kamaji Ready={cpp_ready} (status: {json.dumps((cpp or {}).get('status'))[:200]})", flush=True)
    if kamaji_ready and cpp_ready:
        if pready.get("status") != "True":
            fails.append(f"kamaji and its ControlPlaneProvider are Ready, but kaas-platform is not: {pready.get('message')}")
    else:
        if pready.get("status") == "True":
            fails.append("kaas-platform is Ready although what it health-checks (or kaas-kamaji) is not")
        elif not kamaji_ready:
            if "dependency 'flux-system/kaas-kamaji' is not ready" not in (pready.get("message") or ""):
                fails.append(f"kaas-kamaji is not Ready, but kaas-platform does not wait for it: {pready.get('reason')}: {pready.get('message')}")
        elif pready.get("reason") != "HealthCheckFailed":
            fails.append(f"kaas-platform is not Ready, but not for its health checks: {pready.get('reason')}: {pready.get('message')}")
        elif "HelmRelease/" in (pready.get("message") or ""):
            fails.append(f"kaas-platform waits for a HelmRelease, which is kaas-kamaji's to check: {pready.get('message')}")
        for k, s in sorted(state.items()):
            if k in PLATFORM or k == "flux-system" or s[0]:
                continue
            if "dependency 'flux-system/kaas-platform' is not ready" not in (s[2] or ""):
                fails.append(f"Kustomization {k}: held for another reason than the gate: {s[1]}: {s[2]}")
        why = []
        if not kamaji_ready:
            why.append(f"HelmRelease kamaji-system/kamaji is not Ready: {cond(kamaji or {}, 'Ready').get('message')}")
        if not cpp_ready:
            why.append("ControlPlaneProvider kamaji-system/kamaji has no Ready condition (the rendered healthCheckExprs "
                       "wants one): only cluster-api-operator writes it, once it has installed the Kamaji provider's "
                       "components, which it fetches from the provider's release; no cluster-api-operator runs here and "
                       "this bed reaches no network")
        r.finding("availability", "the platform gate stays closed for real"
                  + (" although the kamaji HelmRelease (and so kaas-kamaji) is Ready" if kamaji_ready else "") + ": " + "; ".join(why))

    # ---- the gate opened as the main bed does: the tenants' own HelmReleases on these Nodes ----
    bed.bootstrap(f, open_gate=True)
    f.wait_ready(sha, names=f.expected_kustomizations() - set(PLATFORM), timeout=120)
    tenant_hrs = [k for k, ks in expected.items() if ks not in PLATFORM]
    waited = wait_settled(c, tenant_hrs, timeout=180)
    secs, state = f.wait_ready(sha, timeout=0)
    hrs = helmreleases(c)
    rows, evidence = table(c, hrs, expected, state)
    print_table(f"gate opened by the e2e ({waited:.0f}s for helm-controller's verdicts)", rows, evidence)

    for name, verdict, why, more in rows:
        h = hrs.get(tuple(name.split("/", 1)))
        if verdict == "Ready":
            r.finding("availability", f"HelmRelease {name}: Ready on kwok's Pods"
                      + (" (a kubelet would refuse: " + "; ".join(more) + ")" if more else ""))
            continue
        r.finding("availability", f"HelmRelease {name}: {verdict}: {why}" + ("; waits for: " + "; ".join(more) if more else ""))
        # Every HelmRelease that is not Ready is so for a reason this bed explains.
        if h is None:
            fails.append(f"HelmRelease {name} of the render is not on the API server with the gate open")
        elif "kubeConfig" in h["spec"]:
            secret = h["spec"]["kubeConfig"]["secretRef"]["name"]
            if not cilium and h["spec"]["chart"]["spec"]["chart"] == "cilium" and "no artifact available" in why:
                continue  # no Cilium chart to serve (serve_cilium)
            if secret not in why or "not found" not in why:
                fails.append(f"HelmRelease {name} (into the tenant cluster through Secret {secret}) is not Ready for another "
                             f"reason than that Secret missing: {why}")
        elif not any("storageclass.storage.k8s.io" in m and "not found" in m for m in more):
            fails.append(f"HelmRelease {name} is not Ready for a reason this bed does not explain: {verdict}: {why}; {more}")

    # kwok completes Job Pods (pod-complete Stage) and the job controller then the Jobs: the
    # kamaji-etcd charts' pre-install hooks finish, though their containers never ran.
    jobs = {ns: ev.completed_jobs() for ns, ev in evidence.items()}
    print(f"  Jobs Completed (job-controller): {jobs}", flush=True)
    if not any(jobs.values()):
        fails.append("no Job was Completed by the job controller on kwok's Nodes")

    # What helm-controller says agrees with what the workload controllers wrote.
    for (ns, name), h in sorted(hrs.items()):
        if cond(h, "Ready").get("status") != "True" or "kubeConfig" in h["spec"]:
            continue
        ev = evidence[target_ns(h)]
        for d in ev.deployments + ev.statefulsets:
            if ev.release_of(d) != release_name(h):
                continue
            st = d.get("status", {})
            if st.get("readyReplicas", 0) < d["spec"].get("replicas", 1):
                fails.append(f"HelmRelease {ns}/{name} is Ready but its {d['kind']} {d['metadata']['name']} has "
                             f"{st.get('readyReplicas', 0)}/{d['spec'].get('replicas', 1)} ready")
    r.figure("availability: bed start to the last verdict", f"{time.time() - t0:.0f}s")
    return fails


def run(e, r):
    try:
        r.run("availability: the platform gate with kube-scheduler and kwok Nodes; which HelmReleases become Ready, "
              "which cannot and why", platform_gate, e, r)
    finally:
        bed = getattr(e, "avail_bed", None)
        if bed is not None:
            if r.results and r.results[-1][1] == "FAIL":
                print(bed.c.tail_logs(30), flush=True)
            bed.c.stop()
            if not os.environ.get("E2E_KEEP"):
                shutil.rmtree(bed.work, ignore_errors=True)
