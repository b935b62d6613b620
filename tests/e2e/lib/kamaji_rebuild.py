"""Issue 41 item 2 on the real pair: a management cluster lost and rebuilt from git brings the
tenant back on its old key prefix with its data (docs/backup.md, "Rebuilding the management
cluster from git"). Run by lib/kamaji.py after its scenarios, on the bed they leave: the tenant
`acme` serving (stand-in kubelet) from the stand-in kamaji-etcd DataStore.

  1. tenant data: a ConfigMap `default/survivor` written through the tenant API; the DataStore's
     keys under the TenantControlPlane's prefix `/<status.storage.setup.schema>/` counted;
  2. the loss (and, restored, a snapshot of the DataStore taken before it with `etcdctl snapshot
     save` as the rendered backup CronJob takes it, then a ConfigMap `default/late` written after
     it): every process of the management cluster (its etcd, whose data dir is deleted, its
     kube-apiserver and kube-controller-manager, the CAPI managers, Kamaji, the provider, the
     scheduler and kwok) and the tenant's API server killed with SIGKILL: no controller runs, so
     no finalizer runs (a TenantControlPlane deleted on a running management cluster would have
     its datastore dropped by Kamaji: internal/datastore/etcd.go DeleteDB, DeleteUser). The
     DataStore's etcd process is kept: the datastore survives, as its volumes would (issue 41).
     With E2E_KAMAJI_REBUILD=restored the DataStore is lost too (issue 45: its etcd killed, its
     data dir deleted) and restored from the snapshot with `etcdutl snapshot restore
     --bump-revision 1000000000 --mark-compacted` (the flags of `backup restore-plan`,
     src/render/backup.rs REVISION_BUMP) into a fresh data dir, on which the same etcd starts
     again (CI runs the restore with ten tenants: lib/kamaji_fleet.py ten_tenants_recovered);
  3. the rebuild from git: a new management bed (fresh etcd, new CA), the Kamaji chart, manager
     and provider again, the DataStore the chart renders from the fleet's HelmRelease values
     pointing at the surviving etcd, and the same rendered tenant objects of the fleet repository.
     Kamaji creates a new TenantControlPlane (new UID, new tenant CA) and sets up its datastore
     again; the tenant API server starts from the new Deployment's args (tenant_control_plane_serves);
  4. asserted: the new TenantControlPlane's status.storage.setup.schema is the rendered
     dataStoreSchema (not its UID), the new tenant API server serves `survivor` (and, restored,
     not `late`: the data is the snapshot's), the restored etcd's revision is past the bump, and
     the key count under the prefix did not restart from zero; the prefix its UID would have
     given is empty.
"""
import base64, json, os, re, shutil, signal, socket, subprocess, time, urllib.request

from capi import kamaji_reader, standin, yaml_docs
from cluster import CHARTS, sh
from kamaji import (FLUX_GROUPS, PROVIDER, TCP, TENANT, WEBHOOK_PORT, KamajiBed, b64, kamaji_writes,
                    tenant_control_plane_serves, tenant_overlay)

SURVIVOR = "survivor"
LATE = "late"
# backup restore-plan's --bump-revision (src/render/backup.rs REVISION_BUMP).
BUMP = 1_000_000_000


def restoring():
    mode = os.environ.get("E2E_KAMAJI_REBUILD", "kept")
    if mode not in ("restored", "kept"):
        raise ValueError(f"E2E_KAMAJI_REBUILD={mode!r}: valid are kept (the default) and restored")
    return mode == "restored"


def snapshot_save(bed, path):
    """`etcdctl snapshot save` of the DataStore with the chart's root client certificate, as the
    rendered backup CronJob runs it (Debian's etcd-client, which tests/run installs)."""
    etcdctl = shutil.which("etcdctl")
    if etcdctl is None:
        raise RuntimeError("etcdctl is not installed (Debian's etcd-client: tests/run installs it)")
    d = bed.ds_pki
    sh([etcdctl, "--endpoints", bed.etcd[0], "--cacert", f"{d}/ca.crt", "--cert", f"{d}/root.crt",
        "--key", f"{d}/root.key", "snapshot", "save", path], env={**os.environ, "ETCDCTL_API": "3"})


def revision(bed):
    return int(bed.etcd_call("/v3/kv/range", {"key": b64(b"/"), "count_only": True})["header"]["revision"])


def restore_datastore(old, new, snap):
    """The lost DataStore back from the snapshot: etcdutl (built from go.etcd.io/etcd/etcdutl/v3,
    as the members' image ships it) restores with the member's name, its peer URL and the
    revision bump into a fresh data dir, and the same etcd (certificates, ports) starts on it
    under the new bed."""
    data = os.path.join(old.work, f"etcd-{old.ds_name}-restored")
    peer = f"http://127.0.0.1:{old.ds_peer}"
    sh([f"{old.bin}/etcdutl", "snapshot", "restore", snap, "--name", old.ds_name, "--data-dir", data,
        "--initial-cluster", f"{old.ds_name}={peer}", "--initial-advertise-peer-urls", peer,
        "--bump-revision", str(BUMP), "--mark-compacted"])
    argv = list(old.ds_argv)
    argv[argv.index("--data-dir") + 1] = data
    new.c.spawn(f"etcd-{old.ds_name}", argv)
    url, ctx = new.etcd
    new.c.wait_for(f"the restored etcd {old.ds_name} /health", lambda: b'"health":"true"' in urllib.request.urlopen(
        f"{url}/health", context=ctx, timeout=2).read(), timeout=60, interval=1)
    return data


def prefix_count(bed, prefix):
    """Keys under `prefix` in the DataStore (etcd's range with range_end = prefix + 1)."""
    p = prefix.encode()
    end = p[:-1] + bytes([p[-1] + 1])
    return int(bed.etcd_call("/v3/kv/range", {"key": b64(p), "range_end": b64(end), "count_only": True}).get("count", 0))


def leased(bed, prefix):
    """Keys under `prefix` bound to an etcd lease (the API server's own: they expire once nothing
    renews them)."""
    p = prefix.encode()
    end = p[:-1] + bytes([p[-1] + 1])
    kvs = bed.etcd_call("/v3/kv/range", {"key": b64(p), "range_end": b64(end), "keys_only": True}).get("kvs", [])
    return sorted(base64.b64decode(kv["key"]).decode() for kv in kvs if int(kv.get("lease", 0)))


def bindable(port, host):
    s = socket.socket()
    try:
        s.bind((host, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def hold(port, host, wait_for):
    """A socket bound (not listening: a client is refused, as while the process is gone) to the
    port a process of the lost bed held (Kamaji's fixed webhook port, the tenant API server's),
    kept until the rebuilt bed starts its own: a running kamaji bed owns them (lib/kamaji.py
    WEBHOOK_PORT), and another session's bed on this machine, whose check binds them first, would
    take them in the gap. SO_REUSEADDR: the lost processes' connections may sit in TIME_WAIT."""
    def bound():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return s
        except OSError:
            s.close()
            return None
    return wait_for(f"port {port} held for the rebuild (taken by another process?)", bound, timeout=600, interval=2)


def release(held, port, host, wait_for):
    """Closes the held socket and waits until a plain bind (the bed's own check) succeeds."""
    held.pop(port).close()
    wait_for(f"port {port} free for the rebuilt bed", lambda: bindable(port, host), timeout=90, interval=1)


def lose_management_cluster(bed, keep):
    """SIGKILL every process of the bed but `keep` (None: every one), in start order (management
    etcd and API server first, the tenant API server last), and delete the management etcd's data
    dir. Returns the kept process (Popen) or None."""
    lost = []
    for name, p in list(bed.c.procs.items()):
        if name == keep:
            continue
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        lost.append(name)
    kept = bed.c.procs.pop(keep) if keep else None
    bed.c.procs.clear()
    data = os.path.join(bed.work, "etcd")
    subprocess.run(["rm", "-rf", data], check=True)
    print(f"  lost (SIGKILL, no controller left to run a finalizer): {', '.join(lost)}; management etcd data dir "
          f"{data} deleted", flush=True)
    if kept is not None:
        print(f"  kept: {keep} (pid {kept.pid}), the tenant's DataStore", flush=True)
    return kept


def new_bed(e, old, name):
    """The new management bed (not started yet) beside what survived of `old`: the bed's
    DataStore stand-in settings (its address, certificates, the etcd argv a restore reuses)."""
    new = KamajiBed(os.path.join(e.work, name), e.a.bin, e.a.kamaji_bin, e.a.gomodcache, e.helm)
    for attr in ("etcd", "etcd_token", "ds_host", "ds_pki", "ds_name", "ds_peer", "ds_argv"):
        if hasattr(old, attr):
            setattr(new, attr, getattr(old, attr))
    e.kamaji_bed = new
    return new


def start_from_git(new, f):
    """Starts the new management bed and puts back the platform git holds (`f`'s rendered
    platform layer): the CAPI managers, Kamaji's chart, manager and provider, and the provider's
    read of KamajiControlPlanes; then the bed's Nodes (kwok). Holds Kamaji's webhook port from the loss on (hold()). Returns
    the seconds it took."""
    held = {WEBHOOK_PORT: hold(WEBHOOK_PORT, "0.0.0.0", new.c.wait_for)}
    t = time.time()
    new.start()
    release(held, WEBHOOK_PORT, "0.0.0.0", new.c.wait_for)
    new.start_kamaji_pair(f)
    rbac, _ = kamaji_reader(os.path.join(f.dir, "overlays", "platform"))
    new.c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    # The lost bed's Nodes went with it (lib/kamaji.py process_serves started them for the first
    # tenant): the Deployments Kamaji writes need Pods that turn Ready.
    new.c.start_nodes(3)
    standin("the kubelet of the TenantControlPlanes' Pods on the new management cluster: kwok's fake Nodes report them "
            "Running and Ready; their containers are the processes the bed starts")
    return time.time() - t


def datastore_from_git(new, old, release):
    """The DataStore the kamaji-etcd chart renders for the fleet's HelmRelease values (as
    KamajiBed.datastore_standin), pointing at the surviving etcd, and the chart's two Secrets.
    The chart's pre-install Job creates them only when absent (kamaji-etcd 0.17.0
    templates/etcd_job_preinstall_1.yaml: `if kubectl get secret ...`): a platform that restores
    them before the HelmRelease installs keeps the CA its etcd serves with; without them the cfssl
    Job makes a new CA, which the etcd Pods serve after their restart. The surviving process here
    keeps its certificates, so the Secrets come back with those files."""
    name = release["metadata"]["name"]
    pki = os.path.join(old.work, f"{name}-pki")
    values = os.path.join(new.work, f"{name}-values.json")
    json.dump(release["spec"].get("values") or {}, open(values, "w"))
    out = sh([new.helm, "template", release["spec"].get("releaseName", name), os.path.join(CHARTS, "kamaji-etcd"),
              "--namespace", release["metadata"]["namespace"], "-f", values])
    ds = next(x for x in yaml_docs(out) if x["kind"] == "DataStore")
    ds["spec"]["endpoints"] = [old.etcd[0].split("//", 1)[1]]
    files = {}
    tls = ds["spec"]["tlsConfig"]
    for part, f in (("certificateAuthority", "ca"), ("clientCertificate", "root")):
        for kind, ext in (("certificate", "crt"), ("privateKey", "key")):
            ref = tls[part][kind]["secretReference"]
            files.setdefault((ref["namespace"], ref["name"]), {})[ref["keyPath"]] = f"{pki}/{f}.{ext}"
    secrets = [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n, "namespace": ns},
                "data": {k: b64(open(p, "rb").read()) for k, p in keys.items()}} for (ns, n), keys in files.items()]
    standin(f"the chart's Secrets {sorted(n for _, n in files)} restored with the certificates the surviving etcd serves "
            "with (a platform's backup of them; the chart would create them only where absent)")
    return secrets + [ds]


def management_rebuilt_from_git(e):
    old, st = e.kamaji_bed, e.kamaji_state
    f, kcp = st["fleet"], st["kcp"]
    fails = []
    tenant = st["tenant"]
    tcp = old.c.get("-n", TENANT, TCP, TENANT)
    old_uid = tcp["metadata"]["uid"]
    setup = tcp.get("status", {}).get("storage", {}).get("setup", {})
    schema = kcp["spec"].get("dataStoreSchema")
    print(f"  rendered KamajiControlPlane: dataStoreSchema {schema!r}, dataStoreUsername {kcp['spec'].get('dataStoreUsername')!r}; "
          f"TenantControlPlane {TENANT} uid {old_uid}, status.storage.setup {setup}", flush=True)
    if not schema or setup.get("schema") != schema:
        return [f"the TenantControlPlane runs on schema {setup.get('schema')!r}, the render names {schema!r}: "
                "nothing in git says where its data is"]
    prefix = f"/{schema}/"

    # 1. Tenant data, written through the tenant API.
    r = subprocess.run([*tenant, "create", "configmap", SURVIVOR, "-n", "default", "--from-literal=written-before=the-loss",
                        f"--from-literal=tcp-uid={old_uid}", "-o", "json"], capture_output=True, text=True)
    if r.returncode != 0:
        return [f"writing ConfigMap default/{SURVIVOR} through the tenant API: {r.stderr.strip()[:400]}"]
    cm = json.loads(r.stdout)
    before = prefix_count(old, prefix)
    key = f"{prefix}configmaps/default/{SURVIVOR}"
    print(f"  tenant: ConfigMap default/{SURVIVOR} written (uid {cm['metadata']['uid']}); DataStore: {before} keys under "
          f"{prefix}, {key} present: {prefix_count(old, key) > 0}", flush=True)
    e.r.figure("kamaji rebuild: DataStore keys under the tenant's prefix before the loss", str(before))
    print(f"  of which bound to an etcd lease (expire while no API server renews them): {leased(old, prefix)}", flush=True)

    # 2. The backup (restored mode), then the loss.
    restore = restoring()
    keep = f"etcd-{kcp['spec']['dataStoreName']}"
    if keep not in old.c.procs:
        return [f"no DataStore process {keep} in the bed (procs {sorted(old.c.procs)})"]
    if restore and f"etcd-{old.ds_name}" != keep:
        return [f"the bed's last DataStore stand-in is etcd-{old.ds_name}, not the tenant's {keep}: nothing to restore"]
    if restore:
        snap = os.path.join(e.work, "kamaji-datastore-snapshot.db")
        t = time.time()
        at_snapshot = revision(old)  # before: the tenant writes on while the snapshot is taken
        snapshot_save(old, snap)
        e.r.figure("kamaji rebuild: DataStore snapshot (etcdctl snapshot save)",
                   f"{time.time() - t:.1f}s, {os.path.getsize(snap)} bytes, taken at revision {at_snapshot} or later")
        r = subprocess.run([*tenant, "create", "configmap", LATE, "-n", "default", "--from-literal=written-after=the-snapshot"],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return [f"writing ConfigMap default/{LATE} through the tenant API: {r.stderr.strip()[:400]}"]
        print(f"  tenant: ConfigMap default/{LATE} written after the snapshot (a restore must not bring it back)", flush=True)
    t_loss = time.time()
    kept = lose_management_cluster(old, None if restore else keep)
    # 3. The rebuild from git: a new management bed beside the DataStore process (the surviving
    # one, or the one restored from the snapshot), which it adopts (stopped with it at the end).
    new = new_bed(e, old, "kamaji-rebuilt")
    if restore:
        lost_data = old.ds_argv[old.ds_argv.index("--data-dir") + 1]
        subprocess.run(["rm", "-rf", lost_data], check=True)
        print(f"  the DataStore lost too: {keep} killed, its data dir {lost_data} deleted", flush=True)
    else:
        new.c.procs[keep] = kept
    # The port the tenant API server process listened on (tenant_control_plane_serves: 127.0.0.1:PORT).
    tenant_port = int(st["tenant_addr"].rsplit(":", 1)[1])
    held = {p: hold(p, h, new.c.wait_for) for p, h in ((WEBHOOK_PORT, "0.0.0.0"), (tenant_port, "127.0.0.1"))}
    if restore:
        t = time.time()
        data = restore_datastore(old, new, snap)
        new.ds_argv = new.c.procs[keep].args
        restored = revision(new)
        e.r.figure("kamaji rebuild: DataStore restored (etcdutl snapshot restore --bump-revision --mark-compacted, etcd "
                   "serving on it)", f"{time.time() - t:.1f}s")
        print(f"  DataStore restored into {data}: revision {restored} (the snapshot's {at_snapshot}, bumped by {BUMP:,})",
              flush=True)
        if restored < at_snapshot + BUMP:
            fails.append(f"the restored DataStore is at revision {restored}, not past the snapshot's {at_snapshot} + {BUMP}: "
                         "watchers of the tenant would resume from revisions it has not reached")
    after_loss = prefix_count(new, prefix)
    print(f"  DataStore after the loss{' and the restore' if restore else ''}: {after_loss} keys under {prefix}", flush=True)
    if not restore and after_loss != before:
        fails.append(f"the loss changed the DataStore: {before} -> {after_loss} keys under {prefix}")
    if restore and after_loss == 0:
        fails.append(f"the restore brought back no key under {prefix} ({before} before the snapshot)")
    t0 = time.time()
    new.start()
    release(held, WEBHOOK_PORT, "0.0.0.0", new.c.wait_for)
    new.start_kamaji_pair(f)
    t_up = time.time()
    e.r.figure("kamaji rebuild: new management bed start (fresh etcd, CAPI managers, Kamaji chart + manager, provider)",
               f"{t_up - t0:.1f}s")
    c = new.c
    objs = tenant_overlay(f, TENANT)
    flux = [d for d in objs if d["apiVersion"].split("/")[0] in FLUX_GROUPS]
    apply = [d for d in objs if d not in flux]
    apply.sort(key=lambda d: d["kind"] != "Namespace")
    rbac, _ = kamaji_reader(os.path.join(f.dir, "overlays", "platform"))
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": rbac}))
    t_apply = time.time()
    r = c.kubectl("apply", "--server-side", "--field-manager=kustomize-controller", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": apply}), check=False)
    if r.returncode != 0:
        return fails + [f"the rendered {TENANT} objects were refused by the new management cluster: {r.stderr.strip()[:800]}"]
    rkcp = next(d for d in apply if d["kind"] == "KamajiControlPlane")
    print(f"  applied the same {len(apply)} rendered objects of {TENANT} from {f.dir}: KamajiControlPlane dataStoreSchema "
          f"{rkcp['spec'].get('dataStoreSchema')!r}, dataStoreUsername {rkcp['spec'].get('dataStoreUsername')!r}", flush=True)
    standin(f"CAPMOX's ProxmoxCluster {TENANT}/{TENANT} status.initialization.provisioned=true")
    c.kubectl("patch", "-n", TENANT, "proxmoxcluster", TENANT, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": {"initialization": {"provisioned": True}}}))
    etcd_release = next(d for d in flux if d["kind"] == "HelmRelease" and d["spec"]["chart"]["spec"]["chart"] == "kamaji-etcd")
    ds = datastore_from_git(new, old, etcd_release)
    c.kubectl("apply", "--server-side", "--field-manager=helm-controller", "-f", "-",
              input=json.dumps({"apiVersion": "v1", "kind": "List", "items": ds}))
    print(f"  DataStore {ds[-1]['metadata']['name']} (chart render of the fleet's values) -> the surviving etcd "
          f"{ds[-1]['spec']['endpoints']}", flush=True)
    try:
        ntcp = c.wait_for(f"the new TenantControlPlane {TENANT} with status.storage.setup (Kamaji's datastore setup)",
                          lambda: (lambda t: t if t.get("status", {}).get("storage", {}).get("setup", {}).get("schema") else None)(
                              c.get("-n", TENANT, TCP, TENANT)), timeout=240, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}; kamaji log: {new.log('kamaji')[-1500:]}"]
    new_uid = ntcp["metadata"]["uid"]
    nsetup = ntcp["status"]["storage"]["setup"]
    print(f"  new TenantControlPlane {TENANT}: uid {new_uid} (was {old_uid}), status.storage.setup {nsetup}", flush=True)
    if new_uid == old_uid:
        fails.append(f"the new TenantControlPlane has the old UID {old_uid}: not a re-created object")
    if nsetup.get("schema") != schema:
        fails.append(f"the new TenantControlPlane's datastore schema is {nsetup.get('schema')!r}, not {schema!r} "
                     f"(its UID {new_uid}: the tenant starts on an empty prefix, its data orphaned under {prefix})")
    if nsetup.get("user") != kcp["spec"].get("dataStoreUsername"):
        fails.append(f"the new TenantControlPlane's datastore user is {nsetup.get('user')!r}, "
                     f"not {kcp['spec'].get('dataStoreUsername')!r}")

    # The new Deployment, Kamaji's Secrets, the provider's report (the same checks as the first
    # time), then the tenant API server from the new Deployment's args.
    writes = kamaji_writes(e, new, rkcp)  # what git holds now (an upgrade may have moved it since the first apply)
    if writes:
        return fails + writes
    # What the new control plane starts on: the keys under its prefix before its API server runs
    # (the old data, or nothing: an empty prefix a fresh API server then fills).
    now = f"/{nsetup.get('schema')}/"
    at_start = prefix_count(new, now)
    has = prefix_count(new, f"/{nsetup.get('schema')}/configmaps/default/{SURVIVOR}") > 0
    print(f"  DataStore: {at_start} keys under {now}, the new control plane's prefix, before its API server starts "
          f"({before} under {prefix} before the loss); ConfigMap {SURVIVOR} there: {has}", flush=True)
    e.r.figure("kamaji rebuild: DataStore keys under the new control plane's prefix before its API server starts", str(at_start))
    if at_start == 0 or not has:
        fails.append(f"the new control plane starts on {at_start} keys under {now} (ConfigMap {SURVIVOR} there: {has}): "
                     f"its data restarted from zero; {before} keys were under {prefix} before the loss")
    st["t_apply"] = t_apply
    release(held, tenant_port, "127.0.0.1", new.c.wait_for)
    served = tenant_control_plane_serves(e, again=True)
    if served:
        return fails + served
    r = subprocess.run([*st["tenant"], "get", "configmap", SURVIVOR, "-n", "default", "-o", "json"], capture_output=True, text=True)
    t_served = time.time()
    if r.returncode != 0:
        fails.append(f"the rebuilt tenant API server does not serve ConfigMap default/{SURVIVOR} written before the loss: "
                     f"{r.stderr.strip()[:300]}")
    else:
        got = json.loads(r.stdout)
        print(f"  rebuilt tenant API server serves ConfigMap default/{SURVIVOR}: uid {got['metadata']['uid']}, "
              f"data {got.get('data')}", flush=True)
        if got["metadata"]["uid"] != cm["metadata"]["uid"] or got.get("data") != cm.get("data"):
            fails.append(f"ConfigMap default/{SURVIVOR} differs: {got['metadata']['uid']} {got.get('data')} "
                         f"vs {cm['metadata']['uid']} {cm.get('data')}")
        e.r.figure("kamaji rebuild: new management plane up -> tenant serves its old data again", f"{t_served - t_up:.1f}s")
        e.r.figure("kamaji rebuild: management cluster lost -> tenant serves its old data again", f"{t_served - t_loss:.1f}s")
    if restore:
        r = subprocess.run([*st["tenant"], "get", "configmap", LATE, "-n", "default", "-o", "name"], capture_output=True, text=True)
        if r.returncode == 0:
            fails.append(f"the restored tenant serves ConfigMap default/{LATE}, written after the snapshot: "
                         "its data is not the snapshot's")
        elif "NotFound" not in r.stderr and "not found" not in r.stderr:
            fails.append(f"reading ConfigMap default/{LATE} through the restored tenant: {r.stderr.strip()[:300]}")
        else:
            print(f"  ConfigMap default/{LATE} (written after the snapshot) is not served: the data is the snapshot's", flush=True)
    after = prefix_count(new, now)
    uid_keys = prefix_count(new, f"/{new_uid}/")
    print(f"  DataStore: {after} keys under {now}, the new control plane's prefix (under {prefix} before the loss: {before}); "
          f"under /{new_uid}/ (the new UID, Kamaji's default without the rendered schema): {uid_keys}; "
          f"under /{old_uid}/: {prefix_count(new, f'/{old_uid}/')}", flush=True)
    e.r.figure("kamaji rebuild: DataStore keys under the tenant's prefix after the rebuild", str(after))
    if nsetup.get("schema") == schema:
        print(f"  counter-fact: without dataStoreSchema the new TenantControlPlane would have taken /{new_uid}/ "
              f"({uid_keys} keys), not {prefix}", flush=True)
    # What a rebuild from git does not bring back: the tenant's CA. Kamaji generated a new one
    # (acme-ca is not in git), so the old admin kubeconfig (and every kubelet that trusts the old CA)
    # is refused by the rebuilt API server.
    r = subprocess.run([*tenant, "get", "--raw", "/version"], capture_output=True, text=True)
    why = re.search(r"x509: [^(]*", r.stderr)
    print(f"  the old {TENANT}-kubeconfig against the rebuilt tenant API server: "
          f"{'accepted' if r.returncode == 0 else 'refused: ' + (why.group(0).strip() if why else r.stderr.strip()[-200:])} "
          f"(Kamaji made a new {TENANT}-ca; git holds no CA: kubelets and kubeconfigs of the old CA need it anew)", flush=True)
    # kube-public/cluster-info (what `kaas-gitops kubeconfig` takes the CA from) was in the old
    # data; Kamaji rewrites it with the new CA (internal/kubeadm/bootstraptoken.go CreateOrUpdate).
    r = subprocess.run([*st["tenant"], "get", "-n", "kube-public", "configmap", "cluster-info", "-o", "json"],
                       capture_output=True, text=True)
    ca = base64.b64decode(c.get("-n", TENANT, "secret", f"{TENANT}-ca")["data"]["ca.crt"])
    info = yaml_docs(json.loads(r.stdout)["data"]["kubeconfig"])[0] if r.returncode == 0 else {}
    info_ca = base64.b64decode(info["clusters"][0]["cluster"]["certificate-authority-data"]) if info else b""
    print(f"  tenant kube-public/cluster-info: CA {'= the new' if info_ca == ca else '!= the new'} {TENANT}-ca", flush=True)
    if info_ca != ca:
        fails.append(f"the rebuilt tenant's kube-public/cluster-info does not carry the new {TENANT}-ca: "
                     f"`kaas-gitops kubeconfig` would give a CA the API server no longer serves with")
    fails += [f"rebuilt bed: {x}" for x in c.forbidden(["kamaji", PROVIDER])]
    return fails
