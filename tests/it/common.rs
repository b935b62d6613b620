//! Helpers shared by the integration tests: a temp repository, the binary, the CRD folder.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The project root (the shipped example repository lives here).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A command running the built binary with a clean environment for colour, and CRD release
/// assets from the tests' shared loopback mirror into a cache of this test process (never the
/// user's cache, never the network).
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kaas-gitops"));
    c.env("NO_COLOR", "1").env_remove("KAAS_REPO");
    let shared = shared_mirror();
    // Without a CRD folder (plain `cargo test` on a machine without the upstream CRDs) the
    // mirror address is a closed port: a test that needs CRDs fails naming what it could not
    // get, and none reaches the network.
    let url = shared
        .mirror
        .as_ref()
        .map_or_else(|| "http://127.0.0.1:9".into(), ReleaseMirror::url);
    c.env("KAAS_CRD_MIRROR", url).env("KAAS_CRD_CACHE", shared.cache.path());
    c
}

/// `kaas-gitops --repo REPO ARGS` under `strace -f -e CALLS` (`trace=open,openat`), with `env`
/// added: the run, and strace's log.
pub fn traced(repo: &Repo, calls: &str, env: &[(&str, &str)], args: &[&str]) -> (Run, String) {
    let trace = tempfile::NamedTempFile::new().unwrap();
    // bin() sets the environment the binary needs; strace passes it on.
    let inner = bin();
    let mut cmd = Command::new("strace");
    cmd.args(["-f", "-qq", "-e", calls, "-o"])
        .arg(trace.path())
        .arg(inner.get_program());
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let run: Run = cmd
        .arg("--repo")
        .arg(repo.path())
        .args(args)
        .output()
        .expect("strace runs (`apt-get install strace`; tests/run installs it)")
        .into();
    (run, std::fs::read_to_string(trace.path()).unwrap())
}

/// The mirror and the cache every `bin()` shares.
struct SharedMirror {
    mirror: Option<ReleaseMirror>,
    cache: tempfile::TempDir,
}

fn shared_mirror() -> &'static SharedMirror {
    static SHARED: std::sync::OnceLock<SharedMirror> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        let crds = std::env::var_os("KAAS_CRDS")
            .map(PathBuf::from)
            .unwrap_or_else(|| project_root().join("../shared/crds"));
        SharedMirror {
            mirror: crds.is_dir().then(|| ReleaseMirror::serve_any_kamaji_tag(&crds)),
            cache: tempfile::tempdir().expect("a temp dir"),
        }
    })
}

/// Starts `tests/it/support/<script>` (a `loopback.py` server) with `args`; returns it and the
/// port it printed. Its stdin is kept open by the child handle: the server stops when the handle
/// is dropped or the test process ends.
pub fn loopback_server(script: &str, args: &[std::ffi::OsString]) -> (std::process::Child, u16) {
    loopback_server_with(script, args, &[])
}

/// [`loopback_server`] with environment variables for the script (e.g. `LOOPBACK_TLS`).
pub fn loopback_server_with(
    script: &str,
    args: &[std::ffi::OsString],
    env: &[(&str, &std::ffi::OsStr)],
) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = Command::new("python3")
        .arg(project_root().join("tests/it/support").join(script))
        .args(args)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("piped stdout"))
        .read_line(&mut line)
        .expect("the server prints its port");
    let port = line.trim().parse().expect("a port");
    (child, port)
}

/// GitHub's release downloads on loopback, assembled from a CRD folder and its SOURCES.md
/// (tests/it/support/release_mirror.py); stopped when dropped, or when the test process ends.
pub struct ReleaseMirror {
    child: std::sync::Mutex<std::process::Child>,
    port: u16,
}

impl ReleaseMirror {
    /// Serves `crds`; appends each requested path to `log`, if given.
    pub fn serve(crds: &Path, log: Option<&Path>) -> ReleaseMirror {
        ReleaseMirror::start(crds, log, false)
    }

    /// Serves `crds`, and Kamaji's chart CRDs at any tag: the mirror of tests about images,
    /// whose Kamaji tags (`edge-26.2.5`, ...) have no CRD files here.
    pub fn serve_any_kamaji_tag(crds: &Path) -> ReleaseMirror {
        ReleaseMirror::start(crds, None, true)
    }

    fn start(crds: &Path, log: Option<&Path>, any_raw_tag: bool) -> ReleaseMirror {
        let log = log.map_or("-".into(), |l| l.as_os_str().to_owned());
        let mut args = vec![crds.as_os_str().to_owned(), log];
        if any_raw_tag {
            args.push("any-raw-tag".into());
        }
        let (child, port) = loopback_server("release_mirror.py", &args);
        ReleaseMirror {
            child: std::sync::Mutex::new(child),
            port,
        }
    }

    /// The base URL, in place of `https://github.com`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for ReleaseMirror {
    fn drop(&mut self) {
        if let Ok(child) = self.child.get_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What a command printed and how it exited.
#[derive(Debug)]
pub struct Run {
    /// Exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

/// A repository in a temp dir.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    /// An empty folder.
    pub fn empty() -> Repo {
        Repo {
            dir: tempfile::tempdir().expect("a temp dir"),
        }
    }

    /// A copy of the example repository's inputs (kaas.yaml, tenants/, base/), not its output.
    pub fn example() -> Repo {
        let repo = Repo::empty();
        let root = project_root();
        copy_tree(&root.join("kaas.yaml"), &repo.path().join("kaas.yaml"));
        copy_tree(&root.join("tenants"), &repo.path().join("tenants"));
        copy_tree(&root.join("base"), &repo.path().join("base"));
        repo
    }

    /// A copy of `tests/fixtures/<rel>`'s inputs (`kaas.yaml`, `tenants/`).
    pub fn fixture(rel: &str) -> Repo {
        let repo = Repo::empty();
        let from = project_root().join("tests/fixtures").join(rel);
        copy_tree(&from.join("kaas.yaml"), &repo.path().join("kaas.yaml"));
        copy_tree(&from.join("tenants"), &repo.path().join("tenants"));
        repo
    }

    /// A rendered object as JSON (for exact assertions on fields).
    #[track_caller]
    pub fn object(&self, rel: &str) -> serde_json::Value {
        serde_saphyr::from_str(&self.read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    /// The one file in `dir` whose name starts with `prefix` (templates carry a hash suffix).
    #[track_caller]
    pub fn file_starting(&self, dir: &str, prefix: &str) -> String {
        let mut found: Vec<String> = std::fs::read_dir(self.path().join(dir))
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(prefix))
            .collect();
        assert_eq!(found.len(), 1, "files starting with `{prefix}` in {dir}: {found:?}");
        format!("{dir}/{}", found.remove(0))
    }

    /// The repository's path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file (creating folders).
    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    /// Replaces every `from` in `rel` with `to`; fails the test if `from` is not there, so an
    /// edit that no longer applies cannot pass unnoticed.
    #[track_caller]
    /// Sets `spec.decommissioned: true` in `tenants/<name>.yaml` (the first step of deleting a
    /// tenant with its own etcd), for a file whose last top-level block is `spec`.
    pub fn decommission(&self, name: &str) {
        let rel = format!("tenants/{name}.yaml");
        let text = self.read(&rel);
        assert!(!text.contains("decommissioned"), "{rel} is decommissioned already");
        self.write(&rel, &format!("{}\n  decommissioned: true\n", text.trim_end()));
    }

    pub fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = self.read(rel);
        assert!(text.contains(from), "`{from}` is not in {rel}:\n{text}");
        self.write(rel, &text.replace(from, to));
    }

    /// Reads a file.
    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Runs the binary with `--repo <this>` and `args`.
    #[track_caller]
    pub fn run(&self, args: &[&str]) -> Run {
        bin()
            .arg("--repo")
            .arg(self.path())
            .args(args)
            .output()
            .expect("the binary runs")
            .into()
    }

    /// Runs the binary with `--repo <this>`, `args` and extra environment variables.
    #[track_caller]
    pub fn run_with(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Run {
        let mut c = bin();
        c.arg("--repo").arg(self.path()).args(args);
        for (k, v) in env {
            // An empty value removes the variable (clap would ignore it anyway).
            if v.is_empty() {
                c.env_remove(k);
            } else {
                c.env(k, v);
            }
        }
        c.output().expect("the binary runs").into()
    }

    /// Runs `render`, which must fail: exit 1, the error at `location` with `message`, and no
    /// file changed. Returns stderr for further checks.
    #[track_caller]
    pub fn assert_render_refused(&self, location: &str, message: &str) -> String {
        let before = self.snapshot();
        let run = self.run(&["render"]);
        assert_eq!(run.code, 1, "exit code; stderr:\n{}", run.stderr);
        assert!(
            run.stderr.contains(&format!("--> {location}")),
            "no `{location}` in:\n{}",
            run.stderr
        );
        assert!(run.stderr.contains(message), "no `{message}` in:\n{}", run.stderr);
        assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
        assert_eq!(before, self.snapshot(), "a failed render changed files");
        run.stderr
    }

    /// Edits `rel` with `edit` (which must change it), then asserts `render` refuses it as
    /// [`Repo::assert_render_refused`] does. Returns stderr.
    #[track_caller]
    pub fn assert_edit_refused(
        &self,
        rel: &str,
        edit: impl Fn(&str) -> String,
        location: &str,
        message: &str,
    ) -> String {
        let original = self.read(rel);
        let edited = edit(&original);
        assert_ne!(original, edited, "the edit changed nothing");
        self.write(rel, &edited);
        self.assert_render_refused(location, message)
    }

    /// Every file under the repository (relative path -> bytes), excluding `.git` and the
    /// repository lock file: that file exists only while a run holds the lock, and a watcher
    /// in another process may remove it between listing the folder and reading it.
    pub fn snapshot(&self) -> std::collections::BTreeMap<String, Vec<u8>> {
        let mut out = std::collections::BTreeMap::new();
        walk(self.path(), self.path(), &mut out);
        out
    }
}

fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        if p.file_name().is_some_and(|n| n == ".git" || n == ".kaas-gitops.lock") {
            continue;
        }
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.insert(rel, std::fs::read(&p).unwrap());
        }
    }
}

/// Copies a file or folder.
pub fn copy_tree(from: &Path, to: &Path) {
    if from.is_dir() {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            copy_tree(&e.path(), &to.join(e.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from, to).unwrap();
    }
}

/// The folder of upstream CRDs: `KAAS_CRDS`, else `../shared/crds`. A test that needs it fails
/// when neither is there (it never passes without checking anything): run the tests with
/// `.ci/run`, which sets `KAAS_CRDS`, or set it to a folder of CRDs (`<group>/<plural>.yaml`).
#[track_caller]
pub fn crds_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("KAAS_CRDS") {
        let dir = PathBuf::from(dir);
        assert!(
            dir.is_dir(),
            "KAAS_CRDS={} is not a folder: point it at the upstream CRDs (`.ci/run` sets it)",
            dir.display()
        );
        return dir;
    }
    let dir = project_root().join("../shared/crds");
    assert!(
        dir.is_dir(),
        "this test validates against upstream CRDs and cannot run without them: KAAS_CRDS is not set \
         and {} does not exist; run the tests with `.ci/run` (which sets KAAS_CRDS), or \
         `KAAS_CRDS=/path/to/crds cargo test`",
        dir.display()
    );
    dir
}

/// The newest mtime or ctime of any file or folder under `dir` (`dir` included).
fn newest_stamp(dir: &Path) -> std::time::SystemTime {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let ctime = std::time::UNIX_EPOCH + std::time::Duration::new(meta.ctime() as u64, meta.ctime_nsec() as u32);
    let mut newest = meta.modified().unwrap().max(ctime);
    if meta.is_dir() {
        for e in std::fs::read_dir(dir).unwrap() {
            newest = newest.max(newest_stamp(&e.unwrap().path()));
        }
    }
    newest
}

/// Waits until a file written now gets a timestamp strictly later than every file under `dir`
/// (at most 5 s). File system timestamps come from a coarse clock (a kernel tick, or coarser):
/// a file rewritten within the same tick keeps its mtime, so a test comparing mtimes, or the
/// stat cache deciding that a file is older than a run (see `stat_cache::Stamp`), needs the
/// clock to have moved on. This waits for exactly that instead of sleeping a guessed tick.
pub fn wait_until_timestamps_advance(dir: &Path) {
    let newest = newest_stamp(dir);
    // Next to `dir`, on the same file system, outside the tree the tests compare.
    let probe = tempfile::NamedTempFile::new_in(dir.parent().expect("a parent folder")).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        std::fs::write(probe.path(), b"tick").unwrap();
        if std::fs::metadata(probe.path()).unwrap().modified().unwrap() > newest {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the file system clock did not move past {newest:?} in 5 s"
        );
        // The poll interval, not a guess at the granularity.
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The rendered tree (`overlays/`, `flux/`, `kaas.lock`), each file under a `── path ──`
/// header, for a snapshot.
pub fn rendered(repo: &Repo) -> String {
    let mut out = String::new();
    for (path, bytes) in repo.snapshot() {
        if path.starts_with("overlays/") || path.starts_with("flux/") || path == "kaas.lock" {
            let text = String::from_utf8_lossy(&bytes);
            out.push_str(&format!("── {path} ──\n{}\n", without_input_hash(&text)));
        }
    }
    out
}

/// [`rendered`], cut into the parts a reviewer reads one at a time: `platform`, `class-<name>`
/// per ClusterClass (the class and its templates), `tenant-<name>` per tenant overlay, `flux`
/// and `lock`; each is snapshotted on its own (a snapshot of a whole fleet runs to thousands of
/// lines).
pub fn rendered_parts(repo: &Repo) -> std::collections::BTreeMap<String, String> {
    let files = repo.snapshot();
    let classes: Vec<&str> = files
        .keys()
        .filter_map(|p| p.strip_prefix("overlays/platform/clusterclass-")?.strip_suffix(".yaml"))
        .collect();
    // A template's file is `<kind>-<class>[-<role>]-<hash>.yaml`: the longest class named in it.
    let class_of = |file: &str| {
        classes
            .iter()
            .filter(|c| file.contains(&format!("-{c}-")) || file.ends_with(&format!("-{c}.yaml")))
            .max_by_key(|c| c.len())
            .copied()
    };
    let mut parts = std::collections::BTreeMap::<String, String>::new();
    for (path, bytes) in files.iter() {
        let part = if let Some(rest) = path.strip_prefix("overlays/tenants/") {
            format!("tenant-{}", rest.split('/').next().unwrap_or(rest))
        } else if let Some(class) = path.strip_prefix("overlays/platform/").and_then(class_of) {
            format!("class-{class}")
        } else if path.starts_with("overlays/") {
            "platform".to_string()
        } else if path.starts_with("flux/") {
            "flux".to_string()
        } else if path == "kaas.lock" {
            "lock".to_string()
        } else {
            continue;
        };
        let text = String::from_utf8_lossy(bytes);
        parts
            .entry(part)
            .or_default()
            .push_str(&format!("── {path} ──\n{}\n", without_input_hash(&text)));
    }
    parts
}

/// `text` with the input hash of a tenant overlay's kustomization.yaml replaced by a
/// placeholder: the hash covers the rendering code's fingerprint, so it moves with any edit of
/// that code, which a snapshot of the output must not care about. (That the hash skips
/// unchanged tenants is tested on its own, in render.rs and stat_cache.rs.)
pub fn without_input_hash(text: &str) -> String {
    text.lines()
        .map(|l| match l.strip_prefix("# kaas-gitops-input: sha256:") {
            Some(_) => "# kaas-gitops-input: sha256:[hash]",
            None => l,
        })
        .flat_map(|l| [l, "\n"])
        .collect::<String>()
}

/// Every folder with a `kustomization.yaml` under `overlays/` and `flux/`.
pub fn kustomize_dirs(repo: &Repo) -> Vec<PathBuf> {
    repo.snapshot()
        .keys()
        .filter(|p| p.ends_with("/kustomization.yaml") && (p.starts_with("overlays/") || p.starts_with("flux/")))
        .map(|p| repo.path().join(p.trim_end_matches("/kustomization.yaml")))
        .collect()
}

/// `kubectl kustomize DIR`, which has kustomize v5 built in.
pub fn kustomize(dir: &Path) -> Run {
    Command::new("kubectl")
        .arg("kustomize")
        .arg(dir)
        .output()
        .expect("kubectl is installed (.ci/run installs it)")
        .into()
}

/// A loopback port that was free a moment ago. The server that binds it later may lose it to
/// another test's server; each caller's readiness check sees its own process exit, or its own
/// log line, so that shows as a clear failure instead of a test talking to the wrong server.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Runs `cmd`, which must succeed; returns its stdout.
#[track_caller]
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A valid Proxmox tenant named `bad`, for tests to break in one place.
pub const PROXMOX_TENANT: &str = "apiVersion: kaas-gitops.dev/v1alpha1
kind: Tenant
metadata:
  name: bad
spec:
  kubernetes:
    version: v1.33.4
  infrastructure:
    provider: proxmox
    proxmox:
      sourceNode: pve
      templateID: 100
      dnsServers: [10.0.0.53]
      ipv4: {addresses: [10.0.5.10-10.0.5.60], gateway: 10.0.5.1, prefix: 24}
  workers:
    - name: md-0
      replicas: 1
";

/// What every git in the tests runs with: `home` as `HOME` (no user config but the test's), no
/// system config, a fixed author and committer.
pub fn git_env<'a>(cmd: &'a mut Command, home: &Path) -> &'a mut Command {
    cmd.env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Pat Person")
        .env("GIT_AUTHOR_EMAIL", "pat@example.org")
        .env("GIT_COMMITTER_NAME", "Pat Person")
        .env("GIT_COMMITTER_EMAIL", "pat@example.org")
}

/// `git` in `dir`, set up as [`git_env`] says.
pub fn git_cmd(home: &Path, dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir);
    git_env(&mut c, home);
    c
}

/// The binary with `home` as `HOME` and no system git config, as a person's commits run it.
pub fn bin_in_home(home: &Path) -> Command {
    let mut c = bin();
    c.env("HOME", home).env("GIT_CONFIG_NOSYSTEM", "1");
    c
}

/// `git ARGS` in `dir` (see [`git_env`]); its stdout. Panics with git's stderr when it fails.
#[track_caller]
pub fn git(home: &Path, dir: &Path, args: &[&str]) -> String {
    let out = git_cmd(home, dir).args(args).output().expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A kubeconfig for the management cluster double at `port`.
pub fn management_kubeconfig(dir: &std::path::Path, port: u16) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster: {{server: \"http://127.0.0.1:{port}\"}}\nusers:\n- name: me\n  user: {{}}\ncontexts:\n- name: lab\n  context: {{cluster: lab, user: me}}\n"
        ),
    )
    .unwrap();
    path
}

/// The example repository rendered and committed after `prepare`, in a fresh git repository:
/// what Flux deployed, for the rules judged against the last commit.
pub fn committed_example(home: &Path, prepare: impl Fn(&Repo)) -> Repo {
    let repo = Repo::example();
    prepare(&repo);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    git(home, repo.path(), &["init", "-q", "-b", "main"]);
    git(home, repo.path(), &["add", "-A"]);
    git(home, repo.path(), &["commit", "-q", "-m", "deployed"]);
    repo
}
