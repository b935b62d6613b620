"""A running tenant moved behind one Gateway (issue 44), on the real Kamaji 26.8.2-edge and provider
v0.20.0 of the kamaji bed (lib/kamaji.py), after its other scenarios.

The example's `acme` serves at its VIP. kaas.yaml gets `spec.apiServerExposure.gateway` (with a
className: kaas-gitops renders the Gateway), acme's file `exposure: gateway`: `kaas-gitops render`
refuses the move until the file acknowledges it (`acknowledge: [endpointMove]`), then renders the
move's first step (the VIP kept serving beside the route). The rendered Gateway and tenant objects are
applied as kustomize-controller would. What is then real and what stands in:

  real     the Gateway API CRDs (v1.5.1 standard channel, installed before Kamaji started); Kamaji's
           webhook accepting the TenantControlPlane with a gateway; Kamaji creating the two TLSRoutes
           (API server and Konnectivity) with their parent references, hostname and backends, adding
           the hostname to the API server certificate, giving the tenant's kubeadm config the hostname
           and reporting the access points; the provider's mapping (KamajiControlPlane -> TCP) and its
           endpoint writes; Cluster API's Cluster keeping the rendered endpoint
  stand-in the Gateway controller: the bed writes the Gateway's status (Accepted, Programmed) and each
           TLSRoute's (Accepted) as a controller would, and a loopback TLS passthrough proxy routes by
           SNI to the TLSRoute's backend, for which the tenant API server process stands in (no
           Gateway data plane is built here: Envoy Gateway, Istio and NGINX Gateway Fabric need a
           proxy binary this machine cannot build; Traefik's module is the candidate for a later stage)
"""
import base64, json, os, select, socket, subprocess, threading, time

from capi import kustomize, standin, yaml_docs
from kamaji import FLUX_GROUPS, KCP, PROVIDER, TCP, TENANT, spawn_tenant_apiserver, tenant_overlay

HOST = f"{TENANT}.k8s.example.com"
GATEWAY, GATEWAY_NS = "tenant-apis", "kaas-gateway"
LISTENER, KONNECTIVITY_LISTENER = "kube-apiserver", "konnectivity-server"
CONTROLLER = "kaas-gitops.dev/e2e-standin-gateway"
EXPOSURE = f"""  apiServerExposure:
    gateway:
      name: {GATEWAY}
      namespace: {GATEWAY_NS}
      hostname: "{{tenant}}.k8s.example.com"
      className: kaas-e2e-standin
"""


def condition(kind, generation):
    return {"type": kind, "status": "True", "reason": kind, "message": "stand-in Gateway controller (e2e)",
            "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "observedGeneration": generation}


class StandinGateway:
    """What a Gateway controller does that Kamaji reads (the Gateway Programmed, each TLSRoute that
    names it Accepted), and its data plane: TLS passthrough on loopback, by SNI, to `backend`."""

    def __init__(self, c, backend):
        self.c, self.backend, self.routed = c, backend, []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.accepted = set()  # (kind, name, generation) whose status is written
        threading.Thread(target=self.serve, daemon=True).start()
        threading.Thread(target=self.control, daemon=True).start()

    def control(self):
        """The controller's loop: each new Gateway generation Programmed, each new TLSRoute (as Kamaji
        creates them, one per reconcile that gets that far) Accepted on the parents naming the Gateway."""
        while not self.stop.wait(1):
            try:
                self.accept_objects()
            except Exception as ex:  # noqa: BLE001 - a controller retries; the scenario's waits report
                self.error = str(ex)

    def accept_objects(self):
        gw = self.c.get("-n", GATEWAY_NS, "gateway", GATEWAY)
        gen = gw["metadata"]["generation"]
        if ("Gateway", GATEWAY, gen) not in self.accepted:
            self.c.kubectl("patch", "-n", GATEWAY_NS, "gateway", GATEWAY, "--subresource=status", "--type=merge", "-p", json.dumps(
                {"status": {"conditions": [condition("Accepted", gen), condition("Programmed", gen)]}}))
            self.accepted.add(("Gateway", GATEWAY, gen))
        for r in self.c.get("-n", TENANT, "tlsroutes")["items"]:
            key = ("TLSRoute", r["metadata"]["name"], r["metadata"]["generation"])
            if key in self.accepted:
                continue
            parents = [{"parentRef": p, "controllerName": CONTROLLER,
                        "conditions": [condition("Accepted", key[2]), condition("ResolvedRefs", key[2])]}
                       for p in r["spec"].get("parentRefs", []) if p.get("name") == GATEWAY]
            self.c.kubectl("patch", "-n", TENANT, "tlsroute", key[1], "--subresource=status",
                           "--type=merge", "-p", json.dumps({"status": {"parents": parents}}))
            self.accepted.add(key)

    def serve(self):
        while not self.stop.is_set():
            r, _, _ = select.select([self.sock], [], [], 0.5)
            if r:
                conn, _ = self.sock.accept()
                threading.Thread(target=self.route, args=(conn,), daemon=True).start()

    def route(self, conn):
        """Reads the ClientHello's server name without consuming it, then splices to the backend of
        the route with that hostname (none: the connection is closed, as a Gateway resets it)."""
        try:
            conn.settimeout(5)
            hello = b""
            for _ in range(50):
                hello = conn.recv(4096, socket.MSG_PEEK)
                name = sni(hello)
                if name is not None or len(hello) >= 4096:
                    break
                time.sleep(0.05)
            self.routed.append(name)
            if name != HOST:
                conn.close()
                return
            up = socket.create_connection(self.backend, timeout=5)
            for a, b in ((conn, up), (up, conn)):
                threading.Thread(target=pipe, args=(a, b), daemon=True).start()
        except OSError:
            conn.close()

    def close(self):
        self.stop.set()
        self.sock.close()


def pipe(a, b):
    try:
        a.settimeout(None)
        while True:
            data = a.recv(65536)
            if not data:
                break
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def sni(data):
    """The server_name of a TLS ClientHello record (RFC 8446 4.1.2, RFC 6066 3), else None."""
    try:
        if data[0] != 0x16 or data[5] != 0x01:
            return None
        i = 5 + 4 + 2 + 32  # handshake header, client_version, random
        i += 1 + data[i]  # session id
        i += 2 + int.from_bytes(data[i:i + 2], "big")  # cipher suites
        i += 1 + data[i]  # compression methods
        end = i + 2 + int.from_bytes(data[i:i + 2], "big")
        i += 2
        while i + 4 <= end:
            kind, size = int.from_bytes(data[i:i + 2], "big"), int.from_bytes(data[i + 2:i + 4], "big")
            if kind == 0:  # server_name: list length, type 0 (host_name), name length, name
                n = int.from_bytes(data[i + 7:i + 9], "big")
                return data[i + 9:i + 9 + n].decode()
            i += 4 + size
    except (IndexError, UnicodeDecodeError):
        return None
    return None


def edit(path, old, new):
    text = open(path).read()
    if old not in text:
        raise RuntimeError(f"{path} lacks {old!r}")
    open(path, "w").write(text.replace(old, new, 1))


def san_names(c, secret, key):
    crt = base64.b64decode(c.get("-n", TENANT, "secret", secret)["data"][key])
    r = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], input=crt, capture_output=True, check=True)
    return r.stdout.decode()


def tenant_behind_gateway(e):
    bed, st = e.kamaji_bed, e.kamaji_state
    c, f = bed.c, st["fleet"]

    # The move, refused until acknowledged: judged against what the last render left.
    edit(os.path.join(f.dir, "kaas.yaml"), "  dataStores:", EXPOSURE + "  dataStores:")
    acme = os.path.join(f.dir, "tenants", f"{TENANT}.yaml")
    edit(acme, "  controlPlane:\n", "  controlPlane:\n    exposure: gateway\n")
    r = f.kaas_gitops("render", check=False)
    want = f"tenant `{TENANT}` would move from the endpoint `10.0.4.10` to `{HOST}:6443`"
    if r.returncode != 1 or want not in r.stderr:
        return [f"render of the unacknowledged move: exit {r.returncode}, want 1 with {want!r}: {r.stderr.strip()[:600]}"]
    print(f"  kaas-gitops render refused the unacknowledged move: {want}", flush=True)
    edit(acme, "    exposure: gateway\n", "    exposure: gateway\n    acknowledge: [endpointMove]\n")
    f.render()

    platform = kustomize(os.path.join(f.dir, "overlays", "platform"))
    gw_objs = [d for d in platform if (d["kind"], d["metadata"]["name"]) in (("Gateway", GATEWAY), ("Namespace", GATEWAY_NS))]
    if len(gw_objs) != 2:
        return [f"overlays/platform lacks the Gateway {GATEWAY} or its Namespace: {[d['kind'] for d in gw_objs]}"]
    apply = [d for d in tenant_overlay(f, TENANT) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    apply.sort(key=lambda d: d["kind"] != "Namespace")
    for items in (sorted(gw_objs, key=lambda d: d["kind"] != "Namespace"), apply):
        r = c.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=kustomize-controller", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}), check=False)
        if r.returncode != 0:
            return [f"the rendered objects were refused: {r.stderr.strip()[:800]}"]
    t0 = time.time()
    print(f"  applied the rendered Gateway {GATEWAY_NS}/{GATEWAY} and {TENANT}'s {len(apply)} objects", flush=True)
    backend = st["tenant_addr"].rsplit(":", 1)
    gateway = StandinGateway(c, (backend[0], int(backend[1])))
    standin(f"the Gateway controller: status Programmed on {GATEWAY_NS}/{GATEWAY}, Accepted on each TLSRoute; TLS passthrough "
            f"by SNI on 127.0.0.1:{gateway.port}, the route's backend Service {TENANT}:6443 -> the tenant API server process at {st['tenant_addr']}")
    try:
        return moved(e, bed, gateway, t0)
    finally:
        gateway.close()


def moved(e, bed, gateway, t0):
    """What Kamaji, the provider and Cluster API make of the applied move."""
    c, fails = bed.c, []

    # The provider maps the KamajiControlPlane's gateway; Kamaji's webhook accepts it.
    def tcp_gateway():
        t = c.get("-n", TENANT, TCP, TENANT)
        return t if t["spec"].get("controlPlane", {}).get("gateway") else None
    try:
        tcp = c.wait_for("the provider's TenantControlPlane with a gateway (Kamaji's webhook accepting it)", tcp_gateway, timeout=120, interval=1)
    except TimeoutError as ex:
        return [f"{ex}; provider log: {bed.log(PROVIDER)[-1200:]}"]
    g = tcp["spec"]["controlPlane"]["gateway"]
    want_ref = {"name": GATEWAY, "namespace": GATEWAY_NS, "sectionName": LISTENER}
    refs = [{k: p.get(k) for k in want_ref} for p in g.get("parentRefs", [])]
    if g.get("hostname") != HOST or refs != [want_ref]:
        fails.append(f"TenantControlPlane gateway {json.dumps(g)}: want hostname {HOST} (the port cut off) and parentRefs [{want_ref}]")
    if HOST not in tcp["spec"].get("networkProfile", {}).get("certSANs", []):
        fails.append(f"TenantControlPlane certSANs {tcp['spec'].get('networkProfile', {}).get('certSANs')} lack {HOST}")
    print(f"  TenantControlPlane {TENANT}: gateway {json.dumps(g)}, certSANs {tcp['spec']['networkProfile'].get('certSANs')}", flush=True)

    # Kamaji's two TLSRoutes.
    def routes():
        items = {r["metadata"]["name"]: r for r in c.get("-n", TENANT, "tlsroutes")["items"]}
        return items if {TENANT, f"{TENANT}-konnectivity"} <= set(items) else None
    try:
        items = c.wait_for("Kamaji's TLSRoutes for the API server and Konnectivity", routes, timeout=120, interval=1)
    except TimeoutError as ex:
        return fails + [f"{ex}; stand-in controller: {getattr(gateway, 'error', 'no error')}; kamaji log: {bed.log('kamaji')[-1500:]}"]
    e.r.figure("kamaji gateway: tenant objects applied -> both TLSRoutes created by Kamaji", f"{time.time() - t0:.1f}s")
    for name, section, port in ((TENANT, LISTENER, None), (f"{TENANT}-konnectivity", KONNECTIVITY_LISTENER, 8132)):
        spec = items[name]["spec"]
        parents = [(p.get("name"), p.get("namespace"), p.get("sectionName"), p.get("port")) for p in spec.get("parentRefs", [])]
        backends = [(b.get("name"), b.get("port")) for rule in spec.get("rules", []) for b in rule.get("backendRefs", [])]
        owners = [o["kind"] for o in items[name]["metadata"].get("ownerReferences", [])]
        print(f"  TLSRoute {TENANT}/{name}: parents {parents}, hostnames {spec.get('hostnames')}, backends {backends}, owners {owners}", flush=True)
        if parents != [(GATEWAY, GATEWAY_NS, section, port)]:
            fails.append(f"TLSRoute {name} parentRefs {parents}: want [({GATEWAY}, {GATEWAY_NS}, {section}, {port})]")
        if spec.get("hostnames") != [HOST]:
            fails.append(f"TLSRoute {name} hostnames {spec.get('hostnames')}: want [{HOST}]")
        if backends != [(TENANT, 6443 if port is None else port)]:
            fails.append(f"TLSRoute {name} backends {backends}: want the Service {TENANT}")
        if "TenantControlPlane" not in owners:
            fails.append(f"TLSRoute {name} owners {owners}: want the TenantControlPlane")

    # What Kamaji reports from the routes the Gateway controller accepted.
    def access_points():
        t = c.get("-n", TENANT, TCP, TENANT).get("status", {})
        api = (t.get("kubernetesResources", {}).get("gateway") or {}).get("accessPoints")
        kon = (t.get("addons", {}).get("konnectivity", {}).get("gateway") or {}).get("accessPoints")
        return (api, kon) if api and kon else None
    try:
        api, kon = c.wait_for("Kamaji's access points from the accepted routes", access_points, timeout=120, interval=2)
        print(f"  TenantControlPlane status access points: API server {json.dumps(api)}, Konnectivity {json.dumps(kon)}", flush=True)
        if [a.get("value") for a in api] != [f"https://{HOST}:6443"]:
            fails.append(f"API server access points {api}: want https://{HOST}:6443")
        if [a.get("value") for a in kon] != [f"https://{HOST}:8132"]:
            fails.append(f"Konnectivity access points {kon}: want https://{HOST}:8132")
    except TimeoutError as ex:
        fails.append(f"{ex}; stand-in controller: {getattr(gateway, 'error', 'no error')}; kamaji log: {bed.log('kamaji')[-1200:]}")

    fails += endpoints_follow(c, bed)
    fails += through_the_gateway(e, bed, gateway)
    fails += ingress_form_admitted(c)
    return fails


def ingress_form_admitted(c):
    """The Ingress form: the TenantControlPlane the provider makes of a rendered `network.ingress`
    (`controllers/kamajicontrolplane_controller_tcp.go:198-219`: class, the hostname with its port,
    annotations) passes the API server's schema and Kamaji's webhooks (a server-side dry run), and
    one with both an ingress and a gateway is refused by the CRD's rule."""
    fails = []
    tcp = c.get("-n", TENANT, TCP, TENANT)
    # A new object (server dry run, nothing stored), so that the fields the provider owns on the
    # live one do not stay.
    tcp["metadata"] = {"name": f"{TENANT}-ingress-form", "namespace": TENANT}
    tcp.pop("status", None)
    ingress = {"ingressClassName": "haproxy", "hostname": f"{TENANT}.apis.example.com:443",
               "additionalMetadata": {"annotations": {"haproxy.org/ssl-passthrough": "true"}}}
    both = json.loads(json.dumps(tcp))
    both["spec"]["controlPlane"]["ingress"] = ingress
    only = json.loads(json.dumps(both))
    del only["spec"]["controlPlane"]["gateway"]
    r = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(only), check=False)
    if r.returncode != 0:
        fails.append(f"the ingress form was refused: {r.stderr.strip()[:400]}")
    else:
        print(f"  the ingress form (class haproxy, {ingress['hostname']}): admitted by the schema and Kamaji's webhooks (server dry run)", flush=True)
    r = c.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(both), check=False)
    if r.returncode == 0 or "using both ingress and gateway is not supported" not in r.stderr:
        fails.append(f"ingress and gateway together were not refused by the CRD's rule: rc {r.returncode} {r.stderr.strip()[:300]}")
    else:
        print("  ingress and gateway together: refused (`using both ingress and gateway is not supported`)", flush=True)
    return fails


def endpoints_follow(c, bed):
    """The endpoint written where it lives: the Cluster (rendered; Cluster API copies it only while
    unset), the KamajiControlPlane (the provider), the ProxmoxCluster (rendered; the provider checks it)."""
    fails = []
    want = {"host": HOST, "port": 6443}

    def endpoints():
        kcp = c.get("-n", TENANT, KCP, TENANT)
        got = {
            "Cluster": c.get("-n", TENANT, "cluster", TENANT)["spec"].get("controlPlaneEndpoint"),
            "KamajiControlPlane": kcp["spec"].get("controlPlaneEndpoint"),
            "ProxmoxCluster": c.get("-n", TENANT, "proxmoxcluster", TENANT)["spec"].get("controlPlaneEndpoint"),
        }
        patched = [x for x in kcp.get("status", {}).get("conditions", []) if x["type"] == "InfrastructureClusterPatched"]
        return (got, patched) if all(v == want for v in got.values()) and patched and patched[0]["status"] == "True" else None
    try:
        got, patched = c.wait_for("the endpoint in the Cluster, the KamajiControlPlane and the ProxmoxCluster", endpoints, timeout=120, interval=2)
        print(f"  endpoint {HOST}:6443 in {', '.join(got)}; the provider's InfrastructureClusterPatched: {patched[0]['status']}", flush=True)
    except TimeoutError as ex:
        kcp = c.get("-n", TENANT, KCP, TENANT)
        fails.append(f"{ex}: KCP {kcp['spec'].get('controlPlaneEndpoint')}, conditions "
                     f"{[(x['type'], x['status'], x.get('message', '')[:120]) for x in kcp.get('status', {}).get('conditions', [])]}")
    return fails


def through_the_gateway(e, bed, gateway):
    """The API server certificate Kamaji re-issues with the hostname, then kubectl through the
    Gateway by SNI, and the tenant's cluster-info (what joining kubelets are given)."""
    c, st, fails = bed.c, e.kamaji_state, []
    secret = f"{TENANT}-api-server-certificate"
    try:
        c.wait_for(f"Kamaji re-issuing {secret} with {HOST}", lambda: f"DNS:{HOST}" in san_names(c, secret, "apiserver.crt"), timeout=180, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: SANs {san_names(c, secret, 'apiserver.crt').strip()[:300]}"]
    port = spawn_tenant_apiserver(e)  # the rolled Pods' containers, with the new certificate
    if isinstance(port, list):
        return port
    kubeconfig = os.path.join(bed.work, f"{TENANT}-kubeconfig")
    via = ["kubectl", "--kubeconfig", kubeconfig, "--server", f"https://127.0.0.1:{gateway.port}", "--tls-server-name", HOST]
    r = subprocess.run([*via, "get", "--raw", "/version"], capture_output=True, text=True)
    if r.returncode != 0:
        return fails + [f"kubectl through the Gateway ({HOST} by SNI) failed: {r.stderr.strip()[:400]}; routed {gateway.routed}"]
    print(f"  kubectl through the Gateway (SNI {HOST}, certificate checked for it): {json.loads(r.stdout)['gitVersion']}", flush=True)
    other = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "--server", f"https://127.0.0.1:{gateway.port}",
                            "--tls-server-name", "nobody.k8s.example.com", "--request-timeout=5s", "get", "--raw", "/version"],
                           capture_output=True, text=True)
    if other.returncode == 0:
        fails.append("a hostname no route names reached the tenant API server")
    # cluster-info, what joining kubelets are given: Kamaji writes it from the admin kubeconfig, which
    # it re-issues for the new endpoint, but runs that phase again only when cluster-info's own data
    # changed (internal/resources/kubeadm_utils.go KubeadmBootstrap: the checksum of the ConfigMap's
    # data against the one it stored), so the move's steps delete it (docs/exposure.md).
    def cluster_info():
        r = subprocess.run([*via, "get", "-n", "kube-public", "configmap", "cluster-info", "-o", "json"], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        return yaml_docs(json.loads(r.stdout)["data"]["kubeconfig"])[0]["clusters"][0]["cluster"]["server"]
    before = cluster_info()
    want = f"https://{HOST}:6443"

    def admin_server():
        admin = c.get("-n", TENANT, "secret", f"{TENANT}-admin-kubeconfig")["data"]["admin.conf"]
        return yaml_docs(base64.b64decode(admin).decode())[0]["clusters"][0]["cluster"]["server"]
    # Kamaji re-issues a kubeconfig when the checksum of its kubeadm configuration changes, but that
    # checksum leaves the ClusterConfiguration out, where the endpoint is (internal/kubeadm/types.go
    # Checksum encodes InitConfiguration, whose ClusterConfiguration is `json:"-"` in kubeadm's
    # internal API): a new endpoint alone re-issues nothing. Its rotation annotation
    # (certs.kamaji.clastix.io/rotate) re-issues admin.conf only: the first of the two resources
    # sharing the Secret consumes it (controllers/resources.go getKubeconfigResources), and
    # cluster-info is written from super-admin.conf (internal/utilities/tenant_client.go). The move's
    # step deletes the Secret: Kamaji writes both again (internal/resources/kubeconfig.go, shouldCreate).
    time.sleep(10)
    print(f"  after the move: Kamaji's admin kubeconfig still names {admin_server()} (the endpoint is not in the checksum "
          f"Kamaji re-issues kubeconfigs on); the move's step: delete Secret {TENANT}-admin-kubeconfig", flush=True)
    c.kubectl("delete", "-n", TENANT, "secret", f"{TENANT}-admin-kubeconfig")

    def super_admin_server():
        conf = c.get("-n", TENANT, "secret", f"{TENANT}-admin-kubeconfig")["data"]["super-admin.conf"]
        return yaml_docs(base64.b64decode(conf).decode())[0]["clusters"][0]["cluster"]["server"]
    try:
        c.wait_for(f"Kamaji's super-admin kubeconfig naming {want}", lambda: super_admin_server() == want, timeout=120, interval=2)
    except TimeoutError as ex:
        fails.append(str(ex))
    try:
        c.wait_for(f"Kamaji's admin kubeconfig naming {want}", lambda: admin_server() == want, timeout=120, interval=2)
    except TimeoutError as ex:
        tcp = c.get("-n", TENANT, TCP, TENANT)
        cm = c.get("-n", TENANT, "configmap", tcp["status"]["kubeadmconfig"]["configmapName"])
        endpoint = json.loads(cm["data"].get("ClusterConfiguration", "{}")).get("ControlPlaneEndpoint")
        errors = [x[:400] for x in bed.log("kamaji").splitlines()[-400:] if "ERROR" in x and TENANT in x][-5:]
        return fails + [f"{ex}: it names {admin_server()}; the kubeadm config {cm['metadata']['name']} has {endpoint}; "
                        f"status.kubeconfig.admin {json.dumps(tcp['status'].get('kubeconfig', {}).get('admin'))}; kamaji errors: {errors}"]
    print(f"  re-issued: Kamaji's admin and super-admin kubeconfigs name {admin_server()}; cluster-info still names {before} "
          "(Kamaji rewrites it only when its data changed)", flush=True)
    r = subprocess.run([*via, "delete", "-n", "kube-public", "configmap", "cluster-info"], capture_output=True, text=True)
    if r.returncode != 0:
        return fails + [f"deleting cluster-info through the Gateway: {r.stderr.strip()[:300]}"]
    try:
        t0 = time.time()
        c.wait_for(f"Kamaji writing cluster-info again with {want}", lambda: cluster_info() == want, timeout=180, interval=2)
        print(f"  cluster-info deleted (the move's step): Kamaji wrote it again in {time.time() - t0:.0f}s, naming {want}: "
              "joining kubelets come through the Gateway", flush=True)
    except TimeoutError as ex:
        fails.append(f"{ex}: cluster-info names {cluster_info()}")
    try:
        kubeconfig = c.wait_for(f"the provider's {TENANT}-kubeconfig naming {want}", lambda: (lambda k: k if k == want else None)(
            yaml_docs(base64.b64decode(c.get("-n", TENANT, "secret", f"{TENANT}-kubeconfig")["data"]["value"]).decode())[0]
            ["clusters"][0]["cluster"]["server"]), timeout=120, interval=2)
        print(f"  the provider's {TENANT}-kubeconfig (Cluster API's, the add-ons') names {kubeconfig}", flush=True)
    except TimeoutError as ex:
        fails.append(str(ex))
    st["gateway_port"] = gateway.port
    return fails + person_through_gateway(e, bed, gateway)


def person_through_gateway(e, bed, gateway):
    """Issue 44 item 4: `kaas-gitops kubeconfig` for a person of the tenant's admin group once the
    tenant is behind the Gateway. Its server is the hostname (the Cluster's endpoint), its CA the
    tenant's (from cluster-info, fetched through the Gateway), and with a token of the issuer it
    reaches the tenant API server through the Gateway by SNI, where the ClusterRoleBindings Flux
    applied before the management cluster was rebuilt (they live in the tenant's datastore) let
    the admin in."""
    c, f, fails = bed.c, e.kamaji_state["fleet"], []
    person = c.client_kubeconfig("jane", f"/O={TENANT}-admins/CN=jane@example.com")
    tunnel = f"https://127.0.0.1:{gateway.port}"
    standin(f"DNS for {HOST}: `kaas-gitops kubeconfig --server {tunnel}` (the Gateway's address; the TLS server name stays "
            "the hostname, so the Gateway routes by it)")
    r = f.kaas_gitops("kubeconfig", TENANT, "--kubeconfig", person, "--server", tunnel, check=False)
    if r.returncode != 0:
        return [f"kaas-gitops kubeconfig {TENANT} through the Gateway exited {r.returncode}: {r.stderr.strip()[:600]}"]
    cluster = yaml_docs(r.stdout)[0]["clusters"][0]["cluster"]
    ca_pem = base64.b64decode(c.get("-n", TENANT, "secret", f"{TENANT}-ca")["data"]["ca.crt"])
    if cluster.get("tls-server-name") != HOST:
        fails.append(f"the person's kubeconfig names TLS server {cluster.get('tls-server-name')}, not the hostname {HOST}")
    if base64.b64decode(cluster["certificate-authority-data"]) != ca_pem:
        fails.append(f"the person's kubeconfig does not carry the tenant's CA ({TENANT}-ca)")
    issuer = getattr(e, "kamaji_issuer", None)
    if issuer is None:
        return fails
    ca = os.path.join(bed.work, f"{TENANT}-person-ca.crt")
    open(ca, "wb").write(ca_pem)
    token = issuer.token("jane@example.com", [f"{TENANT}-admins"])
    p = subprocess.run(["kubectl", "--kubeconfig", "/dev/null", "--server", cluster["server"], "--tls-server-name", HOST,
                        "--certificate-authority", ca, "--token", token, "get", "namespaces", "-o", "name"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fails.append(f"jane's token through the Gateway with the kubeconfig of `kaas-gitops kubeconfig`: {p.stderr.strip()[:400]}")
    else:
        print(f"  kaas-gitops kubeconfig {TENANT} as jane: server {cluster['server']}, tls-server-name {HOST}, CA {TENANT}-ca; "
              f"her token through the Gateway lists {len(p.stdout.split())} namespaces", flush=True)
    return fails
