"""Tenants on real PostgreSQL, MySQL (MariaDB) and NATS DataStores through kine, on the real
Kamaji pair (issue 45). Run by lib/kamaji.py after the other scenarios, on the bed they leave (the
stand-in kubelet only).

For each driver, kaas.yaml declares a DataStore (endpoint on loopback, basicAuth from a Secret by
name) and one tenant names it. What runs for real: the database server (Debian's PostgreSQL,
Debian's MariaDB, installed with apt-get when missing, nats-server built from its Go module with
JetStream), Kamaji's DataStore controller (it reads the Secret and validates the store), Kamaji
creating the tenant's database and user (a JetStream bucket for NATS) under the names kaas-gitops
rendered (`dataStoreSchema`, `dataStoreUsername`), the provider, and kine (built from its Go
module) with the args and environment Kamaji wrote into the Pod, serving the tenant API server its
etcd API from that database. Stand-ins as in lib/kamaji.py: the kubelet (one process per
container), CAPMOX, the cluster DNS and LoadBalancer route. Checked: the DataStore Ready, the
database and user as rendered, the tenant's kubeconfig reaching its API server, and an object
written into the tenant landing in the database. Measured: applied -> kubeconfig usable.
Recovery: on PostgreSQL the management cluster is lost with the tenant's database and both come
back (from git, and from the database's dump: management_lost); on MariaDB the database alone is
dumped, lost and restored.
"""
import base64, glob, json, os, re, shutil, ssl, subprocess, tempfile, time, urllib.request

from capi import kustomize, standin, yaml_docs
from cluster import free_port
from kamaji import FLUX_GROUPS, KCP, PROVIDER, TCP, from_initech, start_containers, stop_tenant_processes, with_datastores

DATASTORE = "datastores.kamaji.clastix.io"
PASSWORD = "kaas-e2e-datastore"  # the bed's own servers on loopback, thrown away with it
OBJECT = "kaas-e2e-on-datastore"  # the ConfigMap written into each tenant
KEY = f"/registry/configmaps/default/{OBJECT}"


class Server:
    """One database server on 127.0.0.1, in a folder of its own that its user may enter."""
    driver = tenant = host = None

    def __init__(self, e):
        self.e, self.port, self.proc, self.dir = e, free_port(), None, None

    def folder(self, owner):
        self.dir = tempfile.mkdtemp(prefix=f"kaas-e2e-{self.tenant}-")  # /tmp: the bed's work folder is root's alone
        shutil.chown(self.dir, owner)
        return self.dir

    def spawn(self, argv, name):
        log = open(os.path.join(self.dir, f"{name}.log"), "w")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def log(self, name):
        return open(os.path.join(self.dir, f"{name}.log"), errors="replace").read()[-800:]

    def wait(self, ready, what):
        for _ in range(120):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{what} exited: {self.log('server')}")
            if ready():
                return
            time.sleep(0.5)
        raise RuntimeError(f"{what} did not start: {self.log('server')}")

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            self.proc.wait(timeout=60)
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


class Postgres(Server):
    """Debian's PostgreSQL server, as the `postgres` user (it refuses root)."""
    driver, tenant, host, user = "PostgreSQL", "pgt", "127.0.0.30", "postgres"

    @staticmethod
    def missing():
        return None if glob.glob("/usr/lib/postgresql/*/bin/postgres") else "no PostgreSQL server (Debian's postgresql)"

    def start(self):
        self.bin = os.path.dirname(sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))[-1])
        d = self.folder("postgres")
        pw = os.path.join(d, "pw")
        open(pw, "w").write(PASSWORD + "\n")
        shutil.chown(pw, "postgres")
        r = subprocess.run(["runuser", "-u", "postgres", "--", f"{self.bin}/initdb", "-D", f"{d}/data", "-U", "postgres",
                            "--auth=scram-sha-256", f"--pwfile={pw}"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"initdb: {r.stderr.strip()[-600:]}")
        self.spawn(["runuser", "-u", "postgres", "--", f"{self.bin}/postgres", "-D", f"{d}/data", "-k", d,
                    "-c", "listen_addresses=127.0.0.1", "-p", str(self.port)], "server")
        self.wait(lambda: subprocess.run([f"{self.bin}/pg_isready", "-h", "127.0.0.1", "-p", str(self.port)],
                                         capture_output=True).returncode == 0, "PostgreSQL")
        return f"PostgreSQL {self.sql('show server_version')}"

    def sql(self, query, db="postgres"):
        r = subprocess.run(["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", db, "-At", "-c", query],
                           env={**os.environ, "PGPASSWORD": PASSWORD}, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"psql {query!r} on {db}: {r.stderr.strip()}")
        return r.stdout.strip()

    def created(self, schema, user):
        owner = self.sql(f"select pg_get_userbyid(datdba) from pg_database where datname = '{schema}'")
        role = self.sql(f"select rolname from pg_roles where rolname = '{user}'")
        ok = owner == user and role == user
        return ok, f"database {schema} owned by {owner or '-'}, role {role or '-'}"

    def holds(self, schema):
        rows = self.sql(f"select count(*) from kine where name = '{KEY}'", db=schema)
        return rows not in ("", "0"), f"{self.sql('select count(*) from kine', db=schema)} rows in kine's table of database {schema}"

    def conn(self):
        return ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"], {**os.environ, "PGPASSWORD": PASSWORD}

    def dump(self, schema):
        """The tenant's database as its own backup takes it: pg_dump's custom format."""
        dump = os.path.join(self.dir, f"{schema}.dump")
        conn, env = self.conn()
        subprocess.run(["pg_dump", *conn, "-Fc", "-f", dump, schema], check=True, env=env, capture_output=True)
        return dump

    def lose(self, schema):
        self.sql(f'drop database "{schema}" with (force)')

    def restore(self, schema, user, dump):
        """The database created again for the rendered user and pg_restore'd into it as that user
        (docs/backup.md: `pg_restore --dbname=<schema> --role=<user>`)."""
        conn, env = self.conn()
        self.sql(f'create database "{schema}" owner "{user}"')
        r = subprocess.run(["pg_restore", *conn, "-d", schema, "--no-owner", f"--role={user}", dump],
                           env=env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"pg_restore: {r.stderr.strip()[-600:]}")
        return f"pg_dump of {schema} ({os.path.getsize(dump)} bytes), database dropped, created for {user}, pg_restore'd as {user}"

    def dump_and_restore(self, schema, user):
        """The tenant's database from its own backup (docs/backup.md): dumped, lost (dropped),
        restored."""
        dump = self.dump(schema)
        self.lose(schema)
        return self.restore(schema, user, dump)


class MariaDB(Server):
    """Debian's MariaDB server (Kamaji's MySQL driver and kine's speak its protocol), as `mysql`."""
    driver, tenant, host, user = "MySQL", "myt", "127.0.0.31", "kamaji"

    @staticmethod
    def missing():
        if shutil.which("mariadbd") or os.path.exists("/usr/sbin/mariadbd"):
            return None
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            return "no MariaDB server (Debian's mariadb-server) and no apt-get as root to install it"
        print("  apt-get install mariadb-server (missing on this machine)", flush=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "mariadb-server"], check=True, env=env, capture_output=True)
        return None

    def start(self):
        d = self.folder("mysql")
        r = subprocess.run(["mariadb-install-db", f"--datadir={d}/data", "--user=mysql", "--skip-test-db",
                            "--auth-root-authentication-method=socket"], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb-install-db: {(r.stdout + r.stderr).strip()[-600:]}")
        self.sock = os.path.join(d, "sock")
        self.spawn(["runuser", "-u", "mysql", "--", "/usr/sbin/mariadbd", f"--datadir={d}/data", f"--socket={self.sock}",
                    f"--port={self.port}", "--bind-address=127.0.0.1", f"--pid-file={d}/pid", "--skip-log-bin"], "server")
        self.wait(lambda: subprocess.run(["mariadb", f"--socket={self.sock}", "-uroot", "-e", "select 1"],
                                         capture_output=True).returncode == 0, "MariaDB")
        # Kamaji's login: the rights its MySQL driver uses (internal/datastore/mysql.go), granted on.
        self.sql(f"CREATE USER '{self.user}'@'%' IDENTIFIED BY '{PASSWORD}'; "
                 f"GRANT ALL ON *.* TO '{self.user}'@'%' WITH GRANT OPTION")
        return f"MariaDB {self.sql('select version()')}"

    def sql(self, query):
        r = subprocess.run(["mariadb", f"--socket={self.sock}", "-uroot", "-N", "-B", "-e", query], capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"mariadb {query!r}: {r.stderr.strip()}")
        return r.stdout.strip()

    def created(self, schema, user):
        db = self.sql(f"select schema_name from information_schema.schemata where schema_name = '{schema}'")
        grant = self.sql(f"select count(*) from mysql.db where Db = '{schema}' and User = '{user}'")
        ok = db == schema and grant not in ("", "0")
        return ok, f"database {schema} {'present' if db else 'missing'}, grants of user {user} on it: {grant or 0}"

    def holds(self, schema):
        rows = self.sql(f"select count(*) from `{schema}`.kine where name = '{KEY}'")
        total = self.sql(f"select count(*) from `{schema}`.kine")
        return rows not in ("", "0"), f"{total} rows in kine's table of database {schema}"

    def dump_and_restore(self, schema, user):
        """The tenant's database from its own backup: mariadb-dump, the database lost (dropped; the
        user's grants on it stay, as MySQL keeps them by name), created again and loaded."""
        dump = os.path.join(self.dir, f"{schema}.sql")
        with open(dump, "w") as out:
            subprocess.run(["mariadb-dump", f"--socket={self.sock}", "-uroot", "--single-transaction", schema],
                           check=True, stdout=out, stderr=subprocess.PIPE)
        self.sql(f"drop database `{schema}`; create database `{schema}`")
        with open(dump) as src:
            subprocess.run(["mariadb", f"--socket={self.sock}", "-uroot", schema], check=True, stdin=src, capture_output=True)
        return f"mariadb-dump of {schema} ({os.path.getsize(dump)} bytes), database dropped, created and loaded (grants of {user} kept)"


class Nats(Server):
    """nats-server with JetStream (tests/e2e/build-kamaji.sh builds it), one user."""
    driver, tenant, host, user = "NATS", "nt", "127.0.0.32", "kamaji"

    @staticmethod
    def missing():
        return None

    def start(self):
        binary = os.path.join(self.e.kamaji_bed.kbin, "nats-server")
        if not os.access(binary, os.X_OK):
            raise RuntimeError(f"{self.e.kamaji_bed.kbin} has no nats-server (tests/e2e/build-kamaji.sh builds it)")
        d = self.folder("root")
        self.monitor = free_port()
        self.spawn([binary, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", f"{d}/js", "--user", self.user,
                    "--pass", PASSWORD, "-m", str(self.monitor)], "server")
        self.wait(lambda: self.jsz() is not None, "nats-server")
        return f"nats-server {self.varz().get('version')} (JetStream)"

    def varz(self):
        return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.monitor}/varz", timeout=2).read())

    def jsz(self):
        try:
            return json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.monitor}/jsz?streams=true", timeout=2).read())
        except OSError:
            return None

    def streams(self):
        return {s["name"]: s["state"]["messages"] for a in (self.jsz() or {}).get("account_details", [])
                for s in a.get("stream_detail", [])}

    def created(self, schema, user):
        # Kamaji makes the key-value bucket named by the schema (26.8.2-edge internal/datastore/nats.go
        # CreateDB), which kine then uses (deployment.go: `nats://...?bucket=$(DB_SCHEMA)`): its
        # stream is KV_<bucket>. No user: on NATS kine logs in as the DataStore's own
        # (internal/resources/datastore/datastore_storage_config.go), and dataStoreUsername is unused.
        streams = self.streams()
        return f"KV_{schema}" in streams, f"JetStream key-value bucket {schema} {'present' if f'KV_{schema}' in streams else 'missing'} (streams {sorted(streams)})"

    def holds(self, schema):
        streams = self.streams()
        n = streams.get(f"KV_{schema}", 0)
        return n > 0, f"{n} messages in JetStream stream KV_{schema} (streams: {sorted(streams)})"


SERVERS = {s.driver: s for s in (Postgres, MariaDB, Nats)}


def fill(server):
    def f(d):
        store = server.tenant + "-store"
        from_initech(d, {server.tenant: lambda t: t.replace("shared: default", f"shared: {store}")
                         if "shared: default" in t else None})
        with_datastores(d, f"  dataStores:\n  - default\n  - name: {store}\n    driver: {server.driver}\n"
                           f"    endpoints: [\"127.0.0.1:{server.port}\"]\n    basicAuth: {{secretName: {store}-login}}\n")
    return f


def tenant_on(e, driver):
    cls = SERVERS[driver]
    why = cls.missing()
    if why:
        return [f"cannot run: {why}"]
    server = cls(e)
    try:
        print(f"  real: {server.start()} on 127.0.0.1:{server.port}", flush=True)
        return on_server(e, e.kamaji_bed, server)
    finally:
        stop_tenant_processes(e.kamaji_bed.c, server.tenant)
        server.stop()


def on_server(e, bed, server):
    c, fails, tenant = bed.c, [], server.tenant
    store = f"{tenant}-store"
    f = e.new_fleet(f"kamaji-{tenant}", fill(server))
    f.render()
    platform = kustomize(os.path.join(f.dir, "overlays", "platform"))
    ds = next((d for d in platform if d["kind"] == "DataStore" and d["metadata"]["name"] == store), None)
    if ds is None:
        return [f"the platform layer renders no DataStore {store}"]
    kamaji = next(d for d in kustomize(os.path.join(f.dir, "overlays", "platform", "kamaji")) if d["kind"] == "HelmRelease")
    print(f"  rendered: DataStore {store} ({server.driver}, basicAuth from Secret {store}-login); the kamaji release's "
          f"extraArgs {kamaji['spec']['values'].get('extraArgs')}", flush=True)
    # The Secret the platform team creates (kaas-gitops names it; it never writes one).
    c.kubectl("create", "secret", "generic", f"{store}-login", "-n", "kamaji-system", f"--from-literal=username={server.user}",
              f"--from-literal=password={PASSWORD}")
    standin(f"kustomize-controller's apply of the platform layer's DataStore {store} (overlays/platform/datastore-{store}.yaml)")
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-", input=json.dumps(ds))
    try:
        c.wait_for(f"DataStore {store} validated by Kamaji (its Secret read)",
                   lambda: c.get(DATASTORE, store).get("status", {}).get("ready") is True, timeout=120, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: {json.dumps(c.get(DATASTORE, store).get('status'))[:600]}"]

    objs = [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", tenant)) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    kcp = next(d for d in objs if d["kind"] == "KamajiControlPlane")
    schema, user = kcp["spec"].get("dataStoreSchema"), kcp["spec"].get("dataStoreUsername")
    if kcp["spec"].get("dataStoreName") != store or not schema or not user:
        return [f"the rendered control plane names {kcp['spec'].get('dataStoreName')} with schema {schema}, user {user}"]
    with open(bed.hosts, "a") as h:  # the file bind-mounted into Kamaji's mount namespace: edited in place
        h.write(f"{server.host} {tenant}.{tenant}.svc\n")
    standin(f"cluster DNS for Kamaji: {tenant}.{tenant}.svc -> {server.host}")
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    t0 = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    c.kubectl("patch", "-n", tenant, "proxmoxcluster", tenant, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    standin(f"CAPMOX's ProxmoxCluster status.initialization.provisioned=true for {tenant}")

    def deployment():
        r = c.kubectl("get", "-n", tenant, "deployment", tenant, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None
    try:
        dep = c.wait_for(f"Kamaji writes {tenant}'s Deployment (after creating its database and user)", deployment,
                         timeout=300, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: TenantControlPlane status {json.dumps(c.get('-n', tenant, TCP, tenant).get('status'))[:600]}; "
                f"kamaji log: {bed.log('kamaji')[-800:]}"]
    ctrs = {x["name"]: x for x in dep["spec"]["template"]["spec"]["containers"]}
    api_args = ctrs["kube-apiserver"].get("args", []) + ctrs["kube-apiserver"].get("command", [])
    if "kine" not in ctrs or not any(a.startswith("--etcd-servers=unix://") for a in api_args):
        return [f"Kamaji's Deployment runs no kine beside an API server on its socket: containers {sorted(ctrs)}, "
                f"{[a for a in api_args if a.startswith('--etcd-servers')]}"]
    endpoint = next((a for a in ctrs["kine"].get("args", []) if a.startswith("--endpoint=")), "")
    print(f"  Kamaji's kine container: image {ctrs['kine'].get('image')}, {endpoint}", flush=True)
    ok, what = server.created(schema, user)
    if not ok:
        fails.append(f"{server.driver}: {what}; Kamaji should have created them as rendered (schema {schema}, user {user})")
    else:
        print(f"  Kamaji created in {server.driver}: {what} (schema {schema}, user {user}: the names kaas-gitops rendered)", flush=True)

    port = start_containers(bed, tenant, server.host, controller_manager=False)
    if isinstance(port, list):
        return fails + port

    try:
        kubectl = c.wait_for(f"{tenant}: TenantControlPlane Ready and {tenant}-kubeconfig reaching its API server on {server.driver}",
                             lambda: usable_kubeconfig(c, bed, tenant, server.host, port), timeout=300, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}: TenantControlPlane {json.dumps(c.get('-n', tenant, TCP, tenant).get('status', {}).get('kubernetesResources'))[:400]}; "
                        f"kine log: {bed.log('tenant-kine-' + tenant)[-600:]}"]
    e.r.figure(f"kamaji datastores: a tenant on {server.driver} applied -> TenantControlPlane Ready and kubeconfig usable",
               f"{time.time() - t0:.1f}s")

    # What the tenant API server writes lands in the database, through kine.
    why = create(c, kubectl, ["create", "configmap", OBJECT, f"--from-literal=driver={server.driver}"], tenant)
    if why:
        return fails + [f"{why}; kine log {bed.log('tenant-kine-' + tenant)[-600:]}"]
    ok, what = server.holds(schema)
    if not ok:
        fails.append(f"the ConfigMap written into {tenant} is not in {server.driver}: {what}")
    else:
        print(f"  the ConfigMap written into {tenant} is in {server.driver}: {what}", flush=True)
    if hasattr(server, "restore") and not fails:
        return fails + management_lost(e, bed, f, server, ds, objs, kcp, kubectl)
    if hasattr(server, "dump_and_restore") and not fails:
        # Recovery from the database's own backup: the API server and kine stop as the Pods would
        # while the database is restored, then start again on the restored database.
        stop_tenant_processes(c, tenant)
        t1 = time.time()
        print(f"  restored: {server.dump_and_restore(schema, user)}", flush=True)
        again = start_containers(bed, tenant, server.host, controller_manager=False, quiet=True)
        if isinstance(again, list):
            return fails + again
        get = kubectl + ["get", "configmap", OBJECT, "-o", "jsonpath={.data.driver}"]
        try:
            c.wait_for(f"{tenant} serving the ConfigMap again from the restored database",
                       lambda: subprocess.run(get, capture_output=True, text=True).stdout == server.driver, timeout=120, interval=1)
        except TimeoutError as ex:
            return fails + [f"{ex}: kine log {bed.log('tenant-kine-' + tenant)[-600:]}"]
        e.r.figure(f"kamaji datastores: {server.driver} database dumped, lost and restored -> the tenant serves its objects again",
                   f"{time.time() - t1:.1f}s")
        print(f"  after the restore the tenant API server serves the ConfigMap {OBJECT} again", flush=True)
    return fails


def management_lost(e, old, f, server, ds, objs, kcp, kubectl):
    """Issue 45's recovery on SQL: the tenant's database dumped (its own backup), then the
    management cluster lost (every process of the bed SIGKILLed, its etcd's data deleted:
    lib/kamaji_rebuild.py lose_management_cluster) and the tenant's database with it (dropped; the
    database server is the platform's service and runs on). A new management bed starts, the
    platform comes back from git (`f`'s rendered platform layer), the DataStore's login Secret is
    put back (git holds its name only: docs/backup.md step 1), the rendered DataStore is applied,
    the database is restored from the dump under the rendered names, and the tenant's rendered
    objects are applied again: Kamaji creates a new TenantControlPlane on the same database and user,
    and its API server (kine on the restored database) serves the ConfigMap written before the loss."""
    from kamaji_rebuild import lose_management_cluster, new_bed, start_from_git
    tenant, store = server.tenant, f"{server.tenant}-store"
    schema, user = kcp["spec"]["dataStoreSchema"], kcp["spec"]["dataStoreUsername"]
    uid = subprocess.run(kubectl + ["get", "configmap", OBJECT, "-o", "jsonpath={.metadata.uid}"],
                         capture_output=True, text=True).stdout
    dump = server.dump(schema)
    t_loss = time.time()
    lose_management_cluster(old, None)
    server.lose(schema)
    print(f"  lost with it: {tenant}'s database {schema} (dropped; {server.driver} itself runs on, as the platform's "
          f"database service); kept: its dump {os.path.basename(dump)} ({os.path.getsize(dump)} bytes)", flush=True)
    new = new_bed(e, old, f"kamaji-{tenant}-rebuilt")
    e.r.figure(f"kamaji datastores: {server.driver} recovery, new management bed start (fresh etcd, CAPI managers, Kamaji, "
               "provider)", f"{start_from_git(new, f):.1f}s")
    c = new.c
    c.kubectl("create", "secret", "generic", f"{store}-login", "-n", "kamaji-system", f"--from-literal=username={server.user}",
              f"--from-literal=password={PASSWORD}")
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-", input=json.dumps(ds))
    try:
        c.wait_for(f"DataStore {store} validated by the new Kamaji", lambda: c.get(DATASTORE, store).get("status", {}).get("ready") is True,
                   timeout=120, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: {json.dumps(c.get(DATASTORE, store).get('status'))[:600]}"]
    t = time.time()
    print(f"  restored before the tenant comes back: {server.restore(schema, user, dump)}", flush=True)
    e.r.figure(f"kamaji datastores: {server.driver} database restored from its dump", f"{time.time() - t:.1f}s")
    with open(new.hosts, "a") as h:
        h.write(f"{server.host} {tenant}.{tenant}.svc\n")
    t_apply = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    c.kubectl("patch", "-n", tenant, "proxmoxcluster", tenant, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    print(f"  the same {len(objs)} rendered objects of {tenant} applied again from {f.dir}", flush=True)
    try:
        c.wait_for(f"the new Kamaji writes {tenant}'s Deployment on the restored database",
                   lambda: c.kubectl("get", "-n", tenant, "deployment", tenant, check=False).returncode == 0, timeout=300, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: TenantControlPlane status {json.dumps(c.get('-n', tenant, TCP, tenant).get('status'))[:600]}; "
                f"kamaji log: {new.log('kamaji')[-800:]}"]
    setup = c.get("-n", tenant, TCP, tenant).get("status", {}).get("storage", {}).get("setup", {})
    fails = []
    if setup.get("schema") != schema or setup.get("user") != user:
        fails.append(f"the new TenantControlPlane set up {setup}, not the rendered schema {schema} and user {user}")
    port = start_containers(new, tenant, server.host, controller_manager=False, quiet=True)
    if isinstance(port, list):
        return fails + port
    try:
        again = c.wait_for(f"{tenant}: the new TenantControlPlane Ready and {tenant}-kubeconfig (new CA) reaching its API server",
                           lambda: usable_kubeconfig(c, new, tenant, server.host, port), timeout=300, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}: kine log {new.log('tenant-kine-' + tenant)[-600:]}"]
    got = subprocess.run(again + ["get", "configmap", OBJECT, "-o", "jsonpath={.metadata.uid} {.data.driver}"],
                         capture_output=True, text=True)
    t_served = time.time()
    if got.returncode != 0 or got.stdout != f"{uid} {server.driver}":
        return fails + [f"the recovered {tenant} does not serve ConfigMap {OBJECT} (uid {uid}) written before the loss: "
                        f"{got.stdout or got.stderr.strip()[:300]}"]
    print(f"  the recovered {tenant} serves ConfigMap {OBJECT} written before the loss (uid {uid}) from the restored "
          f"{server.driver} database", flush=True)
    e.r.figure(f"kamaji datastores: {server.driver} recovery, tenant objects applied -> tenant serves its objects again",
               f"{t_served - t_apply:.1f}s")
    e.r.figure(f"kamaji datastores: {server.driver} recovery, management cluster and database lost -> tenant serves its "
               "objects again", f"{t_served - t_loss:.1f}s")
    return fails + [f"recovered bed: {x}" for x in c.forbidden(["kamaji", PROVIDER])]


# ---- /events on an etcd DataStore of its own --------------------------------------------------

EVENTS_TENANT, EVENTS_HOST = "evt", "127.0.0.33"


def events_fill(ports):
    def f(d):
        # No dataStore of its own: the fleet's default, and with it the fleet's overrides.
        drop = "    dataStore:\n      shared: default\n"
        from_initech(d, {EVENTS_TENANT: lambda t: t.replace(drop, "") if drop in t else None})
        tls = "tls: {{certificateAuthority: {{secretName: fleet-etcd-ca}}, clientCertificate: {{secretName: {}-root}}}}"
        with_datastores(d, "  dataStores:\n  - default\n" + "".join(
            f"  - name: {n}\n    driver: etcd\n    endpoints: [\"127.0.0.1:{p}\"]\n    {tls.format(n)}\n" for n, p in ports.items()
        ) + "  tenantDataStores:\n    default: etcd-main\n    overrides: [{resource: /events, dataStore: etcd-events}]\n")
    return f


def two_etcds(bed):
    """Two etcd processes whose certificates one CA signed (the platform's own etcds: client
    certificate auth, no etcd users), and the Secrets kaas.yaml names: {name: (port, TLS context)}."""
    from cluster import sh
    d = os.path.join(bed.work, "fleet-etcd-pki")
    os.makedirs(d, exist_ok=True)
    o = lambda *a: sh(["openssl", *a], cwd=d)  # noqa: E731
    o("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", "-days", "2", "-subj", "/CN=fleet-etcd-ca")
    open(os.path.join(d, "server.ext"), "w").write("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    open(os.path.join(d, "client.ext"), "w").write("extendedKeyUsage=clientAuth\n")
    out = {}
    secrets = [("fleet-etcd-ca", {"ca.crt": "ca.crt", "ca.key": "ca.key"})]
    for name in ("etcd-main", "etcd-events"):
        for n, subj, ext in ((f"{name}-server", f"/CN={name}", "server.ext"), (f"{name}-root", "/CN=root", "client.ext")):
            o("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{n}.key", "-out", f"{n}.csr", "-subj", subj)
            o("x509", "-req", "-in", f"{n}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", f"{n}.crt",
              "-days", "2", "-extfile", ext)
        client, peer = free_port(), free_port()
        bed.c.spawn(f"etcd-{name}", [
            f"{bed.bin}/etcd", "--name", name, "--data-dir", os.path.join(bed.work, f"etcd-{name}"),
            "--listen-client-urls", f"https://127.0.0.1:{client}", "--advertise-client-urls", f"https://127.0.0.1:{client}",
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"{name}=http://127.0.0.1:{peer}", "--client-cert-auth", "--trusted-ca-file", f"{d}/ca.crt",
            "--cert-file", f"{d}/{name}-server.crt", "--key-file", f"{d}/{name}-server.key", "--unsafe-no-fsync",
            "--listen-metrics-urls", f"http://127.0.0.1:{free_port()}"])
        ctx = ssl.create_default_context(cafile=f"{d}/ca.crt")
        ctx.load_cert_chain(f"{d}/{name}-root.crt", f"{d}/{name}-root.key")
        bed.c.wait_for(f"etcd {name} /health", lambda: b'"health":"true"' in urllib.request.urlopen(
            f"https://127.0.0.1:{client}/health", context=ctx, timeout=2).read(), timeout=30)
        out[name] = (client, ctx)
        secrets.append((f"{name}-root", {"tls.crt": f"{name}-root.crt", "tls.key": f"{name}-root.key"}))
    for secret, files in secrets:
        bed.c.kubectl("create", "secret", "generic", secret, "-n", "kamaji-system",
                      *[f"--from-file={k}={os.path.join(d, v)}" for k, v in files.items()])
    standin("the platform's two etcds of kaas.yaml (etcd-main, etcd-events): real etcd processes with TLS and client "
            "certificate auth, one CA (Secret fleet-etcd-ca) signing both, no etcd users")
    return out


def keys(etcd, prefix):
    """The keys under `prefix` in one etcd (its gRPC gateway, as the root client certificate)."""
    port, ctx = etcd
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = {"key": base64.b64encode(prefix.encode()).decode(), "range_end": base64.b64encode(end.encode()).decode(), "keys_only": True}
    req = urllib.request.Request(f"https://127.0.0.1:{port}/v3/kv/range", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    kvs = json.loads(urllib.request.urlopen(req, context=ctx, timeout=10).read()).get("kvs", [])
    return [base64.b64decode(kv["key"]).decode() for kv in kvs]


def events_on_own_store(e):
    bed = e.kamaji_bed
    c, fails, tenant = bed.c, [], EVENTS_TENANT
    etcds = two_etcds(bed)
    f = e.new_fleet("kamaji-events", events_fill({n: p for n, (p, _) in etcds.items()}))
    f.render()
    stores = [d for d in kustomize(os.path.join(f.dir, "overlays", "platform")) if d["kind"] == "DataStore"]
    standin("kustomize-controller's apply of the platform layer's DataStores etcd-main and etcd-events")
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": stores}))
    for n in etcds:
        try:
            c.wait_for(f"DataStore {n} validated by Kamaji", lambda: c.get(DATASTORE, n).get("status", {}).get("ready") is True,
                       timeout=120, interval=2)
        except TimeoutError as ex:
            return [f"{ex}: {json.dumps(c.get(DATASTORE, n).get('status'))[:600]}"]
    objs = [d for d in kustomize(os.path.join(f.dir, "overlays", "tenants", tenant)) if d["apiVersion"].split("/")[0] not in FLUX_GROUPS]
    kcp = next(d for d in objs if d["kind"] == "KamajiControlPlane")
    if kcp["spec"].get("dataStoreName") != "etcd-main" or kcp["spec"].get("dataStoreOverrides") != [
            {"resource": "/events", "dataStore": "etcd-events"}]:
        return [f"the rendered control plane: dataStoreName {kcp['spec'].get('dataStoreName')}, "
                f"dataStoreOverrides {kcp['spec'].get('dataStoreOverrides')}"]
    schema = kcp["spec"]["dataStoreSchema"]
    with open(bed.hosts, "a") as h:
        h.write(f"{EVENTS_HOST} {tenant}.{tenant}.svc\n")
    objs.sort(key=lambda d: d["kind"] != "Namespace")
    t0 = time.time()
    c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))
    c.kubectl("patch", "-n", tenant, "proxmoxcluster", tenant, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))

    def deployment():
        r = c.kubectl("get", "-n", tenant, "deployment", tenant, "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None
    try:
        dep = c.wait_for(f"Kamaji writes {tenant}'s Deployment", deployment, timeout=300, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: TenantControlPlane status {json.dumps(c.get('-n', tenant, TCP, tenant).get('status'))[:600]}; "
                f"kamaji log: {bed.log('kamaji')[-800:]}"]
    api = next(x for x in dep["spec"]["template"]["spec"]["containers"] if x["name"] == "kube-apiserver")
    overrides = [a for a in api.get("args", []) + api.get("command", []) if a.startswith("--etcd-servers-overrides=")]
    print(f"  Kamaji's API server args: {overrides}", flush=True)
    if overrides != [f"--etcd-servers-overrides=/events#https://127.0.0.1:{etcds['etcd-events'][0]}"]:
        fails.append(f"the API server's overrides are {overrides}")
    port = start_containers(bed, tenant, EVENTS_HOST, controller_manager=False)
    if isinstance(port, list):
        return fails + port
    try:
        kubectl = c.wait_for(f"{tenant}: TenantControlPlane Ready and its kubeconfig usable",
                             lambda: usable_kubeconfig(c, bed, tenant, EVENTS_HOST, port), timeout=300, interval=2)
    except TimeoutError as ex:
        stop_tenant_processes(c, tenant)
        return fails + [f"{ex}: TenantControlPlane {json.dumps(c.get('-n', tenant, TCP, tenant).get('status', {}).get('kubernetesResources'))[:400]}"]
    e.r.figure("kamaji datastores: a tenant with /events on an etcd of its own applied -> kubeconfig usable", f"{time.time() - t0:.1f}s")
    try:
        why = create(c, kubectl, ["create", "configmap", OBJECT], tenant)
        if why:
            return fails + [why]
        event = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "kaas-e2e", "namespace": "default"},
                 "involvedObject": {"kind": "ConfigMap", "name": OBJECT, "namespace": "default", "apiVersion": "v1"},
                 "source": {"component": "kaas-e2e"}, "reason": "KaasE2E", "message": "kept on its own DataStore",
                 "type": "Normal"}
        why = create(c, kubectl, ["create", "-f", "-"], tenant, json.dumps(event))
        if why:
            return fails + [why]
        main, events = etcds["etcd-main"], etcds["etcd-events"]
        want_event = f"/{schema}/events/default/kaas-e2e"
        want_cm = f"/{schema}/configmaps/default/{OBJECT}"
        in_events, in_main = keys(events, f"/{schema}/"), keys(main, f"/{schema}/")
        if want_event not in in_events or want_event in in_main:
            fails.append(f"the Event is not on etcd-events alone: etcd-events holds {len(in_events)} keys "
                         f"({[k for k in in_events if '/events/' in k][:5]}), etcd-main has it: {want_event in in_main}")
        if want_cm not in in_main or want_cm in in_events:
            fails.append(f"the ConfigMap is not on etcd-main alone: etcd-main {want_cm in in_main}, etcd-events {want_cm in in_events}")
        if not fails:
            print(f"  the tenant's Event is on etcd-events ({len(in_events)} keys under /{schema}/, all events: "
                  f"{all('/events/' in k for k in in_events)}), its ConfigMap on etcd-main ({len(in_main)} keys)", flush=True)
    finally:
        stop_tenant_processes(c, tenant)
    return fails


def create(c, kubectl, args, tenant, stdin=None):
    """`kubectl create ...` in the tenant, retried for a minute: just after its API server first
    serves, its bootstrap controller may not have made the `default` namespace yet. The last
    refusal, or None."""
    last = []

    def done():
        p = subprocess.run(kubectl + args, input=stdin, capture_output=True, text=True)
        last[:] = [p.stderr.strip()]
        return p.returncode == 0 or "AlreadyExists" in p.stderr
    try:
        c.wait_for(f"kubectl {' '.join(args[:3])} in {tenant}", done, timeout=60, interval=2)
    except TimeoutError as ex:
        return f"{ex}: {last[0] if last else ''}"
    return None


def usable_kubeconfig(c, bed, tenant, host, port):
    """kubectl's argv for the tenant once its KamajiControlPlane is ready and `<tenant>-kubeconfig`
    reaches its API server (at host:port, by the name its certificate carries), else None."""
    k = c.get("-n", tenant, KCP, tenant)
    r = c.kubectl("get", "-n", tenant, "secret", f"{tenant}-kubeconfig", "-o", "json", check=False)
    if not (k.get("status", {}).get("ready") and r.returncode == 0):
        return None
    path = os.path.join(bed.work, f"{tenant}-kubeconfig")
    open(path, "wb").write(base64.b64decode(json.loads(r.stdout)["data"]["value"]))
    server_url = yaml_docs(open(path).read())[0]["clusters"][0]["cluster"]["server"]
    vip = re.sub(r"^https://|:\d+$", "", server_url)
    args = ["kubectl", "--kubeconfig", path, "--server", f"https://{host}:{port}", "--tls-server-name", vip]
    p = subprocess.run(args + ["get", "--raw", "/version"], capture_output=True, text=True)
    return args if p.returncode == 0 else None
