#!/usr/bin/env python3
"""Scale benchmark: prints figures, asserts nothing.

For fleets of 100, 1,000 and 10,000 generated tenants it measures, with the release binary:
full render (cold: no overlays on disk), no-op render, `render --check` (compares every file),
a one-tenant change, peak RSS of the full render, and `kubectl kustomize` of a sample of the same
overlays, extrapolated to the fleet, as a ratio.

    cargo build --release && python3 bench/scale.py [SIZES...]
"""
import os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
sys.path.insert(0, HERE)
import gen  # noqa: E402


def timed(args, cwd):
    """Runs the binary under /usr/bin/time; returns (seconds, peak RSS in MiB)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", BIN, "-q"] + args, cwd=cwd,
                         capture_output=True, text=True)
    if out.returncode not in (0, 1):
        sys.exit(f"{args} failed: {out.stderr}")
    secs, kb = out.stderr.strip().splitlines()[-1].split()
    return float(secs), int(kb) / 1024


def best(n, args, cwd, prepare=None):
    runs = []
    for _ in range(n):
        if prepare:
            prepare()
        runs.append(timed(args, cwd))
    return min(r[0] for r in runs), max(r[1] for r in runs)


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [100, 1000, 10000]
    print(f"machine: {os.cpu_count()} cores, {os.uname().release}")
    print(f"{'tenants':>8} {'files':>7} {'full':>8} {'no-op':>8} {'check':>8} {'1 change':>9} "
          f"{'RSS MiB':>8} {'kustomize est.':>15} {'ratio':>7}")
    for n in sizes:
        root = tempfile.mkdtemp(prefix=f"kaas-bench-{n}-")
        gen.main_args(root, n)

        def clean():
            for d in ("overlays", "flux", "kaas.lock"):
                p = os.path.join(root, d)
                shutil.rmtree(p, ignore_errors=True) if os.path.isdir(p) else (os.path.exists(p) and os.remove(p))
        full, rss = best(3 if n <= 1000 else 1, ["render"], root, clean)
        files = sum(len(f) for _, _, f in os.walk(os.path.join(root, "overlays"))) + len(os.listdir(os.path.join(root, "flux")))
        noop, _ = best(5, ["render"], root)
        check, _ = best(3, ["render", "--check"], root)
        victim = os.path.join(root, "tenants", "t00001.yaml")
        counter = [0]

        def touch():
            counter[0] += 1
            text = open(victim).read().split("\n# bench")[0]
            text = text.replace("replicas: ", "replicas: ", 1)
            open(victim, "w").write(text + f"\n# bench {counter[0]}\n")
        one, _ = best(5, ["render"], root, touch)
        sample = sorted(random.Random(1).sample(range(n), min(20, n)))
        start = time.perf_counter()
        for i in sample:
            subprocess.run(["kubectl", "kustomize", os.path.join(root, "overlays", "tenants", f"t{i:05d}")],
                           check=True, capture_output=True)
        kust = (time.perf_counter() - start) / len(sample) * n
        print(f"{n:>8} {files:>7} {full:>7.3f}s {noop:>7.3f}s {check:>7.3f}s {one:>8.3f}s "
              f"{rss:>8.1f} {kust:>14.1f}s {kust / full:>6.0f}x")
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
