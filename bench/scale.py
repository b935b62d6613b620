#!/usr/bin/env python3
"""Scale benchmark: prints figures, asserts nothing.

For fleets of 100, 1,000 and 10,000 generated tenants it measures, with the release binary:
full render (cold: no overlays on disk), no-op render, `render --check` (with its stat cache, as
on a developer's machine, and without any cache, as on a fresh clone in CI), the floor of such a
check (`examples/stat_floor.rs`: only the stats, on all cores, in-process), a one-tenant change,
peak RSS of the full render, and `kubectl kustomize` of a sample of the same overlays,
extrapolated to the fleet, as a ratio.

    cargo build --release --bins --examples && python3 bench/scale.py [SIZES...]
"""
import os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
STAT_FLOOR = os.path.join(HERE, "..", "target", "release", "examples", "stat_floor")
sys.path.insert(0, HERE)
import gen  # noqa: E402


NO_CACHE = dict(os.environ, KAAS_GITOPS_NO_CACHE="1")


def timed(args, cwd, env=None):
    """Runs the binary under /usr/bin/time; returns (seconds by the wall clock, peak RSS in MiB).
    The wrapper's own exec is in the time (~1 ms here): fine for a full render, not for the
    runs of a few milliseconds, which `quick` times."""
    start = time.perf_counter()
    out = subprocess.run(["/usr/bin/time", "-f", "%M", BIN, "-q"] + args, cwd=cwd,
                         capture_output=True, text=True, env=env)
    secs = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{args} failed: {out.stderr}")
    kb = out.stderr.strip().splitlines()[-1]
    return secs, int(kb) / 1024


def quick(args, cwd, env=None):
    """Runs the binary directly; returns (seconds by the wall clock, None): process start and
    the run, as a user or CI sees them."""
    start = time.perf_counter()
    out = subprocess.run([BIN, "-q"] + args, cwd=cwd, capture_output=True, env=env)
    secs = time.perf_counter() - start
    if out.returncode not in (0, 1):
        sys.exit(f"{args} failed: {out.stderr}")
    return secs, None


def best(n, args, cwd, prepare=None, env=None):
    """The best time of `n` direct runs, each after `prepare`."""
    runs = []
    for _ in range(n):
        if prepare:
            prepare()
        runs.append(quick(args, cwd, env)[0])
    return min(runs)


def settle(seconds):
    """Lets the file system finish earlier work. This machine's root file system is ext4 without
    a journal, mounted with `discard`: such an ext4 avoids reusing inodes freed in the last 30 s
    and checks each candidate in the buffer cache, and after a large tree is deleted creating
    files is up to 10x slower, which would be measured as render time (BENCHMARKS.md)."""
    os.sync()
    time.sleep(seconds)


def clean(root, caches=False):
    """Deletes a render's output (and the local caches too, with `caches`)."""
    parts = ["overlays", "flux", "kaas.lock"] + ([os.path.join(".git", "kaas-gitops")] if caches else [])
    for d in parts:
        p = os.path.join(root, d)
        if os.path.isdir(p):
            shutil.rmtree(p)
        elif os.path.exists(p):
            os.remove(p)


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [100, 1000, 10000]
    print(f"machine: {os.cpu_count()} cores, {os.uname().release}")
    print(f"{'tenants':>8} {'files':>7} {'full':>8} {'tmpfs':>8} {'full*':>8} {'no-op':>8} {'no-op**':>8} {'check':>8} {'check**':>8} {'floor':>8} "
          f"{'1 change':>9} {'RSS MiB':>8} {'kustomize est.':>15} {'ratio':>7} {'tmpfs':>7}")
    for n in sizes:
        runs = 3 if n <= 1000 else 1
        roots = [tempfile.mkdtemp(prefix=f"kaas-bench-{n}-") for _ in range(runs)]
        # Cold: freshly generated repositories, never rendered, on a settled file system.
        for root in roots:
            gen.main_args(root, n)
        settle(10)
        fulls = []
        for root in roots:
            fulls.append(timed(["render"], root))
            settle(3)
        full, rss = min(f[0] for f in fulls), max(f[1] for f in fulls)
        # The same on tmpfs: the tool's own cost, without the disk's.
        mem = None
        if os.path.isdir("/dev/shm"):
            shm = tempfile.mkdtemp(prefix=f"kaas-bench-{n}-", dir="/dev/shm")
            gen.main_args(shm, n)
            mems = []
            for _ in range(runs):
                clean(shm, caches=True)
                mems.append(quick(["render"], shm)[0])
            mem = min(mems)
            shutil.rmtree(shm)
        root = roots[0]
        for other in roots[1:]:
            shutil.rmtree(other)
        files = sum(len(f) for _, _, f in os.walk(os.path.join(root, "overlays"))) + len(os.listdir(os.path.join(root, "flux")))

        # Full render right after `rm -rf overlays flux`: the same work plus ext4's deferred
        # deletion cost, shown for honesty; the first no-op after it records the stat cache.
        clean(root)
        after_rm, _ = quick(["render"], root)

        def no_cache():
            shutil.rmtree(os.path.join(root, ".git", "kaas-gitops"), ignore_errors=True)
        full_noop = best(5, ["render"], root, no_cache)
        timed(["render"], root)
        noop = best(10, ["render"], root)
        # A fresh clone has no caches: every tenant file is parsed and every byte compared.
        check_cold = best(3, ["render", "--check"], root, env=NO_CACHE)
        timed(["render", "--check"], root)
        check = best(10, ["render", "--check"], root)
        floor = None
        if os.path.exists(STAT_FLOOR):
            # "N paths: one thread A ms (B us a stat), T threads C ms"
            out = subprocess.run([STAT_FLOOR, root], capture_output=True, text=True, check=True).stdout
            floor = float(out.split(" threads ")[1].split(" ms")[0]) / 1000
        victim = os.path.join(root, "tenants", "t00001.yaml")
        counter = [0]

        def touch():
            counter[0] += 1
            text = open(victim).read().split("\n# bench")[0]
            open(victim, "w").write(text + f"\n# bench {counter[0]}\n")
        one = best(5, ["render"], root, touch)
        sample = sorted(random.Random(1).sample(range(n), min(20, n)))
        start = time.perf_counter()
        for i in sample:
            subprocess.run(["kubectl", "kustomize", os.path.join(root, "overlays", "tenants", f"t{i:05d}")],
                           check=True, capture_output=True)
        kust = (time.perf_counter() - start) / len(sample) * n
        mem_s = f"{mem:>7.3f}s" if mem is not None else f"{'-':>8}"
        floor_s = f"{floor:>7.3f}s" if floor is not None else f"{'-':>8}"
        print(f"{n:>8} {files:>7} {full:>7.3f}s {mem_s} {after_rm:>7.3f}s {noop:>7.3f}s {full_noop:>7.3f}s {check:>7.3f}s {check_cold:>7.3f}s {floor_s} "
              f"{one:>8.3f}s {rss:>8.1f} {kust:>14.1f}s {kust / full:>6.0f}x {kust / (mem or full):>6.0f}x   (full runs: "
              + ", ".join(f"{f[0]:.2f}s" for f in fulls) + ")", flush=True)
        shutil.rmtree(root)
        settle(10)
    print("full: best cold full render on the disk (ext4, discard); tmpfs: the same in /dev/shm")
    print("full*: full render right after deleting the previous output (ext4's deferred deletion work)")
    print("no-op**: no-op without the stat cache (the full pipeline; what the first no-op after a write costs)")
    print("check: render --check served by its stat cache; check**: without any cache, as on a fresh clone")
    print("floor: stat of every input and output path on all cores, in-process (examples/stat_floor.rs)")


if __name__ == "__main__":
    main()
