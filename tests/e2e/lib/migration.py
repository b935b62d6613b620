"""Moving a running cluster to kaas-kamaji (issue 41 item 4), in a bed of its own.

kaas-gitops before kaas-kamaji rendered the kamaji HelmRelease, its Namespace and the
HelmRepositories into kaas-platform's folder. The scenario pushes that layout (the current render
moved back: `old_layout`), lets Flux apply it, then takes the step docs/lifecycle.md ("Moving to
kaas-kamaji") prescribes: kaas-platform suspended, the render of this version pushed, kaas-kamaji
Ready, kaas-platform resumed. Asserted: `render` warns about the move; while suspended,
kaas-platform gets its new spec (dependsOn kaas-kamaji) and stays suspended; the moved objects
are never deleted (same UIDs, no deletionTimestamp seen at any poll) and end up labelled and
inventoried as kaas-kamaji's, no longer kaas-platform's (kustomize-controller v1.9.4
`deleteObjects` skips an object whose labels name another Kustomization).

Without the step (tried once, 2026-12, with the suspend left out) the old kaas-platform, started
by the new commit's source revision before the flux-system Kustomization gave it `dependsOn`,
pruned the kamaji-system Namespace: kaas-kamaji timed out on it, NotFound.

The platform gate is opened as in the main bed (no kubelet: the kamaji release never gets
Ready here), so kaas-kamaji is Ready once it applied.
"""
import json, os, shutil, time

import yaml

from fleet import Fleet

PLATFORM = os.path.join("overlays", "platform")
KAMAJI = os.path.join(PLATFORM, "kamaji")
NS = "kamaji-system"
NAME_LABEL = "kustomize.toolkit.fluxcd.io/name"


def old_layout(d):
    """The rendered tree as kaas-gitops before kaas-kamaji wrote it: overlays/platform/kamaji's
    files in overlays/platform (listed by its kustomization.yaml), no kaas-kamaji Kustomization,
    and kaas-platform health-checking the release itself, without dependsOn."""
    moved = sorted(f for f in os.listdir(os.path.join(d, KAMAJI)) if f != "kustomization.yaml")
    for f in moved:
        shutil.move(os.path.join(d, KAMAJI, f), os.path.join(d, PLATFORM, f))
    shutil.rmtree(os.path.join(d, KAMAJI))
    index = os.path.join(d, PLATFORM, "kustomization.yaml")
    k = yaml.safe_load(open(index))
    files = sorted([x for x in k["resources"] if x.endswith(".yaml")] + moved)
    k["resources"] = files + [x for x in k["resources"] if not x.endswith(".yaml")]
    yaml.safe_dump(k, open(index, "w"), sort_keys=False)
    os.remove(os.path.join(d, "flux", "kustomization-kaas-kamaji.yaml"))
    index = os.path.join(d, "flux", "kustomization.yaml")
    k = yaml.safe_load(open(index))
    k["resources"].remove("kustomization-kaas-kamaji.yaml")
    yaml.safe_dump(k, open(index, "w"), sort_keys=False)
    p = os.path.join(d, "flux", "kustomization-kaas-platform.yaml")
    ks = yaml.safe_load(open(p))
    ks["spec"].pop("dependsOn")
    ks["spec"]["healthChecks"].insert(0, {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                                          "name": "kamaji", "namespace": NS})
    yaml.safe_dump(ks, open(p, "w"), sort_keys=False)
    return moved


def moved_objects(c):
    """The objects that move: {kind/name: object} (the Namespace, the kamaji HelmRelease, the
    HelmRepositories), as the API server has them now."""
    out = {}
    ns = c.kubectl("get", "namespace", NS, "-o", "json", check=False)
    if ns.returncode == 0:
        out[f"Namespace/{NS}"] = json.loads(ns.stdout)
    for kind in ("helmreleases.helm.toolkit.fluxcd.io", "helmrepositories.source.toolkit.fluxcd.io"):
        for o in c.get("-n", NS, kind).get("items", []):
            out[f"{o['kind']}/{o['metadata']['name']}"] = o
    return out


def inventory(c, name):
    k = c.get("-n", "flux-system", "kustomization", name)
    return {e["id"] for e in (k.get("status", {}).get("inventory") or {}).get("entries", [])}


def move(o):
    c, fails = o.c, []
    f = o.new_fleet("migration", Fleet.example)
    f.render()
    moved = old_layout(f.dir)
    sha = f.commit_push("the layout before kaas-kamaji")
    o.bootstrap(f, open_gate=True)
    f.poke()
    f.wait_source(sha)
    secs, state = f.wait_ready(sha, names={"flux-system", "kaas-platform"}, timeout=180)
    if not all(s[0] for s in state.values()):
        return [f"the layout before kaas-kamaji did not apply: {o.describe(state)}"]
    before = moved_objects(c)
    print(f"  before kaas-kamaji: {sorted(before)} ({', '.join(moved)} in overlays/platform)", flush=True)
    if len(before) != len(moved) or any(x["metadata"]["labels"].get(NAME_LABEL) != "kaas-platform" for x in before.values()):
        return [f"the old layout's objects are not kaas-platform's: "
                f"{ {k: x['metadata'].get('labels', {}).get(NAME_LABEL) for k, x in before.items()} }"]

    # Every poll from here: each moved object there, the same one, not being deleted.
    seen = []

    def watch(_secs, _state):
        now = moved_objects(c)
        for key, x in before.items():
            y = now.get(key)
            if y is None or y["metadata"]["uid"] != x["metadata"]["uid"] or y["metadata"].get("deletionTimestamp"):
                seen.append(f"{key}: {'gone' if y is None else 'deleted or replaced'} at {time.strftime('%H:%M:%S')}")

    # docs/lifecycle.md, "Moving to kaas-kamaji": suspend kaas-platform first, as `flux suspend`
    # does (a merge patch under the flux CLI's field manager, `flux`). Not as kubectl's
    # `kubectl-patch`: kustomize-controller removes the fields of every manager whose name starts
    # with `kubectl` when it applies (v1.9.4 kustomization_controller.go:894-915, fluxcd/pkg ssa
    # v0.76.1 patch.go:79), so the flux-system Kustomization's apply would resume it.
    suspend = lambda on: c.kubectl("patch", "-n", "flux-system", "kustomization", "kaas-platform",  # noqa: E731
                                   "--type=merge", "--field-manager=flux", "-p", json.dumps({"spec": {"suspend": on}}))
    suspend(True)
    r = f.kaas_gitops("render")
    if "deleting `overlays/platform/helmrelease-kamaji.yaml`" not in r.stderr or "flux suspend kustomization kaas-platform" not in r.stderr:
        fails.append(f"render did not warn about the move: {r.stderr.strip()[:600]}")
    sha = f.commit_push("the first render with kaas-kamaji")
    f.poke()
    f.wait_source(sha)
    secs, state = f.wait_ready(sha, names={"flux-system", "kaas-kamaji"}, timeout=180, progress=watch)
    if not all(s[0] for s in state.values()):
        return fails + [f"kaas-kamaji did not take over: {o.describe(state)}"]
    platform = c.get("-n", "flux-system", "kustomization", "kaas-platform")
    if not platform["spec"].get("suspend"):
        fails.append("kaas-platform is no longer suspended after Flux applied its new spec")
    if platform["spec"].get("dependsOn") != [{"name": "kaas-kamaji"}]:
        fails.append(f"suspended kaas-platform did not get its new spec: dependsOn {platform['spec'].get('dependsOn')}")
    relabelled = {k: x["metadata"]["labels"].get(NAME_LABEL) for k, x in moved_objects(c).items()}
    if set(relabelled.values()) != {"kaas-kamaji"}:
        fails.append(f"kaas-kamaji applied, but the moved objects are labelled {relabelled}")

    suspend(False)
    c.kubectl("annotate", "--overwrite", "-n", "flux-system", "kustomization/kaas-platform",
              f"reconcile.fluxcd.io/requestedAt={time.time()}")
    t0 = time.time()
    secs, state = f.wait_ready(sha, names={"flux-system", "kaas-kamaji", "kaas-platform"}, timeout=180, progress=watch)
    if not all(s[0] for s in state.values()):
        fails.append(f"kaas-platform did not apply after it was resumed: {o.describe(state)}")
    o.r.figure("migration: kaas-platform resumed -> Ready at the commit", f"{time.time() - t0:.1f}s")
    watch(0, None)
    fails += [f"a moved object was deleted: {s}" for s in seen]
    after = moved_objects(c)
    labels = {k: x["metadata"]["labels"].get(NAME_LABEL) for k, x in after.items()}
    print(f"  after: {labels}; UIDs kept: {all(after.get(k, {}).get('metadata', {}).get('uid') == x['metadata']['uid'] for k, x in before.items())}", flush=True)
    if set(labels.values()) != {"kaas-kamaji"}:
        fails.append(f"the moved objects are labelled {labels}, want kaas-kamaji")
    plat, kam = inventory(c, "kaas-platform"), inventory(c, "kaas-kamaji")
    ids = {k: (f"_{NS}__Namespace" if k.startswith("Namespace/") else
               f"{NS}_{k.split('/')[1]}_{x['apiVersion'].split('/')[0]}_{x['kind']}") for k, x in after.items()}
    for k, i in sorted(ids.items()):
        if i in plat:
            fails.append(f"{k} is still in kaas-platform's inventory ({i})")
        if i not in kam:
            fails.append(f"{k} is not in kaas-kamaji's inventory ({i}): {sorted(kam)}")
    return fails


def run(e, r):
    from e2e import E2E  # the driver's class: a second bed, same binaries
    o = E2E(e.a, r)
    try:
        try:
            o.start()
        except Exception as ex:  # noqa: BLE001
            r.not_run("migration: moving a running cluster to kaas-kamaji", f"the migration test bed did not start: {ex}")
            return
        r.run("migration: a cluster on the layout before kaas-kamaji moves to it as docs/lifecycle.md says "
              "(kaas-platform suspended, kaas-kamaji Ready, resumed): nothing deleted, the objects kaas-kamaji's", move, o)
        r.run("migration: Flux ran as its ServiceAccounts under flux2's manifests/rbac: no request refused", o.flux_rbac_held)
    finally:
        if r.results and r.results[-1][1] == "FAIL":
            print(o.c.tail_logs(30), flush=True)
        o.c.stop()
        if not os.environ.get("E2E_KEEP"):
            shutil.rmtree(o.work, ignore_errors=True)
