"""The Cluster API controllers for real: the core manager and the kubeadm bootstrap manager of
sigs.k8s.io/cluster-api v1.14.0 (built by tests/e2e/build.sh from build/capi), each running as its
own ServiceAccount under the upstream RBAC, with their webhooks served on loopback.

They run in a bed of their own (etcd, kube-apiserver, kube-controller-manager, in <work>/capi):
their validating webhooks refuse what the Flux scenarios of the main bed rely on being accepted
without a provider behind them. What is real and what stands in:

  real     etcd, kube-apiserver, kube-controller-manager, CAPI core manager (with its topology
           controller, gate ClusterTopology), CAPI kubeadm bootstrap manager, their RBAC, webhooks
           and CRD conversion settings (all read at test time from the upstream module in the Go
           module cache), kustomize (kubectl kustomize), the rendered tenant objects (kaas-gitops
           render of the example repository) and, in lib/capi_topology.py, the rendered
           ClusterClass `proxmox-standard`, its templates and a tenant Cluster built from it
           (render of tests/fixtures/topology)
  stand-in what Kamaji would write (the tenant API server, `<cluster>-ca`, `<cluster>-kubeconfig`,
           KamajiControlPlane spec.controlPlaneEndpoint and status, also the status of the
           topology controller's KamajiControlPlane), what CAPMOX would write (ProxmoxCluster /
           ProxmoxMachine status): no Kamaji, no Proxmox here; and cluster-autoscaler's change of
           an autoscaled MachineDeployment's replicas. Each is printed with "stand-in" when it is
           written.

The components are assembled as clusterctl does (its components.yaml is `kustomize build
config/default` of the provider, cluster-api v1.14.0 Makefile `release-manifests`): here
`kubectl kustomize <module>/{core,bootstrap/kubeadm}/config/default`, then the parts that need a
Deployment and cert-manager are replaced by loopback equivalents: the webhook Service by
clientConfig.url, cert-manager's CA injection by a CA this file makes with openssl, the Deployment
by a local process with the Deployment's own args.
"""
import atexit, base64, json, os, re, ssl, subprocess, time, urllib.parse, urllib.request

import yaml

from cluster import Cluster, built, free_port, sh
from fleet import Fleet

CAPI = built("capi", "sigs.k8s.io/cluster-api")  # the managers the bed runs: tests/e2e/build/capi
KAMAJI_PROVIDER = "github.com/clastix/cluster-api-control-plane-provider-kamaji@v0.20.0"
CAPMOX = "github.com/ionos-cloud/cluster-api-provider-proxmox@v0.9.0"
# The Go modules whose files the scenario reads (lib/modules.py; tests/e2e/run downloads them).
MODULES = (CAPI, KAMAJI_PROVIDER, CAPMOX)

# program name (tests/e2e/build.sh) -> (config folder in the cluster-api module, namespace and
# ServiceAccount name after config/default's namespace and namePrefix)
MANAGERS = {
    "capi-manager": ("core/config", "capi-system", "capi-manager"),
    "capi-kubeadm-bootstrap-manager": ("bootstrap/kubeadm/config", "capi-kubeadm-bootstrap-system",
                                       "capi-kubeadm-bootstrap-manager"),
}
# The feature gates the fleet needs on top of the upstream Deployment's defaults:
# ClusterTopology for tenants in topology mode (a ClusterClass of the platform).
FEATURE_GATES = {"capi-manager": {"ClusterTopology": "true"}}

# The ClusterRole (and ClusterRoleBinding, same name) that lets the kubeadm bootstrap manager read
# KamajiControlPlanes. cluster-api v1.14.0 bootstrap/kubeadm/reconcilers/kubeadmconfig/
# kubeadmconfig_controller.go: joinWorker -> resolveFiles -> getControlPlaneVersion reads the
# Cluster's controlPlaneRef (external.GetObjectFromContractVersionedRef with the uncached
# APIReader) while bootstrap/kubeadm/config/rbac/role.yaml grants only kubeadmcontrolplanes.
KAMAJI_READER = "kaas-capi-kubeadm-bootstrap-kamaji-reader"


def standin(what):
    print(f"  stand-in: {what}", flush=True)


def yaml_docs(text):
    return [d for d in yaml.safe_load_all(text) if d]


def mod_dir(gomodcache, mod):
    d = os.path.join(gomodcache, mod)
    if not os.path.isdir(d):
        raise RuntimeError(f"{mod} is not in the Go module cache {gomodcache} (tests/e2e/run downloads it)")
    return d


def contract_labels(kustomization):
    """The labels a provider's config/crd/kustomization.yaml puts on its CRDs (commonLabels or
    labels[].pairs): clusterctl's components carry them, and CAPI v1.14 resolves an apiGroup/kind
    reference to a version through them (cluster-api v1.14.0 internal/contract/types.go,
    GetContractVersion / GetLatestContractAndAPIVersionFromContract)."""
    k = yaml.safe_load(open(kustomization))
    out = dict(k.get("commonLabels") or {})
    for entry in k.get("labels") or []:
        out.update(entry.get("pairs") or {})
    return {n: v for n, v in out.items() if n.startswith("cluster.x-k8s.io/")}


class CapiBed:
    def __init__(self, work, bin_dir, gomodcache):
        self.c = Cluster(work, bin_dir, gomodcache)
        self.work, self.bin, self.gomodcache = work, bin_dir, gomodcache
        self.capi = mod_dir(gomodcache, CAPI)
        self.webhook_ports = {n: free_port() for n in MANAGERS}
        self.health_ports = {n: free_port() for n in MANAGERS}

    # ---- start -----------------------------------------------------------------------------
    def start(self):
        missing = [n for n in MANAGERS if not os.access(os.path.join(self.bin, n), os.X_OK)]
        if missing:
            raise RuntimeError(f"not built: {missing} (tests/e2e/build.sh, module build/capi)")
        self.c.start_control_plane()
        self.webhook_certs()
        docs = []
        for name in MANAGERS:
            docs += self.components(name)
        docs += self.provider_crds()
        self.c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        self.c.wait_for("CRDs Established", self.established, timeout=120, interval=1)
        for name in MANAGERS:
            self.start_manager(name)
        for name in MANAGERS:
            self.wait_ready(name)

    def wait_ready(self, name):
        self.c.wait_for(f"{name} /readyz", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{self.health_ports[name]}/readyz", timeout=2).status == 200, timeout=120)

    def established(self):
        pending = [c["metadata"]["name"] for c in self.c.get("crd")["items"]
                   if not any(k["type"] == "Established" and k["status"] == "True"
                              for k in c.get("status", {}).get("conditions", []))]
        if pending:
            raise RuntimeError(f"not Established: {pending}")
        return True

    def webhook_certs(self):
        """A CA of the test's own and a serving certificate for 127.0.0.1, in the layout
        controller-runtime's webhook server reads (--webhook-cert-dir: tls.crt, tls.key)."""
        d = self.cert_dir = os.path.join(self.work, "webhook-certs")
        os.makedirs(d, exist_ok=True)
        o = lambda *a: sh(["openssl", *a], cwd=d)  # noqa: E731
        o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
          "-days", "2", "-subj", "/CN=e2e-capi-webhook-ca")
        open(os.path.join(d, "ext"), "w").write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
        o("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "tls.key", "-out", "tls.csr", "-subj", "/CN=127.0.0.1")
        o("x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
          "-out", "tls.crt", "-days", "2", "-extfile", "ext")
        self.ca_bundle = base64.b64encode(open(os.path.join(d, "ca.crt"), "rb").read()).decode()

    def client_config(self, name, path):
        return {"url": f"https://127.0.0.1:{self.webhook_ports[name]}{path}", "caBundle": self.ca_bundle}

    def components(self, name):
        """The provider's components as clusterctl builds them, less what runs it in a Pod."""
        folder, ns, sa = MANAGERS[name]
        out = sh(["kubectl", "kustomize", os.path.join(self.capi, folder, "default")])
        keep = []
        self.manager_args = getattr(self, "manager_args", {})
        for d in yaml_docs(out):
            kind = d["kind"]
            d["metadata"].get("annotations", {}).pop("cert-manager.io/inject-ca-from", None)
            if kind == "Deployment":
                self.manager_args[name] = d["spec"]["template"]["spec"]["containers"][0].get("args", [])
                continue
            if kind in ("Service", "Certificate", "Issuer"):
                continue  # the webhook Service and cert-manager: replaced by loopback and openssl
            if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for w in d["webhooks"]:
                    w["clientConfig"] = self.client_config(name, w["clientConfig"]["service"]["path"])
            if kind == "CustomResourceDefinition":
                conv = d["spec"].get("conversion", {})
                if conv.get("strategy") == "Webhook":
                    svc = conv["webhook"]["clientConfig"]["service"]
                    conv["webhook"]["clientConfig"] = self.client_config(name, svc.get("path", "/convert"))
            keep.append(d)
        if name not in self.manager_args:
            raise RuntimeError(f"{folder}/default has no Deployment to take the manager's args from")
        return keep

    def provider_crds(self):
        """KamajiControlPlane and the Proxmox CRDs: no controller of theirs runs here, so only the
        storage version and no conversion webhook, with the contract labels of their
        config/crd/kustomization.yaml (what their components.yaml carries)."""
        out = []
        for mod, files in ((KAMAJI_PROVIDER, ["controlplane.cluster.x-k8s.io_kamajicontrolplanes.yaml",
                                              "controlplane.cluster.x-k8s.io_kamajicontrolplanetemplates.yaml"]),
                           (CAPMOX, ["infrastructure.cluster.x-k8s.io_proxmoxclusters.yaml",
                                     "infrastructure.cluster.x-k8s.io_proxmoxclustertemplates.yaml",
                                     "infrastructure.cluster.x-k8s.io_proxmoxmachines.yaml",
                                     "infrastructure.cluster.x-k8s.io_proxmoxmachinetemplates.yaml"])):
            d = mod_dir(self.gomodcache, mod)
            labels = contract_labels(os.path.join(d, "config", "crd", "kustomization.yaml"))
            if not labels:
                raise RuntimeError(f"{mod}: config/crd/kustomization.yaml names no cluster.x-k8s.io/<contract> label")
            for f in files:
                crd = yaml.safe_load(open(os.path.join(d, "config", "crd", "bases", f)))
                crd["spec"]["versions"] = [v for v in crd["spec"]["versions"] if v.get("storage")]
                crd["spec"].pop("conversion", None)
                crd["metadata"].pop("creationTimestamp", None)
                crd["metadata"].setdefault("labels", {}).update(labels)
                out.append(crd)
        return out

    def restart_manager(self, name, gates):
        """Stops the manager and starts it again with `gates` on top of its gates (what
        turning a gate on in the provider's Deployment does: a new Pod with new args)."""
        p = self.c.procs.pop(name)
        p.terminate()
        p.wait(timeout=30)
        self.start_manager(name, gates)
        self.wait_ready(name)

    def start_manager(self, name, extra_gates=None):
        _, ns, sa = MANAGERS[name]
        args = []
        for a in self.manager_args[name]:
            # ${VAR:=default} of the Deployment: clusterctl's variable defaults.
            a = re.sub(r"\$\{[A-Z_]+:=([^}]*)\}", r"\1", a)
            if a == "--leader-elect":
                # One process per manager, and out of a cluster controller-runtime cannot find the
                # Lease's namespace (pkg/leaderelection getInClusterNamespace reads the Pod's SA mount).
                a = "--leader-elect=false"
            if a.startswith("--diagnostics-address="):
                a = f"--diagnostics-address=127.0.0.1:{free_port()}"
            if a.startswith("--feature-gates="):
                gates = dict(g.split("=", 1) for g in a.split("=", 1)[1].split(","))
                gates.update(FEATURE_GATES.get(name, {}))
                gates.update(extra_gates or {})
                a = "--feature-gates=" + ",".join(f"{k}={v}" for k, v in gates.items())
            args.append(a)
        args += [f"--kubeconfig={self.c.sa_kubeconfig(ns, sa)}", f"--webhook-port={self.webhook_ports[name]}",
                 f"--webhook-cert-dir={self.cert_dir}", f"--health-addr=127.0.0.1:{self.health_ports[name]}"]
        print(f"  {name} as system:serviceaccount:{ns}:{sa}: {' '.join(args[:-4])}", flush=True)
        self.c.spawn(name, [os.path.join(self.bin, name), *args])

    def log(self, name):
        return open(os.path.join(self.c.logs, name + ".log"), errors="replace").read()

    # ---- the tenant control plane Kamaji would run ------------------------------------------
    def start_tenant_apiserver(self, cluster):
        """Stand-in for Kamaji's TenantControlPlane: a second real kube-apiserver on the same etcd
        under its own prefix, serving with the bed's CA (which then is the tenant's `<cluster>-ca`)."""
        p = self.c.pki
        port = free_port()
        standin(f"the tenant control plane of {cluster} (Kamaji's TenantControlPlane): a kube-apiserver on 127.0.0.1:{port}")
        self.c.spawn(f"tenant-apiserver-{cluster}", [
            f"{self.bin}/kube-apiserver", f"--etcd-servers={self.c.etcd_url}", f"--etcd-prefix=/tenant-{cluster}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={port}",
            f"--tls-cert-file={p}/server.crt", f"--tls-private-key-file={p}/server.key",
            f"--client-ca-file={p}/ca.crt", "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={p}/sa.pub", f"--service-account-signing-key-file={p}/sa.key",
            "--service-cluster-ip-range=10.0.0.0/24", f"--cert-dir={self.work}/tenant-{cluster}-certs",
            "--enable-priority-and-fairness=false", "--endpoint-reconciler-type=none"])
        ctx = ssl.create_default_context(cafile=f"{p}/ca.crt")
        ctx.load_cert_chain(f"{p}/admin.crt", f"{p}/admin.key")
        self.c.wait_for(f"tenant {cluster} kube-apiserver /readyz", lambda: urllib.request.urlopen(
            f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2).status == 200, timeout=90)
        return port

    def admin_kubeconfig(self, port):
        p = self.c.pki
        b64 = lambda f: base64.b64encode(open(os.path.join(p, f), "rb").read()).decode()  # noqa: E731
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "admin",
            "clusters": [{"name": "tenant", "cluster": {"server": f"https://127.0.0.1:{port}", "certificate-authority-data": b64("ca.crt")}}],
            "users": [{"name": "admin", "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")}}],
            "contexts": [{"name": "admin", "context": {"cluster": "tenant", "user": "admin"}}]})

    def tenant_kubeconfig_file(self, port):
        path = os.path.join(self.work, f"tenant-{port}.kubeconfig")
        open(path, "w").write(self.admin_kubeconfig(port))
        return path

    def kamaji_standins(self, ns, cluster, port, version):
        """What the Kamaji provider v0.20.0 writes once its TenantControlPlane is up
        (controllers/kamajicontrolplane_controller_resources.go createOrUpdateCertificateAuthority,
        createOrUpdateKubeconfig; kamajicontrolplane_controller_cluster_patch.go
        patchControlPlaneEndpoint, checkOrPatchGenericCluster; kamajicontrolplane_controller.go
        status: initialization.controlPlaneInitialized, ready, version)."""
        p = self.c.pki
        labels = {"cluster.x-k8s.io/cluster-name": cluster, "kamaji.clastix.io/component": "capi",
                  "kamaji.clastix.io/cluster": cluster, "kamaji.clastix.io/tcp": cluster}
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        secrets = [
            {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
             "metadata": {"name": f"{cluster}-ca", "namespace": ns, "labels": {**labels, "kamaji.clastix.io/secret": "ca"}},
             "data": {"tls.crt": b64(open(f"{p}/ca.crt", "rb").read()), "tls.key": b64(open(f"{p}/ca.key", "rb").read())}},
            {"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
             "metadata": {"name": f"{cluster}-kubeconfig", "namespace": ns, "labels": {**labels, "kamaji.clastix.io/secret": "kubeconfig"}},
             "data": {"value": b64(self.admin_kubeconfig(port).encode())}},
        ]
        standin(f"Kamaji's Secrets {ns}/{cluster}-ca (the tenant API server's CA) and {ns}/{cluster}-kubeconfig (its admin kubeconfig)")
        self.c.kubectl("apply", "--server-side", "--field-manager=e2e-kamaji-standin", "-f", "-",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": secrets}))
        endpoint = {"spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": port}}}
        standin(f"Kamaji's KamajiControlPlane {ns}/{cluster} spec.controlPlaneEndpoint 127.0.0.1:{port} and the same on the ProxmoxCluster")
        self.c.kubectl("patch", "-n", ns, "kamajicontrolplane", cluster, "--type=merge", "-p", json.dumps(endpoint))
        self.c.kubectl("patch", "-n", ns, "proxmoxcluster", cluster, "--type=merge", "-p", json.dumps(endpoint))
        standin(f"CAPMOX's ProxmoxCluster {ns}/{cluster} status.initialization.provisioned=true")
        self.c.kubectl("patch", "-n", ns, "proxmoxcluster", cluster, "--subresource=status", "--type=merge",
                       "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
        standin(f"Kamaji's KamajiControlPlane {ns}/{cluster} status: initialized, ready, version {version}")
        self.c.kubectl("patch", "-n", ns, "kamajicontrolplane", cluster, "--subresource=status", "--type=merge",
                       "-p", json.dumps({"status": {"initialization": {"controlPlaneInitialized": True}, "ready": True,
                                                    "version": version, "replicas": 2, "readyReplicas": 2,
                                                    "availableReplicas": 2, "upToDateReplicas": 2}}))


# ---- scenario A: workers join a Kamaji control plane -----------------------------------------
TENANT_KINDS = {"Namespace", "Cluster", "KamajiControlPlane", "ProxmoxCluster", "MachineDeployment",
                "KubeadmConfigTemplate", "ProxmoxMachineTemplate"}


def kustomize(path):
    return yaml_docs(sh(["kubectl", "kustomize", path]))


def kamaji_reader(platform_dir):
    """The ClusterRole and ClusterRoleBinding from the rendered platform overlay when it has them;
    else the scenario's own with the same names and rules (what the render is to add)."""
    rendered = [d for d in kustomize(platform_dir)
                if d["kind"] in ("ClusterRole", "ClusterRoleBinding") and d["metadata"]["name"] == KAMAJI_READER]
    if len(rendered) == 2:
        return rendered, "the rendered platform overlay"
    return [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": KAMAJI_READER},
         "rules": [{"apiGroups": ["controlplane.cluster.x-k8s.io"], "resources": ["kamajicontrolplanes"],
                    "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": KAMAJI_READER},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": KAMAJI_READER},
         "subjects": [{"kind": "ServiceAccount", "name": "capi-kubeadm-bootstrap-manager",
                       "namespace": "capi-kubeadm-bootstrap-system"}]},
    ], "the scenario (overlays/platform does not render it yet)"


def condition(obj, type_):
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def workers_join_kamaji(e, tenant="acme"):
    """MachineDeployment -> MachineSet -> Machine by the real CAPI core manager, each Machine's
    KubeadmConfig and ProxmoxMachine cloned from the rendered templates, and the real kubeadm
    bootstrap manager writing each worker's bootstrap data Secret: refused without the
    kamajicontrolplanes reader binding (the RBAC error in the KubeadmConfig's conditions), written
    with it."""
    fails = []
    f = e.new_fleet("capi", Fleet.example)
    f.render()
    bed = CapiBed(os.path.join(e.work, "capi"), e.a.bin, e.a.gomodcache)
    e.capi_bed = bed
    atexit.register(bed.c.stop)
    t0 = time.time()
    bed.start()
    e.r.figure("capi bed start (control plane + CAPI components + both managers ready)", f"{time.time() - t0:.1f}s")
    c = bed.c

    objs = tenant_objects(f, tenant)
    kinds = sorted(d["kind"] for d in objs)
    if set(kinds) != TENANT_KINDS:
        return [f"overlays/tenants/{tenant} lacks {sorted(TENANT_KINDS - set(kinds))}"]
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    # As kustomize-controller applies them: server-side apply, through CAPI's real webhooks.
    r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
    if r.returncode != 0:
        return [f"the rendered {tenant} objects were refused (CAPI webhooks): {r.stderr.strip()[:800]}"]
    print(f"  applied {len(objs)} rendered objects of {tenant} through the CAPI webhooks: {', '.join(kinds)}", flush=True)
    md = next(d for d in objs if d["kind"] == "MachineDeployment")
    replicas, version = md["spec"]["replicas"], md["spec"]["template"]["spec"]["version"]
    kcp = next(d for d in objs if d["kind"] == "KamajiControlPlane")

    port = bed.start_tenant_apiserver(tenant)
    bed.kamaji_standins(tenant, tenant, port, kcp["spec"]["version"])

    def configs():
        items = c.get("-n", tenant, "kubeadmconfigs.bootstrap.cluster.x-k8s.io")["items"]
        return items if len(items) == replicas else None

    # Without the binding: the bootstrap manager is refused the KamajiControlPlane.
    forbidden = re.compile(r'kamajicontrolplanes\.controlplane\.cluster\.x-k8s\.io "%s" is forbidden: User '
                           r'"system:serviceaccount:capi-kubeadm-bootstrap-system:capi-kubeadm-bootstrap-manager" cannot get resource'
                           % re.escape(kcp["metadata"]["name"]))

    def refused():
        items = configs()
        if not items:
            return None
        msgs = [condition(k, "DataSecretAvailable").get("message", "") for k in items]
        v1b1 = [next((x.get("message", "") for x in k.get("status", {}).get("deprecated", {}).get("v1beta1", {}).get("conditions", [])
                      if x["type"] == "DataSecretAvailable"), "") for k in items]
        if all(forbidden.search(m) or forbidden.search(v) for m, v in zip(msgs, v1b1)):
            return items
        return None

    try:
        items = c.wait_for(f"{replicas} KubeadmConfigs refused the KamajiControlPlane", refused, timeout=180, interval=2)
        print(f"  without {KAMAJI_READER}: {len(items)} KubeadmConfigs: {condition(items[0], 'DataSecretAvailable').get('message', '')[:300]}", flush=True)
        if any(k.get("status", {}).get("dataSecretName") for k in items):
            fails.append("a KubeadmConfig has a bootstrap data Secret although the controller was refused")
        # The log is klog's structured text: the error's quotes come escaped.
        if not forbidden.search(bed.log("capi-kubeadm-bootstrap-manager").replace('\\"', '"')):
            fails.append("the bootstrap manager's log does not show the forbidden error")
    except TimeoutError as ex:
        fails.append(f"{ex}; KubeadmConfigs: {summary(c, tenant)}")
        return fails

    # With it: the rendered (or, until the render has it, the scenario's) ClusterRole + Binding.
    rbac, source = kamaji_reader(os.path.join(f.dir, "overlays", "platform"))
    print(f"  applying {KAMAJI_READER} from {source}", flush=True)
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    # The refused reconciles back off exponentially; a change of each KubeadmConfig queues it now.
    for k in items:
        c.kubectl("annotate", "--overwrite", "-n", tenant, "kubeadmconfig.bootstrap.cluster.x-k8s.io",
                  k["metadata"]["name"], f"e2e.kaas-gitops.dev/poke={time.time()}")

    def written():
        """Every KubeadmConfig has its Secret and the core manager has copied it to its Machine."""
        items = configs()
        if not items or not all(k.get("status", {}).get("dataSecretName") for k in items):
            return None
        ms = c.get("-n", tenant, "machines.cluster.x-k8s.io")["items"]
        if len(ms) == replicas and all(m["spec"]["bootstrap"].get("dataSecretName") for m in ms):
            return items
        return None

    t1 = time.time()
    try:
        items = c.wait_for("bootstrap data Secrets", written, timeout=180, interval=2)
    except TimeoutError as ex:
        fails.append(f"{ex}; KubeadmConfigs: {summary(c, tenant)}")
        return fails
    e.r.figure("capi: binding applied -> every worker's bootstrap data written", f"{time.time() - t1:.1f}s")
    machines = {m["metadata"]["name"]: m for m in c.get("-n", tenant, "machines.cluster.x-k8s.io")["items"]}
    for k in items:
        name = k["status"]["dataSecretName"]
        s = c.get("-n", tenant, "secret", name)
        data = base64.b64decode(s["data"].get("value", "")).decode(errors="replace")
        owner = next((o for o in k["metadata"].get("ownerReferences", []) if o["kind"] == "Machine"), None)
        if owner is None:
            fails.append(f"KubeadmConfig {k['metadata']['name']} has no Machine owner")
            continue
        m = machines.get(owner["name"], {})
        if m.get("spec", {}).get("bootstrap", {}).get("dataSecretName") != name:
            fails.append(f"Machine {owner['name']} bootstrap.dataSecretName is {m.get('spec', {}).get('bootstrap', {}).get('dataSecretName')}, want {name}")
        if "kubeadm join" not in data or f"127.0.0.1:{port}" not in data:
            fails.append(f"bootstrap data {name} lacks `kubeadm join` to 127.0.0.1:{port}: {data[:300]}")
        if "provider-id" not in data:
            fails.append(f"bootstrap data {name} lacks the rendered kubelet provider-id argument")
        ms = next((o["name"] for o in m.get("metadata", {}).get("ownerReferences", []) if o["kind"] == "MachineSet"), None)
        if not ms or m.get("spec", {}).get("version") != version:
            fails.append(f"Machine {owner['name']}: MachineSet {ms}, version {m.get('spec', {}).get('version')} (want {version})")
        infra = m.get("spec", {}).get("infrastructureRef", {})
        pm = c.get("-n", tenant, "proxmoxmachines.infrastructure.cluster.x-k8s.io", infra.get("name", "?"))
        tmpl = next(d for d in objs if d["kind"] == "ProxmoxMachineTemplate")["spec"]["template"]["spec"]
        for key in ("sourceNode", "templateID", "numCores", "memoryMiB"):
            if pm["spec"].get(key) != tmpl.get(key):
                fails.append(f"ProxmoxMachine {pm['metadata']['name']} {key}={pm['spec'].get(key)}, the rendered template says {tmpl.get(key)}")
        print(f"  {owner['name']} (MachineSet {ms}): KubeadmConfig {k['metadata']['name']} -> Secret {name} "
              f"({len(data)} bytes of {s['data'].get('format') and base64.b64decode(s['data']['format']).decode()}); "
              f"ProxmoxMachine {pm['metadata']['name']} cloned from {tmpl.get('sourceNode')}/{tmpl.get('templateID')}", flush=True)
    fails += second_apply_changes_nothing(c, objs)
    e.capi_fleet = (f, tenant, port)
    tokens = [s["metadata"]["name"] for s in json.loads(subprocess.run(
        ["kubectl", "--kubeconfig", bed.tenant_kubeconfig_file(port), "get", "secrets", "-n", "kube-system", "-o", "json"],
        capture_output=True, text=True, check=True).stdout)["items"] if s.get("type") == "bootstrap.kubernetes.io/token"]
    print(f"  bootstrap tokens the manager created in the tenant API server: {len(tokens)}", flush=True)
    if len(tokens) < replicas:
        fails.append(f"{len(tokens)} bootstrap token Secrets in the tenant's kube-system, want {replicas}")
    return fails


def tenant_objects(f, tenant):
    return [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", tenant)) if d["kind"] in TENANT_KINDS]


def version_bump_rolls(e, new_version="v1.33.5"):
    """The tenant's Kubernetes version bumped in tenants/<t>.yaml and rendered: the real core
    manager rolls the MachineDeployment to a new MachineSet at the new version whose Machines get
    bootstrap data from the real kubeadm bootstrap manager (the old MachineSet stays while no
    new Machine becomes a Node: the rollout's default maxUnavailable is 0)."""
    f, tenant, port = e.capi_fleet
    c = e.capi_bed.c
    p = os.path.join(f.dir, "tenants", f"{tenant}.yaml")
    src = open(p).read()
    old_version = re.search(r"^    version: (v[0-9.]+)$", src, re.M)
    if not old_version:
        return [f"no `version:` under kubernetes in tenants/{tenant}.yaml"]
    open(p, "w").write(src.replace(old_version.group(0), f"    version: {new_version}", 1))
    f.render()
    before = {m["metadata"]["name"] for m in c.get("-n", tenant, "machinesets.cluster.x-k8s.io")["items"]}
    objs = tenant_objects(f, tenant)
    r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
    if r.returncode != 0:
        return [f"the re-rendered {tenant} objects were refused: {r.stderr.strip()[:800]}"]
    # Kamaji upgrades the control plane first; the stand-in reports it done.
    standin(f"Kamaji's KamajiControlPlane {tenant}/{tenant} status.version {new_version} (control plane upgraded)")
    c.kubectl("patch", "-n", tenant, "kamajicontrolplane", tenant, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"version": new_version}}))
    replicas = next(d for d in objs if d["kind"] == "MachineDeployment")["spec"]["replicas"]

    def rolled():
        new = [m for m in c.get("-n", tenant, "machinesets.cluster.x-k8s.io")["items"] if m["metadata"]["name"] not in before]
        if not new or new[0]["spec"]["template"]["spec"].get("version") != new_version:
            return None
        ms = new[0]["metadata"]["name"]
        machines = [m for m in c.get("-n", tenant, "machines.cluster.x-k8s.io")["items"]
                    if any(o["name"] == ms for o in m["metadata"].get("ownerReferences", []))]
        if machines and all(m["spec"]["bootstrap"].get("dataSecretName") for m in machines):
            return ms, machines
        return None

    t0 = time.time()
    try:
        ms, machines = c.wait_for(f"a new MachineSet at {new_version} with bootstrapped Machines", rolled, timeout=240, interval=2)
    except TimeoutError as ex:
        return [f"{ex}; {summary(c, tenant)}"]
    e.r.figure("capi: version bump -> new MachineSet's Machines bootstrapped", f"{time.time() - t0:.1f}s")
    print(f"  {old_version.group(1)} -> {new_version}: new MachineSet {ms} (old: {sorted(before)}); "
          f"{len(machines)} of {replicas} new Machines bootstrapped: {[m['metadata']['name'] for m in machines]}", flush=True)
    return [f"Machine {m['metadata']['name']} version {m['spec'].get('version')}, want {new_version}"
            for m in machines if m["spec"].get("version") != new_version]


IGNITION_GATE = "KubeadmBootstrapFormatIgnition"


def ignition_files(ign):
    """{path: text} of an Ignition config's storage.files (their `data:` URLs decoded)."""
    out = {}
    for f in ign.get("storage", {}).get("files", []):
        src = f.get("contents", {}).get("source", "")
        head, _, body = src.partition(",")
        out[f["path"]] = (base64.b64decode(body).decode(errors="replace") if head.endswith(";base64")
                          else urllib.parse.unquote(body))
    return out


def flatcar_pool_gets_ignition(e, pool="flatcar"):
    """A Flatcar pool (`os: flatcar`) added to the tenant: under upstream's default gates the real
    kubeadm bootstrap webhook refuses its KubeadmConfigTemplate (`format: ignition`, gate
    KubeadmBootstrapFormatIgnition, cluster-api v1.14.0 bootstrap/kubeadm/webhooks/admission/
    kubeadmconfig.go validateIgnition); with the gate on (the manager restarted, as a changed
    Deployment would be) it is accepted, the core manager makes the pool's Machines and the real
    kubeadm bootstrap manager writes each one's bootstrap data as Ignition (Secret key `format:
    ignition`, which CAPMOX reads to choose its injector), carrying the join, kubeadm's drop-in
    after Flatcar's metadata agent, the envsubst step and the provider ID from CAPMOX's metadata."""
    f, tenant, port = e.capi_fleet
    bed = e.capi_bed
    c = bed.c
    p = os.path.join(f.dir, "tenants", f"{tenant}.yaml")
    src = open(p).read()
    anchor = "  workers:\n"
    if anchor not in src:
        return [f"no `workers:` in tenants/{tenant}.yaml"]
    open(p, "w").write(src.replace(anchor, anchor + f"    - name: {pool}\n      replicas: 1\n      os: flatcar\n", 1))
    f.render()
    objs = tenant_objects(f, tenant)
    kct = next((d for d in objs if d["kind"] == "KubeadmConfigTemplate"
                and d["metadata"]["name"].startswith(f"{tenant}-{pool}-")), None)
    if kct is None or kct["spec"]["template"]["spec"].get("format") != "ignition":
        return [f"the render has no `format: ignition` KubeadmConfigTemplate for pool {pool}: {kct}"]
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    apply = lambda: c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",  # noqa: E731
                              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
    fails = []
    r = apply()
    refusal = "can be set only if the KubeadmBootstrapFormatIgnition feature gate is enabled"
    if r.returncode == 0 or refusal not in r.stderr:
        fails.append(f"under upstream's default gates the Flatcar pool was not refused by the bootstrap webhook "
                     f"(exit {r.returncode}): {r.stderr.strip()[:600]}")
    else:
        print(f"  default gates: the bootstrap webhook refuses {kct['metadata']['name']}: {refusal}", flush=True)
    bed.restart_manager("capi-kubeadm-bootstrap-manager", {IGNITION_GATE: "true"})
    print(f"  capi-kubeadm-bootstrap-manager restarted with {IGNITION_GATE}=true", flush=True)
    r = apply()
    if r.returncode != 0:
        return fails + [f"with the gate on the Flatcar pool is still refused: {r.stderr.strip()[:800]}"]
    md = f"{tenant}-{pool}"

    def written():
        ms = [m for m in c.get("-n", tenant, "machines.cluster.x-k8s.io")["items"]
              if m["metadata"].get("labels", {}).get("cluster.x-k8s.io/deployment-name") == md]
        if ms and all(m["spec"]["bootstrap"].get("dataSecretName") for m in ms):
            return ms
        return None

    t0 = time.time()
    try:
        machines = c.wait_for(f"bootstrap data of pool {pool}'s Machines", written, timeout=180, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}; {summary(c, tenant)}"]
    e.r.figure("capi: gate on -> Flatcar pool's Ignition bootstrap data written", f"{time.time() - t0:.1f}s")
    for m in machines:
        name = m["spec"]["bootstrap"]["dataSecretName"]
        data = c.get("-n", tenant, "secret", name)["data"]
        fmt = base64.b64decode(data.get("format", "")).decode()
        if fmt != "ignition":
            fails.append(f"bootstrap data {name}: format {fmt!r}, want ignition")
            continue
        try:
            ign = json.loads(base64.b64decode(data["value"]))
        except ValueError as ex:
            fails.append(f"bootstrap data {name} is not Ignition JSON: {ex}")
            continue
        files = ignition_files(ign)
        units = {u["name"]: u for u in ign.get("systemd", {}).get("units", [])}
        join, script = files.get("/etc/kubeadm.yml", ""), files.get("/etc/kubeadm.sh", "")
        checks = {
            "Ignition version 2.x": str(ign.get("ignition", {}).get("version", "")).startswith("2."),
            "/etc/kubeadm.yml is a JoinConfiguration": "kind: JoinConfiguration" in join,
            f"the join goes to 127.0.0.1:{port}": f"127.0.0.1:{port}" in join,
            "the provider ID from CAPMOX's metadata": "proxmox://'${COREOS_CUSTOM_INSTANCE_ID}'" in join,
            "no cloud-init template left": "{{" not in join,
            "envsubst before kubeadm": script.find("envsubst < /etc/kubeadm.yml") != -1
                                       and script.find("envsubst") < script.find("kubeadm join"),
            "kubeadm.service drop-in after the metadata agent": any(
                "EnvironmentFile=/run/metadata/flatcar" in d.get("contents", "")
                for d in units.get("kubeadm.service", {}).get("dropins", [])),
            "coreos-metadata.service from /etc/proxmox-env": "EnvironmentFile=/etc/proxmox-env"
                                                             in units.get("coreos-metadata.service", {}).get("contents", ""),
            "the SSH keys on `core`": any(u.get("name") == "core" and u.get("sshAuthorizedKeys")
                                          for u in ign.get("passwd", {}).get("users", [])),
        }
        bad = [k for k, ok in checks.items() if not ok]
        if bad:
            fails.append(f"bootstrap data {name}: {bad}; /etc/kubeadm.yml: {join[:600]}; kubeadm.sh: {script[:400]}")
        else:
            print(f"  {m['metadata']['name']}: Secret {name} is Ignition {ign['ignition']['version']} "
                  f"({len(data['value'])} base64 bytes): {', '.join(checks)}", flush=True)
        pm = c.get("-n", tenant, "proxmoxmachines.infrastructure.cluster.x-k8s.io", m["spec"]["infrastructureRef"]["name"])
        if pm["spec"].get("checks", {}).get("skipCloudInitStatus") is not True:
            fails.append(f"ProxmoxMachine {pm['metadata']['name']} was not cloned with checks.skipCloudInitStatus")
    others = [k for k in c.get("-n", tenant, "kubeadmconfigs.bootstrap.cluster.x-k8s.io")["items"]
              if not k["metadata"]["name"].startswith(md) and k["spec"].get("format") == "ignition"]
    if others:
        fails.append(f"cloud-init pools' KubeadmConfigs became Ignition: {[k['metadata']['name'] for k in others]}")
    # The pool's own objects (and the Namespace, which the check skips and counts out).
    mine = [d for d in objs if d["kind"] == "Namespace" or d["metadata"]["name"].startswith(md)]
    fails += second_apply_changes_nothing(c, mine)
    return fails


def delete_tenant_runs_finalizers(e):
    """The tenant removed from git: Flux's prune deletes every object its Kustomization applied at
    once, the Namespace included. The real core manager's finalizers run (Cluster -> Machine
    Deployments -> MachineSets -> Machines -> their KubeadmConfigs and ProxmoxMachines, then the
    control plane and infrastructure cluster) and nothing is left stuck: the namespace goes."""
    f, tenant, _ = e.capi_fleet
    c = e.capi_bed.c
    objs = tenant_objects(f, tenant)
    held = [f"{m['kind']}/{m['metadata']['name']}: {m['metadata'].get('finalizers')}"
            for kind in ("clusters", "machinedeployments", "machinesets", "machines")
            for m in c.get("-n", tenant, f"{kind}.cluster.x-k8s.io")["items"] if m["metadata"].get("finalizers")]
    print(f"  finalizers before the prune: {held}", flush=True)
    if not any(h.startswith("Cluster/") for h in held):
        return [f"the Cluster carries no finalizer of the core manager: {held}"]
    # As kustomize-controller's prune: a delete of each applied object, background propagation.
    r = c.kubectl("delete", "--wait=false", "--ignore-not-found", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
    if r.returncode != 0:
        return [f"the prune's delete was refused: {r.stderr.strip()[:600]}"]
    t0 = time.time()
    try:
        c.wait_for(f"namespace {tenant} gone", lambda: c.kubectl("get", "namespace", tenant, check=False).returncode != 0,
                   timeout=240, interval=2)
    except TimeoutError as ex:
        left = []
        for kind in ("clusters.cluster.x-k8s.io", "machinedeployments.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io",
                     "machines.cluster.x-k8s.io", "kubeadmconfigs.bootstrap.cluster.x-k8s.io",
                     "proxmoxmachines.infrastructure.cluster.x-k8s.io", "kamajicontrolplanes.controlplane.cluster.x-k8s.io",
                     "proxmoxclusters.infrastructure.cluster.x-k8s.io"):
            for m in c.get("-n", tenant, kind)["items"]:
                left.append(f"{kind} {m['metadata']['name']} finalizers={m['metadata'].get('finalizers')}")
        return [f"{ex}; left: {left}"]
    e.r.figure("capi: tenant pruned -> its namespace gone (CAPI finalizers run)", f"{time.time() - t0:.1f}s")
    return []


def every_tenant_through_webhooks(e):
    """Every tenant of the example: its Cluster API objects, as rendered, are accepted by the real
    defaulting and validating webhooks, and a second apply would change no spec."""
    f, _, _ = e.capi_fleet
    c = e.capi_bed.c
    fails, n = [], 0
    for t in sorted(os.listdir(os.path.join(f.dir, "overlays", "tenants"))):
        objs = tenant_objects(f, t)
        objs.sort(key=lambda d: d["kind"] != "Namespace")
        r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}), check=False)
        if r.returncode != 0:
            fails.append(f"tenant {t}: refused by the CAPI webhooks: {r.stderr.strip()[:600]}")
            continue
        n += len(objs)
        fails += [f"tenant {t}: {x}" for x in second_apply_changes_nothing(c, objs)]
    print(f"  {n} rendered objects of every tenant accepted by the real webhooks", flush=True)
    return fails


def run(e, r):
    """Scenario A in its own bed, stopped when it is done (whatever happened)."""
    try:
        ok = r.run("capi: workers of a Kamaji control plane get their bootstrap data only with the kamajicontrolplanes reader "
                   "(real CAPI core + kubeadm bootstrap managers under their upstream RBAC)", workers_join_kamaji, e)
        later = (("capi: every tenant's rendered Cluster API objects pass the real webhooks; a second apply changes no spec",
                  every_tenant_through_webhooks),
                 ("capi: a Kubernetes version bump rolls the MachineDeployment to a new MachineSet", version_bump_rolls),
                 ("capi: a Flatcar pool is refused under default gates; with KubeadmBootstrapFormatIgnition its workers get "
                  "Ignition bootstrap data from the real kubeadm bootstrap manager", flatcar_pool_gets_ignition),
                 ("capi: the tenant pruned runs CAPI's finalizers and leaves nothing stuck", delete_tenant_runs_finalizers))
        for name, fn in later:
            if ok:
                r.run(name, fn, e)
            else:
                r.not_run(name, "the bootstrap scenario before it failed")
        import capi_topology  # topology mode on the real topology controller, in this bed
        capi_topology.run(e, r, ok)
        import capi_upgrade  # an upgrade through git, with Flux in this bed
        capi_upgrade.run(e, r, ok)
        import capi_fleet  # every provider fixture through the webhooks, in this bed
        capi_fleet.run(e, r, ok)
    finally:
        bed = getattr(e, "capi_bed", None)
        if bed is not None:
            if any(res[1] == "FAIL" for res in r.results[-9:]):
                print(bed.c.tail_logs(30), flush=True)
            bed.c.stop()


def second_apply_changes_nothing(c, objs):
    """A second server-side apply of the same rendered objects (what Flux's next reconcile sends)
    through the defaulting webhooks must leave every spec as it is: a server dry-run whose
    metadata.generation is the live one (the API server bumps it on any spec change). A webhook
    that defaults a field the render sets otherwise would show here as a field fight."""
    fails = []
    for o in objs:
        if o["kind"] == "Namespace":
            continue
        resource = f"{o['kind'].lower()}.{o['apiVersion'].split('/')[0]}"
        generation = lambda: c.get("-n", o["metadata"]["namespace"], resource, o["metadata"]["name"])["metadata"].get("generation")  # noqa: E731
        # The live generation read before and after the dry-run: a controller may still be
        # writing the object's spec (Cluster API's cluster controller copies the infrastructure
        # cluster's or control plane's controlPlaneEndpoint into a new Cluster: v1.14.0
        # core/reconcilers/cluster/cluster_controller_phases.go), and a dry-run computed on the
        # object before such a write compares with nothing. Asked again until the object holds still.
        for _ in range(10):
            before = generation()
            r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "--dry-run=server",
                          "-o", "json", "-f", "-", input=json.dumps(o), check=False)
            if r.returncode != 0 or generation() == before:
                break
            time.sleep(1)
        if r.returncode != 0:
            fails.append(f"second apply of {o['kind']}/{o['metadata']['name']} refused: {r.stderr.strip()[:400]}")
            continue
        after = json.loads(r.stdout)["metadata"].get("generation")
        if after != before:
            fails.append(f"a second apply of {o['kind']}/{o['metadata']['name']} would change its spec "
                         f"(generation {before} -> {after})")
    print(f"  second apply (server dry-run) of {len(objs) - 1} rendered objects: "
          f"{'no spec changes' if not fails else f'{len(fails)} would change'}", flush=True)
    return fails


def summary(c, ns):
    out = []
    for k in c.get("-n", ns, "kubeadmconfigs.bootstrap.cluster.x-k8s.io")["items"]:
        d = condition(k, "DataSecretAvailable")
        out.append(f"{k['metadata']['name']}: {d.get('status')} {d.get('reason')}: {d.get('message', '')[:300]}")
    for kind in ("machinedeployments", "machinesets", "machines"):
        for m in c.get("-n", ns, f"{kind}.cluster.x-k8s.io")["items"]:
            conds = [f"{x['type']}={x['status']}({x.get('message', '')[:120]})" for x in m.get("status", {}).get("conditions", [])
                     if x["status"] != "True"]
            out.append(f"{kind[:-1]} {m['metadata']['name']}: {conds}")
    return out or ["none"]
