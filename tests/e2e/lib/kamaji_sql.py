"""A tenant on a real PostgreSQL through kine, on the real Kamaji pair (issue 45). Run by
lib/kamaji.py after the other scenarios, on the bed they leave (the stand-in kubelet only).

kaas.yaml declares a PostgreSQL DataStore `pg` (endpoint on loopback, basicAuth from a Secret by
name) and tenant `pgt` names it. What runs for real: Debian's PostgreSQL server, Kamaji's
DataStore controller (it reads the Secret and validates the store), Kamaji creating the tenant's
database and role in PostgreSQL under the names kaas-gitops rendered (`dataStoreSchema`,
`dataStoreUsername`), the provider, and kine (built from its Go module) with the args and
environment Kamaji wrote into the Pod, serving the tenant API server its etcd API from
PostgreSQL. Stand-ins as in lib/kamaji.py: the kubelet (one process per container), CAPMOX, the
cluster DNS and LoadBalancer route. Checked: the DataStore Ready, the database and role named as
rendered, the tenant's kubeconfig reaching its API server, and an object written into the tenant
landing as a row of PostgreSQL's `kine` table. Measured: applied -> kubeconfig usable.
"""
import base64, glob, json, os, re, shutil, subprocess, time

from capi import kustomize, standin, yaml_docs
from cluster import free_port
from kamaji import FLUX_GROUPS, KCP, TCP, start_containers, stop_tenant_processes

DATASTORE = "datastores.kamaji.clastix.io"
TENANT = "pgt"
STORE = "pg"
SECRET = "pg-superuser"
HOST = "127.0.0.30"  # the tenant API server's loopback address (lib/kamaji_fleet.py uses .11-.20)
PASSWORD = "kaas-e2e-postgres"  # the bed's own server on loopback, thrown away with it


def postgres_bin():
    """The folder of Debian's PostgreSQL server programs, if installed."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return os.path.dirname(found[-1]) if found else None


class Postgres:
    """Debian's PostgreSQL server on 127.0.0.1, as the `postgres` user (it refuses root)."""

    def __init__(self, work):
        self.bin, self.dir, self.port, self.proc = postgres_bin(), os.path.join(work, "postgres"), free_port(), None

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        pw = os.path.join(self.dir, "pw")
        open(pw, "w").write(PASSWORD + "\n")
        shutil.chown(self.dir, "postgres")
        shutil.chown(pw, "postgres")
        data = os.path.join(self.dir, "data")
        subprocess.run(["runuser", "-u", "postgres", "--", f"{self.bin}/initdb", "-D", data, "-U", "postgres",
                        "--auth=scram-sha-256", f"--pwfile={pw}"], check=True, capture_output=True)
        log = open(os.path.join(self.dir, "server.log"), "w")
        self.proc = subprocess.Popen(["runuser", "-u", "postgres", "--", f"{self.bin}/postgres", "-D", data, "-k", self.dir,
                                      "-c", "listen_addresses=127.0.0.1", "-p", str(self.port)],
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        for _ in range(60):
            if subprocess.run([f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                              capture_output=True).returncode == 0:
                return
            time.sleep(0.5)
        raise RuntimeError(f"PostgreSQL did not start: {open(os.path.join(self.dir, 'server.log')).read()[-800:]}")

    def sql(self, query, db="postgres"):
        psql = os.path.join(self.bin, "psql") if os.path.exists(os.path.join(self.bin, "psql")) else "psql"
        r = subprocess.run([psql, "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", db, "-At", "-c", query],
                           env={**os.environ, "PGPASSWORD": PASSWORD}, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"psql {query!r} on {db}: {r.stderr.strip()}")
        return r.stdout.strip()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=30)


def fill(port):
    def f(d):
        from fleet import Fleet
        Fleet.example(d)
        tenants = os.path.join(d, "tenants")
        src = open(os.path.join(tenants, "initech.yaml")).read()
        for name in os.listdir(tenants):
            os.remove(os.path.join(tenants, name))
        text = src.replace("name: initech", f"name: {TENANT}").replace("shared: default", f"shared: {STORE}")
        if f"shared: {STORE}" not in text:
            raise RuntimeError("could not derive the PostgreSQL tenant from tenants/initech.yaml")
        open(os.path.join(tenants, f"{TENANT}.yaml"), "w").write(text)
        path = os.path.join(d, "kaas.yaml")
        platform = open(path).read()
        stores = (f"  dataStores:\n  - default\n  - name: {STORE}\n    driver: PostgreSQL\n"
                  f"    endpoints: [\"127.0.0.1:{port}\"]\n    basicAuth: {{secretName: {SECRET}}}\n")
        if "  dataStores: [default]\n" not in platform:
            raise RuntimeError("kaas.yaml of the example has no `dataStores: [default]` line to replace")
        open(path, "w").write(platform.replace("  dataStores: [default]\n", stores))
    return f


def tenant_on_postgresql(e):
    bed = e.kamaji_bed
    c, fails = bed.c, []
    pg = Postgres(bed.work)
    pg.start()
    try:
        return on_server(e, bed, c, pg, fails)
    finally:
        stop_tenant_processes(c, TENANT)
        pg.stop()


def on_server(e, bed, c, pg, fails):
    print(f"  real: PostgreSQL {pg.sql('show server_version')} on 127.0.0.1:{pg.port} (Debian's server)", flush=True)
    f = e.new_fleet("kamaji-sql", fill(pg.port))
    f.render()
    platform = kustomize(os.path.join(f.dir, "overlays", "platform"))
    ds = next((d for d in platform if d["kind"] == "DataStore" and d["metadata"]["name"] == STORE), None)
    if ds is None:
        return [f"the platform layer renders no DataStore {STORE}"]
    # The Secret the platform team creates (kaas-gitops names it; it never writes one).
    c.kubectl("create", "secret", "generic", SECRET, "-n", "kamaji-system", "--from-literal=username=postgres",
              f"--from-literal=password={PASSWORD}")
    standin(f"kustomize-controller's apply of the platform layer's DataStore {STORE} (rendered: overlays/platform/datastore-{STORE}.yaml)")
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-", input=json.dumps(ds))
    try:
        c.wait_for(f"DataStore {STORE} validated by Kamaji (its Secret read)",
                   lambda: c.get(DATASTORE, STORE).get("status", {}).get("ready") is True, timeout=120, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: {json.dumps(c.get(DATASTORE, STORE).get('status'))[:600]}"]

    objs = [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", TENANT)) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    kcp = next(d for d in objs if d["kind"] == "KamajiControlPlane")
    schema, user = kcp["spec"].get("dataStoreSchema"), kcp["spec"].get("dataStoreUsername")
    if kcp["spec"].get("dataStoreName") != STORE or not schema or not user:
        return [f"the rendered control plane names {kcp['spec'].get('dataStoreName')} with schema {schema}, user {user}"]
    with open(bed.hosts, "a") as h:  # the file bind-mounted into Kamaji's mount namespace: edited in place
        h.write(f"{HOST} {TENANT}.{TENANT}.svc\n")
    standin(f"cluster DNS for Kamaji: {TENANT}.{TENANT}.svc -> {HOST}")
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    t0 = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    c.kubectl("patch", "-n", TENANT, "proxmoxcluster", TENANT, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    standin(f"CAPMOX's ProxmoxCluster status.initialization.provisioned=true for {TENANT}")

    def deployment():
        r = c.kubectl("get", "-n", TENANT, "deployment", TENANT, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None
    try:
        dep = c.wait_for(f"Kamaji writes {TENANT}'s Deployment (after creating its database and role)", deployment,
                         timeout=300, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: TenantControlPlane status {json.dumps(c.get('-n', TENANT, TCP, TENANT).get('status'))[:600]}; "
                f"kamaji log: {bed.log('kamaji')[-800:]}"]
    ctrs = {x["name"]: x for x in dep["spec"]["template"]["spec"]["containers"]}
    api_args = ctrs["kube-apiserver"].get("args", []) + ctrs["kube-apiserver"].get("command", [])
    if "kine" not in ctrs or not any(a.startswith("--etcd-servers=unix://") for a in api_args):
        return [f"Kamaji's Deployment runs no kine beside an API server on its socket: containers {sorted(ctrs)}, "
                f"{[a for a in api_args if a.startswith('--etcd-servers')]}"]
    kine_endpoint = next((a for a in ctrs["kine"].get("args", []) if a.startswith("--endpoint=")), "")
    print(f"  Kamaji's kine container: image {ctrs['kine'].get('image')}, {kine_endpoint}", flush=True)
    owner = pg.sql(f"select pg_get_userbyid(datdba) from pg_database where datname = '{schema}'")
    role = pg.sql(f"select rolname from pg_roles where rolname = '{user}'")
    if owner != user or role != user:
        fails.append(f"PostgreSQL has database {schema} owned by {owner or '-'} and role {role or '-'}: "
                     f"Kamaji should have created both as rendered ({schema}, {user})")
    else:
        print(f"  Kamaji created database {schema} owned by role {user} in PostgreSQL (the names kaas-gitops rendered)", flush=True)

    port = start_containers(bed, TENANT, HOST, controller_manager=False)
    if isinstance(port, list):
        return fails + port

    def usable():
        k = c.get("-n", TENANT, KCP, TENANT)
        r = c.kubectl("get", "-n", TENANT, "secret", f"{TENANT}-kubeconfig", "-o", "json", check=False)
        if not (k.get("status", {}).get("ready") and r.returncode == 0):
            return None
        path = os.path.join(bed.work, f"{TENANT}-kubeconfig")
        open(path, "wb").write(base64.b64decode(json.loads(r.stdout)["data"]["value"]))
        server = yaml_docs(open(path).read())[0]["clusters"][0]["cluster"]["server"]
        vip = re.sub(r"^https://|:\d+$", "", server)
        args = ["kubectl", "--kubeconfig", path, "--server", f"https://{HOST}:{port}", "--tls-server-name", vip]
        p = subprocess.run(args + ["get", "--raw", "/version"], capture_output=True, text=True)
        return args if p.returncode == 0 else None
    try:
        kubectl = c.wait_for(f"{TENANT}: TenantControlPlane Ready and {TENANT}-kubeconfig reaching its API server on PostgreSQL",
                             usable, timeout=300, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}: TenantControlPlane {json.dumps(c.get('-n', TENANT, TCP, TENANT).get('status', {}).get('kubernetesResources'))[:400]}; "
                        f"kine log: {bed.log('tenant-kine-' + TENANT)[-600:]}"]
    e.r.figure("kamaji sql: tenant on PostgreSQL applied -> TenantControlPlane Ready and kubeconfig usable", f"{time.time() - t0:.1f}s")

    # What the tenant API server writes lands in PostgreSQL: kine's table in the tenant's database.
    subprocess.run(kubectl + ["create", "configmap", "kaas-e2e-on-postgresql", "--from-literal=driver=PostgreSQL"],
                   check=True, capture_output=True)
    rows = pg.sql("select count(*) from kine where name = '/registry/configmaps/default/kaas-e2e-on-postgresql'", db=schema)
    total = pg.sql("select count(*) from kine", db=schema)
    if rows in ("", "0"):
        fails.append(f"the ConfigMap written into {TENANT} is no row of kine's table in database {schema} ({total} rows there)")
    else:
        print(f"  a ConfigMap written into {TENANT} is row(s) of kine's table in PostgreSQL database {schema} "
              f"({total} rows in all)", flush=True)
    return fails
