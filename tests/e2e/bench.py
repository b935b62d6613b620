#!/usr/bin/env python3
"""Benchmark (not a timed test): for fleets of N generated tenants (bench/gen.py), the time of
`kaas-gitops render` against the time from `git push` until every Flux Kustomization is Ready at
the pushed revision, on the loopback test bed. A fresh test bed per N.

Usage: tests/e2e/bench [--shards K] [N ...]   (default: 10 100)
--shards K renders the fleet with `flux.shards: K` and runs K more kustomize-controllers, one per
shard, beside the main one (Flux's sharding setup). While it waits it prints how many
Kustomizations are Ready every minute; at the end, the CPU seconds each test-bed process used.
The platform Kustomization's wait is turned off by the e2e's root Kustomization, as in the
e2e's "gate open" scenario: with it on, nothing behind the platform gate is ever applied here.
"""
import os, shutil, signal, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
import e2e as _  # noqa: E402,F401 - for sys.path
from report import Report  # noqa: E402
from e2e import E2E  # noqa: E402
from scenarios import generated  # noqa: E402

MAIN = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def with_shards(d, n, shards):
    generated(d, n)
    if shards >= 2:
        path = os.path.join(d, "kaas.yaml")
        text = open(path).read()
        old = "    interval: 10m\n  kamaji:\n"
        if text.count(old) != 1:
            raise RuntimeError("bench/gen.py's kaas.yaml changed: no `flux.interval` line to add shards after")
        open(path, "w").write(text.replace(old, f"    interval: 10m\n    shards: {shards}\n  kamaji:\n"))


def progress_printer():
    last = [0.0]

    def show(secs, state):
        if secs - last[0] >= 60:
            last[0] = secs
            ready = sum(1 for s in state.values() if s[0])
            print(f"bench:   {secs / 60:.0f} min: {ready} of {len(state)} Ready", flush=True)
    return show


def one(args, n):
    e = E2E(args, Report())
    try:
        e.start(args.shards)

        f = e.new_fleet(f"bench{n}", lambda d: with_shards(d, n, args.shards))
        f.render()  # with the pins new_fleet added
        render = f.first_render
        t0 = time.time()
        sha = f.commit_push(f"{n} tenants")
        push = time.time() - t0
        e.bootstrap(f, open_gate=True)
        f.poke()
        cpu0 = e.c.cpu_seconds()
        secs, state = f.wait_ready(sha, timeout=int(os.environ.get("BENCH_TIMEOUT", "1200")),
                                   progress=progress_printer())
        cpu = {k: v - cpu0.get(k, 0) for k, v in e.c.cpu_seconds().items()}
        print("bench:   CPU seconds while waiting: " + ", ".join(
            f"{k} {v:.0f}" for k, v in sorted(cpu.items(), key=lambda kv: -kv[1]) if v >= 0.5), flush=True)
        bad = [k for k, s in state.items() if not s[0]]
        return render, push, secs + push, len(state), bad
    finally:
        e.c.stop()
        shutil.rmtree(e.work, ignore_errors=True)


def main():
    import argparse
    ap = argparse.ArgumentParser()
    for a in ("--bin", "--kaas", "--helm", "--gomodcache"):
        ap.add_argument(a, required=True)
    ap.add_argument("--shards", type=int, default=0)
    ap.add_argument("--delivery", default="", help="git, oci or git,oci: the delivery comparison (lib/bench_delivery.py)")
    ap.add_argument("--steady", type=int, default=0, help="with --delivery: seconds of steady state to measure CPU over")
    ap.add_argument("sizes", nargs="*", type=int, default=[10, 100])
    args = ap.parse_args()
    # A signal ends the run through one()'s finally, so every process is stopped.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    if args.delivery:
        import bench_delivery
        return bench_delivery.main(args)
    rows = []
    for n in args.sizes:
        render, push, ready, ks, bad = one(args, n)
        rows.append((n, render, push, ready, ks, bad))
        print(f"bench: {n} tenants: render {render:.2f}s, git push {push:.2f}s, push -> {ks} Kustomizations Ready {ready:.1f}s"
              + (f" ({len(bad)} NOT Ready: {bad[:5]})" if bad else ""), flush=True)
    print(f"\nflux.shards: {args.shards or 'none'}")
    print("\n| tenants | render | push -> every Kustomization Ready | Kustomizations |")
    print("|---:|---:|---:|---:|")
    for n, render, push, ready, ks, bad in rows:
        print(f"| {n} | {render:.2f} s | {ready:.1f} s{' (not all Ready)' if bad else ''} | {ks} |")


if __name__ == "__main__":
    main()
