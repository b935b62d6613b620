"""The real Kamaji and its Cluster API provider (issue 42), opt-in: `E2E_ONLY=kamaji tests/e2e/run`.

Kamaji's manager (clastix/kamaji tag 26.8.2-edge) and the Kamaji control plane provider
(clastix/cluster-api-control-plane-provider-kamaji v0.20.0), both built from source by
tests/e2e/build-kamaji.sh, run beside the real Cluster API core and kubeadm bootstrap managers of
the CAPI bed (lib/capi.py, whose start this bed reuses) and take the example's tenant `acme` as
`kaas-gitops render` writes it (`kubectl kustomize overlays/tenants/acme`, server-side applied as
kustomize-controller would). What is real and what stands in:

  real     etcd, kube-apiserver, kube-controller-manager, CAPI core + kubeadm bootstrap managers
           (as lib/capi.py runs them); Kamaji's manager with the CRDs of its chart (charts/kamaji/crds,
           which the rendered `kamaji` HelmRelease installs: `install.crds: CreateReplace`), its
           ServiceAccount, Roles and ClusterRoles and its Mutating/ValidatingWebhookConfiguration
           (`helm template` of charts/kamaji at the tag with the rendered HelmRelease's values),
           the webhooks served by the manager itself; the provider under its config/rbac
           (`kubectl kustomize config/default`, clusterctl's components) with the Deployment's args
           and the rendered ControlPlaneProvider's extra args; the rendered tenant objects
  stand-in the kamaji-etcd HelmRelease `acme-etcd` (no Pod can run in this bed): a real etcd with
           TLS, client-certificate auth and `auth enable` with a password-less root user as the
           chart's pre-install Jobs leave it (kamaji-etcd 0.17.0 templates/etcd_job_preinstall_2.yaml),
           and the DataStore the chart renders for the tenant's values (templates/etcd_datastore.yaml,
           `helm template`) with its endpoint on loopback and its Secrets from openssl;
           CAPMOX (ProxmoxCluster status.initialization.provisioned); cert-manager (the webhook
           serving certificate and the caBundles: openssl, clientConfig.url on loopback instead of
           the webhook Service). Each is printed with "stand-in" when it is written.
  kubelet  by default, the Pods of the TenantControlPlane's Deployment do not run: kwok's fake Nodes
           report them Ready and one kube-apiserver and one kube-controller-manager process stand
           in for their containers (process_serves). With E2E_KAMAJI_PODS=1 (issue 42 stage 2) they run for real on one Node
           (lib/pods.py: kubelet + kube-proxy, containerd, runc, bridge CNI; real_pods_serve): the
           images are built here under the upstream names (stand-ins: the bed's v1.34.4 programs
           for the tenant's v1.33.4 control plane), the DataStore's etcd listens on the node's
           address, Kamaji reaches the tenant through the Service's ClusterIP, and MetalLB's part
           (the Service's LoadBalancer status) is written by the bed, so kube-proxy routes the
           address `acme-kubeconfig` names.

Both controllers authenticate with a ServiceAccount token of their own; neither is cluster-admin
nor in system:masters, and a request their upstream RBAC refuses fails the scenario.
"""
import base64, json, os, re, shutil, socket, ssl, subprocess, time, urllib.error, urllib.request

from capi import CapiBed, KAMAJI_PROVIDER, TENANT_KINDS, kamaji_reader, kustomize, mod_dir, standin, yaml_docs
from cluster import CHARTS, CRDS, Cluster, free_port, sh
from pods import POD_CIDR, SANDBOX_IMAGE

TENANT = "acme"
# The tag of sigs.k8s.io/apiserver-network-proxy that tests/e2e/build-pods.sh builds (build/konnectivity).
POD_KONNECTIVITY_BUILT = "0.33.0"
NS = "kamaji-system"  # the rendered HelmRelease `kamaji` and ControlPlaneProvider `kamaji` live here
# Kamaji's webhook server port: cmd/manager/cmd.go `ctrlwebhook.NewServer(ctrlwebhook.Options{Port:
# 9443})`, not a flag. It binds every address, so two kamaji beds cannot run at once on one machine.
WEBHOOK_PORT = 9443
# charts/kamaji/templates/controller.yaml: the container's env (POD_NAMESPACE, SERVICE_ACCOUNT from
# the Pod's fields) and the serving certificate's mount path.
CERT_MOUNT = "/tmp/k8s-webhook-server/serving-certs"
PROVIDER = "kamaji-provider"  # tests/e2e/build-kamaji.sh's name for the provider's manager
TCP = "tenantcontrolplanes.kamaji.clastix.io"
KCP = "kamajicontrolplanes.controlplane.cluster.x-k8s.io"
# Kamaji's validating webhook while the DataStore a TenantControlPlane names is missing:
# internal/webhook/handlers/tcp_datastore.go (`%s DataStore does not exist`).
NO_DATASTORE = re.compile(r"DataStore does not exist")
# Flux's kinds in the tenant overlay: the bed applies the rest itself, as kustomize-controller
# would; lib/kamaji_flux.py applies the tenant's own Flux objects to a real Flux once it serves.
FLUX_GROUPS = ("helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io")


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode()


class KamajiBed(CapiBed):
    def __init__(self, work, bin_dir, kamaji_bin, gomodcache, helm):
        super().__init__(work, bin_dir, gomodcache)
        self.kbin, self.helm = kamaji_bin, helm
        # build-kamaji.sh links the Kamaji tree it built from (the chart at the same tag).
        self.src = os.path.realpath(os.path.join(kamaji_bin, "kamaji-src"))
        self.provider_mod = mod_dir(gomodcache, KAMAJI_PROVIDER)
        self.webhook_ports["kamaji"] = WEBHOOK_PORT
        self.kamaji_health, self.provider_health = free_port(), free_port()

    # ---- start -----------------------------------------------------------------------------
    def start_kamaji_pair(self, fleet):
        """After CapiBed.start: Kamaji's chart objects and manager, then the provider."""
        for prog in ("kamaji", PROVIDER):
            if not os.access(os.path.join(self.kbin, prog), os.X_OK):
                raise RuntimeError(f"not built: {prog} (tests/e2e/build-kamaji.sh)")
        if not os.path.isdir(os.path.join(self.src, "charts", "kamaji")):
            raise RuntimeError(f"no Kamaji chart in {self.src} (tests/e2e/build-kamaji.sh links the source tree)")
        s = socket.socket()
        try:
            s.bind(("0.0.0.0", WEBHOOK_PORT))
        except OSError as ex:
            raise RuntimeError(f"port {WEBHOOK_PORT} (Kamaji's fixed webhook port) is taken: {ex}") from ex
        finally:
            s.close()
        # overlays/platform/kamaji (kaas-kamaji: the kamaji release) and overlays/platform
        # (kaas-platform: the ControlPlaneProvider), which Flux applies in that order.
        platform = {(d["kind"], d["metadata"]["name"]): d
                    for sub in (("platform", "kamaji"), ("platform",))
                    for d in kustomize(os.path.join(fleet.dir, "overlays", *sub))}
        provider = self.provider_components(platform.get(("ControlPlaneProvider", "kamaji")))
        chart, crds = self.kamaji_chart(platform[("HelmRelease", "kamaji")])
        ns = [d for d in provider if d["kind"] == "Namespace"]
        # The platform's Gateway API CRDs (standard channel, the release Kamaji's go.mod pins), installed
        # before Kamaji starts: its manager owns HTTPRoutes, GRPCRoutes and TLSRoutes and watches
        # Gateways only when their group is served at its start (controllers/tenantcontrolplane_controller.go,
        # AreGatewayResourcesAvailable), and lib/kamaji_gateway.py routes the tenant through a Gateway.
        gateway_api = gateway_api_crds()
        self.c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": ns + crds + gateway_api}))
        print(f"  the platform's Gateway API CRDs: {', '.join(sorted(d['spec']['names']['kind'] for d in gateway_api))}", flush=True)
        # Kamaji's CRDs served before the provider starts: the order the rendered Kustomizations
        # give (kaas-platform, with the ControlPlaneProvider, waits for kaas-kamaji's release).
        self.c.wait_for("Kamaji CRDs Established", self.established, timeout=120, interval=1)
        rest = [d for d in provider + chart if d["kind"] != "Namespace"]
        self.c.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                       input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rest}))
        print(f"  Kamaji chart ({os.path.basename(self.src)}): {len(crds)} CRDs, "
              f"{', '.join(sorted(d['kind'] + '/' + d['metadata']['name'] for d in chart))}", flush=True)
        self.start_kamaji()
        self.start_provider()

    def kamaji_chart(self, release):
        """`helm template` of charts/kamaji at the built tag with the rendered HelmRelease's values,
        CRDs included (the release installs them: install.crds CreateReplace). Returns (objects
        kept, CRDs). The kamaji-etcd subchart is turned off (its etcd needs Pods; the default
        DataStore it would make is used by no tenant of the example) and so is telemetry (a test
        run is not an install). The Deployment becomes the local process of start_kamaji; the
        webhook Service and cert-manager's Issuer and Certificate become loopback and openssl."""
        chart = os.path.join(self.work, "kamaji-chart")
        shutil.copytree(os.path.join(self.src, "charts", "kamaji"), chart)
        # The subchart dependency (Chart.yaml dependencies, condition kamaji-etcd.deploy) is not
        # vendored in the source tree; with the subchart off it renders nothing.
        meta = yaml_docs(open(os.path.join(chart, "Chart.yaml")).read())[0]
        meta.pop("dependencies", None)
        open(os.path.join(chart, "Chart.yaml"), "w").write(json.dumps(meta))
        values = dict(release["spec"].get("values") or {})
        values["kamaji-etcd"] = {**values.get("kamaji-etcd", {}), "deploy": False}
        values["telemetry"] = {"disabled": True}
        vf = os.path.join(self.work, "kamaji-values.json")
        json.dump(values, open(vf, "w"))
        out = sh([self.helm, "template", release["spec"].get("releaseName", "kamaji"), chart, "--namespace", NS,
                  "--include-crds", "--kube-version", self.c.version["gitVersion"], "-f", vf])
        keep, crds = [], []
        for d in yaml_docs(out):
            kind = d["kind"]
            (d["metadata"].get("annotations") or {}).pop("cert-manager.io/inject-ca-from", None)
            if kind == "Deployment":
                self.kamaji_pod = d["spec"]["template"]["spec"]
                continue
            if kind in ("Service", "Certificate", "Issuer", "ServiceMonitor"):
                continue
            if kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
                for w in d["webhooks"]:
                    w["clientConfig"] = self.client_config("kamaji", w["clientConfig"]["service"]["path"])
            if kind == "CustomResourceDefinition":
                conv = d["spec"].get("conversion", {})
                if conv.get("strategy") == "Webhook":
                    conv["webhook"]["clientConfig"] = self.client_config(
                        "kamaji", conv["webhook"]["clientConfig"]["service"].get("path", "/convert"))
                crds.append(d)
                continue
            keep.append(d)
        if not getattr(self, "kamaji_pod", None):
            raise RuntimeError("charts/kamaji rendered no Deployment to take the manager's args from")
        return keep, crds

    def start_kamaji(self):
        """The chart's Deployment as a process: its container args (ports on loopback, the
        temporary directory in the bed), its env (POD_NAMESPACE, SERVICE_ACCOUNT), its ServiceAccount's
        token, and the serving certificate where the Pod mounts it (controller-runtime's default
        CertDir is <os.TempDir()>/k8s-webhook-server/serving-certs: TMPDIR moves it into the bed)."""
        ctr = self.kamaji_pod["containers"][0]
        sa = self.kamaji_pod["serviceAccountName"]
        tmp = os.path.join(self.work, "kamaji-tmp")
        certs = os.path.join(tmp, os.path.relpath(CERT_MOUNT, "/tmp"))
        os.makedirs(certs)
        for f in ("tls.crt", "tls.key", "ca.crt"):
            shutil.copy(os.path.join(self.cert_dir, f), certs)
        args = []
        for a in ctr.get("args", []):
            if a.startswith("--health-probe-bind-address="):
                a = f"--health-probe-bind-address=127.0.0.1:{self.kamaji_health}"
            elif a.startswith("--metrics-bind-address="):
                a = f"--metrics-bind-address=127.0.0.1:{free_port()}"
            elif a.startswith("--tmp-directory="):
                a = f"--tmp-directory={tmp}/kamaji"
            args.append(a)
        args.append(f"--webhook-ca-path={certs}/ca.crt")  # the default is the Pod's mount path
        env = {"TMPDIR": tmp, "KUBECONFIG": self.c.sa_kubeconfig(NS, sa, duration="24h")}
        for e in ctr.get("env", []):
            field = e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            env[e["name"]] = {"metadata.namespace": NS, "spec.serviceAccountName": sa}.get(field, e.get("value", ""))
        print(f"  kamaji as system:serviceaccount:{NS}:{sa}: {' '.join(args)}", flush=True)
        argv = [os.path.join(self.kbin, "kamaji"), *args]
        # Kamaji dials each tenant's API server by its Service name, https://<tcp>.<namespace>.svc:<port>
        # (internal/utilities/tenant_client.go GetRESTClientConfig), which only cluster DNS resolves.
        # Stand-in for that DNS: Kamaji runs in a mount namespace of its own whose /etc/hosts maps the
        # name to loopback, where the tenant's API server stand-in listens (tenant_control_plane_serves).
        self.hosts = None
        if os.geteuid() == 0 and shutil.which("unshare"):
            self.hosts = os.path.join(self.work, "kamaji-hosts")
            open(self.hosts, "w").write(open("/etc/hosts").read().rstrip("\n") + f"\n127.0.0.1 {TENANT}.{TENANT}.svc\n")
            standin(f"cluster DNS for Kamaji: {TENANT}.{TENANT}.svc -> 127.0.0.1 (/etc/hosts in Kamaji's own mount namespace)")
            argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                    'mount --bind "$0" /etc/hosts && exec "$@"', self.hosts, *argv]
        self.c.spawn("kamaji", argv, env)
        self.c.wait_for("kamaji /readyz", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{self.kamaji_health}/readyz", timeout=2).status == 200, timeout=120)
        ctx = ssl.create_default_context(cafile=os.path.join(self.cert_dir, "ca.crt"))

        def serving():
            try:
                urllib.request.urlopen(f"https://127.0.0.1:{WEBHOOK_PORT}/", context=ctx, timeout=2)
            except urllib.error.HTTPError:
                pass  # the TLS handshake with the bed's CA succeeded; 404 for /
            return True
        self.c.wait_for("Kamaji's webhook server", serving, timeout=60)

    def provider_components(self, cpp):
        """The provider's components as clusterctl assembles them (`kustomize build config/default`,
        namespace kamaji-system, prefix capi-kamaji-), less the CRDs (CapiBed.provider_crds installed
        the same files with their contract label) and the Deployment (start_provider)."""
        keep = []
        for d in kustomize(os.path.join(self.provider_mod, "config", "default")):
            if d["kind"] == "Deployment":
                self.provider_pod = d["spec"]["template"]["spec"]
                continue
            if d["kind"] == "CustomResourceDefinition":
                continue
            keep.append(d)
        # The rendered ControlPlaneProvider's container args, which cluster-api-operator merges
        # into the Deployment (spec.deployment.containers[].args, flag -> value).
        self.provider_extra = []
        for c in ((cpp or {}).get("spec", {}).get("deployment", {}).get("containers") or []):
            self.provider_extra += [f"{k}={v}" for k, v in (c.get("args") or {}).items()]
        return keep

    def start_provider(self):
        ctr = self.provider_pod["containers"][0]
        sa = self.provider_pod["serviceAccountName"]
        args = []
        for a in ctr.get("args", []):
            # ${VAR:=default} of the Deployment: clusterctl's variable defaults.
            a = re.sub(r"\$\{[A-Z_]+:=([^}]*)\}", r"\1", a)
            if a == "--leader-elect":
                # Out of a Pod controller-runtime cannot find the Lease's namespace (the provider
                # sets no LeaderElectionNamespace; pkg/leaderelection reads the Pod's SA mount).
                a = "--leader-elect=false"
            # The released components (config/control-plane-components.yaml:15429, what clusterctl
            # and cluster-api-operator apply) have this arg as a plain YAML scalar, whose trailing
            # blank the parser drops; config/manager/manager.yaml quotes it, and " " would parse as a
            # one-element list the provider refuses ("cannot set dynamic infrastructure clusters when
            # the feature flag is disabled", main.go:119).
            args.append(a.rstrip())
        args += self.provider_extra
        args += [f"--health-probe-bind-address=127.0.0.1:{self.provider_health}",
                 f"--metrics-bind-address=127.0.0.1:{free_port()}", f"--diagnostics-address=127.0.0.1:{free_port()}"]
        print(f"  {PROVIDER} as system:serviceaccount:{NS}:{sa}: {' '.join(args)}", flush=True)
        self.c.spawn(PROVIDER, [os.path.join(self.kbin, PROVIDER), *args],
                     {"KUBECONFIG": self.c.sa_kubeconfig(NS, sa, duration="24h")})
        self.c.wait_for(f"{PROVIDER} /readyz", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{self.provider_health}/readyz", timeout=2).status == 200, timeout=120)

    # ---- the DataStore: stand-in for the kamaji-etcd chart ------------------------------------
    def datastore_standin(self, release, host="127.0.0.1"):
        """A real etcd with TLS as the kamaji-etcd chart leaves it, and the chart's DataStore for
        the HelmRelease's values (`helm template` of CHARTS/kamaji-etcd), endpoint on loopback, or
        on `host` too (the node's address, which the real Pods of the real-Pods bed reach)."""
        name = release["metadata"]["name"]
        self.ds_host = host
        d = os.path.join(self.work, f"{name}-pki")
        os.makedirs(d)
        o = lambda *a: sh(["openssl", *a], cwd=d)  # noqa: E731
        o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2",
          "-subj", f"/CN={name}-ca")
        open(os.path.join(d, "server.ext"), "w").write(f"subjectAltName=IP:127.0.0.1,IP:{host},DNS:localhost\n"
                                                       "extendedKeyUsage=serverAuth,clientAuth\n")
        open(os.path.join(d, "client.ext"), "w").write("extendedKeyUsage=clientAuth\n")
        # The chart's root client certificate: CN=root (templates/etcd_cm.yaml, the cfssl csr).
        # reader: the bed's own client certificate without a CN (etcd's gateway refuses a request
        # whose certificate has one once auth is on: "CommonName of client sending a request against
        # gateway will be ignored"), used with the token of the user e2e-reader below.
        for n, subj, ext in (("server", f"/CN={name}", "server.ext"), ("root", "/CN=root", "client.ext"),
                             ("reader", "/O=e2e-reader", "client.ext")):
            o("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{n}.key", "-out", f"{n}.csr", "-subj", subj)
            o("x509", "-req", "-in", f"{n}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
              "-out", f"{n}.crt", "-days", "2", "-extfile", ext)
        client, peer = free_port(), free_port()
        urls = ",".join(dict.fromkeys((f"https://127.0.0.1:{client}", f"https://{host}:{client}")))
        standin(f"the kamaji-etcd HelmRelease {release['metadata']['namespace']}/{name}: a real etcd process on "
                f"{urls} with TLS and client-certificate auth (the chart's 3 Pods cannot run here)")
        # Kept for a restore (lib/kamaji_rebuild.py): the same process, started on a restored data dir.
        self.ds_pki, self.ds_name, self.ds_peer = d, name, peer
        self.ds_argv = [
            f"{self.bin}/etcd", "--name", name, "--data-dir", os.path.join(self.work, f"etcd-{name}"),
            "--listen-client-urls", urls, "--advertise-client-urls", f"https://{host}:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"{name}=http://127.0.0.1:{peer}", "--client-cert-auth",
            "--trusted-ca-file", f"{d}/ca.crt", "--cert-file", f"{d}/server.crt", "--key-file", f"{d}/server.key",
            "--unsafe-no-fsync", "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}"]
        self.c.spawn(f"etcd-{name}", self.ds_argv)
        ctx = ssl.create_default_context(cafile=f"{d}/ca.crt")
        ctx.load_cert_chain(f"{d}/root.crt", f"{d}/root.key")
        self.etcd = (f"https://127.0.0.1:{client}", ctx)
        self.c.wait_for(f"etcd {name} /health", lambda: b'"health":"true"' in urllib.request.urlopen(
            f"https://127.0.0.1:{client}/health", context=ctx, timeout=2).read(), timeout=30)
        # What the chart's post-install Job runs (kamaji-etcd 0.17.0 templates/etcd_job_preinstall_2.yaml):
        # etcdctl user add --no-password=true root; role add root; user grant-role root root;
        # auth enable. Through etcd's gRPC gateway (the bed has no etcdctl).
        # The gateway does not carry the client certificate's identity once auth is on, so the bed
        # reads the DataStore as a user of its own, `e2e-reader` (password auth, role root), which
        # the chart does not create; nothing but the bed's checks use it.
        self.etcd_token = None
        for path, body in (("/v3/auth/user/add", {"name": "root", "options": {"no_password": True}}),
                           ("/v3/auth/role/add", {"name": "root"}),
                           ("/v3/auth/user/grant", {"user": "root", "role": "root"}),
                           ("/v3/auth/user/add", {"name": "e2e-reader", "password": "e2e-reader"}),
                           ("/v3/auth/user/grant", {"user": "e2e-reader", "role": "root"}),
                           ("/v3/auth/enable", {})):
            self.etcd_call(path, body)
        reader = ssl.create_default_context(cafile=f"{d}/ca.crt")
        reader.load_cert_chain(f"{d}/reader.crt", f"{d}/reader.key")
        self.etcd = (self.etcd[0], reader)
        self.etcd_token = "e2e-reader"  # etcd_call authenticates each call (simple tokens expire in 5 minutes)
        standin(f"etcd {name}: root user (no password, client certificate CN=root), role root, auth enabled "
                "(the chart's post-install Job); plus the bed's own user e2e-reader for its checks")
        # The chart's DataStore for these values, and the Secrets its cfssl Job would write.
        values = os.path.join(self.work, f"{name}-values.json")
        json.dump(release["spec"].get("values") or {}, open(values, "w"))
        out = sh([self.helm, "template", release["spec"].get("releaseName", name), os.path.join(CHARTS, "kamaji-etcd"),
                  "--namespace", release["metadata"]["namespace"], "-f", values])
        ds = next(x for x in yaml_docs(out) if x["kind"] == "DataStore")
        rendered = ds["spec"]["endpoints"]
        ds["spec"]["endpoints"] = [f"{host}:{client}"]
        tls = ds["spec"]["tlsConfig"]
        files = {}  # (secret namespace, name) -> {key: file}
        for part, f in (("certificateAuthority", "ca"), ("clientCertificate", "root")):
            for kind, ext in (("certificate", "crt"), ("privateKey", "key")):
                ref = tls[part][kind]["secretReference"]
                files.setdefault((ref["namespace"], ref["name"]), {})[ref["keyPath"]] = f"{d}/{f}.{ext}"
        secrets = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": ns},
                    "data": {k: b64(open(p, "rb").read()) for k, p in keys.items()}} for (ns, n), keys in files.items()]
        standin(f"the chart's Secrets {sorted(n for _, n in files)} (its cfssl Job's certificates, from openssl)")
        return ds, secrets, rendered

    def etcd_call(self, path, body):
        url, ctx = self.etcd
        headers = {"Content-Type": "application/json"}
        if getattr(self, "etcd_token", None) and path != "/v3/auth/authenticate":
            headers["Authorization"] = self.etcd_call("/v3/auth/authenticate", {"name": "e2e-reader", "password": "e2e-reader"})["token"]
        req = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers=headers)
        return json.loads(urllib.request.urlopen(req, context=ctx, timeout=10).read() or b"{}")

    def log(self, name):
        return open(os.path.join(self.c.logs, name + ".log"), errors="replace").read()


def gateway_api_crds():
    """The Gateway API CRDs of the test CRD folder (tests/upstream/sources.tsv: gateway-api v1.5.1,
    standard channel) that Kamaji's manager uses: GatewayClass, Gateway, HTTPRoute, GRPCRoute, TLSRoute."""
    d = os.path.join(CRDS, "gateway.networking.k8s.io")
    want = ("gatewayclasses", "gateways", "httproutes", "grpcroutes", "tlsroutes")
    missing = [n for n in want if not os.path.isfile(os.path.join(d, n + ".yaml"))]
    if missing:
        raise RuntimeError(f"no Gateway API CRDs {missing} in {d} (tests/upstream/crds.sh)")
    return [doc for n in want for doc in yaml_docs(open(os.path.join(d, n + ".yaml")).read())]


def from_initech(d, tenants):
    """The example repository in `d` with its tenants replaced by `tenants` ({name: edit}), each
    derived from tenants/initech.yaml: `edit(text)` gets initech's file with its name changed and
    returns the tenant's file, or None when the example no longer has what it replaces."""
    from fleet import Fleet
    Fleet.example(d)
    folder = os.path.join(d, "tenants")
    src = open(os.path.join(folder, "initech.yaml")).read()
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    for name, edit in tenants.items():
        text = edit(src.replace("name: initech", f"name: {name}"))
        if text is None or f"name: {name}" not in text:
            raise RuntimeError(f"could not derive tenant {name} from tenants/initech.yaml")
        open(os.path.join(folder, f"{name}.yaml"), "w").write(text)


def with_datastores(d, stores):
    """kaas.yaml of the example with its `dataStores: [default]` line replaced by `stores`."""
    path = os.path.join(d, "kaas.yaml")
    platform = open(path).read()
    if "  dataStores: [default]\n" not in platform:
        raise RuntimeError("kaas.yaml of the example has no `dataStores: [default]` line to replace")
    open(path, "w").write(platform.replace("  dataStores: [default]\n", stores))


def tenant_overlay(f, tenant):
    return kustomize(os.path.join(f.dir, "overlays", "tenants", tenant))


def with_fields(c, *args):
    """The object as `get -o json` gives it, with its managedFields (kubectl hides them by default)."""
    return json.loads(c.kubectl("get", "-o", "json", "--show-managed-fields", *args))


def managers_of(obj, subresource=None):
    return sorted({m.get("manager", "?") for m in obj["metadata"].get("managedFields", [])
                   if m.get("subresource") == subresource})


def real_pair_makes_the_control_plane(e):
    """See the module's text. Applies the rendered tenant before its DataStore exists (as Flux does:
    the kamaji-etcd HelmRelease installs after the KamajiControlPlane is applied), measures
    Kamaji's webhook refusing the provider's TenantControlPlane until the DataStore is there, then
    asserts what Kamaji and the provider write."""
    from fleet import Fleet
    fails = []
    fill = Fleet.example
    if not pods_wanted(e):
        # The loopback OIDC issuer (lib/access.py) in the fleet's kaas.yaml, so that the tenant API
        # server Kamaji starts takes its tokens (lib/kamaji_flux.py). Not with real Pods: a Pod's
        # network cannot reach 127.0.0.1.
        from access import Issuer, use_issuer
        certs = Cluster(os.path.join(e.work, "kamaji-issuer"), e.a.bin, None)
        certs.certs()
        e.kamaji_issuer = Issuer(certs.pki, certs.work)
        fill = lambda d: (Fleet.example(d), use_issuer(d, e.kamaji_issuer, certs.pki))  # noqa: E731
    f = e.new_fleet("kamaji", fill)
    f.render()
    bed = KamajiBed(os.path.join(e.work, "kamaji"), e.a.bin, e.a.kamaji_bin, e.a.gomodcache, e.helm)
    e.kamaji_bed = bed
    t0 = time.time()
    bed.start()
    bed.start_kamaji_pair(f)
    e.r.figure("kamaji bed start (control plane, CAPI managers, Kamaji chart + manager, provider ready)", f"{time.time() - t0:.1f}s")
    c = bed.c

    objs = tenant_overlay(f, TENANT)
    flux = [d for d in objs if d["apiVersion"].split("/")[0] in FLUX_GROUPS]
    apply = [d for d in objs if d not in flux]
    apply.sort(key=lambda d: d["kind"] != "Namespace")
    missing = TENANT_KINDS - {d["kind"] for d in apply}
    if missing:
        return [f"overlays/tenants/{TENANT} lacks {sorted(missing)}"]
    etcd_release = next((d for d in flux if d["kind"] == "HelmRelease"
                         and d["spec"]["chart"]["spec"]["chart"] == "kamaji-etcd"), None)
    if etcd_release is None:
        return [f"overlays/tenants/{TENANT} has no kamaji-etcd HelmRelease (the dedicated DataStore)"]
    print(f"  not applied yet (Flux starts once the tenant serves: lib/kamaji_flux.py): {', '.join(d['kind'] + '/' + d['metadata']['name'] for d in flux)}", flush=True)
    rbac, source = kamaji_reader(os.path.join(f.dir, "overlays", "platform"))
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    print(f"  the kubeadm bootstrap manager's KamajiControlPlane reader from {source}", flush=True)

    if pods_wanted(e):
        fails += start_node(e, bed, next(d for d in apply if d["kind"] == "KamajiControlPlane"))
    t_apply = time.time()
    r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": apply}), check=False)
    if r.returncode != 0:
        return [f"the rendered {TENANT} objects were refused: {r.stderr.strip()[:800]}"]
    print(f"  applied {len(apply)} rendered objects of {TENANT}: {', '.join(sorted(d['kind'] for d in apply))}", flush=True)
    kcp = next(d for d in apply if d["kind"] == "KamajiControlPlane")
    standin(f"CAPMOX's ProxmoxCluster {TENANT}/{TENANT} status.initialization.provisioned=true")
    c.kubectl("patch", "-n", TENANT, "proxmoxcluster", TENANT, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))

    # The provider tries to create the TenantControlPlane; Kamaji's validating webhook refuses it
    # while DataStore acme-etcd does not exist.
    def refusals():
        """Refused reconciles: controller-runtime's `Reconciler error` lines with the webhook's words
        (else any line with them, should the provider log it otherwise)."""
        lines = [x for x in bed.log(PROVIDER).splitlines() if NO_DATASTORE.search(x)]
        return len([x for x in lines if "Reconciler error" in x]) or len(lines)
    try:
        c.wait_for("the provider's TenantControlPlane refused by Kamaji's webhook (no DataStore yet)",
                   lambda: refusals() > 0, timeout=120, interval=1)
    except TimeoutError as ex:
        tcp = c.kubectl("get", "-n", TENANT, TCP, "-o", "name", check=False).stdout.strip()
        return [f"{ex}; TenantControlPlanes: {tcp or 'none'}; provider log: {bed.log(PROVIDER)[-1500:]}"]
    first = time.time() - t_apply
    time.sleep(15)  # the HelmRelease installs the chart some time after Flux applied the tenant
    before = refusals()
    if c.kubectl("get", "-n", TENANT, TCP, TENANT, check=False).returncode == 0:
        fails.append("a TenantControlPlane exists although its DataStore does not")
    node = getattr(e, "kamaji_node", None)
    ds, secrets, rendered = bed.datastore_standin(etcd_release, node.ip if node else "127.0.0.1")
    c.kubectl("apply", "--server-side", "--field-manager=helm-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": secrets + [ds]}))
    t_ds = time.time()
    print(f"  DataStore {ds['metadata']['name']} (chart endpoints {rendered} -> {ds['spec']['endpoints']}) created "
          f"{t_ds - t_apply:.0f}s after the tenant", flush=True)
    try:
        tcp = c.wait_for(f"TenantControlPlane {TENANT}/{TENANT}", lambda: c.get("-n", TENANT, TCP, TENANT), timeout=180, interval=1)
    except TimeoutError as ex:
        return fails + [f"{ex}; provider log: {bed.log(PROVIDER)[-1500:]}"]
    t_tcp = time.time()
    print(f"  Kamaji's webhook refused the provider's TenantControlPlane {before} times "
          f"(`{NO_DATASTORE.pattern}`; first {first:.1f}s after the apply); created {t_tcp - t_ds:.1f}s after the DataStore", flush=True)
    e.r.figure("kamaji: TenantControlPlane refusals while the DataStore was missing", str(before))
    e.r.figure("kamaji: DataStore created -> provider's TenantControlPlane accepted", f"{t_tcp - t_ds:.1f}s")
    owners = [o["kind"] for o in tcp["metadata"].get("ownerReferences", [])]
    if "KamajiControlPlane" not in owners:
        fails.append(f"TenantControlPlane owners {owners}, want the KamajiControlPlane (the provider creates it)")
    if tcp["spec"].get("dataStore") != kcp["spec"].get("dataStoreName"):
        fails.append(f"TenantControlPlane dataStore {tcp['spec'].get('dataStore')}, the KCP names {kcp['spec'].get('dataStoreName')}")
    tcp = with_fields(c, "-n", TENANT, TCP, TENANT)
    print(f"  TenantControlPlane {TENANT}: written by {managers_of(tcp)}, owners {owners}, "
          f"version {tcp['spec']['kubernetes']['version']}, dataStore {tcp['spec'].get('dataStore')}", flush=True)
    e.kamaji_state = {"fleet": f, "kcp": kcp, "t_apply": t_apply, "t_ds": t_ds}
    return fails + kamaji_writes(e, bed, kcp)


def kamaji_writes(e, bed, kcp):
    """What Kamaji's TenantControlPlane controller writes in the management cluster and the
    DataStore, and what the provider reports on the KamajiControlPlane from it."""
    c, fails = bed.c, []

    def deployment():
        return c.get("-n", TENANT, "deployment", TENANT)
    try:
        dep = c.wait_for(f"Kamaji's Deployment {TENANT}/{TENANT}", deployment, timeout=180, interval=2)
    except TimeoutError as ex:
        return [f"{ex}; kamaji log: {bed.log('kamaji')[-1500:]}"]
    pod = dep["spec"]["template"]["spec"]
    ctrs = {x["name"]: x for x in pod["containers"]}
    print(f"  Deployment {TENANT}: replicas {dep['spec'].get('replicas')}, containers "
          f"{', '.join(n + '=' + x['image'] for n, x in ctrs.items())}", flush=True)
    if dep["spec"].get("replicas") != kcp["spec"]["replicas"]:
        fails.append(f"Deployment replicas {dep['spec'].get('replicas')}, the KCP asks {kcp['spec']['replicas']}")
    api = ctrs.get("kube-apiserver")
    if api is None:
        fails.append(f"no kube-apiserver container in Kamaji's Deployment: {sorted(ctrs)}")
    else:
        args = api.get("args", []) + api.get("command", [])
        if not api["image"].endswith(":" + kcp["spec"]["version"]):
            fails.append(f"kube-apiserver image {api['image']}, the KCP asks {kcp['spec']['version']}")
        for want in kcp["spec"]["apiServer"]["extraArgs"]:
            if want not in args:
                fails.append(f"kube-apiserver lacks the rendered {want}: {args}")
        etcd = [a for a in args if a.startswith("--etcd-servers=")]
        if not etcd or bed.ds_host not in etcd[0]:
            fails.append(f"kube-apiserver --etcd-servers {etcd}, want the DataStore's endpoint")
    svc = c.wait_for(f"Kamaji's Service {TENANT}/{TENANT}", lambda: c.get("-n", TENANT, "service", TENANT), timeout=60)
    if svc["spec"].get("type") != kcp["spec"]["network"]["serviceType"]:
        fails.append(f"Service type {svc['spec'].get('type')}, the KCP asks {kcp['spec']['network']['serviceType']}")
    secrets = sorted(s["metadata"]["name"] for s in c.get("-n", TENANT, "secrets")["items"]
                     if any(o["kind"] == "TenantControlPlane" for o in s["metadata"].get("ownerReferences", [])))
    print(f"  Secrets Kamaji wrote: {secrets}", flush=True)
    for want in (f"{TENANT}-ca", f"{TENANT}-api-server-certificate", f"{TENANT}-admin-kubeconfig", f"{TENANT}-datastore-certificate"):
        if want not in secrets:
            fails.append(f"no Secret {want} from Kamaji (it wrote {secrets})")
    # Kamaji set up the tenant's user in the DataStore (internal/datastore/etcd.go): a user and a
    # role named after the TenantControlPlane (its UID by default: tcp_defaults.go).
    tcp = c.get("-n", TENANT, TCP, TENANT)
    schema = tcp.get("status", {}).get("storage", {}).get("setup", {})
    try:
        users = c.wait_for("the tenant's user in the DataStore", lambda: [
            u for u in bed.etcd_call("/v3/auth/user/list", {}).get("users", []) if u not in ("root", "e2e-reader")],
            timeout=60, interval=2)
        print(f"  DataStore users besides root: {users}; TenantControlPlane status.storage.setup: {schema}", flush=True)
    except TimeoutError as ex:
        fails.append(f"{ex}; status.storage: {tcp.get('status', {}).get('storage')}")

    # The provider's report on the KamajiControlPlane (controllers/kamajicontrolplane_controller.go):
    # TenantControlPlaneCreated, TenantControlPlaneAddressReady, the endpoint it patched in.
    def reported():
        k = c.get("-n", TENANT, KCP, TENANT)
        conds = {x["type"]: x["status"] for x in k.get("status", {}).get("conditions", [])}
        ok = conds.get("TenantControlPlaneCreated") == "True" and conds.get("TenantControlPlaneAddressReady") == "True"
        return k if ok and k["spec"].get("controlPlaneEndpoint", {}).get("host") else None
    try:
        k = c.wait_for("the provider's conditions on the KamajiControlPlane", reported, timeout=120, interval=2)
    except TimeoutError as ex:
        k = c.get("-n", TENANT, KCP, TENANT)
        return fails + [f"{ex}; KCP status: {json.dumps(k.get('status'))[:800]}"]
    k = with_fields(c, "-n", TENANT, KCP, TENANT)
    ep = k["spec"]["controlPlaneEndpoint"]
    want = kcp["spec"]["network"]["serviceAddress"]
    if ep.get("host") != want:
        fails.append(f"KamajiControlPlane endpoint {ep}, want the rendered serviceAddress {want}")
    status_managers = managers_of(k, "status")
    print(f"  KamajiControlPlane status written by {status_managers}: "
          f"{', '.join(x['type'] + '=' + x['status'] for x in k['status'].get('conditions', []))}; "
          f"spec.controlPlaneEndpoint {ep['host']}:{ep['port']}", flush=True)
    if not status_managers or any(m.startswith("e2e") or m == "kubectl-patch" for m in status_managers):
        fails.append(f"the KamajiControlPlane status has writers {status_managers}: want only the provider")
    cluster = c.wait_for("the Cluster's endpoint copied from the control plane (CAPI core)",
                         lambda: (lambda x: x if x["spec"].get("controlPlaneEndpoint", {}).get("host") else None)(
                             c.get("-n", TENANT, "clusters.cluster.x-k8s.io", TENANT)), timeout=120, interval=2)
    print(f"  Cluster {TENANT} spec.controlPlaneEndpoint {cluster['spec']['controlPlaneEndpoint']} (CAPI core)", flush=True)
    v = tcp.get("status", {}).get("kubernetesResources", {}).get("version", {})
    print(f"  TenantControlPlane status: version {v.get('version')} {v.get('status')} "
          "(no tenant API server runs yet)", flush=True)
    return fails


# controller-runtime's log line for each watch a controller starts (pkg/internal/controller
# `Start`: "Starting EventSource" with `controller`, here the KamajiControlPlane's, and `source`,
# the kind source's type, `kind source: *v1alpha1.TenantControlPlane`). Its TenantControlPlane
# watch, not ExternalClusterReference's (behind a feature gate), is the one issue 41 item 4 needs.
EVENT_SOURCE = "Starting EventSource"
WATCHING_CONTROLLER = "kamajicontrolplane"
WATCHED_KIND = "TenantControlPlane"


def event_sources(log):
    """(controller, source) of every `Starting EventSource` line of a controller-runtime log: a
    JSON line, or zap's console line (time, level, message, then the fields as one JSON object,
    as this bed's provider writes it)."""
    out = []
    for line in log.splitlines():
        if EVENT_SOURCE not in line:
            continue
        try:
            d = json.loads(line if line.startswith("{") else line[line.index("\t{") + 1:])
            out.append((str(d.get("controller")), str(d.get("source"))))
        except ValueError:
            out.append(("(unparsed)", line))
    return out


def provider_watches_tenant_control_planes(e):
    """Issue 41 item 4: provider v0.20.0 adds `Owns(&TenantControlPlane{})` only if
    `kamaji.clastix.io/v1alpha1` is served when it starts
    (controllers/kamajicontrolplane_controller.go:420-422, `SetupWithManager`); without that watch
    the KamajiControlPlane's status.version follows an upgrade only at the 10-hour resync. This bed
    starts it as the rendered Kustomizations order it, after Kamaji's CRDs are Established: its log
    must show the watch starting. Started before them (tried once, 2026-12), it logged three
    EventSources (the channel, KamajiControlPlane, Secret) and no TenantControlPlane one, and this
    scenario failed."""
    bed = e.kamaji_bed
    sources = event_sources(bed.log(PROVIDER))
    print(f"  {PROVIDER}: {len(sources)} EventSources started: {sources}", flush=True)
    if not any(ctl == WATCHING_CONTROLLER and WATCHED_KIND in src for ctl, src in sources):
        return [f"the provider's {WATCHING_CONTROLLER} controller started no EventSource of kind {WATCHED_KIND} "
                f"(it does not watch TenantControlPlanes): {sources or bed.log(PROVIDER)[-1500:]}"]
    return []


def dns_service_ips_kept(e):
    """Issue 41 finding 1, seen from the management side: the TenantControlPlane the provider keeps
    rewriting still carries networkProfile.dnsServiceIPs, else Kamaji uploads the tenant's
    kube-system/kubelet-config without clusterDNS (internal/resources/kubeadm_utils.go,
    internal/kubeadm/uploadconfig.go). Kamaji's webhook fills the field on create only
    (internal/webhook/handlers/tcp_defaults.go; OnUpdate is a no-op), and provider v0.20.0
    controllers/kamajicontrolplane_controller_tcp.go:90-94 overwrites it on every reconcile with
    the KamajiControlPlane's addons.coreDNS.dnsServiceIPs: the render must set that field."""
    c = e.kamaji_bed.c
    kcp = c.get("-n", TENANT, KCP, TENANT)
    rendered = (kcp["spec"].get("addons", {}).get("coreDNS") or {}).get("dnsServiceIPs")
    time.sleep(5)  # the provider rewrites the TenantControlPlane about once a second until Ready
    tcp = c.get("-n", TENANT, TCP, TENANT)
    dns = tcp["spec"].get("networkProfile", {}).get("dnsServiceIPs")
    print(f"  KamajiControlPlane addons.coreDNS.dnsServiceIPs {rendered}; TenantControlPlane generation "
          f"{tcp['metadata']['generation']}: networkProfile.dnsServiceIPs {dns}", flush=True)
    if not dns:
        return [f"the TenantControlPlane {TENANT} has no networkProfile.dnsServiceIPs after the provider's updates "
                f"(the KamajiControlPlane renders addons.coreDNS {kcp['spec'].get('addons', {}).get('coreDNS')}): the tenant's "
                "kubelet-config gets no clusterDNS, pods get no cluster DNS (issue 41 finding 1: render "
                "addons.coreDNS.dnsServiceIPs, the 10th address of the service CIDR)"]
    return []


def materialize(c, ns, pod, root):
    """The volumes of a Pod spec as files under root, from the Secrets and ConfigMaps they name
    (what the kubelet mounts): {volume name: folder}."""
    out = {}
    for v in pod.get("volumes", []):
        d = os.path.join(root, v["name"])
        os.makedirs(d, exist_ok=True)
        # A projected volume's sources are Secrets and ConfigMaps too (Kamaji's etc-kubernetes-pki).
        sources = [v] + [x for x in v.get("projected", {}).get("sources", [])]
        for kind, key, src in ((k, n, x) for x in sources for k, n in (("secret", "secretName"), ("configMap", "name"))):
            if kind not in src or src is v and "projected" in v:
                continue
            v_kind = src[kind]
            obj = c.get("-n", ns, kind.lower(), v_kind.get(key) or v_kind.get("name"))
            if kind == "secret":
                data = {k: base64.b64decode(x) for k, x in (obj.get("data") or {}).items()}
            else:
                data = {k: x.encode() for k, x in (obj.get("data") or {}).items()}
                data.update({k: base64.b64decode(x) for k, x in (obj.get("binaryData") or {}).items()})
            items = v_kind.get("items")
            for k, x in data.items():
                paths = [i["path"] for i in items if i["key"] == k] if items else [k]
                for rel in paths:
                    os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
                    open(os.path.join(d, rel), "wb").write(x)
        out[v["name"]] = d
    return out


def deployment_available(c):
    """The tenant's Deployment once all its replicas are available (what Kamaji waits for), else None."""
    d = c.get("-n", TENANT, "deployment", TENANT)
    return d if d.get("status", {}).get("availableReplicas", 0) >= d["spec"].get("replicas", 1) else None


def tenant_control_plane_serves(e, again=False):
    """The TenantControlPlane's API server serves: its Pods really run (real_pods_serve, with
    E2E_KAMAJI_PODS=1) or their kube-apiserver is one process beside kwok's Nodes (process_serves).
    Kamaji then runs its kubeadm phases and add-ons in that API server, marks the TenantControlPlane
    Ready, and the provider reports the KamajiControlPlane ready and writes `<cluster>-kubeconfig`,
    which must reach it. again: the same on the rebuilt management cluster (lib/kamaji_rebuild.py),
    its figures named so."""
    if e.kamaji_bed.hosts is None:
        return ["cannot stand in for cluster DNS for Kamaji (needs root and unshare): the tenant API is unreachable for it"]
    served = real_pods_serve(e) if getattr(e, "kamaji_node", None) else process_serves(e)
    if isinstance(served, list):
        return served
    # served: host:port where the tenant API server answers
    return tenant_ready(e, served, "kamaji rebuild" if again else "kamaji")


def process_serves(e):
    """Stand-in for the kubelet on the TenantControlPlane's Pods: kwok's fake Nodes (lib/cluster.py
    start_nodes: the real kube-scheduler binds the Deployment's Pods, kwok reports them Running and
    Ready, the real kube-controller-manager writes the Deployment's status) and, for the containers,
    one kube-apiserver process with the Pod's kube-apiserver args and volumes (the bed's v1.34 build,
    not the image the Deployment names), on 127.0.0.1 at the Pod's port, and its controller-manager
    (spawn_tenant_apiserver). Kamaji then runs its kubeadm
    phases and add-ons in that API server, marks the TenantControlPlane Ready, and the provider
    reports the KamajiControlPlane ready and writes `<cluster>-kubeconfig`, which must reach it.
    Returns "127.0.0.1:<port>" once the Deployment is available, or failures."""
    bed = e.kamaji_bed
    c = bed.c
    port = spawn_tenant_apiserver(e)
    if isinstance(port, list):
        return port
    # Only now do the Pods turn Ready: kwok's Nodes stand in for the kubelet, whose readiness
    # probes would pass only once the containers serve (the real kube-scheduler binds the Pods,
    # the real kube-controller-manager writes the Deployment's status, Kamaji reads it:
    # internal/resources/k8s_deployment_resource.go computeStatus).
    c.start_nodes(3)
    standin("the kubelet of the TenantControlPlane's Pods: kwok's fake Nodes report them Running and Ready "
            "(once the API server process above serves)")

    try:
        c.wait_for(f"Deployment {TENANT} available (Pods bound by kube-scheduler, Running by kwok)", lambda: deployment_available(c), timeout=120, interval=2)
    except TimeoutError as ex:
        pods = [f"{p['metadata']['name']} {p['status'].get('phase')} node={p['spec'].get('nodeName')}"
                for p in c.get("-n", TENANT, "pods")["items"]]
        return [f"{ex}; Pods: {pods}"]
    return f"127.0.0.1:{port}"


def local_args(ctr, vols, bind):
    """A container's command and args with its volume mounts made local paths (vols: volume name ->
    folder, from materialize) and its listeners moved: --bind-address=<bind> and any
    `--secure-port` of bind's own (bind: extra args replacing the container's)."""
    mounts = sorted(((m["mountPath"], os.path.join(vols[m["name"]], m.get("subPath", ""))) for m in ctr.get("volumeMounts", [])),
                    key=lambda x: -len(x[0]))
    replaced = {a.split("=", 1)[0] for a in bind}
    args = []
    for a in ctr.get("command", [])[1:] + ctr.get("args", []):
        for path, local in mounts:
            a = re.sub(re.escape(path.rstrip("/")) + r"(?=/|$|,)", local.rstrip("/"), a)
        if a.split("=", 1)[0] not in replaced:
            args.append(a)
    return args + list(bind)


def tenant_processes(ns):
    return {"kine": f"tenant-kine-{ns}", "kube-apiserver": f"tenant-apiserver-{ns}",
            "kube-controller-manager": f"tenant-controller-manager-{ns}"}


def container_env(c, ns, ctr):
    """A container's environment as the kubelet gives it: `envFrom` Secrets, then `env` values."""
    env = {}
    for src in ctr.get("envFrom", []):
        if "secretRef" in src:
            data = c.get("-n", ns, "secret", src["secretRef"]["name"]).get("data") or {}
            env.update({k: base64.b64decode(v).decode() for k, v in data.items()})
    env.update({x["name"]: x["value"] for x in ctr.get("env", []) if "value" in x})
    return env


def expand(args, env):
    """`$(VAR)` in a container's args, expanded as the kubelet does (unknown names stay as written)."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), a) for a in args]


def stop_tenant_processes(c, ns=TENANT):
    """Stops the stand-in processes of a TenantControlPlane's containers, as its Pods stop: the
    API server's clients first, kine (its storage) last, so that no API server waits on a storage
    gone; one that does not end within 30 s of SIGTERM gets SIGKILL, as the kubelet does after the
    grace period."""
    for name in reversed(list(tenant_processes(ns).values())):
        p = c.procs.pop(name, None)
        if p is not None and p.poll() is None:
            os.killpg(p.pid, 15)
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, 9)
                p.wait(timeout=30)


def spawn_tenant_apiserver(e):
    """The stand-in for the containers of the TenantControlPlane's Pods (start_containers)."""
    return start_containers(e.kamaji_bed, TENANT)


def start_containers(bed, ns, host="127.0.0.1", controller_manager=True, quiet=False):
    """The stand-in for the containers of the TenantControlPlane `ns/ns`'s Pods: one kube-apiserver
    process and one kube-controller-manager process with those containers' args and volumes of the
    Deployment as it is now (again after Kamaji rolled it, e.g. for a new certificate), listening
    on `host` (a loopback address of the tenant's own). The controller-manager is what fills the
    aggregated ClusterRoles (view, edit, admin) and runs the tenant's garbage collector and
    namespace controller, as its container would. The scheduler and konnectivity-server do not
    run. Returns the API server's port once it serves, or failures."""
    c = bed.c
    names = tenant_processes(ns)
    stop_tenant_processes(c, ns)
    dep = c.get("-n", ns, "deployment", ns)
    pod = dep["spec"]["template"]["spec"]
    ctrs = {x["name"]: x for x in pod["containers"]}
    ctr = ctrs["kube-apiserver"]
    port = next((int(a.split("=", 1)[1]) for a in ctr.get("args", []) + ctr.get("command", []) if a.startswith("--secure-port=")), 6443)
    s = socket.socket()
    # As Go's listeners do: connections of a process just stopped may linger in TIME_WAIT.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind((host, port))
    except OSError as ex:
        return [f"{host}:{port} (the tenant API server's port, which Kamaji dials through the Service) is taken: {ex}"]
    finally:
        s.close()

    vols = materialize(c, ns, pod, os.path.join(bed.work, f"tenant-{ns}-volumes"))
    args = local_args(ctr, vols, [f"--bind-address={host}"])
    if "kine" in ctrs:
        # A MySQL, PostgreSQL or NATS DataStore: the kine container serves the etcd API on the
        # unix socket of the `kine-uds` volume the API server's --etcd-servers names
        # (Kamaji 26.8.2-edge internal/builders/controlplane/deployment.go buildKine).
        kine = ctrs["kine"]
        kine_bin = os.path.join(bed.kbin, "kine")
        if not os.access(kine_bin, os.X_OK):
            return [f"the TenantControlPlane's Pod has a kine container, and {bed.kbin} has no kine (tests/e2e/build-kamaji.sh builds it)"]
        kine_args = expand(local_args(kine, vols, []), container_env(c, ns, kine))
        sock = next(a.split("unix://", 1)[1] for a in kine_args if a.startswith("--listen-address=unix://"))
        if os.path.exists(sock):
            os.remove(sock)
        c.spawn(names["kine"], [kine_bin, *kine_args])
        c.wait_for(f"kine of {ns} listening on {sock}", lambda: os.path.exists(sock), timeout=60)
        if not quiet:
            standin(f"the kine container: the kine {os.path.basename(os.path.realpath(kine_bin))} program with its args "
                    f"(the image asks {kine.get('image')}), its socket on the shared volume")
    if not quiet:
        standin(f"the containers of the TenantControlPlane's Pods: one kube-apiserver {c.version['gitVersion']} process "
                f"(the image asks {ctr['image'].rsplit(':', 1)[-1]}) with the Pod's args and volumes on {host}:{port}"
                + (", and one kube-controller-manager process with its container's args (its kubeconfig dials "
                   f"127.0.0.1:{port}); no scheduler, no konnectivity-server" if controller_manager else
                   "; no controller-manager, scheduler or konnectivity-server"))
        print(f"  tenant kube-apiserver args: {' '.join(args)}", flush=True)
    c.spawn(names["kube-apiserver"], [f"{bed.bin}/kube-apiserver", *args])
    insecure = ssl.create_default_context()
    insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE

    def readyz():
        # /readyz, which system:public-info-viewer lets anyone read once the RBAC authorizer has
        # synced: a 403 means it has not yet (any client, the admin too, would be refused), a 401
        # that anonymous requests are off (then serving is all the bed can see).
        try:
            urllib.request.urlopen(f"https://{host}:{port}/readyz", context=insecure, timeout=2)
        except urllib.error.HTTPError as ex:
            return ex.code == 401
        return True
    c.wait_for(f"the tenant kube-apiserver of {ns} ready", readyz, timeout=90)
    if controller_manager:
        # The management cluster's own controller-manager holds the default port 10257.
        kcm = local_args(ctrs["kube-controller-manager"], vols, ["--bind-address=127.0.0.1", f"--secure-port={free_port()}"])
        c.spawn(names["kube-controller-manager"], [f"{bed.bin}/kube-controller-manager", *kcm])
    return port


def pods_wanted(e):
    return bool(getattr(e.a, "pods_bin", None))


def start_node(e, bed, kcp):
    """The real Node (lib/pods.py) and the images the TenantControlPlane's Deployment asks for,
    pushed to its loopback registry under their upstream names before the tenant is applied."""
    from pods import Image, Node
    node = Node(bed.c, e.a.pods_bin)
    e.kamaji_node = node
    # build-pods.sh's time in this run (tests/e2e/run measures it) and each cache entry's cold build
    # (the `built ... in Ns` line its build.log keeps).
    if os.environ.get("E2E_PODS_BUILD_SECONDS"):
        e.r.figure("kamaji pods: tests/e2e/build-pods.sh in this run (a cache hit when warm)", f"{os.environ['E2E_PODS_BUILD_SECONDS']}s")
    for what, seconds in node.cold_builds():
        e.r.figure(f"kamaji pods: cold build of {what} (when its cache entry was made)", f"{seconds}s")
    t0 = time.time()
    bed.c.start_scheduler()
    node.start()
    e.r.figure("kamaji pods: Node start (registry, containerd, kubelet, kube-proxy -> Node Ready)", f"{time.time() - t0:.1f}s")
    print(f"  real: Node {node.name} ({node.ip}): kubelet and kube-proxy {bed.c.version['gitVersion']} on "
          f"{sh(['containerd', '--version']).split()[2]} + {sh(['runc', '--version']).splitlines()[0]}, bridge CNI {POD_CIDR}",
          flush=True)
    version = kcp["spec"]["version"]
    # Kamaji's default konnectivity-server tag for a tenant version (internal/builders/controlplane/
    # konnectivity_server.go serverVersion: v0.<minor>.0) unless the KCP names one.
    konn = ((kcp["spec"].get("addons") or {}).get("konnectivity") or {}).get("server") or {}
    konn_version = konn.get("version") or f"v0.{int(version.lstrip('v').split('.')[1])}.0"
    konn_image = f"{konn.get('image') or 'registry.k8s.io/kas-network-proxy/proxy-server'}:{konn_version}"
    images = [Image(f"registry.k8s.io/{p}:{version}", {f"/usr/local/bin/{p}": os.path.join(bed.bin, p)},
                    entrypoint=[f"/usr/local/bin/{p}"])
              for p in ("kube-apiserver", "kube-controller-manager", "kube-scheduler")]
    images.append(Image(konn_image, {"/proxy-server": os.path.join(e.a.pods_bin, "proxy-server")}, entrypoint=["/proxy-server"]))
    secs = node.push(images)
    e.r.figure("kamaji pods: tenant images written and pushed to the loopback registry", f"{secs:.1f}s")
    have = bed.c.version["gitVersion"]
    for im in images[:3]:
        if not im.name.endswith(":" + have):
            standin(f"image {im.name}: {os.path.basename(im.name.split(':')[0])} {have} (the bed's build), not {version}")
    built = f"v{POD_KONNECTIVITY_BUILT}"
    standin(f"image {konn_image}: proxy-server {built} built here (sigs.k8s.io/apiserver-network-proxy), "
            f"not the upstream image{'' if konn_version == built else ', and not ' + konn_version}")
    standin(f"image {SANDBOX_IMAGE}: Kubernetes' pause.c (k8s.io/kubernetes {have} build/pause), built here")
    e.kamaji_state_images = {im.name for im in images} | {SANDBOX_IMAGE}
    return []


def real_pods_serve(e):
    """The TenantControlPlane's Pods run for real: the kube-scheduler binds them to the real Node, its
    kubelet runs them in containerd (images from the loopback registry) and their probes pass, the
    kube-controller-manager marks the Deployment available. Kamaji reaches the tenant API server
    through its Service's ClusterIP, which kube-proxy routes to the Pod. Returns "<ClusterIP>:<port>"."""
    bed, node = e.kamaji_bed, e.kamaji_node
    c, fails = bed.c, []
    dep = c.get("-n", TENANT, "deployment", TENANT)
    asked = {x["image"] for x in dep["spec"]["template"]["spec"]["containers"] + dep["spec"]["template"]["spec"].get("initContainers", [])}
    if asked - e.kamaji_state_images:
        fails.append(f"the Deployment asks images the bed did not push: {sorted(asked - e.kamaji_state_images)}")
    svc = c.get("-n", TENANT, "service", TENANT)
    ip = svc["spec"]["clusterIP"]
    port = next((p["port"] for p in svc["spec"]["ports"] if p.get("name") == "kube-apiserver"), svc["spec"]["ports"][0]["port"])
    try:
        node.wait_service_routed(ip, port)
    except TimeoutError as ex:
        return fails + [f"{ex}"]
    # Kamaji dials https://acme.acme.svc:<port>: its /etc/hosts stand-in now names the ClusterIP
    # (written in place: the file is bind-mounted by inode), so the request takes kube-proxy's route.
    with open(bed.hosts, "r+") as f:
        lines = [x for x in f.read().splitlines() if not x.endswith(f" {TENANT}.{TENANT}.svc")]
        f.seek(0)
        f.truncate()
        f.write("\n".join(lines + [f"{ip} {TENANT}.{TENANT}.svc"]) + "\n")
    standin(f"cluster DNS for Kamaji: {TENANT}.{TENANT}.svc -> the Service's ClusterIP {ip} (kube-proxy routes it to the Pod)")

    try:
        c.wait_for(f"Deployment {TENANT} available (real Pods: kubelet + containerd)", lambda: deployment_available(c), timeout=300, interval=1)
    except TimeoutError as ex:
        return fails + [f"{ex}; Pods: {pod_states(c)}; kubelet log: {bed.log('kubelet')[-1500:]}; "
                        f"container logs: {node.container_logs(TENANT)[-4000:]}"]
    now = time.time()
    e.r.figure("kamaji pods: tenant objects applied -> the TenantControlPlane's Pods Ready (real kubelet)",
               f"{now - e.kamaji_state['t_apply']:.1f}s")
    e.r.figure("kamaji pods: DataStore created -> the TenantControlPlane's Pods Ready (without the DataStore's deliberate delay)",
               f"{now - e.kamaji_state['t_ds']:.1f}s")
    def rolled_out():
        d = c.get("-n", TENANT, "deployment", TENANT)
        st, want = d.get("status", {}), d["spec"].get("replicas", 1)
        return d if (st.get("observedGeneration", 0) >= d["metadata"]["generation"] and st.get("updatedReplicas") == want
                     and st.get("availableReplicas") == want and st.get("replicas") == want) else None
    try:
        c.wait_for(f"Deployment {TENANT} rolled out (the Pods of older templates gone)", rolled_out, timeout=120, interval=1)
        e.r.figure("kamaji pods: tenant objects applied -> the Deployment rolled out (only Pods of Kamaji's last template)",
                   f"{time.time() - e.kamaji_state['t_apply']:.1f}s")
    except TimeoutError as ex:
        print(f"  note: {ex}", flush=True)
    rs = [x for x in c.get("-n", TENANT, "replicasets")["items"]
          if any(o["kind"] == "Deployment" and o["name"] == TENANT for o in x["metadata"].get("ownerReferences", []))]
    print(f"  Deployment {TENANT}: {len(rs)} ReplicaSets (each a Pod template Kamaji wrote while it set the tenant up)", flush=True)
    for line in pod_states(c):
        print(f"  Pod {line}", flush=True)
    # MetalLB's part: the LoadBalancer Service's address in its status. kube-proxy then routes it to the
    # Pods like the ClusterIP; a host route sends the address to the Node's bridge, so a request to it
    # never leaves the machine, rule or not.
    lb = e.kamaji_state["kcp"]["spec"]["network"].get("serviceAddress")
    if svc["spec"].get("type") == "LoadBalancer" and lb:
        node.route_local(lb)
        c.kubectl("patch", "-n", TENANT, "service", TENANT, "--subresource=status", "--type=merge",
                  "-p", json.dumps({"status": {"loadBalancer": {"ingress": [{"ip": lb, "ipMode": "VIP"}]}}}))
        standin(f"MetalLB: Service {TENANT}/{TENANT} status.loadBalancer.ingress {lb} (kube-proxy routes it to the Pods)")
        try:
            node.wait_service_routed(lb, port)
            e.kamaji_state["lb_routed"] = lb
        except TimeoutError as ex:
            print(f"  note: {ex}: the LoadBalancer address stays a stand-in route", flush=True)
    mem = node.pods_memory()
    if mem is not None:
        e.r.figure("kamaji pods: memory of the Node's Pods (kubepods cgroup, all the tenant's Pods)", f"{mem / 2**20:.0f} MiB")
    if fails:
        return fails
    return f"{ip}:{port}"


def pod_states(c):
    out = []
    for p in c.get("-n", TENANT, "pods")["items"]:
        st = p.get("status", {})
        ctrs = ", ".join(f"{x['name']} ready={x.get('ready')} restarts={x.get('restartCount')}"
                         + (f" {list(x.get('state', {}))[0]}" if x.get("state") else "")
                         for x in st.get("containerStatuses", []))
        out.append(f"{p['metadata']['name']} {st.get('phase')} node={p['spec'].get('nodeName')} ip={st.get('podIP')}: {ctrs}")
    return out


def tenant_ready(e, addr, label="kamaji"):
    """After the Deployment is available, with the tenant API server answering at addr: Kamaji marks
    the TenantControlPlane Ready, the provider the KamajiControlPlane, and writes the kubeconfig."""
    bed = e.kamaji_bed
    c, fails = bed.c, []
    t0 = time.time()

    def ready():
        t = c.get("-n", TENANT, TCP, TENANT)
        return t if t.get("status", {}).get("kubernetesResources", {}).get("version", {}).get("status") == "Ready" else None
    try:
        tcp = c.wait_for(f"TenantControlPlane {TENANT} Ready (Kamaji)", ready, timeout=240, interval=2)
    except TimeoutError as ex:
        t = c.get("-n", TENANT, TCP, TENANT)
        return [f"{ex}; status: {json.dumps(t.get('status', {}).get('kubernetesResources', {}).get('version'))}; "
                f"kamaji log: {bed.log('kamaji')[-1500:]}"]
    e.r.figure(f"{label}: Deployment available -> TenantControlPlane Ready (Kamaji's kubeadm phases and add-ons)", f"{time.time() - t0:.1f}s")
    # The tenant's data sits in the DataStore under the prefix Kamaji set up for it (its schema:
    # status.storage.setup.schema, the TenantControlPlane's UID by default, tcp_defaults.go).
    schema = tcp.get("status", {}).get("storage", {}).get("setup", {}).get("schema")
    if schema:
        prefix = f"/{schema}/".encode()
        end = prefix[:-1] + bytes([prefix[-1] + 1])
        n = int(bed.etcd_call("/v3/kv/range", {"key": b64(prefix), "range_end": b64(end), "count_only": True}).get("count", 0))
        print(f"  DataStore: {n} keys under {prefix.decode()} (the tenant API server's data)", flush=True)
        if n == 0:
            fails.append(f"no key under {prefix.decode()} in the DataStore although the tenant API server serves")
    else:
        fails.append(f"TenantControlPlane status.storage.setup has no schema: {tcp.get('status', {}).get('storage')}")
    print(f"  TenantControlPlane {TENANT}: Ready, version {tcp['status']['kubernetesResources']['version'].get('version')}, "
          f"addons {json.dumps(tcp['status'].get('addons', {}))[:300]}", flush=True)

    def kubeconfig():
        k = c.get("-n", TENANT, KCP, TENANT)
        st = k.get("status", {})
        if not (st.get("ready") and st.get("initialization", {}).get("controlPlaneInitialized")):
            return None
        r = c.kubectl("get", "-n", TENANT, "secret", f"{TENANT}-kubeconfig", "-o", "json", check=False)
        return (k, json.loads(r.stdout)) if r.returncode == 0 else None
    try:
        k, secret = c.wait_for(f"the provider: KamajiControlPlane ready and Secret {TENANT}-kubeconfig", kubeconfig, timeout=180, interval=2)
    except TimeoutError as ex:
        k = c.get("-n", TENANT, KCP, TENANT)
        return fails + [f"{ex}; KCP status: {json.dumps(k.get('status'))[:800]}; provider log: {bed.log(PROVIDER)[-800:]}"]
    e.r.figure(f"{label}: tenant objects applied -> KamajiControlPlane ready and <cluster>-kubeconfig written (1 tenant)",
               f"{time.time() - e.kamaji_state['t_apply']:.1f}s")
    k = with_fields(c, "-n", TENANT, KCP, TENANT)
    print(f"  KamajiControlPlane {TENANT}: ready={k['status'].get('ready')} version={k['status'].get('version')} "
          f"replicas {k['status'].get('readyReplicas')}/{k['status'].get('replicas')}, status written by {managers_of(k, 'status')}", flush=True)
    if secret.get("type") != "cluster.x-k8s.io/secret" or "value" not in secret.get("data", {}):
        fails.append(f"Secret {TENANT}-kubeconfig: type {secret.get('type')}, keys {sorted(secret.get('data', {}))}")
        return fails
    path = os.path.join(bed.work, f"{TENANT}-kubeconfig")
    open(path, "wb").write(base64.b64decode(secret["data"]["value"]))
    server = yaml_docs(open(path).read())[0]["clusters"][0]["cluster"]["server"]
    host = server.split("//", 1)[1].rsplit(":", 1)[0]
    if e.kamaji_state.get("lb_routed") == host:
        route = []  # kube-proxy routes the LoadBalancer address (real_pods_serve): the kubeconfig as written
        print(f"  {TENANT}-kubeconfig used as written: kube-proxy routes {host} to the tenant's Pods", flush=True)
    else:
        # The LoadBalancer address (MetalLB's) is not routed here: the request goes to addr with the
        # address as TLS server name, so the certificate is verified for it as a client there would.
        standin(f"the route to the LoadBalancer address {server}: {addr}, TLS server name {host}")
        route = ["--server", f"https://{addr}", "--tls-server-name", host]
    r = subprocess.run(["kubectl", "--kubeconfig", path, *route, "get", "--raw", "/version"], capture_output=True, text=True)
    if r.returncode != 0:
        return fails + [f"{TENANT}-kubeconfig does not reach the tenant API server: {r.stderr.strip()[:400]}"]
    print(f"  {TENANT}-kubeconfig ({server}) reaches the tenant API server: {json.loads(r.stdout)['gitVersion']}", flush=True)
    e.kamaji_state["tenant"] = ["kubectl", "--kubeconfig", path, *route]
    e.kamaji_state["tenant_addr"] = addr
    return fails


def kubelet_config_cluster_dns(e):
    """Issue 41 finding 1 in the tenant: Kamaji's kube-system/kubelet-config (what joining kubelets
    take) has clusterDNS equal to the address of CoreDNS's Service kube-dns, both written by Kamaji
    (internal/kubeadm/uploadconfig.go from the TenantControlPlane's networkProfile.dnsServiceIPs;
    internal/kubeadm/addon.go: kube-dns is the 10th address of the service CIDR)."""
    tenant = e.kamaji_state["tenant"]

    def get(*args):
        return json.loads(subprocess.run([*tenant, "get", "-o", "json", *args], capture_output=True, text=True, check=True).stdout)
    bed = e.kamaji_bed
    try:
        svc = bed.c.wait_for("Service kube-system/kube-dns in the tenant (Kamaji's CoreDNS add-on)",
                             lambda: get("-n", "kube-system", "service", "kube-dns"), timeout=120, interval=2)
        cm = get("-n", "kube-system", "configmap", "kubelet-config")
    except (TimeoutError, subprocess.CalledProcessError) as ex:
        return [f"{ex}"]
    cfg = yaml_docs(cm["data"].get("kubelet", ""))[0] if cm.get("data", {}).get("kubelet") else {}
    dns = cfg.get("clusterDNS")
    print(f"  tenant: kube-dns {svc['spec'].get('clusterIP')}; kubelet-config clusterDNS {dns}, cgroupDriver {cfg.get('cgroupDriver')}", flush=True)
    if dns != [svc["spec"].get("clusterIP")]:
        return [f"the tenant's kube-system/kubelet-config has clusterDNS {dns}, CoreDNS's Service kube-dns is "
                f"{svc['spec'].get('clusterIP')}: kubelets joining this tenant give Pods no cluster DNS (issue 41 finding 1: "
                "the KamajiControlPlane must render addons.coreDNS.dnsServiceIPs)"]
    return []


def person_kubeconfig(e):
    """Issue 41 item 5 on the real pair: a member of the tenant's admin group, with only the rights
    the rendered Role `acme-admin` gives it on the management cluster, cannot read the tenant's
    admin certificate (`acme-kubeconfig`), yet `kaas-gitops kubeconfig` gives it a kubeconfig
    whose CA is the tenant's (Kamaji's `acme-ca`): read from the tenant API server's
    `kube-public/cluster-info`, which Kamaji writes (internal/kubeadm/bootstraptoken.go)."""
    bed, f = e.kamaji_bed, e.kamaji_state["fleet"]
    c, fails = bed.c, []
    addr = e.kamaji_state["tenant_addr"]
    person = c.client_kubeconfig("jane", f"/O={TENANT}-admins/CN=jane@example.com")
    r = c.kubectl("--kubeconfig", person, "get", "-n", TENANT, "secret", f"{TENANT}-kubeconfig", check=False)
    if r.returncode == 0 or "forbidden" not in r.stderr:
        fails.append(f"a member of {TENANT}-admins could read Secret {TENANT}-kubeconfig (the tenant's admin certificate): "
                     f"rc {r.returncode} {r.stderr.strip()[:300]}")
    else:
        print(f"  as jane ({TENANT}-admins): get secret {TENANT}-kubeconfig refused: {r.stderr.strip()[:160]}", flush=True)
    ca_secret = c.get("-n", TENANT, "secret", f"{TENANT}-ca")
    ca_pem = base64.b64decode(ca_secret["data"]["ca.crt"])
    ca_file = os.path.join(bed.work, f"{TENANT}-ca.crt")
    open(ca_file, "wb").write(ca_pem)
    fp = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", ca_file],
                        capture_output=True, text=True, check=True).stdout.strip().rsplit("=", 1)[1]
    if e.kamaji_state.get("lb_routed"):
        via = []  # kube-proxy routes the endpoint (real_pods_serve): kubeconfig dials it as written
    else:
        tunnel = f"https://{addr}"
        standin(f"the route to the tenant's endpoint: `kaas-gitops kubeconfig --server {tunnel}` (a tunnel, as through a bastion)")
        via = ["--server", tunnel]
    for pin in (None, fp):
        args = ["kubeconfig", TENANT, "--kubeconfig", person, *via] + (["--ca-sha256", pin] if pin else [])
        r = f.kaas_gitops(*args, check=False)
        if r.returncode != 0:
            fails.append(f"kaas-gitops {' '.join(args)} exited {r.returncode}: {r.stderr.strip()[:600]}")
            continue
        cfg = yaml_docs(r.stdout)[0]
        cluster = cfg["clusters"][0]["cluster"]
        if base64.b64decode(cluster["certificate-authority-data"]) != ca_pem:
            fails.append(f"the kubeconfig's CA is not the tenant's ({TENANT}-ca ca.crt)")
        users = json.dumps(cfg["users"])
        if "client-key-data" in users or '"token":' in users:
            fails.append(f"the person's kubeconfig holds a credential: {users[:300]}")
        want_warning = pin is None
        warned = "taken from its API server on first use: sha256:" + fp.replace(":", "").lower() in r.stderr
        if warned != want_warning:
            fails.append(f"--ca-sha256 {pin}: stderr {r.stderr.strip()[:300]!r}")
        print(f"  kaas-gitops kubeconfig {TENANT} as jane{' --ca-sha256 ' + pin[:11] + '...' if pin else ''}: CA = {TENANT}-ca "
              f"(sha256 {fp[:11]}...), server {cluster['server']}, tls-server-name {cluster.get('tls-server-name')}", flush=True)
    r = f.kaas_gitops("kubeconfig", TENANT, "--kubeconfig", person, *via, "--ca-sha256", "00" * 32, check=False)
    if r.returncode != 2 or "not sha256:" + "00" * 32 not in r.stderr:
        fails.append(f"a wrong --ca-sha256 was not refused with exit 2: {r.returncode} {r.stderr.strip()[:300]}")
    return fails


def rbac_held(e):
    """Kamaji and the provider ran as their ServiceAccounts under their upstream RBAC: no request
    of theirs was refused (the authorizer's `is forbidden: User ...`)."""
    return e.kamaji_bed.c.forbidden(["kamaji", PROVIDER])


def default_bed_only(e, r, serves, name, why):
    """Whether to run a scenario of the default kamaji bed: with E2E_KAMAJI_PODS=1 it is a note,
    not a failure (that bed leaves it to the default one, for `why`); without a tenant that
    serves, it is not run."""
    if not serves:
        r.not_run(name, "the tenant API server did not serve")
        return False
    if pods_wanted(e):
        print(f"  note: {name.split(':', 1)[1].split(' (')[0].strip()} runs in the default kamaji bed, not with "
              f"E2E_KAMAJI_PODS=1 ({why})", flush=True)
        return False
    return True


def run(e, r):
    """The kamaji scenarios in a bed of their own, stopped when done (whatever happened)."""
    if not getattr(e.a, "kamaji_bin", None):
        r.not_run("kamaji: the real Kamaji and provider", "no --kamaji-bin (tests/e2e/run builds it for E2E_ONLY=kamaji)")
        return
    pods = pods_wanted(e)
    print("  real: etcd, kube-apiserver, kube-controller-manager, CAPI core + kubeadm bootstrap managers, Kamaji 26.8.2-edge "
          "(chart CRDs, RBAC, webhooks), Kamaji provider v0.20.0 (config/rbac), the rendered tenant objects; once the "
          "tenant serves, Flux's source-, kustomize- and helm-controller (flux2's RBAC) and the Cilium chart"
          + (", kube-scheduler, one Node (kubelet + kube-proxy v1.34.4, containerd, runc, bridge CNI) running the "
             "TenantControlPlane's Pods: kube-apiserver, kube-controller-manager, kube-scheduler, konnectivity-server "
             "(E2E_KAMAJI_PODS=1)" if pods else ""), flush=True)
    if pods:
        print("  stand-ins: the kamaji-etcd chart (a TLS etcd process + its DataStore), CAPMOX, cert-manager, cluster DNS "
              "for Kamaji (/etc/hosts -> the Service's ClusterIP), MetalLB (the bed writes the Service's LoadBalancer "
              "address; kube-proxy routes it), the images (built here under the upstream names: the control plane images are "
              "the bed's v1.34.4 programs)", flush=True)
    else:
        print("  stand-ins: the kamaji-etcd chart (a TLS etcd process + its DataStore), CAPMOX, cert-manager, cluster DNS "
              "for Kamaji, the LoadBalancer route, the kubelet of the TenantControlPlane's Pods (kwok's fake Nodes + one "
              "kube-apiserver and one kube-controller-manager process with the Pod's args; its scheduler and "
              "konnectivity-server do not run)",
              flush=True)
    try:
        ok = r.run("kamaji: the provider creates the TenantControlPlane once its DataStore exists (Kamaji's webhook refuses "
                   "it before); Kamaji writes the Deployment, Service, certificates and the datastore user; the "
                   "KamajiControlPlane's status comes from the provider", real_pair_makes_the_control_plane, e)
        if getattr(e, "kamaji_bed", None) is not None:
            r.run("kamaji: the provider, started after Kamaji's CRDs are served (kaas-kamaji before kaas-platform), "
                  "watches TenantControlPlanes (issue 41 item 4)", provider_watches_tenant_control_planes, e)
        else:
            r.not_run("kamaji: the provider watches TenantControlPlanes", "the bed did not start")
        if ok:
            r.run("kamaji: the TenantControlPlane keeps networkProfile.dnsServiceIPs across the provider's updates "
                  "(issue 41 finding 1)", dns_service_ips_kept, e)
        else:
            r.not_run("kamaji: dnsServiceIPs kept", "the scenario before it failed")
        serves = ok and r.run(
            f"kamaji: the TenantControlPlane's API server serves ({'its Pods run on a real kubelet + containerd' if pods else 'stand-in kubelet'}); Kamaji marks it Ready, the provider "
            "reports the KamajiControlPlane ready and writes <cluster>-kubeconfig, which reaches it", tenant_control_plane_serves, e)
        if not ok:
            r.not_run("kamaji: the tenant API server serves", "the scenario before it failed")
        if serves:
            r.run("kamaji: the tenant's kubelet-config has clusterDNS equal to kube-dns's address (issue 41 finding 1)",
                  kubelet_config_cluster_dns, e)
        else:
            r.not_run("kamaji: the tenant's kubelet-config clusterDNS", "the tenant API server did not serve")
        datastores_only = os.environ.get("E2E_KAMAJI_ONLY") == "datastores"
        if datastores_only:
            print("  E2E_KAMAJI_ONLY=datastores: only the first tenant's scenarios and the datastores' run", flush=True)
        if not datastores_only:
            if serves:
                r.run("kamaji: a tenant admin cannot read the admin certificate, and `kaas-gitops kubeconfig` gives them the "
                      "tenant's CA from its cluster-info (issue 41 item 5)", person_kubeconfig, e)
            else:
                r.not_run("kamaji: a tenant admin's kubeconfig", "the tenant API server did not serve")
            if serves:
                from kamaji_flux import flux_installs_into_tenant  # imports this module
                r.run("kamaji: Flux installs into the tenant through the provider's <cluster>-kubeconfig as written: the "
                      "access Kustomization's ClusterRoleBindings and the CNI HelmRelease's objects arrive"
                      + ("" if pods_wanted(e) else "; the tenant API server takes the issuer's tokens and those bindings "
                         "judge them") + " (issue 42 item 3)", flux_installs_into_tenant, e)
            else:
                r.not_run("kamaji: Flux installs into the tenant", "the tenant API server did not serve")
            upgrade = ("kamaji: `upgrade --to` on the real pair: it waits until the real Cluster API managers report the pools "
                       "healthy, writes the control plane step; Kamaji rolls the tenant's Deployment, the provider reports the "
                       "new version, and only then does the next run write the pools' step (issue 42 item 4)")
            if default_bed_only(e, r, serves, upgrade, "the images of the next version are not built: build-pods.sh builds "
                                "the tenant's version only"):
                from kamaji_upgrade import upgrade_on_real_pair  # imports this module
                r.run(upgrade, upgrade_on_real_pair, e)
            if getattr(e, "kamaji_bed", None) is not None:
                r.run("kamaji: Kamaji and the provider ran as their ServiceAccounts under their upstream RBAC: no request refused",
                      rbac_held, e)
            else:
                r.not_run("kamaji: RBAC held", "the bed did not start")
            rebuild = (("kamaji: a management cluster lost (no finalizer run) with the tenant's DataStore, which is restored "
                        "from an etcdctl snapshot (etcdutl --bump-revision --mark-compacted), and rebuilt from git brings the "
                        "tenant back on its old key prefix with the snapshot's data (issues 41 item 2, 45)")
                       if os.environ.get("E2E_KAMAJI_REBUILD") == "restored" else
                       ("kamaji: a management cluster lost (no finalizer run, its DataStore kept) and rebuilt from git brings "
                        "the tenant back on its old key prefix with its data (issue 41 item 2)"))
            if default_bed_only(e, r, serves, rebuild, "its Node would have to outlive the lost management cluster"):
                from kamaji_rebuild import management_rebuilt_from_git  # imports this module
                r.run(rebuild, management_rebuilt_from_git, e)
            gateway = ("kamaji: a running tenant moved behind one Gateway (refused until acknowledged): Kamaji's webhook accepts "
                       "it, Kamaji makes the API server and Konnectivity TLSRoutes and reports their access points, the "
                       "endpoint follows in the Cluster, control plane and ProxmoxCluster, kubectl reaches the tenant through "
                       "the Gateway by SNI, the admin kubeconfigs and cluster-info (deleted), as the move's steps say, name the "
                       "hostname, and the ingress form is admitted (issue 44)")
            if default_bed_only(e, r, serves and bool(e.kamaji_state.get("tenant_addr")), gateway,
                                "the bed routes the Gateway to a tenant API server process"):
                from kamaji_gateway import tenant_behind_gateway  # imports this module
                r.run(gateway, tenant_behind_gateway, e)
            if getattr(e, "kamaji_state", {}).get("tenant"):
                from kamaji_deletion import deleted_in_two_steps  # imports this module
                r.run("kamaji: the tenant deleted through git in two steps (docs/lifecycle.md): decommissioned, Cluster API "
                      "deletes its control plane and Kamaji's finalizer drops its data and user from the DataStore, which "
                      "still serves; then the file, and the DataStore goes once no control plane uses it (issue 42 item 4)",
                      deleted_in_two_steps, e)
            else:
                r.not_run("kamaji: the tenant deleted through git", "the tenant API server did not serve")
            fleet = ("kamaji: ten tenants applied at once on the shared DataStore: every TenantControlPlane Ready and every "
                     "<tenant>-kubeconfig reaching its API server, each on its own schema (issue 42 benchmark)")
            if default_bed_only(e, r, serves, fleet, "5-8.5 GiB of control plane Pods on the one Node"):
                from kamaji_fleet import ten_tenants, ten_tenants_recovered  # imports this module
                r.run(fleet, ten_tenants, e)
                recovery = ("kamaji: the ten tenants' management cluster and shared DataStore lost, the DataStore restored "
                            "from an etcdctl snapshot (etcdutl --bump-revision --mark-compacted), the platform and tenants "
                            "applied again from git: every tenant serves its objects of the snapshot (issue 45)")
                if getattr(e, "kamaji_fleet", None):
                    r.run(recovery, ten_tenants_recovered, e)
                else:
                    r.not_run(recovery, "the ten tenants did not serve")
        for driver, server in (("PostgreSQL", "Debian's postgresql"), ("MySQL", "Debian's mariadb-server, installed when missing"),
                               ("NATS", "nats-server from its Go module")):
            sql = (f"kamaji: a tenant on a real {driver} DataStore through kine ({server}): Kamaji validates the DataStore "
                   "kaas-gitops rendered (its Secret named, never written), creates the tenant's database and user under the "
                   f"rendered names, and the tenant API server serves from {driver}"
                   + ("; then the management cluster lost with the tenant's database: a new management bed from git and "
                      "the database from its pg_dump bring the tenant back with its objects" if driver == "PostgreSQL" else
                      "; its database dumped, lost and restored" if driver == "MySQL" else "") + " (issue 45)")
            if default_bed_only(e, r, serves, sql, "the kine image is not built for the Node"):
                from kamaji_sql import tenant_on  # imports this module
                r.run(sql, tenant_on, e, driver)
        events = ("kamaji: a tenant's /events on an etcd DataStore of their own (the fleet's default etcd and its overrides, "
                  "one CA for both): Kamaji gives the API server --etcd-servers-overrides, the tenant's Events land on that "
                  "etcd and its other objects on its own (issue 45)")
        if default_bed_only(e, r, serves, events, "the bed's etcds listen on loopback only"):
            from kamaji_sql import events_on_own_store  # imports this module
            r.run(events, events_on_own_store, e)
    finally:
        issuer = getattr(e, "kamaji_issuer", None)
        if issuer is not None:
            issuer.stop()
        bed = getattr(e, "kamaji_bed", None)
        if bed is not None:
            if any(res[1] == "FAIL" for res in r.results[-3:]):
                print(bed.c.tail_logs(30), flush=True)
            node = getattr(e, "kamaji_node", None)
            if node is not None:
                node.stop()
            bed.c.stop()
