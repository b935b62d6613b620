"""Tenant access on the real kube-apiserver (issue 30), in a bed of its own: the API server runs
with the authentication configuration kaas-gitops renders for a tenant (the file of its
`<tenant>-authentication-<hash>` ConfigMap, at the `--authentication-config` path of its
KamajiControlPlane), and authorizes with RBAC; the tenant's rendered ClusterRoleBindings
(`overlays/tenants/<t>/access/`) are applied to it. An OIDC issuer on loopback (discovery
document and JWKS over https, RS256 tokens signed with openssl) stands in for the company's IdP,
the one part that cannot run here. The same API server plays the management cluster for
`kaas-gitops kubeconfig` (the tenant's Cluster; its `kube-public/cluster-info` as the tenant), and kubectl
runs that kubeconfig through a stand-in of the `kubectl oidc-login` plugin that prints a token.

    python3 tests/e2e/lib/access.py --bin DIR --kaas BIN      # this scenario alone
"""
import base64, glob, http.server, json, os, re, shutil, ssl, subprocess, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, SHARED  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TENANT = "acme"
CLIENT_ID = "kubernetes"
# Where the rendered API server reads the file (render::access::MOUNT_PATH).
MOUNT_PATH = "/etc/kaas-gitops/authentication"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Issuer:
    """An OIDC issuer on https://127.0.0.1:PORT with the bed's server certificate."""

    def __init__(self, pki, work):
        self.key = os.path.join(work, "issuer.key")
        subprocess.run(["openssl", "genrsa", "-out", self.key, "2048"], check=True, capture_output=True)
        modulus = subprocess.run(["openssl", "rsa", "-in", self.key, "-noout", "-modulus"], check=True,
                                 capture_output=True, text=True).stdout.strip().split("=", 1)[1]
        jwks = {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "e2e",
                          "n": b64url(bytes.fromhex(modulus)), "e": "AQAB"}]}
        issuer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/.well-known/openid-configuration":
                    body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/keys",
                            "authorization_endpoint": issuer.url + "/auth", "token_endpoint": issuer.url + "/token",
                            "response_types_supported": ["code"], "subject_types_supported": ["public"],
                            "id_token_signing_alg_values_supported": ["RS256"]}
                elif self.path == "/keys":
                    body = jwks
                else:
                    self.send_error(404)
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(pki, "server.crt"), os.path.join(pki, "server.key"))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def token(self, email, groups, aud=CLIENT_ID):
        now = int(time.time())
        head = b64url(json.dumps({"alg": "RS256", "kid": "e2e", "typ": "JWT"}).encode())
        claims = {"iss": self.url, "aud": aud, "sub": email.split("@")[0], "email": email,
                  "email_verified": True, "groups": groups, "iat": now, "exp": now + 600}
        signing = f"{head}.{b64url(json.dumps(claims).encode())}"
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key], input=signing.encode(),
                             check=True, capture_output=True).stdout
        return f"{signing}.{b64url(sig)}"

    def stop(self):
        self.server.shutdown()


def use_issuer(repo, issuer, pki):
    """The example's kaas.yaml in repo with the loopback issuer instead of the company's, and the
    CA of its certificate inline (as a private CA is given)."""
    ca = open(os.path.join(pki, "ca.crt")).read()
    path = os.path.join(repo, "kaas.yaml")
    platform = open(path).read()
    want = "issuerURL: https://login.example.com/realms/corp\n"
    if want not in platform:
        raise RuntimeError("the example's issuer moved (kaas.yaml spec.access.oidcIssuers)")
    pem = "".join(f"          {line}\n" for line in ca.strip().splitlines())
    open(path, "w").write(platform.replace(want, f"issuerURL: {issuer.url}\n        certificateAuthority: |\n{pem}"))


def judged(checks, as_person):
    """Logins judged by the API server: checks are (what, token, kubectl args, allowed?);
    as_person(token, *args) runs kubectl with that token. Returns the failures."""
    fails = []
    for what, token, args, allowed in checks:
        p = as_person(token, *args)
        if allowed and p.returncode != 0:
            fails.append(f"{what}: refused: {p.stderr.strip()[:300]}")
        if not allowed and (p.returncode == 0 or "Forbidden" not in p.stderr):
            fails.append(f"{what}: not refused by RBAC (exit {p.returncode}): {(p.stderr or p.stdout).strip()[:300]}")
    return fails


def kaas(bin_, repo, *args, check=True):
    r = subprocess.run([bin_, "--repo", repo, *args], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    if check and r.returncode != 0:
        raise RuntimeError(f"kaas-gitops {' '.join(args)} (exit {r.returncode}): {r.stderr.strip()}")
    return r


def literal_block(text, key):
    """The value of `key: |` in a rendered file (the renderer indents a block two spaces
    below its key)."""
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.strip() == f"{key}: |")
    indent = len(lines[at]) - len(lines[at].lstrip()) + 2
    out = []
    for l in lines[at + 1:]:
        if l.strip() and len(l) - len(l.lstrip()) < indent:
            break
        out.append(l[indent:])
    return "\n".join(out).rstrip("\n") + "\n"


def api_server_flags(text):
    """The authentication flags among a rendered KamajiControlPlane's `apiServer.extraArgs`
    (no YAML parser on the bed: the renderer writes one `- flag` per line, quoted when needed)."""
    flags = re.findall(r'^\s*- "?(--(?:authentication-config|oidc-)[^"\n]*)"?$', text, re.M)
    mounted = re.search(r"configMap:\n\s+name: (\S+)", text)
    return flags, mounted.group(1) if mounted else None


def scenario(bin_dir, kaas_bin, work):
    fails = []
    c = Cluster(work, bin_dir, None)
    c.certs()
    issuer = Issuer(c.pki, work)
    try:
        # The example, with the bed's issuer (and the bed's CA, inline, as a private CA is given).
        repo = os.path.join(work, "repo")
        os.makedirs(repo)
        for p in ("kaas.yaml", "tenants", "base"):
            (shutil.copytree if os.path.isdir(os.path.join(ROOT, p)) else shutil.copy)(os.path.join(ROOT, p), os.path.join(repo, p))
        use_issuer(repo, issuer, c.pki)
        ca = open(os.path.join(c.pki, "ca.crt")).read()
        kaas(kaas_bin, repo, "render")

        # What the KamajiControlPlane gives its API server, with the mount path made local.
        tenant_dir = os.path.join(repo, "overlays", "tenants", TENANT)
        kcp = open(os.path.join(tenant_dir, f"kamajicontrolplane-{TENANT}.yaml")).read()
        [cm_file] = glob.glob(os.path.join(tenant_dir, f"configmap-{TENANT}-authentication-*.yaml"))
        cm_name = os.path.basename(cm_file)[len("configmap-"):-len(".yaml")]
        mounted = os.path.join(work, "authentication")
        os.makedirs(mounted)
        config = literal_block(open(cm_file).read(), "authentication-config.yaml")
        open(os.path.join(mounted, "authentication-config.yaml"), "w").write(config)
        flags, volume = api_server_flags(kcp)
        if volume != cm_name:
            fails.append(f"the control plane mounts {volume}, not the ConfigMap {cm_name}")
        args = [a.replace(MOUNT_PATH, mounted) for a in flags]
        if args != [f"--authentication-config={mounted}/authentication-config.yaml"]:
            return fails + [f"the KamajiControlPlane's authentication flags are {flags}"]
        c.start_control_plane(extra_apiserver_args=args)
        print(f"  kube-apiserver {c.version['gitVersion']} with {' '.join(a.replace(work, '$WORK') for a in args)}", flush=True)

        # The bindings inside the tenant, as the `<t>-access` Kustomization applies them.
        c.kubectl("apply", "-k", os.path.join(tenant_dir, "access"))

        # The management side of `kubeconfig`: the tenant's Cluster (CRD from the upstream
        # release) and the Kamaji provider's kubeconfig Secret (here the bed's admin).
        crds = os.environ.get("KAAS_CRDS") or os.path.join(SHARED, "crds")
        c.kubectl("apply", "--server-side", "-f", os.path.join(crds, "cluster.x-k8s.io", "clusters.yaml"))
        c.wait_for("the Cluster CRD", lambda: c.kubectl("get", "crd", "clusters.cluster.x-k8s.io", "-o",
                                                         "jsonpath={.status.conditions[?(@.type=='Established')].status}") == "True", 60)
        c.kubectl("create", "namespace", TENANT)
        c.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": TENANT, "namespace": TENANT},
            "spec": {"controlPlaneEndpoint": {"host": "127.0.0.1", "port": c.api_port}}}))
        admin = {"apiVersion": "v1", "kind": "Config", "current-context": "admin",
                 "clusters": [{"name": TENANT, "cluster": {"server": f"https://127.0.0.1:{c.api_port}",
                                                           "certificate-authority-data": base64.b64encode(ca.encode()).decode()}}],
                 "users": [{"name": "admin", "user": {
                     "client-certificate-data": base64.b64encode(open(os.path.join(c.pki, "admin.crt"), "rb").read()).decode(),
                     "client-key-data": base64.b64encode(open(os.path.join(c.pki, "admin.key"), "rb").read()).decode()}}],
                 "contexts": [{"name": "admin", "context": {"cluster": TENANT, "user": "admin"}}]}
        c.kubectl("create", "secret", "generic", f"{TENANT}-kubeconfig", "-n", TENANT,
                  f"--from-literal=value={json.dumps(admin)}")

        # The tenant side: `kube-public/cluster-info` and the RBAC that lets anonymous clients
        # read it, as kubeadm's bootstrap-token phase writes them (Kamaji runs it:
        # internal/kubeadm/bootstraptoken.go; kubeadm `phases/bootstraptoken/clusterinfo`:
        # Role `kubeadm:bootstrap-signer-clusterinfo`, bound to User `system:anonymous`).
        info = {"apiVersion": "v1", "kind": "Config", "contexts": [], "users": [],
                "clusters": [{"name": "", "cluster": {"server": f"https://127.0.0.1:{c.api_port}",
                                                      "certificate-authority-data": base64.b64encode(ca.encode()).decode()}}]}
        c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info", "namespace": "kube-public"},
             "data": {"kubeconfig": json.dumps(info)}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
             "rules": [{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["cluster-info"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:anonymous"}]},
        ]}))
        r = kaas(kaas_bin, repo, "kubeconfig", TENANT, "--kubeconfig", c.kubeconfig, "--scope", "groups")
        import yaml
        got_ca = base64.b64decode(yaml.safe_load(r.stdout)["clusters"][0]["cluster"]["certificate-authority-data"]).decode()
        if got_ca != ca:
            fails.append("the person's kubeconfig does not carry the tenant's CA from its cluster-info")
        if "taken from its API server on first use" not in r.stderr:
            fails.append(f"kubeconfig did not say the CA was trusted on first use: {r.stderr.strip()[:300]}")
        person = os.path.join(work, "person.kubeconfig")
        open(person, "w").write(r.stdout)
        if "client-key-data" in r.stdout or "token:" in r.stdout:
            fails.append("the person's kubeconfig carries a credential")

        # The stand-in of kubelogin: `kubectl oidc-login get-token ...` runs `kubectl-oidc_login`
        # from PATH; it records its arguments and prints the token of E2E_TOKEN.
        plugins = os.path.join(work, "plugins")
        os.makedirs(plugins)
        stub = os.path.join(plugins, "kubectl-oidc_login")
        open(stub, "w").write(
            "#!/usr/bin/env python3\nimport json, os, sys\n"
            f"open({os.path.join(work, 'plugin-args')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
            "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1', 'kind': 'ExecCredential',"
            " 'status': {'token': os.environ['E2E_TOKEN']}}))\n")
        os.chmod(stub, 0o755)

        def as_person(token, *args):
            env = {**os.environ, "PATH": plugins + os.pathsep + os.environ["PATH"], "E2E_TOKEN": token}
            return subprocess.run(["kubectl", f"--kubeconfig={person}", *args], capture_output=True, text=True, env=env)

        admin_token = issuer.token("jane@example.com", ["acme-admins"])
        # The authenticator fetches the issuer's keys in the background after the start.
        who = c.wait_for("an issuer token accepted", lambda: (lambda p: p.returncode == 0 and json.loads(p.stdout))(
            as_person(admin_token, "auth", "whoami", "-o", "json")), 60)
        user = who["status"]["userInfo"]
        if user.get("username") != "corp:jane@example.com" or "corp:acme-admins" not in user.get("groups", []):
            fails.append(f"the API server made {user} of jane's token, not corp:jane@example.com in corp:acme-admins")
        plugin_args = json.loads(open(os.path.join(work, "plugin-args")).read())
        for a in ("get-token", f"--oidc-issuer-url={issuer.url}", f"--oidc-client-id={CLIENT_ID}", "--oidc-extra-scope=groups"):
            if a not in plugin_args:
                fails.append(f"the exec plugin was not given {a}: {plugin_args}")

        checks = [
            # (who, token, kubectl args, allowed?)
            ("an admin creates a namespace", admin_token, ("create", "namespace", "made-by-jane"), True),
            ("a developer (view) lists pods", issuer.token("dev@example.com", ["acme-developers"]), ("get", "pods", "-A"), True),
            ("a developer (view) cannot create a namespace", issuer.token("dev@example.com", ["acme-developers"]),
             ("create", "namespace", "made-by-dev"), False),
            ("a member of no bound group cannot list pods", issuer.token("eve@example.com", ["other"]), ("get", "pods", "-A"), False),
            ("an IdP group called system:masters is no Kubernetes admin (it is corp:system:masters)",
             issuer.token("mallory@example.com", ["system:masters"]), ("get", "secrets", "-A"), False),
        ]
        fails += judged(checks, as_person)
        # A token for another client, or signed by no key of the issuer, is no one.
        for what, token in (("another audience", issuer.token("jane@example.com", ["acme-admins"], aud="other-client")),
                            ("a bad signature", admin_token[:-8] + "AAAAAAAA")):
            p = as_person(token, "get", "namespaces")
            if p.returncode == 0 or "Unauthorized" not in p.stderr:
                fails.append(f"a token with {what} was not refused as Unauthorized: {p.stderr.strip()}")
        print(f"  {len(checks) + 2} logins judged by the real authenticator and authorizer", flush=True)
        return fails
    finally:
        issuer.stop()
        if fails:
            print(c.tail_logs(20), flush=True)
        c.stop()


def run(e, r):
    """From e2e.py: a bed of its own, under the run's work folder."""
    work = os.path.join(e.work, "access")
    os.makedirs(work, exist_ok=True)
    r.run("access: the rendered OIDC configuration on the real kube-apiserver; a loopback issuer's tokens get exactly "
          "the rendered bindings' rights; `kaas-gitops kubeconfig` works through an exec plugin stand-in",
          scenario, e.a.bin, e.a.kaas, work)


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--kaas", required=True)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="kaas-e2e-access-")
    try:
        found = scenario(a.bin, a.kaas, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for f in found:
        print("FAIL:", f)
    print("e2e access:", "failed" if found else "passed")
    sys.exit(1 if found else 0)
