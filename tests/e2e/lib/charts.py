"""A Helm chart repository on loopback: the upstream charts (cluster.CHARTS) packaged with
`helm package`, indexed with `helm repo index`, served by python's http.server on 127.0.0.1.

Two repositories, as upstream has them: /clastix (kamaji, kamaji-etcd) and /autoscaler
(cluster-autoscaler). kamaji lists kamaji-etcd as a dependency (condition kamaji-etcd.deploy);
Helm checks dependencies before installing even when the condition is false (shared/charts/FACTS.md),
so the packaged kamaji-etcd goes into a copy of kamaji's charts/ first.
"""
import os, shutil, subprocess, sys

from cluster import CHARTS, free_port


def build_repos(work, helm):
    root = os.path.join(work, "charts")
    clastix, autoscaler = os.path.join(root, "clastix"), os.path.join(root, "autoscaler")
    for d in (clastix, autoscaler):
        os.makedirs(d, exist_ok=True)
    run = lambda *a: subprocess.run([helm, *a], check=True, capture_output=True, text=True)  # noqa: E731
    run("package", os.path.join(CHARTS, "kamaji-etcd"), "-d", clastix)
    kamaji = os.path.join(work, "kamaji-chart")
    shutil.copytree(os.path.join(CHARTS, "kamaji"), kamaji)
    os.makedirs(os.path.join(kamaji, "charts"), exist_ok=True)
    run("package", os.path.join(CHARTS, "kamaji-etcd"), "-d", os.path.join(kamaji, "charts"))
    run("package", kamaji, "-d", clastix)
    run("package", os.path.join(CHARTS, "cluster-autoscaler"), "-d", autoscaler)
    return root


def serve(cluster, root):
    port = free_port()
    cluster.spawn("chart-repo", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                                 "--directory", root, str(port)])
    return port


def index(helm, root, port):
    for name in ("clastix", "autoscaler"):
        subprocess.run([helm, "repo", "index", os.path.join(root, name), "--url",
                        f"http://127.0.0.1:{port}/{name}"], check=True, capture_output=True, text=True)
