"""One real Node for the bed (issue 42 stage 2, opt-in: E2E_KAMAJI_PODS=1 with E2E_ONLY=kamaji).

Pods really run: containerd (Debian's 1.6) with runc and the bridge CNI plugin, a kubelet and a
kube-proxy v1.34.4 (tests/e2e/build-pods.sh, from the wrapper module of the bed's kube-apiserver)
registered against the bed's API server, and a loopback registry (Debian's docker-registry) that
containerd uses as the mirror of registry.k8s.io, quay.io and docker.io. Nothing is pulled from
outside: images are written here (Image, a one-layer OCI image from local files) and pushed to the
loopback registry under their upstream names. The recipe and its traps were measured on this machine
kind (../shared/research/pods-on-this-machine.md): `restrict_oom_score_adj = true` (the VM withholds
CAP_SYS_RESOURCE), cgroup v1 with `failCgroupV1: false`, the volume plugin folder, the leftovers of
killed sandboxes.

Everything lives under <work>/node; Node.stop() kills what runs (kubelet, kube-proxy, every process
in the kubelet's cgroups, the containerd shims of this containerd, containerd, the registry), unmounts
what the kubelet and containerd mounted under the work folder and the sandboxes' network namespaces,
deletes the bridge, and removes the iptables chains kube-proxy and the kubelet made.
"""
import gzip, hashlib, io, json, os, shlex, shutil, signal, socket, subprocess, tarfile, time, urllib.error, urllib.request

from cluster import free_port, sh

# Debian packages the Node needs (the opt-in path installs the missing ones itself, saying so).
PACKAGES = {"containerd": "containerd", "runc": "runc", "docker-registry": "docker-registry",
            "iptables": "iptables", "/usr/lib/cni/bridge": "containernetworking-plugins"}
MIRRORED = ("registry.k8s.io", "quay.io", "docker.io")
SANDBOX_IMAGE = "registry.k8s.io/pause:3.10"
POD_CIDR = "10.244.0.0/24"  # host-local's range on the bridge; the bed's Services are 10.0.0.0/24
BRIDGE = "kaase2e0"
FORWARD_GUARD = ("-i", BRIDGE, "!", "-o", BRIDGE, "-m", "comment", "--comment", "kaas-e2e: pods reach nothing off the machine", "-j", "DROP")
NETWORK = "kaas-e2e"
# kubelet's own iptables chains, which `kube-proxy --cleanup` leaves (research note, trap 9).
KUBELET_CHAINS = (("filter", "KUBE-FIREWALL"), ("filter", "KUBE-KUBELET-CANARY"), ("nat", "KUBE-KUBELET-CANARY"),
                  ("mangle", "KUBE-KUBELET-CANARY"), ("mangle", "KUBE-IPTABLES-HINT"), ("filter", "KUBE-IPTABLES-HINT"))


def ensure_packages():
    """Installs the Debian packages the Node needs when one is missing (apt-get; root). Returns the
    list installed (empty when all were there)."""
    missing = sorted({pkg for path, pkg in PACKAGES.items()
                      if not (os.path.exists(path) if path.startswith("/") else shutil.which(path))})
    if not missing:
        return []
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise RuntimeError(f"missing {missing} and cannot apt-get them (needs root on Debian)")
    print(f"  pods: apt-get install {' '.join(missing)} (missing on this machine)", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", *missing], check=True, env=env, capture_output=True)
    return missing


def node_ip():
    """The address of the default route's interface (the node's InternalIP; 192.0.2.2 on this kind)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent: connect on UDP only picks the route
        return s.getsockname()[0]
    finally:
        s.close()


def shared_libs(path):
    """The ELF interpreter and libraries a dynamically linked program loads (ldd), [] if static."""
    r = subprocess.run(["ldd", path], capture_output=True, text=True)
    if r.returncode != 0:
        return []
    out = []
    for line in r.stdout.splitlines():
        parts = line.split("=>")
        p = (parts[1] if len(parts) > 1 else parts[0]).strip().split(" (")[0].strip()
        if p.startswith("/"):
            out.append(p)
    return out


class Image:
    """A one-layer OCI image from local files: {path in the image: host file}. Dynamically linked
    programs get their libraries (ldd) at the same paths."""

    def __init__(self, name, files, entrypoint=None, env=None, workdir="/"):
        self.name, self.files, self.entrypoint, self.workdir = name, dict(files), entrypoint, workdir
        self.env = env or ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"]
        for host in list(self.files.values()):
            for lib in shared_libs(host):
                real = os.path.realpath(lib)
                self.files.setdefault(lib, real)

    def layer(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            dirs = set()
            for path in sorted(self.files):
                parts = path.strip("/").split("/")
                for i in range(1, len(parts)):
                    d = "/".join(parts[:i])
                    if d not in dirs:
                        dirs.add(d)
                        ti = tarfile.TarInfo(d)
                        ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                        t.addfile(ti)
            for d in ("tmp", "etc", "var/run"):
                if d not in dirs:
                    ti = tarfile.TarInfo(d)
                    ti.type, ti.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
                    t.addfile(ti)
            for path, host in sorted(self.files.items()):
                ti = t.gettarinfo(os.path.realpath(host), arcname=path.strip("/"))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                ti.mtime = 0
                with open(host, "rb") as f:
                    t.addfile(ti, f)
        raw = buf.getvalue()
        return raw, gzip.compress(raw, compresslevel=1, mtime=0)

    def push(self, registry):
        """Pushes to the loopback registry (the Docker registry HTTP API v2) under the image's
        upstream name: returns the manifest digest."""
        host, _, rest = self.name.partition("/")
        repo, _, tag = rest.rpartition(":")
        raw, gz = self.layer()
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "config": {"Env": self.env, "Entrypoint": self.entrypoint, "WorkingDir": self.workdir},
                             "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}},
                            sort_keys=True).encode()
        base = f"http://{registry}/v2/{repo}"
        for blob in (gz, config):
            digest = "sha256:" + hashlib.sha256(blob).hexdigest()
            try:
                urllib.request.urlopen(urllib.request.Request(f"{base}/blobs/{digest}", method="HEAD"), timeout=30)
                continue
            except urllib.error.HTTPError:
                pass
            r = urllib.request.urlopen(urllib.request.Request(f"{base}/blobs/uploads/", data=b"", method="POST"), timeout=30)
            loc = r.headers["Location"]
            loc = (loc if loc.startswith("http") else f"http://{registry}{loc}") + ("&" if "?" in loc else "?") + f"digest={digest}"
            urllib.request.urlopen(urllib.request.Request(loc, data=blob, method="PUT",
                                                          headers={"Content-Type": "application/octet-stream"}), timeout=120)
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "size": len(config),
                       "digest": "sha256:" + hashlib.sha256(config).hexdigest()},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "size": len(gz),
                        "digest": "sha256:" + hashlib.sha256(gz).hexdigest()}]}).encode()
        urllib.request.urlopen(urllib.request.Request(f"{base}/manifests/{tag}", data=manifest, method="PUT",
                                                      headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"}), timeout=60)
        return "sha256:" + hashlib.sha256(manifest).hexdigest()


class Node:
    """A real Node named `name` on the Cluster c (lib/cluster.py), run from the programs of
    build-pods.sh (pods_bin)."""

    def __init__(self, c, pods_bin, name="e2e-node"):
        self.c, self.pbin, self.name = c, pods_bin, name
        self.dir = os.path.join(c.work, "node")
        self.ip = node_ip()
        self.sock = os.path.join(self.dir, "containerd", "containerd.sock")
        self.kubelet_root = os.path.join(self.dir, "kubelet")
        self.pod_logs = os.path.join(self.dir, "pods-logs")
        self.registry = f"127.0.0.1:{free_port()}"
        self.procs = []  # names in self.c.procs started here
        self.sysctls = {}
        self.started = False

    def spawn(self, name, argv, env=None):
        self.c.spawn(name, argv, env)
        self.procs.append(name)

    # ---- start -------------------------------------------------------------------------------
    def start(self):
        for prog in ("kubelet", "kube-proxy", "pause"):
            if not os.access(os.path.join(self.pbin, prog), os.X_OK):
                raise RuntimeError(f"not built: {prog} (tests/e2e/build-pods.sh)")
        if os.geteuid() != 0:
            raise RuntimeError("a real Node needs root (containerd, kubelet, iptables)")
        ensure_packages()
        self.started = True
        for d in ("containerd/certs.d", "cni/net.d", "cni/ipam", "registry", "kubelet", "volume-plugins", "pods-logs"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        if shutil.which("modprobe"):
            subprocess.run(["modprobe", "br_netfilter"], capture_output=True)
        for k, v in (("net.ipv4.ip_forward", "1"), ("net.bridge.bridge-nf-call-iptables", "1")):
            path = "/proc/sys/" + k.replace(".", "/")
            if os.path.exists(path):
                self.sysctls[path] = open(path).read().strip()
                open(path, "w").write(v)
        # The registry (Debian's docker-registry 2.8), its storage under the work folder.
        reg = os.path.join(self.dir, "registry.yml")
        open(reg, "w").write(json.dumps({
            "version": 0.1, "log": {"level": "warn"},
            "storage": {"filesystem": {"rootdirectory": os.path.join(self.dir, "registry")}, "delete": {"enabled": True}},
            "http": {"addr": self.registry}}))
        self.spawn("registry", ["docker-registry", "serve", reg])
        self.c.wait_for("the loopback registry", lambda: urllib.request.urlopen(
            f"http://{self.registry}/v2/", timeout=2).status == 200, timeout=30)
        for host in MIRRORED:
            d = os.path.join(self.dir, "containerd", "certs.d", host)
            os.makedirs(d, exist_ok=True)
            open(os.path.join(d, "hosts.toml"), "w").write(
                f'server = "https://{host}"\n[host."http://{self.registry}"]\n  capabilities = ["pull", "resolve"]\n')
        # The CNI: one bridge, no masquerade (Pods reach nothing outside the machine), host-local
        # state under the work folder, loopback.
        open(os.path.join(self.dir, "cni", "net.d", "10-kaas-e2e.conflist"), "w").write(json.dumps({
            "cniVersion": "1.0.0", "name": NETWORK, "plugins": [
                {"type": "bridge", "bridge": BRIDGE, "isGateway": True, "ipMasq": False, "hairpinMode": True,
                 "ipam": {"type": "host-local", "dataDir": os.path.join(self.dir, "cni", "ipam"),
                          "ranges": [[{"subnet": POD_CIDR}]], "routes": [{"dst": "0.0.0.0/0"}]}},
                {"type": "loopback"}]}))
        # Nothing a Pod sends leaves the machine: forwarded packets from the bridge to any other
        # interface are dropped (the node's own address and the bridge's Pods stay reachable).
        # A bed killed before its stop left its guard and bridge: not twice.
        while subprocess.run(["iptables", "-w", "-D", "FORWARD", *FORWARD_GUARD], capture_output=True).returncode == 0:
            pass
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        sh(["iptables", "-w", "-I", "FORWARD", *FORWARD_GUARD])
        self.guard = True
        cfg = os.path.join(self.dir, "containerd", "config.toml")
        ctd = os.path.join(self.dir, "containerd")
        open(cfg, "w").write(f'''version = 2
root = "{ctd}/root"
state = "{ctd}/state"
[grpc]
  address = "{self.sock}"
[ttrpc]
  address = "{self.sock}.ttrpc"
[debug]
  address = "{self.sock}.debug"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{SANDBOX_IMAGE}"
  # The VM withholds CAP_SYS_RESOURCE: runc cannot lower oom_score_adj (research note, trap 1).
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "{self.dir}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "{ctd}/certs.d"
''')
        self.spawn("containerd", ["containerd", "--config", cfg])
        self.c.wait_for("containerd's socket", lambda: os.path.exists(self.sock), timeout=30)
        # The sandbox image first: the kubelet's first Pod asks for it.
        Image(SANDBOX_IMAGE, {"/pause": os.path.join(self.pbin, "pause")}, entrypoint=["/pause"]).push(self.registry)
        self.start_kubelet()
        self.start_kube_proxy()

        def ready():
            n = self.c.get("node", self.name)
            return any(x["type"] == "Ready" and x["status"] == "True" for x in n.get("status", {}).get("conditions", []))
        self.c.wait_for(f"Node {self.name} Ready (kubelet on containerd)", ready, timeout=120, interval=1)
        # Pods are refused until kube-controller-manager made the namespace's default ServiceAccount
        # (research note, trap 7): callers wait for theirs.

    def start_kubelet(self):
        p = self.c.pki
        kc = self.c.client_kubeconfig("kubelet", f"/O=system:nodes/CN=system:node:{self.name}")
        cfg = os.path.join(self.dir, "kubelet-config.json")
        self.kubelet_healthz = free_port()
        json.dump({
            "apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration",
            "cgroupDriver": "cgroupfs", "failCgroupV1": False,
            "containerRuntimeEndpoint": f"unix://{self.sock}",
            "address": self.ip, "port": free_port(), "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1", "healthzPort": self.kubelet_healthz,
            # kubectl logs/exec through the API server (research note, trap 4): client certificates
            # of the bed's CA, no anonymous or webhook authentication.
            "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": False},
                               "x509": {"clientCAFile": f"{p}/ca.crt"}},
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDomain": "cluster.local",
            "podLogsDir": self.pod_logs,
            "volumePluginDir": os.path.join(self.dir, "volume-plugins"),
            "resolvConf": "/etc/resolv.conf",
            "serializeImagePulls": False,
            # A test machine's disk and memory: no eviction of the bed's Pods.
            "evictionHard": {"memory.available": "50Mi", "nodefs.available": "1%", "imagefs.available": "1%"},
            "imageGCHighThresholdPercent": 100, "imageGCLowThresholdPercent": 99,
            "failSwapOn": False,
            "nodeStatusReportFrequency": "10s", "nodeStatusUpdateFrequency": "5s",
        }, open(cfg, "w"))
        self.spawn("kubelet", [
            os.path.join(self.pbin, "kubelet"), f"--config={cfg}", f"--kubeconfig={kc}",
            f"--hostname-override={self.name}", f"--node-ip={self.ip}", f"--root-dir={self.kubelet_root}",
            f"--cert-dir={self.dir}/kubelet-pki", "--v=1"])

    def start_kube_proxy(self):
        kc = self.c.client_kubeconfig("kube-proxy", "/CN=system:kube-proxy")
        cfg = os.path.join(self.dir, "kube-proxy-config.json")
        json.dump({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1", "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kc}, "mode": "iptables", "hostnameOverride": self.name,
            "clusterCIDR": POD_CIDR, "healthzBindAddress": f"127.0.0.1:{free_port()}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "conntrack": {"maxPerCore": 0},
            # NodePorts only on the node's own address.
            "nodePortAddresses": [f"{self.ip}/32"],
        }, open(cfg, "w"))
        self.spawn("kube-proxy", [os.path.join(self.pbin, "kube-proxy"), f"--config={cfg}", "--v=1"])

    def push(self, images):
        """Pushes Images to the loopback registry; returns the seconds it took."""
        t0 = time.time()
        for im in images:
            im.push(self.registry)
        return time.time() - t0

    def route_local(self, ip):
        """Sends ip to the Node's bridge (a route removed with the bridge on stop)."""
        sh(["ip", "route", "replace", f"{ip}/32", "dev", BRIDGE])

    def wait_service_routed(self, ip, port, timeout=60):
        """kube-proxy's rule for a ClusterIP exists (the bed dials a Service address only then)."""
        def routed():
            rules = sh(["iptables", "-w", "-t", "nat", "-S", "KUBE-SERVICES"])
            return f"-d {ip}/32" in rules and f"--dport {port}" in rules
        self.c.wait_for(f"kube-proxy's rule for {ip}:{port}", routed, timeout=timeout, interval=1)

    def container_logs(self, namespace, lines=15):
        """The last lines of every container log of the namespace's Pods on this Node (podLogsDir:
        <namespace>_<pod>_<uid>/<container>/<restart>.log)."""
        out = []
        for pod in sorted(os.listdir(self.pod_logs)) if os.path.isdir(self.pod_logs) else []:
            if not pod.startswith(namespace + "_"):
                continue
            for ctr in sorted(os.listdir(os.path.join(self.pod_logs, pod))):
                d = os.path.join(self.pod_logs, pod, ctr)
                logs = sorted(os.listdir(d), key=lambda f: os.path.getmtime(os.path.join(d, f)))
                if logs:
                    text = open(os.path.join(d, logs[-1]), errors="replace").read().splitlines()[-lines:]
                    out.append(f"---- {pod.split('_')[1]}/{ctr}\n" + "\n".join(text))
        return "\n".join(out)

    def pods_memory(self):
        """Bytes charged to the kubelet's pods cgroup (cgroup v1 memory controller), None elsewhere."""
        for f in ("/sys/fs/cgroup/memory/kubepods/memory.usage_in_bytes", "/sys/fs/cgroup/kubepods/memory.current"):
            if os.path.exists(f):
                return int(open(f).read())
        return None

    def cold_builds(self):
        """[(programs, seconds)] from the build.log of each cache entry this Node's programs come from."""
        out, seen = [], set()
        for prog in ("kubelet", "proxy-server"):
            log = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(os.path.join(self.pbin, prog)))), "build.log")
            if log in seen or not os.path.exists(log):
                continue
            seen.add(log)
            for line in open(log, errors="replace"):
                if line.startswith("built "):
                    what, _, secs = line[len("built "):].strip().rpartition(" in ")
                    out.append((what, secs.rstrip("s")))
        return out

    # ---- stop --------------------------------------------------------------------------------
    def stop(self):
        """Kills the Node and removes what it left on the machine (research note, trap 9)."""
        if not self.started:
            return
        self.started = False
        # The kubelet and kube-proxy first, so nothing restarts containers.
        for name in ("kubelet", "kube-proxy"):
            self.kill(name)
        # Every process in the kubelet's cgroups (the Pods' containers and pause processes).
        pids = set()
        for root in ("/sys/fs/cgroup",):
            for dirpath, _dirs, files in os.walk(root):
                if "/kubepods" in dirpath and "cgroup.procs" in files:
                    try:
                        pids |= {int(x) for x in open(os.path.join(dirpath, "cgroup.procs")).read().split()}
                    except OSError:
                        pass
        # containerd's shims for this containerd (their -address is this socket).
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if cmd and cmd[0].endswith(b"containerd-shim-runc-v2") and self.sock.encode() in cmd:
                    pids.add(int(pid))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for name in ("containerd", "registry"):
            self.kill(name)
        time.sleep(0.5)
        # The kubelet's cgroups (deepest first).
        for root in ("/sys/fs/cgroup",):
            for dirpath, _dirs, _files in sorted(os.walk(root), key=lambda x: -len(x[0])):
                if os.path.basename(dirpath) == "kubepods" or "/kubepods/" in dirpath:
                    try:
                        os.rmdir(dirpath)
                    except OSError:
                        pass
        # Mounts under the work folder (secret tmpfs, overlay rootfs, shm) and the sandboxes'
        # network namespaces, deepest first.
        mounts = []
        for line in open("/proc/self/mountinfo"):
            mp = line.split()[4].replace("\\040", " ")
            if mp.startswith(self.dir + "/") or (mp.startswith("/run/netns/cni-") or mp.startswith("/var/run/netns/cni-")):
                mounts.append(mp)
        for mp in sorted(set(mounts), key=len, reverse=True):
            if subprocess.run(["umount", mp], capture_output=True).returncode != 0:
                subprocess.run(["umount", "-l", mp], capture_output=True)
            if "/netns/cni-" in mp:
                try:
                    os.remove(mp)
                except OSError:
                    pass
        # /var/log/containers: the kubelet's symlinks (a fixed path) into this Node's Pod logs.
        d = "/var/log/containers"
        if os.path.isdir(d):
            for f in os.listdir(d):
                p = os.path.join(d, f)
                if os.path.islink(p) and os.readlink(p).startswith(self.pod_logs):
                    os.remove(p)
        # kube-proxy's chains, then the kubelet's own.
        if os.access(os.path.join(self.pbin, "kube-proxy"), os.X_OK):
            subprocess.run([os.path.join(self.pbin, "kube-proxy"), "--cleanup"], capture_output=True)
        for table in ("filter", "nat", "mangle"):
            rules = subprocess.run(["iptables", "-w", "-t", table, "-S"], capture_output=True, text=True).stdout
            for rule in rules.splitlines():
                parts = shlex.split(rule)
                if len(parts) > 2 and parts[0] == "-A" and any(parts[-1] == ch for t, ch in KUBELET_CHAINS if t == table) \
                        and parts[-2] == "-j":
                    subprocess.run(["iptables", "-w", "-t", table, "-D", *parts[1:]], capture_output=True)
        for table, chain in KUBELET_CHAINS:
            subprocess.run(["iptables", "-w", "-t", table, "-F", chain], capture_output=True)
            subprocess.run(["iptables", "-w", "-t", table, "-X", chain], capture_output=True)
        if getattr(self, "guard", False):
            subprocess.run(["iptables", "-w", "-D", "FORWARD", *FORWARD_GUARD], capture_output=True)
        subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True)
        for path, v in self.sysctls.items():
            try:
                open(path, "w").write(v)
            except OSError:
                pass

    def kill(self, name):
        p = self.c.procs.get(name)
        if p is None or p.poll() is not None:
            return
        try:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        except ProcessLookupError:
            pass
