"""`tests/e2e/bench --delivery git|oci [N ...]`: the delivery comparison (docs/delivery.md,
BENCHMARKS.md "Delivery"). Per size N, on a fresh bed (kustomize-controller's TMPDIR on
/dev/shm, lib/cluster.py): figures printed, never asserted.

1. cold: git push (+ publish for oci) -> every Kustomization Ready at its revision; then
   stand-in `<tenant>-kubeconfig` Secrets (Kamaji's; none runs here) let each tenant's
   `<tenant>-access` Kustomization apply, so that no step below counts their retries
2. one-tenant change: commit -> that tenant applied; how many other Kustomizations reconciled
   (kustomize-controller's gotk_reconcile_duration_seconds_count) until then and 30 s after.
   After the push (and publish) the bench runs what CI runs, `kaas-gitops wait --reconcile`,
   which asks Flux to fetch only the sources behind the commit (oci.interval is 5m)
3. kaas.yaml change (clusterAutoscaler.tagsByMinor 1.31: every tenant of minor 1.31 with an
   autoscaled pool re-renders): which tenants re-applied
4. steady state: kustomize- and source-controller CPU seconds over --steady seconds with no
   change (scale to a tenant interval: git 10m, oci 1h)
5. publish (oci): seconds, bytes, registry requests (the registry's access log), cold and one-tenant
BENCH_TIMEOUT (default 1200 s) bounds each wait; a wait that times out prints how many were Ready.
BENCH_STEADY_ONLY=1 skips steps 2 and 3 (and the publish figures of step 5 for a change).
"""
import base64, json, os, re, shutil, time

import oci
from report import Report
from scenarios import generated

ONE_TENANT = "t00001"  # 1 % 3 != 0: no autoscaled pool, so step 3 does not touch it


def progress_printer():
    last = [0.0]

    def show(secs, state):
        if secs - last[0] >= 60:
            last[0] = secs
            print(f"bench:   {secs / 60:.0f} min: {sum(1 for s in state.values() if s[0])} of {len(state)} Ready", flush=True)
    return show


def cpu(c, names=("kustomize-controller", "source-controller")):
    s = c.cpu_seconds()
    return {n: s.get(n, 0.0) for n in names}


def delta(a, b):
    return {k: b[k] - a.get(k, 0.0) for k in b}


def standin_kubeconfig(c):
    """The bed's own API server as a tenant cluster: its admin kubeconfig with the certificates
    inline (kustomize-controller reads a kubeConfig Secret's `value`)."""
    b64 = lambda path: base64.b64encode(open(path, "rb").read()).decode()  # noqa: E731
    cfg = json.load(open(c.kubeconfig))
    cl, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
    cl["certificate-authority-data"] = b64(cl.pop("certificate-authority"))
    user["client-certificate-data"] = b64(user.pop("client-certificate"))
    user["client-key-data"] = b64(user.pop("client-key"))
    return json.dumps(cfg)


def access_kustomizations(c):
    """{(namespace, name): Ready} of every `<tenant>-access` Kustomization (in its tenant's namespace)."""
    return {(k["metadata"]["namespace"], k["metadata"]["name"]):
            any(x["type"] == "Ready" and x["status"] == "True" for x in k.get("status", {}).get("conditions", []))
            for k in c.get("kustomizations", "-A")["items"] if k["metadata"]["name"].endswith("-access")}


def settle_access(c, timeout):
    """Each tenant's `<t>-access` Kustomization applies its in-tenant bindings through
    `<t>-kubeconfig`, which Kamaji writes; this bed runs no Kamaji, so without it they fail and
    are retried every 2 minutes for ever, which is not a steady state any real cluster has. A
    stand-in Secret per tenant points them at the bed's own API server (each tenant's bindings
    have names of their own), and the measurements go on once all of them applied."""
    access = sorted(access_kustomizations(c))
    if not access:
        return
    kubeconfig = standin_kubeconfig(c)
    items = [{"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": f"{name[:-len('-access')]}-kubeconfig", "namespace": ns},
              "stringData": {"value": kubeconfig}} for ns, name in access]
    c.kubectl("apply", "--server-side", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    print(f"bench:   stand-in: {len(items)} `<tenant>-kubeconfig` Secrets (Kamaji's), the bed's API server as every tenant's", flush=True)
    t0 = time.time()
    while time.time() - t0 < timeout:
        ready = [k for k, ok in access_kustomizations(c).items() if ok]
        if len(ready) == len(access):
            break
        time.sleep(5)
    print(f"bench:   {len(ready)} of {len(access)} `-access` Kustomizations applied after {time.time() - t0:.0f}s", flush=True)


def one(args, n, delivery):
    from e2e import E2E
    e = E2E(args, Report())
    out = {"n": n, "delivery": delivery}
    timeout = int(os.environ.get("BENCH_TIMEOUT", "1200"))
    try:
        e.start()
        host = oci.start_registry(e.c) if delivery == "oci" else None

        def fill(d):
            generated(d, n)
            if host:
                oci.use_oci(d, host)
        f = e.new_fleet(f"bench{n}{delivery}", fill)
        f.render()
        t0 = time.time()
        sha = f.commit_push(f"{n} tenants")
        doc = None
        if host:
            r0 = oci.registry_requests(e.c)
            out["publish_cold_s"], doc = oci.publish(f)
            out["publish_cold_bytes"] = doc["bytes"]
            out["publish_cold_requests"] = sum(oci.registry_requests(e.c).values()) - sum(r0.values())
            want = oci.expected_revisions(f, sha, doc)
        else:
            want = {k: f"main@sha1:{sha}" for k in f.expected_kustomizations()}
        e.bootstrap(f, open_gate=True)
        f.poke()
        c0 = cpu(e.c)
        secs, state = f.wait_revisions(want, timeout=timeout, progress=progress_printer())
        out["cold_s"] = time.time() - t0
        out["cold_ready"] = sum(1 for s in state.values() if s[0])
        out["kustomizations"] = len(state)
        out["cold_cpu"] = delta(c0, cpu(e.c))
        print(f"bench: {delivery} {n}: cold {out['cold_s']:.1f}s, {out['cold_ready']}/{len(state)} Ready, CPU {out['cold_cpu']}", flush=True)
        if out["cold_ready"] < len(state):
            return out  # the rest measures changes to a settled fleet
        settle_access(e.c, timeout)
        if os.environ.get("BENCH_STEADY_ONLY"):
            return steady_state(args, e, out, n, delivery)

        # 2. one tenant changes
        p = os.path.join(f.dir, "tenants", f"{ONE_TENANT}.yaml")
        text = open(p).read()
        open(p, "w").write(re.sub(r"memoryMiB: (\d+)", lambda m: f"memoryMiB: {int(m.group(1)) * 2}", text, count=1))
        before = oci.reconcile_counts(e.c)
        f.render()
        t0 = time.time()
        sha = f.commit_push(f"{ONE_TENANT}: more memory")
        if host:
            r0 = oci.registry_requests(e.c)
            out["publish_one_s"], doc = oci.publish(f)
            out["publish_one_bytes"] = doc["bytes"]
            out["publish_one_requests"] = sum(oci.registry_requests(e.c).values()) - sum(r0.values())
            want1 = oci.expected_revisions(f, sha, doc)[f"kaas-tenant-{ONE_TENANT}"]
        else:
            want1 = f"main@sha1:{sha}"
        f.poke()
        out["one_asked"] = oci.ask_reconcile(f)  # what CI runs after publish
        print(f"bench: {delivery} {n}: {out['one_asked']}", flush=True)
        secs, st = f.wait_revisions({f"kaas-tenant-{ONE_TENANT}": want1}, timeout=timeout)
        out["one_applied_s"] = time.time() - t0
        at_apply = oci.reconciled_since(before, oci.reconcile_counts(e.c))
        time.sleep(30)
        after = oci.reconciled_since(before, oci.reconcile_counts(e.c))
        tenants = lambda g: sorted(k for k in g if k.startswith("kaas-tenant-") and k != f"kaas-tenant-{ONE_TENANT}")  # noqa: E731
        out["one_others_at_apply"] = len(tenants(at_apply))
        out["one_others_30s"] = len(tenants(after))
        print(f"bench: {delivery} {n}: one-tenant change applied in {out['one_applied_s']:.1f}s; other tenants reconciled: "
              f"{out['one_others_at_apply']} by then, {out['one_others_30s']} 30 s later", flush=True)

        # 3. a kaas.yaml change that re-renders some tenants
        k = os.path.join(f.dir, "kaas.yaml")
        text = open(k).read()
        if '"1.31": v1.31.5' in text:
            open(k, "w").write(text.replace('"1.31": v1.31.5', '"1.31": v1.31.6', 1))
            before = oci.reconcile_counts(e.c)
            f.render()
            sha = f.commit_push("autoscaler for 1.31: v1.31.6")
            changed = None  # git: every tenant Kustomization reads the commit
            if host:
                _, doc = oci.publish(f)
                changed = sorted(t["tenant"] for t in doc["tenants"] if t["change"] == "pushed")
                want3 = oci.expected_revisions(f, sha, doc)
                want3 = {f"kaas-tenant-{t}": want3[f"kaas-tenant-{t}"] for t in changed}
            else:
                want3 = {kk: f"main@sha1:{sha}" for kk in f.expected_kustomizations()}
            f.poke()
            print(f"bench: {delivery} {n}: {oci.ask_reconcile(f)}", flush=True)
            f.wait_revisions(want3, timeout=timeout)
            time.sleep(30)
            grown = oci.reconciled_since(before, oci.reconcile_counts(e.c))
            out["platform_edit_rerendered"] = len(changed) if changed is not None else None
            out["platform_edit_reapplied"] = len([x for x in grown if x.startswith("kaas-tenant-")])
            print(f"bench: {delivery} {n}: kaas.yaml change: {out['platform_edit_rerendered']} tenant artifacts moved, "
                  f"{out['platform_edit_reapplied']} tenant Kustomizations reconciled", flush=True)

        return steady_state(args, e, out, n, delivery)
    finally:
        e.c.stop()
        shutil.rmtree(e.work, ignore_errors=True)


def steady_state(args, e, out, n, delivery):
    """4. kustomize- and source-controller CPU over --steady seconds with no change."""
    steady = args.steady
    if steady:
        c0 = cpu(e.c)
        b0 = oci.reconcile_counts(e.c)
        time.sleep(steady)
        out["steady_s"] = steady
        out["steady_cpu"] = delta(c0, cpu(e.c))
        out["steady_reconciles"] = sum(oci.reconciled_since(b0, oci.reconcile_counts(e.c)).values())
        print(f"bench: {delivery} {n}: steady {steady}s: CPU {out['steady_cpu']}, {out['steady_reconciles']} reconciles", flush=True)
    return out


def main(args):
    rows = []
    for n in args.sizes:
        for d in args.delivery.split(","):
            rows.append(one(args, n, d))
    print("\n| tenants | delivery | cold push -> all Ready | one-tenant change applied | other tenants reconciled | "
          "kaas.yaml edit: moved / re-applied | steady CPU-s (kc+sc) per window | publish cold | publish one |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for o in rows:
        f = lambda k, fmt="{:.1f}": fmt.format(o[k]) if o.get(k) is not None else "-"  # noqa: E731
        cold = f"{o['cold_s']:.1f} s" + ("" if o.get("cold_ready") == o.get("kustomizations") else f" ({o.get('cold_ready')}/{o.get('kustomizations')} Ready)")
        steady = (f"{sum(o['steady_cpu'].values()):.0f} / {o['steady_s']} s" if o.get("steady_cpu") else "-")
        pub = lambda p: (f"{o[p + '_s']:.1f} s, {o[p + '_bytes']} B, {o[p + '_requests']} req" if o.get(p + "_s") is not None else "-")  # noqa: E731
        print(f"| {o['n']} | {o['delivery']} | {cold} | {f('one_applied_s')} s | {o.get('one_others_at_apply', '-')} / {o.get('one_others_30s', '-')} | "
              f"{o.get('platform_edit_rerendered', '-')} / {o.get('platform_edit_reapplied', '-')} | {steady} | {pub('publish_cold')} | {pub('publish_one')} |")
