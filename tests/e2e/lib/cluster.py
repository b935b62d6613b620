"""The management cluster on loopback: etcd -> kube-apiserver -> kube-controller-manager, the
upstream CRDs, and the Flux controllers (source, kustomize, helm) as local processes.

Every process runs in its own process group and is stopped by Cluster.stop() (called from the
driver's finally and atexit, whatever happened). Logs stay in <work>/logs/<name>.log.
"""
import json, os, re, signal, socket, subprocess, time, glob, urllib.request, ssl

SHARED = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "shared"))
# The upstream CRDs and charts: KAAS_CRDS / KAAS_CHARTS (tests/run and tests/e2e/run set them from
# tests/upstream/crds.sh and charts.sh), else the development folder ../shared.
CRDS = os.environ.get("KAAS_CRDS") or os.path.join(SHARED, "crds")
CHARTS = os.environ.get("KAAS_CHARTS") or os.path.join(SHARED, "charts")


BUILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build")


def built(program, module):
    """`module@version` as tests/e2e/build/<program>/go.mod requires it: the bed reads the CRDs,
    RBAC and manifests of the very release it builds the program from (one home per version)."""
    for line in open(os.path.join(BUILD, program, "go.mod")):
        parts = line.split()
        if parts[:1] == ["require"]:
            parts = parts[1:]
        if len(parts) >= 2 and parts[0] == module:
            return f"{module}@{parts[1]}"
    raise RuntimeError(f"tests/e2e/build/{program}/go.mod does not require {module}")


FLUX_CONTROLLERS = tuple(built(p, f"github.com/fluxcd/{p}") for p in ("source-controller", "kustomize-controller", "helm-controller"))
# Go modules (downloaded by tests/e2e/run, lib/modules.py) whose config/crd/bases complete CRDS.
UPSTREAM_CRD_MODULES = FLUX_CONTROLLERS + ("sigs.k8s.io/cluster-api-operator@v0.28.0",
                        "sigs.k8s.io/cluster-api-provider-kubevirt@v0.11.2",
                        "github.com/nutanix-cloud-native/cluster-api-provider-nutanix@v1.10.3")


# Flux's distribution (what `flux install` and `flux bootstrap` apply): its manifests/rbac gives
# every controller the ClusterRole crd-controller (controller.yaml) and binds cluster-admin to
# kustomize-controller and helm-controller (reconciler.yaml, ClusterRoleBinding cluster-reconciler:
# they apply whatever their sources hold). The files are the same in every v2.9 release the proxy
# serves (v2.9.1, v2.9.2, v2.9.5), the line of the bed's controllers (source v1.9.1, kustomize
# v1.9.4, helm v1.6.3). Cluster.start_flux runs each controller as its ServiceAccount under them.
FLUX_DISTRIBUTION = "github.com/fluxcd/flux2/v2@v2.9.5"
FLUX_RBAC = ("manifests/rbac/controller.yaml", "manifests/rbac/reconciler.yaml")
FLUX_NAMESPACE = "flux-system"

# kwok (tests/e2e/build/kwok, the same tag): Cluster.start_nodes reads its RBAC and Stages here.
KWOK = built("kwok", "sigs.k8s.io/kwok")
# The Go modules whose files this bed reads (lib/modules.py; tests/e2e/run downloads them).
MODULES = UPSTREAM_CRD_MODULES + (FLUX_DISTRIBUTION, KWOK)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


class Cluster:
    def __init__(self, work, bin_dir, gomodcache):
        self.work, self.bin, self.gomodcache = work, bin_dir, gomodcache
        self.logs = os.path.join(work, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.procs = {}  # name -> Popen
        self.kubeconfig = os.path.join(work, "admin.kubeconfig")

    # ---- processes -------------------------------------------------------------------------
    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.logs, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                             env={**os.environ, **(env or {})}, cwd=self.work)
        self.procs[name] = p
        return p

    def cpu_seconds(self):
        """{process name: user + system CPU seconds so far} from /proc (Linux)."""
        tick = os.sysconf("SC_CLK_TCK")
        out = {}
        for n, p in self.procs.items():
            try:
                # Fields after the command's closing parenthesis: utime and stime are the 12th
                # and 13th (proc(5) numbers them 14 and 15).
                f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                out[n] = (int(f[11]) + int(f[12])) / tick
            except (OSError, IndexError, ValueError):
                pass
        return out

    def check_alive(self):
        dead = [f"{n} (exit {p.returncode})" for n, p in self.procs.items() if p.poll() is not None]
        if dead:
            raise RuntimeError("process died: " + ", ".join(dead))

    def stop(self):
        # Reverse start order: controllers first, etcd last.
        for name, p in reversed(list(self.procs.items())):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.time() + 10
        for name, p in self.procs.items():
            try:
                p.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.procs.clear()
        if getattr(self, "kc_tmp", None):
            import shutil
            shutil.rmtree(self.kc_tmp, ignore_errors=True)

    def tail_logs(self, n=40):
        out = []
        for f in sorted(glob.glob(os.path.join(self.logs, "*.log"))):
            lines = open(f, errors="replace").read().splitlines()[-n:]
            out.append(f"---- {f} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(out)

    def wait_for(self, what, fn, timeout=120, interval=0.5):
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            self.check_alive()
            try:
                r = fn()
                if r:
                    return r
            except Exception as e:  # noqa: BLE001 - report the last error on timeout
                last = e
            time.sleep(interval)
        raise TimeoutError(f"timed out after {timeout}s waiting for {what}" + (f": {last}" if last else ""))

    # ---- certificates ----------------------------------------------------------------------
    def certs(self):
        d = os.path.join(self.work, "pki")
        os.makedirs(d, exist_ok=True)
        o = lambda *a: sh(["openssl", *a], cwd=d)  # noqa: E731
        o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt",
          "-days", "2", "-subj", "/CN=e2e-ca")
        open(os.path.join(d, "server.ext"), "w").write(
            "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
            "DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n")
        open(os.path.join(d, "client.ext"), "w").write("extendedKeyUsage=clientAuth\n")
        for name, subj, ext in (("server", "/CN=kube-apiserver", "server.ext"),
                                ("admin", "/O=system:masters/CN=e2e-admin", "client.ext")):
            o("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subj)
            o("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
              "-out", f"{name}.crt", "-days", "2", "-extfile", ext)
        o("genrsa", "-out", "sa.key", "2048")
        o("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub")
        self.pki = d

    # ---- control plane ---------------------------------------------------------------------
    def start_control_plane(self, extra_apiserver_args=()):
        # A scenario that needs the CA before the API server starts (lib/access.py) made it.
        if not getattr(self, "pki", None):
            self.certs()
        p = self.pki
        client, peer = free_port(), free_port()
        self.spawn("etcd", [f"{self.bin}/etcd", "--name", "e2e", "--data-dir", os.path.join(self.work, "etcd"),
                            "--listen-client-urls", f"http://127.0.0.1:{client}",
                            "--advertise-client-urls", f"http://127.0.0.1:{client}",
                            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                            "--initial-cluster", f"e2e=http://127.0.0.1:{peer}",
                            "--unsafe-no-fsync", "--quota-backend-bytes", str(4 << 30),
                            "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}"])
        self.etcd_url = f"http://127.0.0.1:{client}"
        self.wait_for("etcd /health", lambda: b'"health":"true"' in urllib.request.urlopen(
            f"http://127.0.0.1:{client}/health", timeout=2).read(), timeout=30)

        self.api_port = free_port()
        self.spawn("kube-apiserver", [
            f"{self.bin}/kube-apiserver", f"--etcd-servers=http://127.0.0.1:{client}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={self.api_port}",
            f"--tls-cert-file={p}/server.crt", f"--tls-private-key-file={p}/server.key",
            f"--client-ca-file={p}/ca.crt", "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={p}/sa.pub", f"--service-account-signing-key-file={p}/sa.key",
            "--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true",
            f"--cert-dir={self.work}/apiserver-certs", "--enable-priority-and-fairness=false",
            "--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
            # The kubernetes Service endpoints may not be a loopback address; nothing here needs them.
            "--endpoint-reconciler-type=none", *extra_apiserver_args])
        server = f"https://127.0.0.1:{self.api_port}"
        cfg = {"apiVersion": "v1", "kind": "Config", "current-context": "e2e",
               "clusters": [{"name": "e2e", "cluster": {"server": server, "certificate-authority": f"{p}/ca.crt"}}],
               "users": [{"name": "admin", "user": {"client-certificate": f"{p}/admin.crt", "client-key": f"{p}/admin.key"}}],
               "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "admin"}}]}
        json.dump(cfg, open(self.kubeconfig, "w"))
        ctx = ssl.create_default_context(cafile=f"{p}/ca.crt")
        ctx.load_cert_chain(f"{p}/admin.crt", f"{p}/admin.key")
        self.wait_for("kube-apiserver /readyz", lambda: urllib.request.urlopen(
            server + "/readyz", context=ctx, timeout=2).status == 200, timeout=90)
        self.version = json.loads(urllib.request.urlopen(server + "/version", context=ctx, timeout=5).read())

        self.spawn("kube-controller-manager", [
            f"{self.bin}/kube-controller-manager", f"--kubeconfig={self.kubeconfig}",
            f"--authentication-kubeconfig={self.kubeconfig}", f"--authorization-kubeconfig={self.kubeconfig}",
            "--bind-address=127.0.0.1", f"--secure-port={free_port()}", "--leader-elect=false",
            f"--service-account-private-key-file={p}/sa.key", f"--root-ca-file={p}/ca.crt",
            "--use-service-account-credentials=false", "--controllers=*",
            f"--cert-dir={self.work}/kcm-certs"])

    # ---- nodes: kube-scheduler and kwok ---------------------------------------------------
    def client_kubeconfig(self, name, subject):
        """A kubeconfig for a client certificate of the bed's CA with the given subject (how
        kubeadm writes scheduler.conf: CN=system:kube-scheduler)."""
        d = self.pki
        o = lambda *a: sh(["openssl", *a], cwd=d)  # noqa: E731
        o("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject)
        o("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
          "-out", f"{name}.crt", "-days", "2", "-extfile", "client.ext")
        cfg = json.load(open(self.kubeconfig))
        cfg["users"] = [{"name": name, "user": {"client-certificate": f"{d}/{name}.crt", "client-key": f"{d}/{name}.key"}}]
        cfg["contexts"][0]["context"]["user"] = name
        path = os.path.join(self.work, f"{name}.kubeconfig")
        json.dump(cfg, open(path, "w"))
        return path

    def sa_kubeconfig(self, ns, sa, duration="6h"):
        """A kubeconfig that authenticates as the ServiceAccount (a TokenRequest token)."""
        token = self.kubectl("create", "token", "-n", ns, sa, f"--duration={duration}").strip()
        cfg = json.load(open(self.kubeconfig))
        cfg["users"] = [{"name": sa, "user": {"token": token}}]
        cfg["contexts"][0]["context"]["user"] = sa
        path = os.path.join(self.work, f"{sa}.kubeconfig")
        json.dump(cfg, open(path, "w"))
        return path

    def start_scheduler(self, wait=True):
        """kube-scheduler as user system:kube-scheduler: the API server's bootstrap RBAC binds it the
        ClusterRoles system:kube-scheduler and system:volume-scheduler and the kube-system Role
        extension-apiserver-authentication-reader (kubernetes v1.34.4,
        plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go ClusterRoleBindings and
        namespace_policy.go), as kubeadm's scheduler.conf does. Returns its secure port."""
        kc = self.client_kubeconfig("kube-scheduler", "/CN=system:kube-scheduler")
        sched_port = free_port()
        self.spawn("kube-scheduler", [
            f"{self.bin}/kube-scheduler", f"--kubeconfig={kc}", f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}", "--bind-address=127.0.0.1", f"--secure-port={sched_port}",
            "--leader-elect=false"])
        if wait:
            ctx = ssl.create_default_context()
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            self.wait_for("kube-scheduler /healthz", lambda: urllib.request.urlopen(
                f"https://127.0.0.1:{sched_port}/healthz", context=ctx, timeout=2).status == 200, timeout=60)
        return sched_port

    def start_nodes(self, count=3):
        """Nodes whose Pods "run": the real kube-scheduler binds Pods to `count` fake Nodes that
        kwok plays the kubelet of. kwok runs no container: its Stages write what a kubelet would
        (Node conditions and heartbeats; a bound Pod Running and Ready; a Job's Pod Succeeded; a
        PVC of the kwok-volume StorageClass bound to a PV it creates), so kube-controller-manager
        writes Deployment, StatefulSet and Job status from Pods that never executed anything.
        Opt-in (lib/availability.py): the other scenarios keep the bed without nodes."""
        import yaml
        kwok = os.path.join(self.gomodcache, KWOK)
        if not os.path.isdir(kwok):
            raise RuntimeError(f"{KWOK} is not in the Go module cache (tests/e2e/run downloads it)")
        for prog in ("kube-scheduler", "kwok"):
            if not os.access(os.path.join(self.bin, prog), os.X_OK):
                raise RuntimeError(f"not built: {prog} (tests/e2e/build.sh)")
        sched_port = self.start_scheduler(wait=False)
        # kwok under its upstream RBAC: the kwok-controller ServiceAccount and ClusterRole of
        # kustomize/rbac, and the kwok-volume ClusterRole of kustomize/stage/volume/rbac (v0.8.0);
        # their FlowSchema is left out (this API server runs without priority and fairness).
        # kwok only watches Nodes: the Nodes are created below, as an administrator would.
        docs, stages = [], []
        for k in ("kustomize/rbac", "kustomize/stage/fast", "kustomize/stage/volume/fast"):
            for d in yaml.safe_load_all(sh(["kubectl", "kustomize", os.path.join(kwok, k)])):
                if not d or d["kind"] == "FlowSchema":
                    continue
                (stages if d["kind"] == "Stage" else docs).append(d)
        self.kubectl("apply", "--server-side", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        # The Stages go to kwok's --config (kwokctl hands its kwok the same ones that way): the
        # set kwok's in-cluster install applies, kustomize/stage/fast (node-initialize, the node
        # heartbeat with a Lease, pod-ready, pod-complete for Job Pods, pod-delete), and the
        # volume Stages of kustomize/stage/volume/fast (a PVC of its default StorageClass
        # kwok-volume gets a PV and is bound; no other StorageClass is provisioned here).
        stage_file = os.path.join(self.work, "kwok-stages.yaml")
        open(stage_file, "w").write("\n---\n".join(json.dumps(d) for d in stages) + "\n")
        kwok_port = free_port()
        self.spawn("kwok", [
            f"{self.bin}/kwok", f"--kubeconfig={self.sa_kubeconfig('kube-system', 'kwok-controller')}",
            f"--config={stage_file}",
            # The selector and lease of kwok's own in-cluster configuration (kustomize/kwok/kwok.yaml).
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake", "--node-lease-duration-seconds=40",
            # Pod IPs outside the bed's Service range (10.0.0.0/24, kwok's default CIDR too).
            "--cidr=10.244.0.0/16", "--node-ip=127.0.0.1", f"--server-address=127.0.0.1:{kwok_port}"])
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        self.wait_for("kube-scheduler /healthz", lambda: urllib.request.urlopen(
            f"https://127.0.0.1:{sched_port}/healthz", context=ctx, timeout=2).status == 200, timeout=60)
        self.wait_for("kwok /healthz", lambda: urllib.request.urlopen(
            f"http://127.0.0.1:{kwok_port}/healthz", timeout=2).status == 200, timeout=60)
        # kwok's fake Node (v0.8.0 test/kwok/fake-node.yaml) without its NoSchedule taint: the
        # charts' Pods tolerate none.
        nodes = [{"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": f"kwok-node-{i}",
                               "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
                               "labels": {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
                                          "kubernetes.io/hostname": f"kwok-node-{i}", "type": "kwok"}}}
                 for i in range(count)]
        self.kubectl("apply", "--server-side", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))

        def ready():
            items = self.get("nodes")["items"]
            ok = [n["metadata"]["name"] for n in items
                  if any(c["type"] == "Ready" and c["status"] == "True" for c in n.get("status", {}).get("conditions", []))]
            return len(ok) >= count
        self.wait_for(f"{count} kwok Nodes Ready", ready, timeout=60, interval=1)

    def kubectl(self, *args, input=None, check=True):
        r = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], input=input,
                           capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r.stdout if check else r

    def get(self, *args):
        return json.loads(self.kubectl("get", "-o", "json", *args))

    # ---- CRDs ------------------------------------------------------------------------------
    def crd_files(self):
        files = {}
        # Flux's own CRDs from the controllers' modules (their config/crd/bases at the built tags;
        # shared/crds has only some of them, and source-controller also needs HelmChart, Bucket,
        # ExternalArtifact to start).
        # IPAMProvider likewise comes from sigs.k8s.io/cluster-api-operator at the tag of
        # ../shared/crds/operator.cluster.x-k8s.io (v0.28.0; its other CRDs are byte-identical),
        # KubevirtClusterTemplate from sigs.k8s.io/cluster-api-provider-kubevirt v0.11.2 and
        # NutanixClusterTemplate from cluster-api-provider-nutanix v1.10.3 (ditto).
        for mod in UPSTREAM_CRD_MODULES:
            for f in glob.glob(os.path.join(self.gomodcache, mod, "config/crd/bases/*.yaml")):
                files[os.path.basename(f)] = f
        # The upstream CRDs of CRDS (authoritative where both have one).
        for f in glob.glob(os.path.join(CRDS, "*", "*.yaml")):
            group = os.path.basename(os.path.dirname(f))
            files[f"{group}_{os.path.basename(f)}"] = f
        return sorted(files.values())

    def install_crds(self, keep_installed=False):
        """Installs every CRD with only its storage version and without conversion webhooks (no
        webhook servers run here). With keep_installed, the CRDs the cluster already has stay as
        they are (the CAPI bed's, with their webhooks). Returns the list of (kind, storage version)."""
        installed = []
        docs = []
        short = {}  # (group, shortName) -> CRD that has it
        skip = set()
        for crd in (self.get("crd")["items"] if keep_installed else []):
            skip.add(crd["metadata"]["name"])
            for sn in crd["spec"]["names"].get("shortNames", []):
                short[(crd["spec"]["group"], sn)] = crd["metadata"]["name"]
        for f in self.crd_files():
            crd = json.loads(self.kubectl("create", "--dry-run=client", "-o", "json", "-f", f))
            if crd["metadata"]["name"] in skip:
                continue
            spec = crd["spec"]
            spec["versions"] = [v for v in spec["versions"] if v.get("storage")]
            spec["versions"][0]["served"] = True
            spec.pop("conversion", None)
            crd["metadata"].pop("creationTimestamp", None)
            # Two providers' CRDs claim the same short name in one group (ProxmoxMachineTemplate
            # and PacketMachineTemplate: "pmt"); the API server then never establishes the second
            # (NamesAccepted=False). Installed side by side here, the second one loses the name.
            names = spec["names"]
            for sn in list(names.get("shortNames", [])):
                if (spec["group"], sn) in short:
                    print(f"  note: {crd['metadata']['name']}: short name {sn!r} already taken by "
                          f"{short[(spec['group'], sn)]}; dropped", flush=True)
                    names["shortNames"].remove(sn)
                else:
                    short[(spec["group"], sn)] = crd["metadata"]["name"]
            docs.append(crd)
            installed.append((spec["names"]["kind"], spec["group"], spec["versions"][0]["name"]))
        if not docs:
            return installed
        # One list per call keeps the request count low.
        self.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        def established():
            pending = [c["metadata"]["name"] for c in self.get("crd")["items"]
                       if not any(k["type"] == "Established" and k["status"] == "True" for k in c.get("status", {}).get("conditions", []))]
            if pending:
                raise RuntimeError(f"not Established: {pending}")
            return True
        self.wait_for("CRDs Established", established, timeout=300, interval=2)
        return installed

    # ---- Flux ------------------------------------------------------------------------------
    def start_flux(self, shards=0, helm=True):
        """source-, kustomize- and helm-controller. With shards >= 2, as Flux's sharding guide
        sets it up: the main kustomize-controller takes the objects without the
        `sharding.fluxcd.io/key` label, and one more kustomize-controller per shard takes
        `shard<K>` (the label `kaas-gitops render` puts on tenant Kustomizations, flux.shards)."""
        self.kubectl("create", "namespace", FLUX_NAMESPACE)
        kubeconfigs = self.flux_identities(["source-controller", "kustomize-controller"] + (["helm-controller"] if helm else []))
        self.storage_port = free_port()

        def env_of(sa):
            return {"KUBECONFIG": kubeconfigs[sa], "RUNTIME_NAMESPACE": FLUX_NAMESPACE}
        common = ["--enable-leader-election=false", "--log-level=info", "--log-encoding=console",
                  "--watch-all-namespaces=true"]

        def ports():
            return [f"--metrics-addr=127.0.0.1:{free_port()}", f"--health-addr=127.0.0.1:{free_port()}"]

        os.makedirs(f"{self.work}/artifacts", exist_ok=True)  # source-controller wants it to exist
        self.spawn("source-controller", [
            f"{self.bin}/source-controller", *common, *ports(),
            f"--storage-path={self.work}/artifacts", f"--storage-addr=127.0.0.1:{self.storage_port}",
            f"--storage-adv-addr=127.0.0.1:{self.storage_port}"], env_of("source-controller"))
        selector = ["--watch-label-selector=!sharding.fluxcd.io/key"] if shards >= 2 else []
        # kustomize-controller untars every artifact into os.MkdirTemp("", ...) (v1.9.4,
        # internal/controller/utils.go MkdirTempAbs): $TMPDIR on tmpfs, as Flux's "in-memory
        # kustomize builds" advice has it (the bed's /tmp is a slow ext4).
        # Shards run as the same ServiceAccount (Flux's sharding guide patches copies of the
        # kustomize-controller Deployment, serviceAccountName unchanged).
        kenv = env_of("kustomize-controller")
        if os.path.isdir("/dev/shm"):
            import tempfile
            self.kc_tmp = tempfile.mkdtemp(prefix="kaas-e2e-kc-", dir="/dev/shm")
            kenv = {**kenv, "TMPDIR": self.kc_tmp}
        self.spawn("kustomize-controller", [
            f"{self.bin}/kustomize-controller", *common, *ports(), "--concurrent=8",
            "--requeue-dependency=5s", *selector], kenv)
        for k in range(1, shards + 1 if shards >= 2 else 1):
            self.spawn(f"kustomize-controller-shard{k}", [
                f"{self.bin}/kustomize-controller", *common, *ports(), "--concurrent=8",
                "--requeue-dependency=5s", f"--watch-label-selector=sharding.fluxcd.io/key in (shard{k})"], kenv)
        if not helm:
            return
        self.spawn("helm-controller", [
            f"{self.bin}/helm-controller", *common, *ports(), "--concurrent=4",
            "--requeue-dependency=5s"], env_of("helm-controller"))

    def flux_identities(self, controllers):
        """Each controller's ServiceAccount in flux-system, Flux's distribution RBAC
        (FLUX_RBAC of FLUX_DISTRIBUTION, as `flux install` applies it) and a kubeconfig per
        controller with its token: {ServiceAccount: kubeconfig}. Never the admin certificate:
        a permission the upstream RBAC lacks fails here as it would on a management cluster
        (the informers of a controller that may not list its objects never sync, and
        E2E.flux_healthy waits for "Starting workers")."""
        import yaml
        d = os.path.join(self.gomodcache or "", FLUX_DISTRIBUTION)
        if not os.path.isdir(d):
            raise RuntimeError(f"{FLUX_DISTRIBUTION} is not in the Go module cache (tests/e2e/run downloads it)")
        docs = [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa, "namespace": FLUX_NAMESPACE}}
                for sa in controllers]
        for f in FLUX_RBAC:
            docs += [doc for doc in yaml.safe_load_all(open(os.path.join(d, f))) if doc]
        self.kubectl("apply", "--server-side", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        # 24h: the 1,000-tenant bench runs for hours on a loaded machine.
        return {sa: self.sa_kubeconfig(FLUX_NAMESPACE, sa, duration="24h") for sa in controllers}

    def forbidden(self, names):
        """Lines of the named processes' logs where RBAC refused a request: the authorizer's
        `<resource> is forbidden: User "<name>" cannot <verb> ...` (k8s.io/apiserver
        pkg/endpoints/handlers/responsewriters/errors.go, forbiddenMessage). Other 403s, such as
        NamespaceLifecycle's "is forbidden: unable to create new content in namespace X because
        it is being terminated" while a tenant is deleted, are not RBAC's and not counted."""
        out = []
        for n in names:
            path = os.path.join(self.logs, n + ".log")
            if os.path.exists(path):
                for line in open(path, errors="replace"):
                    # The message sits in a JSON-encoded field of the log line: quotes escaped.
                    m = re.search(r' is forbidden: User \\?"', line)
                    if m:
                        out.append(f"{n}: {line[max(0, m.start() - 200):m.start() + 300].strip()}")
        return out

    def bootstrap(self, git_url, interval="1m"):
        """The GitRepository and root Kustomization a `flux bootstrap` creates (path ./flux)."""
        objs = [
            {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
             "metadata": {"name": "flux-system", "namespace": "flux-system"},
             "spec": {"interval": interval, "url": git_url, "ref": {"branch": "main"}}},
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
             "metadata": {"name": "flux-system", "namespace": "flux-system"},
             "spec": {"interval": "10m", "path": "./flux", "prune": True,
                      "sourceRef": {"kind": "GitRepository", "name": "flux-system"}}},
        ]
        self.kubectl("apply", "--server-side", "-f", "-",
                     input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
