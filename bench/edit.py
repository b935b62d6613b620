#!/usr/bin/env python3
"""Two binaries side by side on the same generated fleets: prints figures, asserts nothing.

For each fleet size (default 1,000 and 10,000 tenants, `bench/gen.py`, a git repository) each
binary gets its own copy of the same fleet (their rendered files differ, so one tree would make
every run of one binary re-render what the other wrote). After one render and a warm-up of each
kind, the two binaries' runs are interleaved, so a load that comes and goes on the machine falls
on both alike:

- no-op: `render` with nothing changed (served by the stat cache after the first one);
- check: `render --check` (the same, with its own stat cache);
- edit: one tenant's control-plane replicas flipped (2 <-> 3) in `tenants/t00001.yaml`, then
  `render`: what `watch` does on a save;
- full: `render --full` (renders and compares every tenant), with its peak RSS;
- no-git no-op: `render` of an unchanged copy of the fleet outside any git repository (no stat
  cache: every tenant file is read and every output compared).

Each figure is the median of `--runs` runs (7 by default, 3 at 10,000 and more tenants for the
full and no-git runs), wall clock including process start, timed around `wait4` (no wrapper);
min and max follow in brackets. `uptime` is printed before and after. Then `watch`'s save ->
disk latency at `--watch` tenants (1,000 by default): both binaries' watchers run at once on
their own copies, and saves alternate between them (see bench/watch.py for what is measured).

    # the other binary, e.g. the release before: a throwaway tree of that commit, built once
    git archive 4083442 | (mkdir -p /tmp/old && tar -x -C /tmp/old)
    (cd /tmp/old && cargo build --release --bin kaas-gitops)
    cargo build --release --bin kaas-gitops
    python3 bench/edit.py --old /tmp/old/target/release/kaas-gitops [--runs 7] [--watch 1000] [SIZES...]
"""
import argparse, os, shutil, statistics, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
NEW = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
sys.path.insert(0, HERE)
import gen  # noqa: E402
import watch  # noqa: E402

KINDS = ["no-op", "check", "edit", "full", "no-git no-op"]


def run(binary, args, cwd):
    """One run: (seconds by the wall clock, peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen([binary, "-q"] + args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode != 0:
        sys.exit(f"{binary} {args} in {cwd} failed ({proc.returncode}): {err}")
    return secs, usage.ru_maxrss / 1024


def flip(root):
    """Flips the control plane's replicas of tenants/t00001.yaml between 2 and 3."""
    path = os.path.join(root, "tenants", "t00001.yaml")
    text = open(path).read()
    if "    replicas: 3\n" in text.split("  workers:")[0]:
        text = text.replace("    replicas: 3\n", "    replicas: 2\n", 1)
    else:
        text = text.replace("    replicas: 2\n", "    replicas: 3\n", 1)
    with open(path, "w") as f:
        f.write(text)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def fmt(samples, unit="ms"):
    ms = [s * 1000 for s in samples]
    return f"{statistics.median(ms):.0f} {unit} [{min(ms):.0f}-{max(ms):.0f}]"


def bench_size(n, binaries, runs):
    big_runs = runs if n < 10000 else min(runs, 3)
    trees = {}
    for label, binary in binaries.items():
        root = tempfile.mkdtemp(prefix=f"kaas-edit-{label}-{n}-")
        gen.main_args(root, n)
        # The same fleet outside git: a copy without the .git folder, in a folder of its own.
        plain = tempfile.mkdtemp(prefix=f"kaas-edit-{label}-{n}-plain-")
        shutil.copytree(os.path.join(root, "tenants"), os.path.join(plain, "tenants"))
        shutil.copy(os.path.join(root, "kaas.yaml"), plain)
        trees[label] = (root, plain)
        run(binary, ["render"], root)
        run(binary, ["render"], plain)
    files = sum(len(f) for _, _, f in os.walk(os.path.join(trees["new"][0], "overlays")))
    files += len(os.listdir(os.path.join(trees["new"][0], "flux")))
    steps = {
        "no-op": (["render"], "git", None),
        "check": (["render", "--check"], "git", None),
        "edit": (["render"], "git", flip),
        "full": (["render", "--full"], "git", None),
        "no-git no-op": (["render"], "plain", None),
    }
    times = {(label, k): [] for label in binaries for k in KINDS}
    rss = {label: 0.0 for label in binaries}
    for kind in KINDS:
        args, where, before = steps[kind]
        count = big_runs if kind in ("full", "no-git no-op") else runs
        # One warm-up each, then the runs, the two binaries taking turns.
        for i in range(count + 1):
            for label, binary in binaries.items():
                root, plain = trees[label]
                cwd = root if where == "git" else plain
                if before:
                    before(cwd)
                secs, peak = run(binary, args, cwd)
                if i > 0:
                    times[(label, kind)].append(secs)
                    if kind == "full":
                        rss[label] = max(rss[label], peak)
    for root, plain in trees.values():
        shutil.rmtree(root)
        shutil.rmtree(plain)
    return files, times, rss


def bench_watch(n, binaries, saves):
    """Both binaries watch their own copy of the fleet; saves alternate. Milliseconds."""
    procs, roots = {}, {}
    for label, binary in binaries.items():
        root = tempfile.mkdtemp(prefix=f"kaas-edit-watch-{label}-{n}-")
        gen.main_args(root, n)
        roots[label] = root
        procs[label] = watch.start(binary, root)
    samples = {label: [] for label in binaries}
    for i in range(saves + 1):
        for label in binaries:
            ms = watch.save(roots[label], i)
            if i > 0:
                samples[label].append(ms)
            time.sleep(0.3)
    for label in binaries:
        watch.stop(procs[label])
        shutil.rmtree(roots[label])
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True, help="the binary to compare against")
    parser.add_argument("--new", default=NEW, help="default: target/release/kaas-gitops")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--watch", type=int, default=1000, help="fleet size of the watch run; 0 skips it")
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    args = parser.parse_args()
    binaries = {"old": os.path.abspath(args.old), "new": os.path.abspath(args.new)}
    print(f"machine: {os.cpu_count()} cores, {os.uname().release}")
    for label, binary in binaries.items():
        version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
        print(f"{label}: {binary} ({version})")
    print(f"load before: {uptime()}", flush=True)
    for n in args.sizes:
        files, times, rss = bench_size(n, binaries, args.runs)
        print(f"\n{n} tenants, {files} rendered files (new), median [min-max] of the runs:")
        print(f"  {'run':<14} {'old':>22} {'new':>22} {'new / old':>10}")
        for kind in KINDS:
            old, new = times[("old", kind)], times[("new", kind)]
            ratio = statistics.median(new) / statistics.median(old)
            print(f"  {kind:<14} {fmt(old):>22} {fmt(new):>22} {ratio:>9.2f}x")
        edit_over_noop = statistics.median(times[("new", "edit")]) / statistics.median(times[("new", "no-op")])
        print(f"  peak RSS of --full: old {rss['old']:.0f} MiB, new {rss['new']:.0f} MiB")
        print(f"  new: edit / no-op = {edit_over_noop:.1f}x")
        print(f"  load: {uptime()}", flush=True)
    if args.watch:
        samples = bench_watch(args.watch, binaries, 10)
        print(f"\nwatch, {args.watch} tenants, save -> overlay on disk (10 saves each, 50 ms debounce included):")
        for label in binaries:
            s = samples[label]
            print(f"  {label}: median {statistics.median(s):.0f} ms [{min(s):.0f}-{max(s):.0f}]")
        print(f"  load: {uptime()}")


if __name__ == "__main__":
    main()
