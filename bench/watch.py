#!/usr/bin/env python3
"""Save-to-disk latency of `watch` for a one-tenant change, in fleets of 10 and 1,000 tenants.

Starts the release binary's watcher on a generated repository, rewrites one tenant file, and
polls until that tenant's rendered KamajiControlPlane shows the change. Prints figures only.
The latency includes the watcher's 50 ms debounce, which ends a burst of editor writes.

    cargo build --release && python3 bench/watch.py [SIZES...]
"""
import os, shutil, statistics, subprocess, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.join(HERE, "..", "target", "release", "kaas-gitops")
sys.path.insert(0, HERE)
import gen  # noqa: E402


def start(binary, root):
    """Renders `root` once, then starts `binary watch` on it; returns the watcher once it watches."""
    subprocess.run([binary, "-q", "--repo", root, "render"], check=True)
    proc = subprocess.Popen([binary, "--repo", root, "watch"], stderr=subprocess.PIPE, text=True)
    ready = threading.Event()

    def drain():
        for line in proc.stderr:
            if line.startswith("watching "):
                ready.set()
    threading.Thread(target=drain, daemon=True).start()
    ready.wait(60)
    return proc


def save(root, i):
    """Save number `i`: rewrites tenants/t00001.yaml with its replicas at 2 or 3 and polls until
    its KamajiControlPlane shows them; returns the milliseconds from the write."""
    spec = os.path.join(root, "tenants", "t00001.yaml")
    out = os.path.join(root, "overlays", "tenants", "t00001", "kamajicontrolplane-t00001.yaml")
    original = open(spec).read()
    replicas = 2 + (i % 2)
    want = f"replicas: {replicas}\n"
    text = original.replace("    replicas: 3\n", f"    replicas: {replicas}\n").replace("    replicas: 2\n", f"    replicas: {replicas}\n", 1)
    start = time.perf_counter()
    with open(spec, "w") as f:
        f.write(text)
    deadline = start + 10
    while time.perf_counter() < deadline:
        try:
            if f"  {want}" in open(out).read():
                break
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    return (time.perf_counter() - start) * 1000


def stop(proc):
    proc.send_signal(2)
    proc.wait(10)


def main():
    sizes = [int(s) for s in sys.argv[1:]] or [10, 1000]
    print(f"{'tenants':>8} {'median':>9} {'min':>9} {'max':>9}  (save -> overlay on disk, 10 saves)")
    for n in sizes:
        root = tempfile.mkdtemp(prefix=f"kaas-watch-{n}-")
        gen.main_args(root, n)
        proc = start(BIN, root)
        samples = []
        for i in range(10):
            samples.append(save(root, i))
            time.sleep(0.3)
        stop(proc)
        shutil.rmtree(root)
        print(f"{n:>8} {statistics.median(samples):>7.1f}ms {min(samples):>7.1f}ms {max(samples):>7.1f}ms")


if __name__ == "__main__":
    main()
