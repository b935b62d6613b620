"""The scenarios, in the order they run; later ones build on the example fleet of earlier ones.
Each returns a list of failures (empty: passed); findings go to the report verbatim."""
import json, os, re, subprocess, sys, time

from fleet import Fleet, git

HERE = os.path.dirname(os.path.abspath(__file__))
MAIN = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
# The upstream CRDs: KAAS_CRDS (tests/run, tests/e2e/run), else the development folder ../shared.
SHARED_CRDS = os.environ.get("KAAS_CRDS") or os.path.abspath(os.path.join(MAIN, "..", "shared", "crds"))


def rendered_file(f, *parts):
    return os.path.join(f.dir, *parts)


def read(path):
    return open(path).read()


def write(path, text):
    open(path, "w").write(text)


def render_push(e, f, message):
    f.render()
    return e.push(f, message)


def ready_or_fail(e, f, sha, names=None, timeout=180):
    secs, state = f.wait_ready(sha, names, timeout=timeout)
    return secs, e.describe(state)


def add_tenant_with_pr(e):
    """A tenant added with `kaas-gitops pr` (branch pushed to the git server), merged, applied."""
    f = e.ex
    src = read(rendered_file(f, "tenants", "globex.yaml"))
    write(rendered_file(f, "tenants", "hooli.yaml"),
          src.replace("name: globex", "name: hooli").replace("10.0.6.", "10.0.7.").replace("templateID: 101", "templateID: 102"))
    r = f.kaas_gitops("pr", "hooli", "--push", "origin", check=False)
    if r.returncode != 0:
        return [f"kaas-gitops pr hooli --push origin exited {r.returncode}: {r.stderr.strip()[:600]}"]
    branch = "kaas/hooli"
    remote = git(f.bare, "branch", "--list", branch).strip()
    if not remote:
        return [f"`pr` did not push {branch} to the git server (branches: {git(f.bare, 'branch').split()})"]
    # Merge as a forge would (the tenant file in the work tree is the same as on the branch).
    os.remove(rendered_file(f, "tenants", "hooli.yaml"))
    git(f.dir, "fetch", "-q", "origin", branch)
    git(f.dir, "merge", "-q", "--no-ff", "-m", "Merge kaas/hooli", "FETCH_HEAD")
    sha = e.push(f, "merge")  # push of the merge commit (commit_push adds nothing new)
    e.ex_sha = sha
    secs, bad = ready_or_fail(e, f, sha)
    fails = list(bad)
    if "kaas-tenant-hooli" not in f.kustomizations():
        fails.append("Kustomization kaas-tenant-hooli not on the API server after the merge")
    for kind, name in (("namespace", "hooli"), ("cluster.cluster.x-k8s.io", "hooli")):
        args = [kind, name] if kind == "namespace" else ["-n", "hooli", kind, name]
        if e.c.kubectl("get", *args, check=False).returncode != 0:
            fails.append(f"{kind} {name} not on the API server")
    e.r.figure("day 2: merge of a new tenant -> all Ready", f"{secs:.1f}s")
    return fails


def md_of(e, ns, name):
    return e.c.get("-n", ns, "machinedeployment.cluster.x-k8s.io", name)


def resize_pool(e):
    """A pool resized: new machine template name, MachineDeployment updated in place."""
    f = e.ex
    before = md_of(e, "globex", "globex-system")
    p = rendered_file(f, "tenants", "globex.yaml")
    src = read(p)
    new = src.replace("machine: {cpus: 2, memoryMiB: 4096}", "machine: {cpus: 4, memoryMiB: 8192}", 1)
    if new == src:
        return ["could not find the globex system pool's machine line to resize"]
    write(p, new)
    sha = render_push(e, f, "globex: system pool 4 CPUs, 8 GiB")
    e.ex_sha = sha
    secs, bad = ready_or_fail(e, f, sha)
    fails = list(bad)
    after = md_of(e, "globex", "globex-system")
    ref_b = before["spec"]["template"]["spec"]["infrastructureRef"]["name"]
    ref_a = after["spec"]["template"]["spec"]["infrastructureRef"]["name"]
    if after["metadata"]["uid"] != before["metadata"]["uid"]:
        fails.append("MachineDeployment globex-system was recreated, not updated in place")
    if ref_a == ref_b:
        fails.append(f"MachineDeployment globex-system still references {ref_b}")
    if e.c.kubectl("get", "-n", "globex", "proxmoxmachinetemplate", ref_a, check=False).returncode != 0:
        fails.append(f"the new template {ref_a} is not on the API server")
    tmpl = e.c.get("-n", "globex", "proxmoxmachinetemplate", ref_a)["spec"]["template"]["spec"]
    if tmpl.get("numCores") != 4 and tmpl.get("numSockets", 1) * tmpl.get("numCores", 0) != 4:
        fails.append(f"the new template does not have 4 CPUs: {json.dumps(tmpl)[:200]}")
    print(f"  globex-system: {ref_b} -> {ref_a}", flush=True)
    return fails


def version_bump(e):
    f = e.ex
    p = rendered_file(f, "tenants", "globex.yaml")
    src = read(p)
    new = src.replace('version: "v1.34.1"', 'version: "v1.34.2"')
    if new == src:
        return ["could not find globex's version v1.34.1"]
    write(p, new)
    sha = render_push(e, f, "globex: Kubernetes v1.34.2")
    e.ex_sha = sha
    secs, bad = ready_or_fail(e, f, sha)
    fails = list(bad)
    kcp = e.c.get("-n", "globex", "kamajicontrolplane", "globex")
    if kcp["spec"].get("version") != "v1.34.2":
        fails.append(f"KamajiControlPlane globex version {kcp['spec'].get('version')}, want v1.34.2")
    for md in e.c.get("-n", "globex", "machinedeployment.cluster.x-k8s.io")["items"]:
        v = md["spec"]["template"]["spec"].get("version")
        if v != "v1.34.2":
            fails.append(f"MachineDeployment {md['metadata']['name']} version {v}, want v1.34.2")
    return fails


def kamaji_repin(e):
    f = e.ex
    p = rendered_file(f, "kaas.lock")
    src = read(p)
    m = re.search(r"image: docker.io/clastix/kamaji\n  tag: (\S+)\n  digest: (sha256:[0-9a-f]{64})", src)
    if not m:
        return ["kamaji has no pin in the e2e's kaas.lock"]
    new_digest = "sha256:" + "e" * 64
    write(p, src.replace(m.group(2), new_digest))
    sha = render_push(e, f, "re-pin kamaji")
    e.ex_sha = sha
    secs, bad = ready_or_fail(e, f, sha)
    fails = list(bad)
    hrs = [h for ns in ("kamaji-system",) for h in e.c.get("-n", ns, "helmreleases")["items"]
           if h["spec"]["chart"]["spec"]["chart"] == "kamaji"]
    if not hrs:
        return fails + ["no kamaji HelmRelease in kamaji-system"]
    text = json.dumps(hrs[0]["spec"].get("values", {}))
    if new_digest not in text:
        fails.append(f"kamaji HelmRelease values do not carry the new pin: {text[:300]}")
    return fails


def kaas_json(f, *args):
    """`kaas-gitops ARGS --format json`: (exit code, the document or None, stderr)."""
    r = f.kaas_gitops(*args, "--format", "json", check=False)
    try:
        doc = json.loads(r.stdout) if r.stdout.strip() else None
    except json.JSONDecodeError:
        doc = None
    return r.returncode, doc, r.stderr


def row_of(doc, name):
    return next((r for r in (doc or {}).get("rows", []) if r["name"] == name), None)


def object_in(row, kind, name=None):
    return next((o for o in (row or {}).get("objects", []) if o["kind"] == kind and (name is None or o["name"] == name)), None)


def status_and_wait(e):
    """`kaas-gitops status` and `wait` against the real API server and Flux controllers. A new
    tenant without HelmReleases (umbrella: shared datastore, a fixed pool) is pushed and `wait
    --reconcile` sees it go from not applied to Ready; a commit that breaks its overlay fails its
    Kustomization with the API server's message and `wait` says so before its timeout; the fix is
    Ready again. The example's HelmReleases never get Ready here (helm --wait on pods no kubelet
    runs): `wait` times out naming one, with helm-controller's message. Cluster API and Kamaji
    controllers do not run in this bed: their objects must show as NoStatus, never Ready (the same
    commands on the statuses the real Cluster API controllers write: lib/capi_upgrade.py).
    Unreachable clusters, unknown contexts and RBAC refusals exit 2."""
    f = e.ex
    kc = ("--kubeconfig", e.c.kubeconfig)
    fails = []

    # A tenant with no HelmRelease, pushed without asking Flux: `wait --reconcile` asks.
    src = read(rendered_file(f, "tenants", "initech.yaml"))
    # `addons: {cni: none}`: the example's default CNI would be a HelmRelease too, one that never
    # gets Ready here (its chart repository is not on loopback, its cluster does not exist).
    tenant = (src.replace("name: initech", "name: umbrella").replace("10.0.7.", "10.0.8.")
              .replace("autoscaling: {min: 1, max: 3}", "replicas: 2").rstrip("\n") + "\n  addons: {cni: none}\n")
    if "replicas: 2" not in tenant or "\n  addons:" in src:
        return ["could not derive the umbrella tenant from tenants/initech.yaml"]
    write(rendered_file(f, "tenants", "umbrella.yaml"), tenant)
    f.render()
    head = f.commit_push("umbrella: a tenant without HelmReleases")
    t0 = time.time()
    # `--flux-only`: no Cluster API or Kamaji controller writes umbrella's cluster statuses yet.
    w = f.kaas_gitops("wait", "umbrella", "--reconcile", "--flux-only", "--timeout", "180s", *kc, check=False)
    e.r.figure("status: push -> `wait --reconcile` sees a new tenant Ready", f"{time.time() - t0:.1f}s")
    print("  wait umbrella:\n    " + "\n    ".join(w.stderr.strip().splitlines()[-6:]), flush=True)
    if w.returncode != 0 or f"Ready at {head}" not in w.stderr:
        return fails + [f"wait umbrella exited {w.returncode}: {w.stderr.strip()[-600:]}"]
    # Pushed but not yet applied when `wait` started: it said what it was waiting for.
    if "\nwaiting: Kustomization flux-system/" not in w.stderr:
        fails.append(f"wait never reported waiting for a Kustomization before all were Ready: {w.stderr.strip()[:400]}")
    e.ex_sha = head

    code, doc, err = kaas_json(f, "status", *kc)
    if code != 0 or doc is None:
        return fails + [f"status exited {code}: {err.strip()[:400]}"]
    if doc.get("revision") != head:
        fails.append(f"status compares with {doc.get('revision')}, want HEAD {head}")
    names = [r["name"] for r in doc["rows"]]
    if names[:1] != ["platform"] or not {"acme", "globex", "umbrella"} <= set(names):
        fails.append(f"status rows {names}, want platform first, then the tenants")
    umbrella = row_of(doc, "umbrella")
    ks = object_in(umbrella, "Kustomization")
    if not ks or ks["state"] != "ready" or ks.get("appliedRevision") != f"main@sha1:{head}":
        fails.append(f"umbrella's Kustomization in status: {json.dumps(ks)[:300]}")
    for kind in ("Cluster", "KamajiControlPlane", "MachineDeployment"):
        o = object_in(umbrella, kind)
        if not o or o["state"] != "noStatus":
            fails.append(f"umbrella's {kind}, with no controller running, must be noStatus: {json.dumps(o)[:200]}")
    if umbrella and umbrella["state"] != "noStatus":
        fails.append(f"umbrella's row is {umbrella['state']}, want noStatus (its worst object)")
    hr = object_in(row_of(doc, "acme"), "HelmRelease", "acme-etcd")
    if not hr or hr["state"] == "ready":
        fails.append(f"acme-etcd cannot be Ready without a kubelet, status says {json.dumps(hr)[:300]}")
    else:
        print(f"  acme-etcd: {hr['state']}: {hr['summary'][:200]}", flush=True)
    human = f.kaas_gitops("status", *kc, check=False)
    e.r.finding("status", "the `status` screen on the test bed:\n" + human.stdout)
    if not re.search(r"^umbrella\s+Ready\s+main@" + head[:7], human.stdout, re.M):
        fails.append(f"the status table has no `umbrella Ready main@{head[:7]}` row:\n{human.stdout[:800]}")

    # The Cluster API statuses `status` and `wait` read, written by the real controllers (and
    # the named stand-ins of what Kamaji and the infrastructure write): lib/capi_upgrade.py, in
    # the CAPI bed. Here, where none runs, the waits below are Flux's part (`--flux-only`).

    # A HelmRelease that cannot get Ready: `wait` times out naming it, with helm-controller's words.
    w = f.kaas_gitops("wait", "initech", "--timeout", "10s", *kc, check=False)
    last = w.stderr.strip().splitlines()[-1] if w.stderr.strip() else ""
    if w.returncode != 1 or not last.startswith("error: not Ready after 10s: HelmRelease initech/initech-autoscaler is "):
        fails.append(f"wait initech exited {w.returncode}: {last[:400]}")

    # A commit that breaks umbrella's overlay: `wait` fails naming its Kustomization and why.
    md = next(o["name"] for o in umbrella["objects"] if o["kind"] == "MachineDeployment")
    p = rendered_file(f, "overlays", "tenants", "umbrella", f"machinedeployment-{md}.yaml")
    good = read(p)
    write(p, re.sub(r"(\n  replicas: )\d+", r"\1many", good, count=1))
    f.commit_push("hand edit: umbrella replicas: many")
    t0 = time.time()
    code, doc, err = kaas_json(f, "wait", "umbrella", "--reconcile", "--flux-only", "--timeout", "120s", *kc)
    msg = (doc or {}).get("message", "")
    print(f"  wait on the broken commit: exit {code} after {time.time() - t0:.0f}s: {msg[:300]}", flush=True)
    if code != 1 or "Kustomization flux-system/kaas-tenant-umbrella is Failed" not in msg or "replicas" not in msg:
        fails.append(f"wait on a broken umbrella exited {code}, want 1 naming kaas-tenant-umbrella and replicas: {msg[:400]} {err.strip()[:300]}")
    if time.time() - t0 > 110:
        fails.append("wait did not stop before its timeout although umbrella failed at that revision")
    human = f.kaas_gitops("status", "umbrella", *kc, check=False)
    if not re.search(r"^umbrella\s+Failed\s", human.stdout, re.M) or "replicas" not in human.stdout:
        fails.append(f"status does not show umbrella Failed with the message:\n{human.stdout[:800]}")

    # The fix: Flux applies it (asked now with --reconcile) and wait says so.
    write(p, good)
    fixed = f.commit_push("revert the hand edit")
    t0 = time.time()
    w = f.kaas_gitops("wait", "umbrella", "--reconcile", "--flux-only", "--timeout", "180s", *kc, check=False)
    e.r.figure("status: fix pushed -> `wait --reconcile` Ready", f"{time.time() - t0:.1f}s")
    if w.returncode != 0 or f"Ready at {fixed}" not in w.stderr:
        fails.append(f"wait after the fix exited {w.returncode}: {w.stderr.strip()[-600:]}")
    e.ex_sha = fixed

    # Two merges in quick succession: the first one's `wait --revision` is done once Flux applied
    # the second, which descends from it (kustomize-controller reports only the newest revision).
    first = f.commit_push("a merge")
    second = f.commit_push("another merge right after it")
    t0 = time.time()
    w = f.kaas_gitops("wait", "umbrella", "--revision", first, "--reconcile", "--flux-only", "--timeout", "120s", *kc,
                      check=False)
    applied = e.c.kubectl("get", "-n", "flux-system", "kustomization", "kaas-tenant-umbrella",
                          "-o", "jsonpath={.status.lastAppliedRevision}", check=False).stdout.strip()
    print(f"  wait --revision {first[:7]} with {applied} applied: exit {w.returncode} after {time.time() - t0:.0f}s", flush=True)
    if w.returncode != 0:
        fails.append(f"wait --revision of the first of two merges exited {w.returncode} (applied {applied}): {w.stderr.strip()[-400:]}")
    elif not applied.endswith(second):
        fails.append(f"the two-merge check saw {applied} applied, not the second merge {second}: the descendant rule was not exercised")
    e.ex_sha = second

    # Errors: one clear message each, exit 2.
    closed = os.path.join(e.work, "closed.kubeconfig")
    cfg = json.load(open(e.c.kubeconfig))
    cfg["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:9"
    json.dump(cfg, open(closed, "w"))
    for args, want in ((("--kubeconfig", closed), "cannot reach the management cluster at https://127.0.0.1:9/"),
                       ((*kc, "--context", "nope"), "has no context `nope` (it has: e2e)")):
        r = f.kaas_gitops("status", *args, check=False)
        if r.returncode != 2 or want not in r.stderr:
            fails.append(f"status {' '.join(args)} exited {r.returncode}, want 2 with `{want}`: {r.stderr.strip()[:300]}")
    # RBAC: a ServiceAccount the cluster knows but grants nothing.
    e.c.kubectl("create", "serviceaccount", "-n", "default", "nobody", check=False)
    token = e.c.kubectl("create", "token", "-n", "default", "nobody", check=False).stdout.strip()
    if not token:
        fails.append("could not get a token for the ServiceAccount nobody")
    else:
        nobody = os.path.join(e.work, "nobody.kubeconfig")
        cfg = json.load(open(e.c.kubeconfig))
        cfg["users"][0]["user"] = {"token": token}
        json.dump(cfg, open(nobody, "w"))
        r = f.kaas_gitops("status", "--kubeconfig", nobody, check=False)
        if r.returncode != 2 or "refused to let" not in r.stderr or "list kustomizations in namespace flux-system" not in r.stderr:
            fails.append(f"status without RBAC exited {r.returncode}, want 2 and the refusal: {r.stderr.strip()[:400]}")
    return fails


def delete_tenant(e):
    """A tenant deleted: its Kustomization is pruned, and so is everything it applied, until its
    namespace is gone (the namespace controller of kube-controller-manager finishes it).
    Without a kubelet the autoscaler's Deployment never gets ready, so helm-controller's install
    (helm --wait, the HelmRelease's default timeout of 5m) holds the HelmRelease's finalizer until
    it times out: up to ~6 minutes here."""
    f = e.ex
    os.remove(rendered_file(f, "tenants", "initech.yaml"))
    sha = render_push(e, f, "initech leaves")
    e.ex_sha = sha
    secs, bad = ready_or_fail(e, f, sha)
    fails = list(bad)
    t0 = time.time()
    try:
        e.c.wait_for("namespace initech gone",
                     lambda: e.c.kubectl("get", "namespace", "initech", check=False).returncode != 0, timeout=420, interval=2)
    except TimeoutError as ex:
        ns = e.c.kubectl("get", "namespace", "initech", "-o", "json", check=False).stdout
        fails.append(f"{ex}; namespace: {ns[:600]}")
    if "kaas-tenant-initech" in f.kustomizations():
        fails.append("Kustomization kaas-tenant-initech still on the API server")
    e.r.figure("day 2: tenant deleted -> Kustomizations Ready / namespace gone", f"{secs:.1f}s / +{time.time() - t0:.0f}s")
    return fails


def broken_overlay(e):
    """A hand-broken overlay: only that tenant's Kustomization fails, with the API server's message,
    and `validate` finds it first."""
    f = e.ex
    p = rendered_file(f, "overlays", "tenants", "acme", "machinedeployment-acme-md-0.yaml")
    src = read(p)
    new = re.sub(r"(\n  replicas: )\d+", r"\1many", src, count=1)
    if new == src:
        new = src.replace("\nspec:\n", "\nspec:\n  replicas: many\n", 1)
    write(p, new)
    fails = []
    v = f.kaas_gitops("validate", "--crds", SHARED_CRDS, check=False)
    if v.returncode == 0:
        fails.append("`kaas-gitops validate` did not catch the broken overlay")
    elif "acme" not in (v.stdout + v.stderr):
        fails.append(f"`validate` failed without naming the acme overlay: {(v.stdout + v.stderr)[:300]}")
    sha = e.push(f, "hand edit: acme replicas: many")
    secs, state = f.wait_ready(sha, timeout=90)
    acme = state.get("kaas-tenant-acme")
    others = {n: s for n, s in state.items() if n != "kaas-tenant-acme" and not s[0]}
    if acme and acme[0]:
        fails.append("kaas-tenant-acme is Ready with a broken overlay")
    elif acme:
        print(f"  kaas-tenant-acme: {acme[1]}: {acme[2]}", flush=True)
        if "replicas" not in (acme[2] or ""):
            fails.append(f"kaas-tenant-acme failed without the API server's message about replicas: {acme[2]}")
    for n, s in others.items():
        fails.append(f"{n} is not Ready although its overlay is untouched: {s[1]}: {s[2]}")
    # Put it back, so later scenarios start from a valid fleet.
    write(p, src)
    e.ex_sha = e.push(f, "revert the hand edit")
    return fails


def mixed_fleet(e, n=100):
    """100 tenants over every provider and topology mode (mixed()), in one platform, through git."""
    f = e.new_fleet("fleet100", lambda d: mixed(d, n))
    f.render()
    secs_render = f.first_render
    sha = f.commit_push(f"{n} generated tenants")
    e.bootstrap(f, open_gate=True)  # the root now follows this repository; the example is pruned
    f.poke()
    f.wait_source(sha)
    secs, state = f.wait_ready(sha, timeout=600)
    bad = e.describe(state)
    e.r.figure(f"mixed fleet of {n}: render", f"{secs_render:.2f}s")
    e.r.figure(f"mixed fleet of {n}: push -> {len(state)} Kustomizations Ready", f"{secs:.1f}s" if not bad else f"not all Ready after {secs:.0f}s")
    for b in bad[:20]:
        e.r.finding("mixed fleet", b)
    return bad


def bench_gen():
    """bench/gen.py, loaded by its path: the bench folder stays off sys.path, where a script's
    name would shadow a module of this folder (bench/management_clusters.py did
    lib/management_clusters.py once the mixed fleet had put it first)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("bench_gen", os.path.join(MAIN, "bench", "gen.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def generated(d, n):
    """Fills d with bench/gen.py's fleet of n tenants and the example's base/."""
    import shutil, tempfile
    gen = bench_gen()
    tmp = tempfile.mkdtemp()
    gen.main_args(os.path.join(tmp, "g"), n)
    shutil.copy(os.path.join(tmp, "g", "kaas.yaml"), d)
    shutil.copytree(os.path.join(tmp, "g", "tenants"), os.path.join(d, "tenants"))
    shutil.rmtree(tmp)
    shutil.copytree(os.path.join(MAIN, "base"), os.path.join(d, "base"))


def mixed(d, n):
    """n tenants over every provider and topology mode, in one platform: the project's fixture
    platform of tests/fixtures/topology (ClusterClasses; proxmox, hetzner, kubevirt, nutanix, aws,
    vsphere, openstack, metal3, ionoscloud) plus packet, metal-stack, tinkerbell and azure; every fixture tenant of
    tests/fixtures/providers/*/ and tests/fixtures/topology/, topped up to n with bench/gen.py's Proxmox tenants."""
    import glob, shutil
    fx = os.path.join(MAIN, "tests", "fixtures")
    platform = read(os.path.join(fx, "topology", "kaas.yaml"))
    providers = ("infrastructureProviders: {proxmox: v0.9.0, hetzner: v1.1.8, kubevirt: v0.11.2, nutanix: v1.10.3, "
                 "aws: v2.11.1, vsphere: v1.16.1, openstack: v0.14.7, metal3: v1.13.2, ionoscloud: v0.6.3}")
    secrets = "providerConfigSecrets: {aws: capa-variables, nutanix: capx-variables, proxmox: capmox-variables, vsphere: capv-variables}"
    if providers not in platform or secrets not in platform:
        raise RuntimeError("tests/fixtures/topology/kaas.yaml changed: update the e2e's mixed fleet")
    platform = platform.replace(providers, providers[:-1] + ", packet: v0.9.0, metal-stack: v0.8.0, tinkerbell: v0.7.0, azure: v1.26.0}")
    platform = platform.replace(secrets, secrets[:-1] + ", packet: capp-variables, metal-stack: capms-variables}")
    platform = platform.replace('pools: ["10.0.4.100-10.0.4.199"]', 'pools: ["10.200.0.0/16"]')
    write(os.path.join(d, "kaas.yaml"), platform)
    os.makedirs(os.path.join(d, "tenants"))
    fixtures = sorted(glob.glob(os.path.join(fx, "providers", "*", "tenants", "*.yaml")) +
                      glob.glob(os.path.join(fx, "topology", "tenants", "*.yaml")))
    for f in fixtures:
        shutil.copy(f, os.path.join(d, "tenants"))
    gen = bench_gen()
    for i in range(max(0, n - len(fixtures))):
        write(os.path.join(d, "tenants", f"t{i:05d}.yaml"), gen.tenant(i))
    shutil.copytree(os.path.join(MAIN, "base"), os.path.join(d, "base"))


# Three tiny charts for the add-on scenario: each writes a ConfigMap into the target cluster, and
# each after the first `lookup`s the one before it and fails the install without it, so an
# install out of order fails inside Helm itself.
PROBE_CHARTS = (("probe-cni", None), ("probe-ccm", "probe-cni"), ("probe-app", "probe-ccm"))


def probe_chart(root, name, after):
    d = os.path.join(root, "src", name)
    os.makedirs(os.path.join(d, "templates"), exist_ok=True)
    write(os.path.join(d, "Chart.yaml"), f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n")
    guard = ""
    if after:
        guard = ('{{- if not (lookup "v1" "ConfigMap" "kube-system" "%s") }}\n'
                 '{{- fail "%s installed before %s" }}\n{{- end }}\n') % (after, name, after)
    write(os.path.join(d, "templates", "cm.yaml"), guard + (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: kube-system\n"
        "data:\n  podCIDR: {{ .Values.podCIDR | default \"\" | quote }}\n") % name)
    return d


def embedded_kubeconfig(c):
    """The bed's admin kubeconfig with its certificates inline, as a Secret's value carries them."""
    import base64
    cfg = json.load(open(c.kubeconfig))
    b64 = lambda p: base64.b64encode(open(p, "rb").read()).decode()  # noqa: E731
    cl, us = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    cl["certificate-authority-data"] = b64(cl.pop("certificate-authority"))
    us["client-certificate-data"] = b64(us.pop("client-certificate"))
    us["client-key-data"] = b64(us.pop("client-key"))
    return json.dumps(cfg)


def addons_through_kubeconfig(e):
    """Tenant add-ons (issue 23): the HelmReleases kaas-gitops renders reach a target cluster
    through the tenant's kubeconfig Secret and helm-controller installs them in order.

    The bed's own API server plays the tenant cluster: the scenario writes `probe-kubeconfig`
    (key `value`) with the bed's admin credentials inline, as the Kamaji provider writes
    `<cluster>-kubeconfig` once a control plane is up. Three tiny charts stand in for the CNI,
    a CCM and an `other` add-on, from a loopback chart repository: the real Cilium chart would
    install a DaemonSet and a Deployment that never become ready on a bed without nodes, and
    helm-controller waits for them, so it could show nothing about order here (its values are
    checked against the real chart with `helm template` in tests/it/addons.rs). Each probe chart
    after the first `lookup`s the previous one's ConfigMap and fails without it: a release
    installed out of order fails in Helm. Checked: nothing installs before the Secret exists;
    all three install, in order; removing the `other` add-on from the tenant prunes its
    HelmRelease and helm-controller uninstalls it from the target; deleting the tenant after its
    kubeconfig Secret is gone does not hang on the add-ons' finalizers. The example fleet is
    pruned (the root follows this repository), as in the mixed fleet scenario."""
    fails = []
    root = os.path.join(e.work, "charts", "addons")
    os.makedirs(root, exist_ok=True)
    for name, after in PROBE_CHARTS:
        subprocess.run([e.helm, "package", probe_chart(os.path.join(e.work, "probe-src"), name, after), "-d", root],
                       check=True, capture_output=True, text=True)
    subprocess.run([e.helm, "repo", "index", root, "--url", f"http://127.0.0.1:{e.chart_port}/addons"],
                   check=True, capture_output=True, text=True)

    def fill(d):
        Fleet.example(d)
        for t in os.listdir(os.path.join(d, "tenants")):
            os.remove(os.path.join(d, "tenants", t))
        text = read(os.path.join(MAIN, "tenants", "initech.yaml")).replace("initech", "probe")
        text = re.sub(r"autoscaling: \{min: 1, max: 3\}", "replicas: 1", text)
        write(os.path.join(d, "tenants", "probe.yaml"), text + "  addons: {extra: [probe-ccm, probe-app]}\n")
        url = f"http://127.0.0.1:{e.chart_port}/addons"
        catalog = "".join(
            f"      {n}: {{kind: {k}, repository: {url}, chart: {n}, version: 0.1.0}}\n"
            for n, k in (("probe-cni", "cni"), ("probe-ccm", "ccm"), ("probe-app", "other")))
        k = os.path.join(d, "kaas.yaml")
        text = read(k)
        start = text.index("  # Charts installed into every tenant cluster")  # the example's add-ons, last
        write(k, text[:start] + "  addons:\n    catalog:\n" + catalog + "    defaults: {cni: probe-cni}\n")

    f = e.new_fleet("addons", fill)
    f.render()
    sha = f.commit_push("a tenant with three add-ons")
    e.bootstrap(f, open_gate=True)
    f.poke()
    f.wait_source(sha)
    names = [f"probe-{n}" for n in ("probe-cni", "probe-ccm", "probe-app")]
    try:
        e.c.wait_for("the add-on HelmReleases on the API server", lambda: all(
            e.c.kubectl("get", "-n", "probe", "helmrelease", n, check=False).returncode == 0 for n in names), timeout=240, interval=2)
    except TimeoutError as ex:
        return [f"{ex}: Kustomizations {e.describe(f.wait_ready(sha, timeout=1)[1])}"]
    # Without the kubeconfig Secret nothing reaches the target: helm-controller's reconcile ends
    # in RESTClientError (helm-controller v1.6.3 internal/controller/helmrelease_controller.go,
    # buildRESTClientGetter) and is retried. Its workers may still be busy with the pruned
    # example's releases (their installs wait up to 5m on a bed without kubelets): wait for it.
    try:
        e.c.wait_for("helm-controller tried the CNI release without its kubeconfig Secret", lambda: "kubeconfig" in e.hr_status("probe", "probe-probe-cni").lower(), timeout=420, interval=3)
    except TimeoutError as ex:
        e.r.finding("addons", f"{ex}: {e.hr_status('probe', 'probe-probe-cni')}")
    early = [n for n, _ in PROBE_CHARTS if e.c.kubectl("get", "-n", "kube-system", "configmap", n, check=False).returncode == 0]
    if early:
        fails.append(f"installed before the kubeconfig Secret existed: {early}")
    cni_status = e.hr_status("probe", "probe-probe-cni")
    if "Ready=True" in cni_status:
        fails.append(f"the CNI release is Ready without a kubeconfig Secret: {cni_status}")
    print(f"  before the kubeconfig Secret: probe-probe-cni {cni_status}", flush=True)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "probe-kubeconfig", "namespace": "probe"},
              "type": "cluster.x-k8s.io/secret", "stringData": {"value": embedded_kubeconfig(e.c)}}
    e.c.kubectl("apply", "-f", "-", input=json.dumps(secret))
    t0 = time.time()
    for n in names:
        e.c.kubectl("annotate", "--overwrite", "-n", "probe", "helmrelease", n, f"reconcile.fluxcd.io/requestedAt={time.time()}")
    try:
        e.c.wait_for("the three add-ons Ready", lambda: all("Ready=True" in e.hr_status("probe", n) for n in names),
                     timeout=600, interval=2)
    except TimeoutError as ex:
        return fails + [f"{ex}: " + "; ".join(f"{n}: {e.hr_status('probe', n)}" for n in names)]
    e.r.figure("add-ons: kubeconfig Secret -> three releases Ready in order", f"{time.time() - t0:.1f}s")
    for n, _ in PROBE_CHARTS:
        if e.c.kubectl("get", "-n", "kube-system", "configmap", n, check=False).returncode != 0:
            fails.append(f"ConfigMap kube-system/{n} missing on the target after its release is Ready")
    stamps = []
    for n in names:
        hr = e.c.get("-n", "probe", "helmrelease", n)
        hist = hr.get("status", {}).get("history") or [{}]
        stamps.append((hist[-1].get("firstDeployed", ""), n))
        if hr["status"].get("storageNamespace") != "kube-system":
            fails.append(f"{n}: Helm storage in {hr['status'].get('storageNamespace')}, want kube-system of the target")
    # firstDeployed has whole seconds: two releases installed within one second tie, so the
    # times must only never go backwards in the dependsOn order (the charts' lookups above are
    # what proves the order).
    if any(a[0] > b[0] for a, b in zip(stamps, stamps[1:])):
        fails.append(f"installed out of order: {stamps}")
    # Removing an add-on: pruned by Flux, uninstalled by helm-controller.
    p = rendered_file(f, "tenants", "probe.yaml")
    write(p, read(p).replace("extra: [probe-ccm, probe-app]", "extra: [probe-ccm]"))
    sha = render_push(e, f, "probe-app removed")
    if os.path.exists(rendered_file(f, "overlays", "tenants", "probe", "helmrelease-probe-probe-app.yaml")):
        fails.append("render kept the removed add-on's HelmRelease")
    try:
        e.c.wait_for("probe-app uninstalled from the target", lambda: e.c.kubectl(
            "get", "-n", "kube-system", "configmap", "probe-app", check=False).returncode != 0, timeout=240, interval=2)
    except TimeoutError as ex:
        fails.append(f"{ex}; HelmRelease: {e.hr_status('probe', 'probe-probe-app')}")
    # The tenant deleted after its cluster (and so its kubeconfig Secret) is gone.
    e.c.kubectl("delete", "-n", "probe", "secret", "probe-kubeconfig")
    os.remove(p)
    sha = render_push(e, f, "probe leaves")
    t0 = time.time()
    try:
        e.c.wait_for("namespace probe gone", lambda: e.c.kubectl("get", "namespace", "probe", check=False).returncode != 0,
                     timeout=420, interval=2)
        e.r.figure("add-ons: tenant deleted with its kubeconfig Secret gone -> namespace gone", f"{time.time() - t0:.0f}s")
    except TimeoutError as ex:
        left = e.c.kubectl("get", "-n", "probe", "helmreleases", "-o", "name", check=False)
        fails.append(f"{ex}; HelmReleases left: {getattr(left, 'stdout', '')[:300]}")
    for n, _ in PROBE_CHARTS[:2]:
        if e.c.kubectl("get", "-n", "kube-system", "configmap", n, check=False).returncode != 0:
            fails.append(f"{n} vanished from the target although its uninstall had no cluster to reach")
    return fails


def run_all(e, r, only=""):
    want = lambda name: not only or any(o in name for o in only.split(","))  # noqa: E731
    r.run("example as rendered: the platform applies and gates the tenants on Kamaji alone", e.example_as_rendered)
    if want("access"):
        import access  # tenant access on a real kube-apiserver, in a bed of its own (lib/access.py)
        access.run(e, r)
    if not hasattr(e, "ex_sha"):
        why = "the example repository was never rendered and pushed (see the first scenario)"
        for name in ("example (gate open)", "charts", "day 2", "mixed fleet"):
            r.not_run(name, why)
        return
    gate = r.run("example: platform wait turned off by the e2e; every rendered object on the API server as rendered", e.example_gate_open)
    if want("charts"):
        r.run("charts: helm-controller installs kamaji-etcd and cluster-autoscaler from the loopback repository", e.charts_for_real)
    for name, fn in (("day 2: tenant added with `pr`, merged, applied", add_tenant_with_pr),
                     ("day 2: pool resized in place", resize_pool),
                     ("day 2: Kubernetes version bump", version_bump),
                     ("day 2: Kamaji image re-pinned", kamaji_repin),
                     ("status and wait: a new tenant Ready, a broken commit fails it, fixed; a HelmRelease that cannot be Ready; cluster errors exit 2", status_and_wait),
                     ("day 2: tenant deleted and pruned until its namespace is gone", delete_tenant),
                     ("day 2: a hand-broken overlay fails only its tenant, with the API server's message", broken_overlay)):
        if want("day 2") or (fn is status_and_wait and want("status")):
            r.run(name, fn, e)
    if want("addons"):
        r.run("addons: HelmReleases through a kubeconfig Secret install into the target in order; removal uninstalls; deletion does not hang", addons_through_kubeconfig, e)
    if want("mixed"):
        r.run("mixed fleet: 100 tenants over every provider and topology mode", mixed_fleet, e)
    r.run("Flux ran as its ServiceAccounts under flux2's manifests/rbac: no request refused", e.flux_rbac_held)
    if want("capi"):
        import capi  # the Cluster API managers for real, in a bed of their own (lib/capi.py)
        capi.run(e, r)
    if want("availability"):
        import availability  # kube-scheduler and kwok Nodes, in a bed of its own (lib/availability.py)
        availability.run(e, r)
    if want("management"):
        import management_clusters  # two management clusters, two beds of their own (lib/management_clusters.py)
        management_clusters.run(e, r)
    if want("migration"):
        import migration  # a cluster moved to kaas-kamaji, in a bed of its own (lib/migration.py)
        migration.run(e, r)
    if "kamaji" in only.split(","):
        # Opt-in only (E2E_ONLY=kamaji...): the real Kamaji and provider, in a bed of their own
        # (lib/kamaji.py); tests/e2e/run builds them only then.
        import kamaji
        kamaji.run(e, r)
    del gate
