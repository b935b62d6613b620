"""The OCI delivery scenarios (`spec.flux.delivery.mode: oci`) on a test bed of their own (so
they never collide with the git fleet's tenants): the example fleet Ready through per-tenant
OCIRepositories, the platform gate still holding them, a one-tenant change re-applying that
tenant alone (kustomize-controller's reconcile counts), `wait` after a merge, a publish killed
mid-way, and a deleted tenant pruned."""
import json, os, re, shutil, time

from fleet import Fleet
import oci


def run_all(e, r, only=""):
    if only and "oci" not in only:
        return
    from e2e import E2E  # the driver's class: a second bed, same binaries
    o = E2E(e.a, r)
    try:
        try:
            o.start()
            o.host = oci.start_registry(o.c)
        except Exception as ex:  # noqa: BLE001
            for name in ("oci: example fleet", "oci: one-tenant change", "oci: wait", "oci: killed publish", "oci: deleted tenant"):
                r.not_run(name, f"the OCI test bed did not start: {ex}")
            return
        ready = r.run("oci: the example fleet Ready through one OCIRepository per tenant, gated on the platform", example_ready, o)
        if not hasattr(o, "oci_fleet"):
            for name in ("oci: one-tenant change", "oci: wait", "oci: killed publish", "oci: deleted tenant"):
                r.not_run(name, "the OCI fleet never got Ready (see the first OCI scenario)")
            return
        r.run("oci: a one-tenant change re-applies that tenant alone (kustomize-controller's reconcile counts)", one_tenant_change, o)
        r.run("oci: `wait` after a merge expects each tenant's own artifact: the changed one new, the rest unchanged", wait_after_merge, o)
        r.run("oci: a publish killed mid-way leaves every tag at whole content; the next run converges", killed_publish, o)
        r.run("oci: a deleted tenant is pruned with its OCIRepository", deleted_tenant, o)
        r.run("oci: Flux ran as its ServiceAccounts under flux2's manifests/rbac: no request refused", o.flux_rbac_held)
        del ready
    finally:
        o.c.stop()
        if not os.environ.get("E2E_KEEP"):
            shutil.rmtree(o.work, ignore_errors=True)


def fill_for(host):
    def fill(d):
        Fleet.example(d)
        oci.use_oci(d, host)
    return fill


def push_and_publish(o, f, message, ask=True):
    """Render, commit, push, publish; then, as CI does, `wait --reconcile` asks Flux to fetch the
    sources behind the commit (the tenants' OCIRepositories follow `oci.interval`, 5m, otherwise)."""
    f.render()
    sha = f.commit_push(message)
    secs, doc = oci.publish(f)
    # Before the first bootstrap there is no GitRepository to ask yet.
    if f.c.kubectl("get", "-n", "flux-system", "gitrepository/flux-system", check=False).returncode == 0:
        f.poke()
        if ask:
            print(f"  {oci.ask_reconcile(f)}", flush=True)
    return sha, doc, secs


def example_ready(o):
    fails = []
    f = o.new_fleet("ocifleet", fill_for(o.host))
    sha, doc, secs = push_and_publish(o, f, "the example fleet, delivered as OCI artifacts")
    o.r.figure("oci: cold publish of the example (3 tenants)", f"{secs:.2f}s, {doc['bytes']} bytes")
    if doc["pushed"] != 3:
        fails.append(f"the cold publish pushed {doc['pushed']} artifacts, want 3: {doc['message']}")
    # Gate closed (kaas-kamaji waits for Kamaji, which never gets Ready here, and kaas-platform
    # for kaas-kamaji): the tenants, on other sources than the platform, must still wait for it
    # (dependsOn checks Ready only).
    o.bootstrap(f)
    f.poke()

    def gated():
        ks = f.kustomizations()
        msgs = {n: next((c.get("message", "") for c in ks.get(n, {}).get("status", {}).get("conditions", [])
                         if c["type"] == "Ready"), "") for n in ("kaas-tenant-acme", "kaas-tenant-globex", "kaas-tenant-initech")}
        return msgs if all("dependency 'flux-system/kaas-platform' is not ready" in m for m in msgs.values()) else None
    try:
        o.c.wait_for("tenants held by the platform gate", gated, timeout=180, interval=2)
    except TimeoutError as ex:
        fails.append(f"OCI tenants not held by the platform's dependsOn: {ex}")
    o.bootstrap(f, open_gate=True)
    f.poke()
    want = oci.expected_revisions(f, sha, doc)
    t0 = time.time()
    secs, state = f.wait_revisions(want, timeout=300)
    bad = {n: s for n, s in state.items() if not s[0]}
    fails += [f"Kustomization {n}: Ready={s[0]} reason={s[1]} applied={s[3]}, want {want[n]}: {s[2]}" for n, s in sorted(bad.items())]
    for t in doc["tenants"]:
        src = o.c.get("-n", "flux-system", "ocirepository", f"kaas-tenant-{t['tenant']}")
        rev = (src.get("status", {}).get("artifact") or {}).get("revision")
        if rev != t["revision"]:
            fails.append(f"OCIRepository kaas-tenant-{t['tenant']} has {rev}, publish pushed {t['revision']}")
    if not fails:
        o.oci_fleet, o.oci_sha = f, sha
        o.r.figure("oci: gate opened -> every Kustomization Ready at its revision", f"{time.time() - t0:.1f}s")
    return fails


def settle(o, seconds=20):
    """Lets any reconcile that a change would wrongly trigger happen before counting."""
    time.sleep(seconds)


def one_tenant_change(o):
    f = o.oci_fleet
    before = oci.reconcile_counts(o.c)
    p = os.path.join(f.dir, "tenants", "acme.yaml")
    text = open(p).read()
    if "memoryMiB: 4096" not in text:
        return ["tenants/acme.yaml has no `memoryMiB: 4096` to change"]
    open(p, "w").write(text.replace("memoryMiB: 4096", "memoryMiB: 8192", 1))
    t0 = time.time()
    sha, doc, _ = push_and_publish(o, f, "acme: bigger workers")
    pushed = [t["tenant"] for t in doc["tenants"] if t["change"] == "pushed"]
    fails = [] if pushed == ["acme"] else [f"publish pushed {pushed}, want only acme"]
    want = oci.expected_revisions(f, sha, doc)
    secs, state = f.wait_revisions(want, timeout=180)
    o.r.figure("oci: one-tenant change, commit -> applied", f"{time.time() - t0:.1f}s")
    fails += [f"Kustomization {n} not at {want[n]}: {s}" for n, s in state.items() if not s[0]]
    settle(o)
    grown = oci.reconciled_since(before, oci.reconcile_counts(o.c))
    # The root (flux/) and the platform's two Kustomizations read git, whose revision is the
    # commit: they reconcile. acme's in-tenant bindings (`acme-access`) read acme's artifact too,
    # so they follow it.
    expected = {"kaas-tenant-acme", "acme-access", "flux-system", "kaas-kamaji", "kaas-platform"}
    if "kaas-tenant-acme" not in grown:
        fails.append(f"kaas-tenant-acme did not reconcile: {grown}")
    # Another tenant's `<t>-access` applies through `<t>-kubeconfig`, which this bed never has (no
    # Kamaji): it fails and is retried every 2 minutes whatever changed, so it says nothing here.
    others = {n: c for n, c in grown.items() if n not in expected and not n.endswith("-access")}
    if others:
        fails.append(f"other tenants reconciled on a one-tenant change: {others}")
    print(f"  reconciles during the change: {grown}", flush=True)
    return fails


def wait_after_merge(o):
    f = o.oci_fleet
    p = os.path.join(f.dir, "tenants", "globex.yaml")
    text = open(p).read()
    if "memoryMiB:" not in text:
        return ["tenants/globex.yaml has no `memoryMiB:` to change"]
    # memoryMiB: N -> 1N (a tenant-only change; the value stays a valid size)
    open(p, "w").write(text.replace("memoryMiB: ", "memoryMiB: 1", 1))
    sha, doc, _ = push_and_publish(o, f, "globex: more memory", ask=False)
    pushed = {t["tenant"]: t["revision"] for t in doc["tenants"] if t["change"] == "pushed"}
    fails = [] if list(pushed) == ["globex"] else [f"publish pushed {list(pushed)}, want only globex"]
    # `wait --reconcile` asks only what is behind the commit: globex's OCIRepository, not the
    # other tenants' sources or Kustomizations (asking a Kustomization re-applies it; at a
    # thousand tenants asking all would re-apply the fleet).
    before = oci.requested_at(o.c)
    line = oci.ask_reconcile(f)
    asked = sorted(k for k, v in oci.requested_at(o.c).items() if v != before.get(k))
    print(f"  {line}; asked: {asked}", flush=True)
    tenants = lambda ks: [k for k in ks if k[1].startswith("kaas-tenant-")]  # noqa: E731
    # globex's Kustomization too, should its OCIRepository have fetched on its own in between.
    if tenants(asked) not in ([("OCIRepository", "kaas-tenant-globex")],
                              [("Kustomization", "kaas-tenant-globex"), ("OCIRepository", "kaas-tenant-globex")]):
        fails.append(f"wait --reconcile asked {tenants(asked)} of the tenants, want globex's OCIRepository alone")
    # `--flux-only`: no Cluster API or Kamaji controller writes this bed's cluster statuses. The
    # example's HelmReleases never get Ready here (some charts are not on loopback, the others'
    # workloads never run: no kubelet; their clusters do not exist), so `wait` cannot return 0
    # on this bed: what it must show is that every tenant's Kustomization is Ready at exactly the
    # artifact its commit renders (globex's new one, the others' unchanged ones) and that only
    # HelmReleases are left to wait for.
    deadline, w, last = time.time() + 240, {}, ""
    while time.time() < deadline:
        r = f.kaas_gitops("wait", "--flux-only", "--kubeconfig", o.c.kubeconfig, "--timeout", "15s", "-o", "json", check=False)
        try:
            w = json.loads(r.stdout)
        except ValueError:
            return fails + [f"wait printed no JSON (exit {r.returncode}): {r.stderr}"]
        last = w.get("message", "")
        rows = {row["name"]: row for row in w.get("rows", [])}
        kss = {n: next((x for x in row["objects"] if x["kind"] == "Kustomization"), {}) for n, row in rows.items() if n != "platform"}
        arts = w.get("artifacts", {})
        if kss and all(k.get("state") == "ready" and k.get("appliedRevision") == arts.get(n) for n, k in kss.items()):
            break
        time.sleep(5)
    else:
        return fails + [f"the tenants' Kustomizations never all got Ready at their artifacts: {last}"]
    if r.returncode == 0 or "HelmRelease" not in last:
        fails.append(f"with every Kustomization at its artifact, wait should be left with HelmReleases only: exit {r.returncode}: {last}")
    if w.get("artifacts", {}).get("globex") != pushed.get("globex"):
        fails.append(f"wait expected {w.get('artifacts', {}).get('globex')} for globex, publish pushed {pushed.get('globex')}")
    k = o.c.get("-n", "flux-system", "kustomization", "kaas-tenant-globex")
    if k.get("status", {}).get("lastAppliedRevision") != pushed.get("globex"):
        fails.append(f"wait returned while kaas-tenant-globex had applied {k.get('status', {}).get('lastAppliedRevision')}")
    return fails


def killed_publish(o):
    f = o.oci_fleet
    p = os.path.join(f.dir, "base", "tenant", "resourcequota.yaml")
    open(p, "a").write("# every tenant changes\n")
    f.render()
    sha = f.commit_push("base/tenant changed: every artifact moves")
    killed = oci.kill_publish_midway(f, 0.4)
    print(f"  publish {'killed after 0.4 s' if killed else 'ended before the kill'}", flush=True)
    _, dry = oci.publish(f, "--dry-run")
    fails = oci.tags_name_whole_content(o.host, dry)
    left = [t["tenant"] for t in dry["tenants"] if t["change"] == "pushed"]
    print(f"  after the kill, still to push: {left}", flush=True)
    _, doc = oci.publish(f)
    again = [t["tenant"] for t in doc["tenants"] if t["change"] == "pushed"]
    if sorted(again) != sorted(left):
        fails.append(f"the next publish pushed {again}, the dry run said {left}")
    f.poke()
    print(f"  {oci.ask_reconcile(f)}", flush=True)
    secs, state = f.wait_revisions(oci.expected_revisions(f, sha, doc), timeout=240)
    fails += [f"Kustomization {n} not converged: {s}" for n, s in state.items() if not s[0]]
    return fails


def deleted_tenant(o):
    """The root Kustomization prunes the tenant's Kustomization and OCIRepository at once, and the
    Kustomization's finalizer deletes its namespace. The namespace itself goes only when
    helm-controller has removed its HelmReleases' finalizers, which waits on any Helm action
    still running on this bed (see `helm_actions_running`): that wait is measured and bounded
    by the actions' own timeouts, not hidden behind a longer flat timeout."""
    f = o.oci_fleet
    os.remove(os.path.join(f.dir, "tenants", "initech.yaml"))  # a shared-datastore tenant
    t0 = time.time()
    sha, doc, _ = push_and_publish(o, f, "initech deleted")
    if any(t["tenant"] == "initech" for t in doc["tenants"]):
        return ["publish still has initech"]

    def exists(*args):
        return o.c.kubectl("get", *args, check=False).returncode == 0

    def namespace():
        r = o.c.kubectl("get", "namespace", "initech", "-o", "json", check=False)
        return json.loads(r.stdout) if r.returncode == 0 else None

    def pruned():
        if exists("-n", "flux-system", "kustomization", "kaas-tenant-initech") or \
                exists("-n", "flux-system", "ocirepository", "kaas-tenant-initech"):
            return False
        ns = namespace()
        return ns is None or bool(ns["metadata"].get("deletionTimestamp"))
    try:
        o.c.wait_for("initech's Kustomization and OCIRepository gone, its namespace deleting", pruned, timeout=120, interval=2)
    except TimeoutError as ex:
        return [str(ex)]
    o.r.figure("oci: deleted tenant -> Kustomization and OCIRepository pruned, namespace deleting", f"{time.time() - t0:.1f}s")
    running = helm_actions_running(o.c)
    # An action returns within its timeout; then helm-controller (one worker free again) handles
    # the deletion and the namespace controller finishes.
    limit = 120 + max([secs for *_, secs in running], default=0)
    if running:
        print(f"  namespace initech waits for helm-controller's running Helm actions (up to {limit:.0f}s): "
              + ", ".join(f"{n} {a} ({secs:.0f}s timeout)" for n, a, secs in running), flush=True)
    t1 = time.time()
    try:
        o.c.wait_for("namespace initech gone", lambda: namespace() is None, timeout=limit, interval=2)
    except TimeoutError as ex:
        ns = namespace() or {}
        why = [c.get("message") for c in ns.get("status", {}).get("conditions", []) if c.get("status") == "True"]
        return [f"{ex}: {why}"]
    o.r.figure("oci: deleted tenant -> namespace gone after it began deleting", f"{time.time() - t1:.1f}s")
    return []


ACTION = re.compile(r"Running '(\w+)' action with timeout of ((?:[0-9.]+[hms])+)")


def helm_actions_running(cluster):
    """[(namespace/name, action, timeout seconds)] of the HelmReleases whose Helm action runs now.

    helm-controller v1.6.3 marks `Reconciling` "Running '<action>' action with timeout of <t>"
    before it runs an action (`internal/reconcile/atomic_release.go:251`), and an install waits
    for its resources (`internal/action/install.go:90-93`, `timeout` 5m by default,
    `api/v2/helmrelease_types.go:1585`). On this bed the charts served on loopback (the tenants'
    autoscaler and etcd) install, but their Deployments and Jobs never run (no kubelet): each
    install holds a worker for its whole timeout. Meanwhile a deleted HelmRelease keeps its
    finalizer: the object's running reconcile is not interrupted (`CancelHealthCheckOnNewRevision`
    is off by default, `internal/features/features.go:131`), and `reconcileDelete` removes the
    finalizer only in a later reconcile (`internal/controller/helmrelease_controller.go:184,
    452-478`), for which every other deleted HelmRelease needs a free worker (`--concurrent=4`
    here, as upstream's default, `main.go:120`). A namespace with HelmReleases in it therefore
    goes only once the actions running at its deletion have returned."""
    out = []
    for h in cluster.get("helmreleases", "-A")["items"]:
        for c in h.get("status", {}).get("conditions", []):
            m = ACTION.match(c.get("message", "")) if c["type"] == "Reconciling" and c["status"] == "True" else None
            if m:
                secs = sum(float(v) * {"h": 3600, "m": 60, "s": 1}[u] for v, u in re.findall(r"([0-9.]+)([hms])", m.group(2)))
                out.append((f"{h['metadata']['namespace']}/{h['metadata']['name']}", m.group(1), secs))
    return sorted(out)
