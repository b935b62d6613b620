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


def generated(d, n):
    """Fills d with bench/gen.py's fleet of n tenants and the example's base/."""
    import shutil, tempfile
    sys.path.insert(0, os.path.join(MAIN, "bench"))
    import gen
    tmp = tempfile.mkdtemp()
    gen.main_args(os.path.join(tmp, "g"), n)
    shutil.copy(os.path.join(tmp, "g", "kaas.yaml"), d)
    shutil.copytree(os.path.join(tmp, "g", "tenants"), os.path.join(d, "tenants"))
    shutil.rmtree(tmp)
    shutil.copytree(os.path.join(MAIN, "base"), os.path.join(d, "base"))


def mixed(d, n):
    """n tenants over every provider and topology mode, in one platform: the project's fixture
    platform of tests/fixtures/topology (ClusterClasses; proxmox, hetzner, kubevirt, nutanix, aws)
    plus packet and metal-stack; every fixture tenant of tests/fixtures/providers/*/ and
    tests/fixtures/topology/, topped up to n with bench/gen.py's Proxmox tenants."""
    import glob, shutil
    fx = os.path.join(MAIN, "tests", "fixtures")
    platform = read(os.path.join(fx, "topology", "kaas.yaml"))
    providers = "infrastructureProviders: {proxmox: v0.9.0, hetzner: v1.1.8, kubevirt: v0.11.2, nutanix: v1.10.3, aws: v2.11.1}"
    secrets = "providerConfigSecrets: {aws: capa-variables, nutanix: capx-variables, proxmox: capmox-variables}"
    if providers not in platform or secrets not in platform:
        raise RuntimeError("tests/fixtures/topology/kaas.yaml changed: update the e2e's mixed fleet")
    platform = platform.replace(providers, providers[:-1] + ", packet: v0.9.0, metal-stack: v0.8.0}")
    platform = platform.replace(secrets, secrets[:-1] + ", packet: capp-variables, metal-stack: capms-variables}")
    platform = platform.replace('pools: ["10.0.4.100-10.0.4.199"]', 'pools: ["10.200.0.0/16"]')
    write(os.path.join(d, "kaas.yaml"), platform)
    os.makedirs(os.path.join(d, "tenants"))
    fixtures = sorted(glob.glob(os.path.join(fx, "providers", "*", "tenants", "*.yaml")) +
                      glob.glob(os.path.join(fx, "topology", "tenants", "*.yaml")))
    for f in fixtures:
        shutil.copy(f, os.path.join(d, "tenants"))
    sys.path.insert(0, os.path.join(MAIN, "bench"))
    import gen
    for i in range(max(0, n - len(fixtures))):
        write(os.path.join(d, "tenants", f"t{i:05d}.yaml"), gen.tenant(i))
    shutil.copytree(os.path.join(MAIN, "base"), os.path.join(d, "base"))


def run_all(e, r, only=""):
    want = lambda name: not only or any(o in name for o in only.split(","))  # noqa: E731
    r.run("example as rendered: the platform applies and gates the tenants on Kamaji alone", e.example_as_rendered)
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
                     ("day 2: tenant deleted and pruned until its namespace is gone", delete_tenant),
                     ("day 2: a hand-broken overlay fails only its tenant, with the API server's message", broken_overlay)):
        if want("day 2"):
            r.run(name, fn, e)
    if want("mixed"):
        r.run("mixed fleet: 100 tenants over every provider and topology mode", mixed_fleet, e)
    del gate
