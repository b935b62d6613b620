"""The GitOps repository under test: a git work tree rendered by the built kaas-gitops, pushed
over smart HTTP to the loopback git server that source-controller clones from."""
import json, os, shutil, subprocess, sys, time

from cluster import sh

MAIN = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def git(repo, *args, **kw):
    return sh(["git", "-C", repo, *args], **kw)


def serve_git(cluster, root):
    """The loopback git server (tests/it/support/git_http.py, smart HTTP, push allowed) for the
    bare repositories under root, spawned in `cluster` (stopped with it). Returns its port."""
    cluster.spawn("git-http", [sys.executable, os.path.join(MAIN, "tests", "it", "support", "git_http.py"), root, "--forever"])
    return int(cluster.wait_for("git server port", lambda: open(os.path.join(cluster.logs, "git-http.log")).readline().strip(), 10))


class Fleet:
    def __init__(self, cluster, work, kaas, git_root, git_port, chart_port):
        self.c, self.kaas, self.chart_port = cluster, kaas, chart_port
        self.dir = os.path.join(work, "fleet")
        self.bare = os.path.join(git_root, "fleet.git")
        self.url = f"http://127.0.0.1:{git_port}/fleet.git"
        self.render_seconds = []

    # ---- the repository --------------------------------------------------------------------
    def init(self, files):
        """files: a function that fills the empty work tree (kaas.yaml, tenants/, base/...)."""
        sh(["git", "init", "-q", "--bare", "-b", "main", self.bare])
        git(self.bare, "config", "http.receivepack", "true")
        os.makedirs(self.dir)
        git(self.dir, "init", "-q", "-b", "main")
        for k, v in (("user.name", "e2e"), ("user.email", "e2e@localhost"), ("commit.gpgsign", "false")):
            git(self.dir, "config", k, v)
        git(self.dir, "remote", "add", "origin", self.url)
        files(self.dir)
        self.loopback_charts()

    @staticmethod
    def example(d):
        """The example repository's inputs from this work tree (the same tree the kaas-gitops
        under test is built from)."""
        for name in ("kaas.yaml", "kaas.lock"):
            shutil.copy(os.path.join(MAIN, name), d)
        for name in ("tenants", "base"):
            shutil.copytree(os.path.join(MAIN, name), os.path.join(d, name))

    def loopback_charts(self):
        """Points the platform's chart repositories at the loopback chart repository."""
        p = os.path.join(self.dir, "kaas.yaml")
        text = open(p).read()
        text = text.replace("https://clastix.github.io/charts", f"http://127.0.0.1:{self.chart_port}/clastix")
        text = text.replace("https://kubernetes.github.io/autoscaler", f"http://127.0.0.1:{self.chart_port}/autoscaler")
        open(p, "w").write(text)

    def kaas_gitops(self, *args, check=True):
        r = subprocess.run([self.kaas, "--repo", self.dir, "--color", "never", *args], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise RuntimeError(f"kaas-gitops {' '.join(args)} exited {r.returncode}:\n{r.stderr}{r.stdout}")
        return r

    def render(self):
        t0 = time.time()
        self.kaas_gitops("render")
        self.render_seconds.append(time.time() - t0)
        return self.render_seconds[-1]

    def commit(self, message):
        """A commit of everything in the fleet repository, not pushed (the kamaji bed applies what
        it renders itself); its id."""
        git(self.dir, "add", "-A")
        git(self.dir, "commit", "-q", "--allow-empty", "-m", message)
        return git(self.dir, "rev-parse", "HEAD").strip()

    def commit_push(self, message, branch="main"):
        self.commit(message)
        git(self.dir, "push", "-q", "origin", f"HEAD:{branch}")
        return git(self.dir, "rev-parse", "HEAD").strip()

    # ---- what the API server holds ---------------------------------------------------------
    def poke(self):
        """Like `flux reconcile source git flux-system`: ask source-controller to fetch now."""
        self.c.kubectl("annotate", "--overwrite", "-n", "flux-system", "gitrepository/flux-system",
                       f"reconcile.fluxcd.io/requestedAt={time.time()}")

    def wait_source(self, sha, timeout=120):
        want = f"main@sha1:{sha}"

        def ok():
            gr = self.c.get("-n", "flux-system", "gitrepository", "flux-system")
            return (gr.get("status", {}).get("artifact") or {}).get("revision") == want
        self.c.wait_for(f"GitRepository at {want}", ok, timeout=timeout)

    def kustomizations(self):
        return {k["metadata"]["name"]: k for k in self.c.get("-n", "flux-system", "kustomizations")["items"]}

    def expected_kustomizations(self):
        names = {"flux-system"}
        for f in os.listdir(os.path.join(self.dir, "flux")):
            if f.startswith("kustomization-"):
                names.add(f[len("kustomization-"):-len(".yaml")])
        return names

    def wait_ready(self, sha, names=None, timeout=300, progress=None):
        """Waits until every named Kustomization is Ready at main@sha1:<sha>. Returns
        (seconds, {name: (ready, reason, message, lastAppliedRevision)}) either way."""
        want = f"main@sha1:{sha}"
        return self.wait_revisions({n: want for n in (names or self.expected_kustomizations())}, timeout, progress)

    def wait_revisions(self, want, timeout=600, progress=None):
        """Waits until every Kustomization of `want` ({name: revision}) is Ready at its own
        revision (an OCI fleet's tenants each have theirs). (seconds, state) either way, state
        as wait_ready's."""
        t0 = time.time()
        while True:
            self.c.check_alive()
            ks = self.kustomizations()
            state = {}
            for n, rev in want.items():
                k = ks.get(n)
                if k is None:
                    state[n] = (False, "Missing", "not on the API server", None)
                    continue
                st = k.get("status", {})
                ready = next((c for c in st.get("conditions", []) if c["type"] == "Ready"), {})
                state[n] = (ready.get("status") == "True" and st.get("lastAppliedRevision") == rev,
                            ready.get("reason"), ready.get("message"), st.get("lastAppliedRevision"))
            if progress:
                progress(time.time() - t0, state)
            if all(s[0] for s in state.values()) or time.time() - t0 > timeout:
                return time.time() - t0, state
            time.sleep(1)

    def rendered_objects(self, path):
        """The objects a Kustomization at path would apply (kubectl's built-in kustomize)."""
        out = subprocess.run(["kubectl", "kustomize", os.path.join(self.dir, path)],
                             check=True, capture_output=True, text=True).stdout
        # kubectl kustomize prints a YAML stream; kubectl converts it to JSON.
        return json_stream(self.c.kubectl("create", "--dry-run=client", "-o", "json", "-f", "-", input=out))


def json_stream(text):
    """kubectl prints one JSON document per object, or a List."""
    dec, i, objs = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        o, i = dec.raw_decode(text, i)
        objs.extend(o["items"] if o.get("kind") == "List" else [o])
    return objs
