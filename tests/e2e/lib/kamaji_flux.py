"""What Flux installs *into* a tenant that the real Kamaji serves (issue 42 item 3). Run by
lib/kamaji.py once the tenant `acme` serves and `acme-kubeconfig` (written by the real provider)
reaches it.

  1. the route: `acme-kubeconfig` names the tenant's LoadBalancer address (MetalLB's, in
     production). Unless kube-proxy routes it already (E2E_KAMAJI_PODS=1), the bed puts the
     address on `lo` and relays it to the tenant API server (stand-in, printed): Flux's
     controllers then dial the kubeconfig exactly as written, verifying the tenant certificate
     Kamaji issued for that address;
  2. Flux's source-, kustomize- and helm-controller, each under its ServiceAccount and flux2's
     RBAC (lib/cluster.py start_flux), a git server with the fleet pushed to it, and a chart
     repository on loopback with the real cilium chart (the rendered HelmRepository `helm`
     pointed at it: the one stand-in here, for https://helm.cilium.io);
  3. the tenant's own Flux objects as rendered: the `acme-access` Kustomization applies
     `overlays/tenants/acme/access` (the ClusterRoleBindings of its people's groups) through
     `acme-kubeconfig`, and the `acme-cilium` HelmRelease installs the CNI chart with the rendered
     values into the tenant (its objects appear; nothing runs them: the tenant has no worker);
  4. single sign-on on the tenant API server Kamaji started with the rendered authentication
     configuration: tokens of the loopback issuer (lib/access.py) are accepted, and what each
     person may do is what the ClusterRoleBindings Flux applied give (not with E2E_KAMAJI_PODS=1:
     a Pod cannot reach the issuer on 127.0.0.1).

The tenant's kamaji-etcd HelmRelease stays unapplied (its DataStore is the bed's stand-in).
"""
import base64, json, os, socket, subprocess, threading, time

import charts
from access import judged
from capi import kustomize, standin, yaml_docs
from cluster import CHARTS, SHARED, sh
from fleet import serve_git
from kamaji import FLUX_GROUPS, TENANT, tenant_overlay
from kamaji_gateway import pipe

CONTROLLERS = ("source-controller", "kustomize-controller", "helm-controller")
CNI_CHART = "cilium"


class AddressRelay:
    """Stand-in for MetalLB's announcement of a LoadBalancer address: the address on `lo` and a
    TCP relay from it to where the tenant API server listens. Removed by close()."""

    def __init__(self, host, port, target):
        self.host = host
        sh(["ip", "addr", "replace", f"{host}/32", "dev", "lo"])
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.sock.bind((host, port))
        except OSError:
            self.close()
            raise
        self.sock.listen(64)
        self.target = target
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            try:
                up = socket.create_connection(self.target, timeout=5)
            except OSError:
                conn.close()
                continue
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()

    def close(self):
        # shutdown wakes the accept() blocked in serve(); a bare close() would leave the listener
        # bound until that call returns (Linux), and the next relay could not bind the address.
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        subprocess.run(["ip", "addr", "del", f"{self.host}/32", "dev", "lo"], capture_output=True)


def cni_chart():
    """Cilium 1.19.6 whole: KAAS_CHARTS/cilium, else ../shared/charts/cilium. tests/upstream/charts.sh
    cannot assemble it (cilium/charts publishes a tarball, no Go module ships it), as
    tests/it/addons.rs says too: without a maintainer's copy the scenario fails."""
    for d in (os.path.join(CHARTS, CNI_CHART), os.path.join(SHARED, "charts", CNI_CHART)):
        if os.path.isfile(os.path.join(d, "Chart.yaml")):
            return d
    raise RuntimeError(f"no {CNI_CHART} chart in KAAS_CHARTS ({CHARTS}) or {SHARED}/charts: put the upstream chart "
                       "(cilium/charts cilium-1.19.6.tgz, unpacked) there")


def start_servers(e, bed, f):
    """The git server the fleet is pushed to and a chart repository with the cilium chart; both
    spawned in the bed (stopped with it). Returns the chart repository's URL."""
    c = bed.c
    port = serve_git(c, e.git_root)
    f.url = f"http://127.0.0.1:{port}/{os.path.basename(f.bare)}"
    sh(["git", "-C", f.dir, "remote", "set-url", "origin", f.url])
    root = os.path.join(bed.work, "cni-charts")
    repo = os.path.join(root, "helm")
    os.makedirs(repo, exist_ok=True)
    subprocess.run([e.helm, "package", cni_chart(), "-d", repo], check=True, capture_output=True, text=True)
    chart_port = charts.serve(c, root)
    url = f"http://127.0.0.1:{chart_port}/helm"
    subprocess.run([e.helm, "repo", "index", repo, "--url", url], check=True, capture_output=True, text=True)
    return url


def route_load_balancer(e, kubeconfig, who):
    """The tenant's LoadBalancer address, which `kubeconfig` names, routed to its API server: an
    AddressRelay (close it when done), or None when kube-proxy routes it already (real Pods)."""
    server = yaml_docs(open(kubeconfig).read())[0]["clusters"][0]["cluster"]["server"]
    host, port = server.split("//", 1)[1].rsplit(":", 1)
    if e.kamaji_state.get("lb_routed") == host:
        return None
    addr, addr_port = e.kamaji_state["tenant_addr"].rsplit(":", 1)
    relay = AddressRelay(host, int(port), (addr, int(addr_port)))
    standin(f"MetalLB's announcement of {host}: the address on lo, relayed to the tenant API server at "
            f"{e.kamaji_state['tenant_addr']}; {who} dial {TENANT}-kubeconfig as written")
    return relay


def flux_installs_into_tenant(e):
    bed, f = e.kamaji_bed, e.kamaji_state["fleet"]
    kubeconfig = os.path.join(bed.work, f"{TENANT}-kubeconfig")
    relay = route_load_balancer(e, kubeconfig, "Flux's controllers")
    try:
        return through_flux(e, bed, f, kubeconfig)
    finally:
        if relay is not None:
            relay.close()


def through_flux(e, bed, f, kubeconfig):
    c, fails = bed.c, []
    tenant = ["kubectl", "--kubeconfig", kubeconfig]
    r = subprocess.run([*tenant, "get", "--raw", "/version"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"{TENANT}-kubeconfig as written does not reach the tenant API server: {r.stderr.strip()[:300]}"]
    t0 = time.time()
    c.install_crds(keep_installed=True)  # Flux's kinds beside the CAPI, Kamaji and Gateway API CRDs
    c.start_flux(helm=True)
    c.wait_for("Flux's controllers started", lambda: all(
        "Starting workers" in open(os.path.join(c.logs, f"{n}.log"), errors="replace").read() for n in CONTROLLERS), timeout=120)
    chart_url = start_servers(e, bed, f)
    sha = f.commit_push(f"{TENANT} served by Kamaji")
    e.r.figure("kamaji flux: Flux started beside Kamaji (CRDs, 3 controllers, git and chart servers)", f"{time.time() - t0:.1f}s")

    objs = tenant_overlay(f, TENANT)
    wanted = [d for d in objs if d["apiVersion"].split("/")[0] in FLUX_GROUPS
              and not (d["kind"] == "HelmRelease" and d["spec"]["chart"]["spec"]["chart"] == "kamaji-etcd")]
    access = next((d for d in wanted if d["kind"] == "Kustomization"), None)
    cni = next((d for d in wanted if d["kind"] == "HelmRelease" and d["spec"]["chart"]["spec"]["chart"] == CNI_CHART), None)
    if access is None or cni is None:
        return [f"overlays/tenants/{TENANT} lacks the access Kustomization or the {CNI_CHART} HelmRelease: "
                f"{[d['kind'] + '/' + d['metadata']['name'] for d in wanted]}"]
    for d in (access, cni):
        ref = d["spec"]["kubeConfig"]["secretRef"]
        if ref != {"name": f"{TENANT}-kubeconfig", "key": "value"}:
            fails.append(f"{d['kind']} {d['metadata']['name']} reads kubeConfig {ref}, not the provider's {TENANT}-kubeconfig `value`")
    src = cni["spec"]["chart"]["spec"]["sourceRef"]
    repo = next(d for d in platform_sources(f) if d["kind"] == "HelmRepository" and d["metadata"]["name"] == src["name"])
    standin(f"the chart repository {repo['spec']['url']} (HelmRepository {src['namespace']}/{src['name']}): {chart_url}, "
            f"the real {CNI_CHART} chart of the tested set")
    repo["spec"]["url"] = chart_url
    git = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
           "metadata": {"name": "flux-system", "namespace": "flux-system"},
           "spec": {"interval": "1m", "url": f.url, "ref": {"branch": "main"}}}
    t_apply = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [git, repo, *wanted]}))
    print(f"  applied as rendered: {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in wanted)} "
          f"(sources: GitRepository flux-system -> {f.url}, HelmRepository {src['name']})", flush=True)

    fails += access_applied(e, c, f, access, tenant, sha, t_apply)
    fails += cni_installed(e, c, cni, tenant, t_apply)
    issuer = getattr(e, "kamaji_issuer", None)
    if issuer is not None and not fails:
        fails += people_sign_in(c, issuer, kubeconfig)
    elif issuer is None:
        print("  note: single sign-on on the tenant API server is not judged with E2E_KAMAJI_PODS=1 "
              "(a Pod cannot reach the loopback issuer)", flush=True)
    fails += c.forbidden(list(CONTROLLERS))
    return fails


def platform_sources(f):
    """The chart sources of the platform layer (overlays/platform/kamaji) as rendered."""
    return kustomize(os.path.join(f.dir, "overlays", "platform", "kamaji"))


def condition(obj, kind="Ready"):
    return next((x for x in obj.get("status", {}).get("conditions", []) if x["type"] == kind), {})


def access_applied(e, c, f, access, tenant, sha, t_apply):
    """The access Kustomization Ready at the pushed commit, and every ClusterRoleBinding of
    overlays/tenants/<t>/access in the tenant as rendered, applied by kustomize-controller."""
    ns, name = access["metadata"]["namespace"], access["metadata"]["name"]

    def ready():
        k = c.get("-n", ns, "kustomization", name)
        return k if condition(k).get("status") == "True" and k["status"].get("lastAppliedRevision", "").endswith(sha) else None
    try:
        c.wait_for(f"Kustomization {ns}/{name} Ready at {sha[:8]}", ready, timeout=180, interval=2)
    except TimeoutError as ex:
        k = c.get("-n", ns, "kustomization", name)
        return [f"{ex}: {condition(k)}; kustomize-controller log: {open(os.path.join(c.logs, 'kustomize-controller.log')).read()[-800:]}"]
    e.r.figure("kamaji flux: access Kustomization applied -> its ClusterRoleBindings in the tenant", f"{time.time() - t_apply:.1f}s")
    fails = []
    rendered = kustomize(os.path.join(f.dir, access["spec"]["path"]))
    for want in rendered:
        r = subprocess.run([*tenant, "get", want["kind"].lower(), want["metadata"]["name"], "-o", "json", "--show-managed-fields"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"{want['kind']} {want['metadata']['name']} is not in the tenant: {r.stderr.strip()[:200]}")
            continue
        got = json.loads(r.stdout)
        managers = {m["manager"] for m in got["metadata"].get("managedFields", [])}
        if got.get("subjects") != want.get("subjects") or got.get("roleRef") != want.get("roleRef"):
            fails.append(f"{want['metadata']['name']} in the tenant: {got.get('subjects')} -> {got.get('roleRef')}, "
                         f"rendered {want.get('subjects')} -> {want.get('roleRef')}")
        if "kustomize-controller" not in managers:
            fails.append(f"{want['metadata']['name']} in the tenant was not applied by kustomize-controller: {sorted(managers)}")
        print(f"  tenant: {want['kind']} {want['metadata']['name']}: {[s['name'] for s in got.get('subjects', [])]} -> "
              f"{got['roleRef']['name']} (by {', '.join(sorted(managers))})", flush=True)
    return fails


def cni_installed(e, c, cni, tenant, t_apply):
    """helm-controller installs the CNI chart through the tenant kubeconfig: its release record and
    its objects in the tenant, with the rendered values."""
    ns = cni["spec"].get("storageNamespace", cni["spec"].get("targetNamespace"))
    release = cni["spec"].get("releaseName", cni["metadata"]["name"])
    target = cni["spec"].get("targetNamespace", ns)

    def installed():
        r = subprocess.run([*tenant, "get", "-n", target, "configmap", "cilium-config", "-o", "json"], capture_output=True, text=True)
        s = subprocess.run([*tenant, "get", "-n", ns, "secret", "-l", f"owner=helm,name={release}", "-o", "name"],
                           capture_output=True, text=True)
        # The release record is written before the objects (pending-install): wait for the last
        # kind the check below reads as well.
        d = subprocess.run([*tenant, "get", "-n", target, "daemonset", "-l", "app.kubernetes.io/part-of=cilium", "-o", "name"],
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 and s.stdout.strip() and d.stdout.strip() else None
    try:
        cfg = c.wait_for(f"helm-controller: the {CNI_CHART} release in the tenant", installed, timeout=240, interval=3)
    except TimeoutError as ex:
        hr = c.get("-n", cni["metadata"]["namespace"], "helmrelease", cni["metadata"]["name"])
        return [f"{ex}: HelmRelease {json.dumps(hr.get('status', {}).get('conditions'))[:600]}; helm-controller log: "
                f"{open(os.path.join(c.logs, 'helm-controller.log')).read()[-800:]}"]
    e.r.figure(f"kamaji flux: {CNI_CHART} HelmRelease applied -> its objects in the tenant", f"{time.time() - t_apply:.1f}s")
    fails = []
    values = cni["spec"]["values"]
    want = {"cluster-pool-ipv4-cidr": " ".join(values["ipam"]["operator"]["clusterPoolIPv4PodCIDRList"]),
            "kube-proxy-replacement": str(values["kubeProxyReplacement"]).lower()}
    for k, v in want.items():
        if cfg["data"].get(k) != v:
            fails.append(f"the tenant's {target}/cilium-config has {k}={cfg['data'].get(k)!r}, the HelmRelease's values give {v!r}")
    kinds = {}
    for kind in ("daemonset", "deployment"):
        r = subprocess.run([*tenant, "get", "-n", target, kind, "-l", "app.kubernetes.io/part-of=cilium", "-o", "name"],
                           capture_output=True, text=True)
        kinds[kind] = r.stdout.split()
    if not kinds["daemonset"]:
        fails.append(f"no cilium DaemonSet in the tenant's {target}")
    hr = c.get("-n", cni["metadata"]["namespace"], "helmrelease", cni["metadata"]["name"])
    print(f"  tenant: {CNI_CHART} {cni['spec']['chart']['spec']['version']} installed by helm-controller into {target}: "
          f"{', '.join(n for v in kinds.values() for n in v)}; cilium-config {want}; HelmRelease Ready="
          f"{condition(hr).get('status')} ({condition(hr).get('reason')}: its Pods cannot run without a worker)", flush=True)
    return fails


def people_sign_in(c, issuer, kubeconfig):
    """Tokens of the loopback issuer on the tenant API server Kamaji started with the rendered
    authentication configuration, judged by the ClusterRoleBindings Flux applied."""
    fails = []
    server = yaml_docs(open(kubeconfig).read())[0]["clusters"][0]["cluster"]
    ca = os.path.join(os.path.dirname(kubeconfig), f"{TENANT}-tenant-ca.crt")
    open(ca, "wb").write(base64.b64decode(server["certificate-authority-data"]))

    def as_person(token, *args):
        return subprocess.run(["kubectl", "--kubeconfig", "/dev/null", "--server", server["server"],
                               "--certificate-authority", ca, "--token", token, *args], capture_output=True, text=True)
    jane = issuer.token("jane@example.com", [f"{TENANT}-admins"])
    try:
        who = c.wait_for("the tenant API server accepts an issuer token", lambda: (lambda p: p.returncode == 0 and json.loads(p.stdout))(
            as_person(jane, "auth", "whoami", "-o", "json")), timeout=90, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: {as_person(jane, 'auth', 'whoami').stderr.strip()[:300]}"]
    user = who["status"]["userInfo"]
    if user.get("username") != "corp:jane@example.com" or f"corp:{TENANT}-admins" not in user.get("groups", []):
        fails.append(f"the tenant API server made {user} of jane's token")
    dev = issuer.token("dev@example.com", [f"{TENANT}-developers"])
    checks = [("jane (admins) creates a namespace", jane, ("create", "namespace", "made-by-jane"), True),
              ("dev (developers, view) lists pods", dev, ("get", "pods", "-A"), True),
              ("dev (developers, view) cannot create a namespace", dev, ("create", "namespace", "made-by-dev"), False),
              ("eve (no bound group) cannot list pods", issuer.token("eve@example.com", ["other"]), ("get", "pods", "-A"), False)]
    fails += judged(checks, as_person)
    print(f"  tenant API server: jane's token is {user.get('username')} in {user.get('groups')}; "
          f"{len(checks)} logins judged by the ClusterRoleBindings Flux applied", flush=True)
    return fails
