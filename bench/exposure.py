#!/usr/bin/env python3
"""Render and validate time of a fleet behind one Gateway against the same fleet on an address
pool (a VIP each): prints figures, asserts nothing.

For each of the two fleets `bench/gen.py` makes (`--gateway`: `spec.apiServerExposure` with
`default: gateway` and a `className`, no tenant naming a VIP), RUNS times over (default 3), each on
a freshly generated repository, the two fleets taking turns: the first full render (after a
`sync`), then `validate --crds DIR` (with the kustomize build of every folder) and
`validate --crds DIR --no-kustomize`. Prints each run and the median. Wall clock, including
process start; release binary. `--tmpfs`: the repositories in /dev/shm, away from the disk.

    cargo build --release
    crds=$(tests/upstream/crds.sh)
    python3 bench/exposure.py --crds "$crds" [--tmpfs] [N] [RUNS]; rm -rf "$crds"
"""
import os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
sys.path.insert(0, HERE)
import gen  # noqa: E402


def timed(args, cwd):
    start = time.perf_counter()
    out = subprocess.run([BIN] + args, cwd=cwd, capture_output=True, text=True)
    secs = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"{args} exited {out.returncode}: {out.stderr[-2000:]}")
    return secs, out.stderr


def main():
    args = sys.argv[1:]
    if "--crds" not in args:
        sys.exit(__doc__)
    at = args.index("--crds")
    crds = args[at + 1]
    rest = [a for a in args[:at] + args[at + 2:] if a != "--tmpfs"]
    tmpfs = "--tmpfs" in args
    n = int(rest[0]) if rest else 1000
    runs = int(rest[1]) if len(rest) > 1 else 3
    work = tempfile.mkdtemp(prefix="kaas-bench-exposure-", dir="/dev/shm" if tmpfs else None)
    fleets = (("address pool", False), ("one Gateway", True))
    times = {label: {"render": [], "validate": [], "validate --no-kustomize": []} for label, _ in fleets}
    summary = {}
    try:
        where = "tmpfs" if tmpfs else "disk"
        print(f"{n} tenants, {runs} runs each (fleets interleaved), {os.cpu_count()} cores, on {where}")
        for _ in range(runs):
            for label, gateway in fleets:
                root = os.path.join(work, "gateway" if gateway else "pool")
                gen.main_args(root, n, gateway=gateway)
                # The writes of the run before (and of gen) are not this render's.
                subprocess.run(["sync"], check=True)
                t = times[label]
                t["render"].append(timed(["-q", "render"], root)[0])
                secs, err = timed(["validate", "--crds", crds], root)
                t["validate"].append(secs)
                t["validate --no-kustomize"].append(
                    timed(["validate", "--crds", crds, "--no-kustomize"], root)[0])
                files = sum(len(f) for _, _, f in os.walk(os.path.join(root, "overlays")))
                summary[label] = f"{files} files in overlays/; validate: {err.strip().splitlines()[-1]}"
        for label, _ in fleets:
            print(f"{label}: {summary[label]}")
            print(f"  {'':<26} median   [runs]")
            for step, t in times[label].items():
                runs_text = ", ".join(f"{x:.2f}" for x in t)
                print(f"  {step:<26} {statistics.median(t):6.2f} s  [{runs_text}]")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
