#!/usr/bin/env python3
"""Benchmark (not a timed test): for fleets of N generated tenants (bench/gen.py), the time of
`kaas-gitops render` against the time from `git push` until every Flux Kustomization is Ready at
the pushed revision, on the loopback test bed. A fresh test bed per N.

Usage: tests/e2e/bench [N ...]   (default: 10 100)
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


def one(args, n):
    e = E2E(args, Report())
    try:
        e.start()

        f = e.new_fleet(f"bench{n}", lambda d: generated(d, n))
        f.render()  # with the pins new_fleet added
        render = f.first_render
        t0 = time.time()
        sha = f.commit_push(f"{n} tenants")
        push = time.time() - t0
        e.bootstrap(f, open_gate=True)
        f.poke()
        secs, state = f.wait_ready(sha, timeout=int(os.environ.get("BENCH_TIMEOUT", "1200")))
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
    ap.add_argument("sizes", nargs="*", type=int, default=[10, 100])
    args = ap.parse_args()
    # A signal ends the run through one()'s finally, so every process is stopped.
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: sys.exit(128 + s))
    rows = []
    for n in args.sizes:
        render, push, ready, ks, bad = one(args, n)
        rows.append((n, render, push, ready, ks, bad))
        print(f"bench: {n} tenants: render {render:.2f}s, git push {push:.2f}s, push -> {ks} Kustomizations Ready {ready:.1f}s"
              + (f" ({len(bad)} NOT Ready: {bad[:5]})" if bad else ""), flush=True)
    print("\n| tenants | render | push -> every Kustomization Ready | Kustomizations |")
    print("|---:|---:|---:|---:|")
    for n, render, push, ready, ks, bad in rows:
        print(f"| {n} | {render:.2f} s | {ready:.1f} s{' (not all Ready)' if bad else ''} | {ks} |")


if __name__ == "__main__":
    main()
