#!/usr/bin/env python3
"""Render time of a fleet on one management cluster against the same fleet spread over four
(kaas.yaml `spec.managementClusters`, every tenant placed by a `selector` on two regions, so each
placement is a choice by free capacity): prints figures, asserts nothing.

For each of the two fleets `bench/gen.py` makes (the second with the clusters and placements
added), RUNS times over (default 3), each on a freshly generated repository, the two fleets
taking turns: the first full render (after a `sync`), a no-op render and `render --check`.
Prints each run and the median. Wall clock, including process start; release binary.
`--tmpfs`: the repositories in /dev/shm, away from the disk.

    cargo build --release
    python3 bench/management_clusters.py [--tmpfs] [N] [RUNS]
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
sys.path.insert(0, HERE)
import gen  # noqa: E402

CLUSTERS = """  managementClusters:
  - {name: eu-1, labels: {region: eu}, capacity: {tenants: 300}}
  - {name: eu-2, labels: {region: eu}, capacity: {tenants: 400}}
  - {name: us-1, labels: {region: us}, pools: ["10.201.0.1-10.201.3.250"], capacity: {tenants: 600}}
  - {name: us-2, labels: {region: us}, pools: ["10.202.0.1-10.202.3.250"], capacity: {controlPlaneReplicas: 800}}
"""


def spread(root):
    path = os.path.join(root, "kaas.yaml")
    text = open(path).read().rstrip() + "\n" + CLUSTERS
    open(path, "w").write(text)
    tenants = os.path.join(root, "tenants")
    for i, name in enumerate(sorted(os.listdir(tenants))):
        p = os.path.join(tenants, name)
        region = "eu" if i % 2 == 0 else "us"
        t = open(p).read().replace("\nspec:\n", f"\nspec:\n  placement: {{selector: {{region: {region}}}}}\n", 1)
        open(p, "w").write(t)


def timed(args, cwd):
    start = time.perf_counter()
    out = subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True)
    secs = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"{args} exited {out.returncode}: {out.stderr[-2000:]}")
    return secs


def main():
    tmpfs = "--tmpfs" in sys.argv[1:]
    rest = [a for a in sys.argv[1:] if a != "--tmpfs"]
    n = int(rest[0]) if rest else 1000
    runs = int(rest[1]) if len(rest) > 1 else 3
    work = tempfile.mkdtemp(prefix="kaas-bench-mc-", dir="/dev/shm" if tmpfs else None)
    fleets = (("one management cluster", False), ("four management clusters", True))
    times = {label: {"render": [], "no-op render": [], "render --check": []} for label, _ in fleets}
    summary = {}
    try:
        where = "tmpfs" if tmpfs else "disk"
        print(f"{n} tenants, {runs} runs each (fleets interleaved), {os.cpu_count()} cores, on {where}")
        for _ in range(runs):
            for label, four in fleets:
                root = os.path.join(work, "four" if four else "one")
                gen.main_args(root, n)
                if four:
                    spread(root)
                subprocess.run(["sync"], check=True)
                t = times[label]
                t["render"].append(timed(["-q", "render"], root))
                t["no-op render"].append(timed(["-q", "render"], root))
                t["render --check"].append(timed(["-q", "render", "--check"], root))
                # Each entry point and how many tenants it reaches.
                dirs = sorted((os.path.relpath(d, root), sum(x.startswith("kustomization-kaas-tenant-") for x in f))
                              for d, _, f in os.walk(os.path.join(root, "flux")) if "kustomization.yaml" in f)
                summary[label] = f"{len(dirs)} entry point(s): " + ", ".join(f"{d} ({n} tenants)" for d, n in dirs)
        for label, _ in fleets:
            print(f"{label}: {summary[label]}")
            print(f"  {'':<16} median   [runs]")
            for step, t in times[label].items():
                runs_text = ", ".join(f"{x:.2f}" for x in t)
                print(f"  {step:<16} {statistics.median(t):6.2f} s  [{runs_text}]")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
