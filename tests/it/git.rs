//! `render --commit` and `pr` on real repositories in temp dirs, with a bare remote on disk.
//! Setup uses the `git` CLI, as a user would; every assertion reads what `git` shows.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::common::{Repo, Run, bin, bin_in_home, git as git_in, git_cmd};

/// The commit time the tests inject (2023-11-14T22:13:20Z).
const TIME: &str = "1700000000";

/// A kaas repository under git, with its own `$HOME` so the machine's git config cannot leak in.
struct GitRepo {
    repo: Repo,
    home: tempfile::TempDir,
    remote: Option<tempfile::TempDir>,
}

impl GitRepo {
    /// The example's inputs plus `notes.md`, committed on `main`.
    fn new() -> GitRepo {
        let g = GitRepo {
            repo: Repo::example(),
            home: tempfile::tempdir().expect("a temp dir"),
            remote: None,
        };
        g.repo.write("notes.md", "people's notes\n");
        g.git(&["init", "-q", "-b", "main"]);
        g.git(&["add", "-A"]);
        g.git(&["commit", "-q", "-m", "inputs"]);
        g
    }

    /// As `new`, rendered and committed, with a bare remote `origin` that has `main`.
    fn rendered_with_remote() -> GitRepo {
        let mut g = GitRepo::new();
        let r = g.kaas(&["render", "--commit"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let remote = tempfile::tempdir().expect("a temp dir");
        git_in(g.home.path(), remote.path(), &["init", "-q", "--bare"]);
        g.git(&["remote", "add", "origin", &remote.path().to_string_lossy()]);
        g.git(&["push", "-q", "-u", "origin", "main"]);
        g.remote = Some(remote);
        g
    }

    fn path(&self) -> &Path {
        self.repo.path()
    }

    fn remote(&self) -> &Path {
        self.remote.as_ref().expect("a remote").path()
    }

    /// `git ARGS` in the repository; panics when it fails.
    #[track_caller]
    fn git(&self, args: &[&str]) -> String {
        git_in(self.home.path(), self.path(), args)
    }

    /// `git ARGS`, however it ends.
    fn try_git(&self, args: &[&str]) -> Run {
        git_cmd(self.home.path(), self.path())
            .args(args)
            .output()
            .expect("git runs")
            .into()
    }

    /// The binary on this repository, at the injected time.
    fn kaas(&self, args: &[&str]) -> Run {
        bin_in_home(self.home.path())
            .env("KAAS_COMMIT_TIME", TIME)
            .arg("--repo")
            .arg(self.path())
            .args(args)
            .output()
            .expect("the binary runs")
            .into()
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git status --porcelain`.
    fn status(&self) -> String {
        self.git(&["status", "--porcelain"])
    }

    /// The files a commit touches, as `git show --name-only` lists them.
    fn files_of(&self, rev: &str) -> BTreeSet<String> {
        lines(&self.git(&["show", "--name-only", "--format=", rev]))
    }

    /// Edits one line of a file in the working tree.
    fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = self.repo.read(rel);
        assert!(text.contains(from), "`{from}` is not in {rel}");
        self.repo.write(rel, &text.replacen(from, to, 1));
    }
}

fn lines(text: &str) -> BTreeSet<String> {
    text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

/// Every file the tool owns in the working tree: what a first render writes.
fn rendered_files(g: &GitRepo) -> BTreeSet<String> {
    g.repo
        .snapshot()
        .into_keys()
        .filter(|p| p.starts_with("overlays/") || p.starts_with("flux/") || p == "kaas.lock")
        .collect()
}

/// What `pr` may put on a tenant's branch: its file, its overlay, its Flux entry (and the list
/// of entries when the tenant is new).
fn tenant_paths_only(paths: &BTreeSet<String>, tenant: &str) -> bool {
    paths.iter().all(|p| {
        *p == format!("tenants/{tenant}.yaml")
            || p.starts_with(&format!("overlays/tenants/{tenant}/"))
            || *p == format!("flux/kustomization-kaas-tenant-{tenant}.yaml")
            || p == "flux/kustomization.yaml"
    })
}

#[test]
fn render_commit_commits_only_rendered_paths_and_leaves_other_work_alone() {
    let g = GitRepo::new();
    // The user's own work in progress: an unstaged edit, an untracked file, a staged file.
    g.repo.write("notes.md", "people's notes\nand an edit\n");
    g.repo.write("scratch.txt", "untracked\n");
    g.repo.write("README.md", "staged\n");
    g.git(&["add", "README.md"]);
    let before = g.head();

    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("committed "), "{}", r.stderr);

    assert_eq!(g.git(&["rev-parse", "HEAD~1"]), before);
    assert_eq!(g.files_of("HEAD"), rendered_files(&g));
    assert_eq!(
        g.git(&["log", "-1", "--format=%an <%ae> %at"]),
        format!("kaas-gitops <kaas-gitops@localhost> {TIME}\n")
    );
    let message = g.git(&["log", "-1", "--format=%B"]);
    for line in [
        "- tenant acme: created",
        "- tenant globex: created",
        "- tenant initech: created",
        "- platform layer: created",
        "- kaas.lock: changed",
    ] {
        assert!(message.contains(line), "{message}");
    }
    // The user's work is where it was: still unstaged, untracked, staged.
    assert_eq!(g.status(), "A  README.md\n M notes.md\n?? scratch.txt\n");
    assert_eq!(g.repo.read("notes.md"), "people's notes\nand an edit\n");
    assert_eq!(g.repo.read("scratch.txt"), "untracked\n");
    assert_eq!(g.git(&["show", ":README.md"]), "staged\n");

    let again = g.kaas(&["render", "--commit"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("nothing changed; no commit"), "{}", again.stderr);
    assert_eq!(g.git(&["rev-list", "--count", "HEAD"]), "2\n");
}

#[test]
fn render_commit_names_the_tenants_that_changed_and_what_happened() {
    let g = GitRepo::new();
    assert_eq!(g.kaas(&["render", "--commit"]).code, 0);

    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        g.git(&["log", "-1", "--format=%s"]),
        "kaas-gitops render: acme changed\n"
    );
    let files = g.files_of("HEAD");
    assert!(!files.is_empty());
    assert!(
        files.iter().all(|p| p.starts_with("overlays/tenants/acme/")),
        "{files:?}"
    );
    // The spec belongs to people: `render --commit` leaves it for them to commit.
    assert_eq!(g.status(), " M tenants/acme.yaml\n");

    g.git(&["rm", "-q", "tenants/initech.yaml"]);
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let subject = g.git(&["log", "-1", "--format=%s"]);
    assert!(subject.contains("initech deleted"), "{subject}");
    let deleted = g.git(&["show", "--name-status", "--format=", "HEAD"]);
    assert!(
        deleted.contains("D\toverlays/tenants/initech/kustomization.yaml"),
        "{deleted}"
    );
    assert!(
        deleted.contains("D\tflux/kustomization-kaas-tenant-initech.yaml"),
        "{deleted}"
    );
    assert!(!g.path().join("overlays/tenants/initech").exists());
    // The user's staged removal of the spec is still theirs to commit.
    assert_eq!(g.status(), " M tenants/acme.yaml\nD  tenants/initech.yaml\n");
}

#[test]
fn render_commit_of_an_invalid_tenant_writes_and_commits_nothing() {
    let g = GitRepo::new();
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: many");
    let before = g.repo.snapshot();
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(g.git(&["rev-list", "--count", "HEAD"]), "1\n");
    assert_eq!(g.repo.snapshot(), before);
}

#[test]
fn render_commit_takes_the_author_from_git_config_without_git_author() {
    let g = GitRepo::new();
    g.replace(
        "kaas.yaml",
        "    author: {name: kaas-gitops, email: kaas-gitops@localhost}\n",
        "",
    );
    let before = g.repo.snapshot();
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no commit author"), "{}", r.stderr);
    assert!(r.stderr.contains("hint: set `spec.git.author`"), "{}", r.stderr);
    assert_eq!(
        g.repo.snapshot(),
        before,
        "nothing is written when the commit cannot be made"
    );

    g.git(&["config", "user.name", "Jane Doe"]);
    g.git(&["config", "user.email", "jane@example.org"]);
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        g.git(&["log", "-1", "--format=%an <%ae>"]),
        "Jane Doe <jane@example.org>\n"
    );
}

#[test]
fn git_errors_exit_2_with_a_hint_and_leave_the_repository_as_it_was() {
    let g = GitRepo::new();
    let before = g.repo.snapshot();

    g.git(&["checkout", "-q", "--detach"]);
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("error: HEAD is detached"), "{}", r.stderr);
    assert!(r.stderr.contains("hint: check out a branch"), "{}", r.stderr);
    assert_eq!(g.repo.snapshot(), before);
    g.git(&["checkout", "-q", "main"]);

    let lock = g.path().join(".git/index.lock");
    std::fs::write(&lock, "").unwrap();
    let r = g.kaas(&["render", "--commit"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("the git index is locked"), "{}", r.stderr);
    assert!(
        r.stderr.contains("hint: wait for the other git process"),
        "{}",
        r.stderr
    );
    assert_eq!(g.repo.snapshot(), before);
    std::fs::remove_file(&lock).unwrap();

    let r = g.kaas(&["pr", "acme", "--push", "nosuch"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no remote named `nosuch`"), "{}", r.stderr);
    assert!(g.try_git(&["rev-parse", "--verify", "-q", "kaas/acme"]).code != 0);

    let plain = Repo::example();
    let r = bin()
        .env("HOME", g.home.path())
        .env("KAAS_COMMIT_TIME", TIME)
        .arg("--repo")
        .arg(plain.path())
        .args(["render", "--commit"])
        .output()
        .expect("the binary runs");
    let r: Run = r.into();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is not in a git repository"), "{}", r.stderr);
    assert_eq!(g.git(&["rev-list", "--count", "HEAD"]), "1\n");
}

#[test]
fn pr_pushes_a_branch_with_only_that_tenants_files_and_leaves_the_checkout_alone() {
    let g = GitRepo::rendered_with_remote();
    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    g.repo.write("scratch.txt", "untracked\n");
    let (files, head, status) = (g.repo.snapshot(), g.head(), g.status());

    let r = g.kaas(&["pr", "acme", "--push", "origin"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Update tenant acme\n\n"), "{}", r.stdout);
    assert!(
        r.stdout.contains("| changed | `KamajiControlPlane/acme` |"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("<summary>changed <code>Tenant/acme</code></summary>"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("+    replicas: 3"), "{}", r.stdout);

    // The branch is on the remote, and its diff against the base is that tenant's alone.
    let local = g.git(&["rev-parse", "kaas/acme"]);
    assert_eq!(git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]), local);
    assert_eq!(g.git(&["rev-parse", "origin/kaas/acme"]), local);
    let diff = lines(&g.git(&["diff", "--name-only", "main", "kaas/acme"]));
    assert!(diff.contains("tenants/acme.yaml"), "{diff:?}");
    assert!(
        diff.contains("overlays/tenants/acme/kamajicontrolplane-acme.yaml"),
        "{diff:?}"
    );
    assert!(tenant_paths_only(&diff, "acme"), "{diff:?}");
    assert_eq!(
        g.git(&["log", "-1", "--format=%an %at", "kaas/acme"]),
        format!("kaas-gitops {TIME}\n")
    );

    // Nothing the user has was touched.
    assert_eq!(g.repo.snapshot(), files);
    assert_eq!(g.head(), head);
    assert_eq!(g.git(&["symbolic-ref", "HEAD"]), "refs/heads/main\n");
    assert_eq!(g.status(), status);
}

#[test]
fn pr_rerun_after_another_edit_updates_the_same_branch() {
    let g = GitRepo::rendered_with_remote();
    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    assert_eq!(g.kaas(&["pr", "acme", "--push", "origin"]).code, 0);
    let first = g.git(&["rev-parse", "kaas/acme"]);

    g.replace("tenants/acme.yaml", "cpus: 2", "cpus: 4");
    let r = g.kaas(&["pr", "acme", "--push", "origin"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("branch `kaas/acme` updated"), "{}", r.stderr);
    assert_eq!(
        g.git(&["rev-parse", "kaas/acme~1"]),
        first,
        "a new commit on the same branch"
    );
    let tip = g.git(&["rev-parse", "kaas/acme"]);
    assert_eq!(git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]), tip);
    assert_eq!(
        g.git(&["show", "kaas/acme:tenants/acme.yaml"]),
        g.repo.read("tenants/acme.yaml")
    );
    let diff = lines(&g.git(&["diff", "--name-only", "main", "kaas/acme"]));
    assert!(tenant_paths_only(&diff, "acme"), "{diff:?}");

    // Nothing new to propose: no new commit.
    let r = g.kaas(&["pr", "acme", "--push", "origin"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("already up to date"), "{}", r.stderr);
    assert_eq!(g.git(&["rev-parse", "kaas/acme"]), tip);
}

#[test]
fn pr_for_a_new_tenant_adds_its_spec_overlay_and_flux_entry() {
    let g = GitRepo::rendered_with_remote();
    let spec = g
        .repo
        .read("tenants/acme.yaml")
        .replace("acme", "umbrella")
        .replace("10.0.4.10", "10.0.4.11");
    g.repo.write("tenants/umbrella.yaml", &spec);

    let r = g.kaas(&["pr", "umbrella", "--base", "main"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("Create tenant umbrella\n"), "{}", r.stdout);
    assert!(r.stdout.contains("| created | `Cluster/umbrella` |"), "{}", r.stdout);
    let mut diff = lines(&g.git(&["diff", "--name-only", "main", "kaas/umbrella"]));
    // A new tenant's datastore names are recorded in kaas.lock with it (issue 41).
    assert!(diff.remove("kaas.lock"), "{diff:?}");
    assert!(
        g.git(&["show", "kaas/umbrella:kaas.lock"])
            .contains("- tenant: umbrella\n  schema: kaas_umbrella\n  username: kaas_umbrella\n")
    );
    assert!(tenant_paths_only(&diff, "umbrella"), "{diff:?}");
    for p in [
        "tenants/umbrella.yaml",
        "overlays/tenants/umbrella/kustomization.yaml",
        "flux/kustomization-kaas-tenant-umbrella.yaml",
        "flux/kustomization.yaml",
    ] {
        assert!(diff.contains(p), "{p} missing from {diff:?}");
    }
    // Not pushed without --push; the file stays untracked in the working tree.
    assert!(
        git_in(g.home.path(), g.remote(), &["branch", "--list"])
            .lines()
            .all(|b| !b.contains("umbrella"))
    );
    assert_eq!(g.status(), "?? tenants/umbrella.yaml\n");
}

#[test]
fn pr_refuses_a_non_fast_forward_push_unless_forced_with_a_held_lease() {
    let g = GitRepo::rendered_with_remote();
    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    assert_eq!(g.kaas(&["pr", "acme", "--push", "origin"]).code, 0);

    // A colleague pushes a commit on the same branch.
    let other = tempfile::tempdir().unwrap();
    let clone = other.path().join("clone");
    git_in(
        g.home.path(),
        other.path(),
        &["clone", "-q", "-b", "kaas/acme", &g.remote().to_string_lossy(), "clone"],
    );
    std::fs::write(clone.join("REVIEW.md"), "looks good\n").unwrap();
    git_in(g.home.path(), &clone, &["add", "REVIEW.md"]);
    git_in(g.home.path(), &clone, &["commit", "-q", "-m", "review"]);
    git_in(g.home.path(), &clone, &["push", "-q"]);
    let theirs = git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]);

    g.replace("tenants/acme.yaml", "cpus: 2", "cpus: 4");
    let local = g.git(&["rev-parse", "kaas/acme"]);
    let r = g.kaas(&["pr", "acme", "--push", "origin"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("(non-fast-forward)"), "{}", r.stderr);
    assert!(r.stderr.contains("--force-with-lease"), "{}", r.stderr);
    assert_eq!(
        g.git(&["rev-parse", "kaas/acme"]),
        local,
        "the local branch is put back"
    );
    assert_eq!(git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]), theirs);

    // The lease is what this repository last saw: not the colleague's commit, until a fetch.
    let r = g.kaas(&["pr", "acme", "--push", "origin", "--force-with-lease"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("but the last known value is"), "{}", r.stderr);
    assert_eq!(git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]), theirs);

    g.git(&["fetch", "-q", "origin"]);
    let r = g.kaas(&["pr", "acme", "--push", "origin", "--force-with-lease"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("force-pushed"), "{}", r.stderr);
    let tip = g.git(&["rev-parse", "kaas/acme"]);
    assert_eq!(git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]), tip);
    assert_eq!(
        g.git(&["show", "kaas/acme:tenants/acme.yaml"]),
        g.repo.read("tenants/acme.yaml")
    );
}

#[test]
fn pr_of_an_invalid_tenant_makes_no_branch() {
    let g = GitRepo::rendered_with_remote();
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: many");
    let r = g.kaas(&["pr", "acme", "--push", "origin"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(g.try_git(&["rev-parse", "--verify", "-q", "kaas/acme"]).code != 0);
    assert!(
        git_in(g.home.path(), g.remote(), &["branch", "--list"])
            .lines()
            .all(|b| !b.contains("kaas/"))
    );
}

#[test]
fn pr_never_moves_a_branch_that_is_checked_out() {
    let g = GitRepo::rendered_with_remote();
    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    assert_eq!(g.kaas(&["pr", "acme"]).code, 0);
    let wt = tempfile::tempdir().unwrap();
    let wt_path: PathBuf = wt.path().join("acme");
    g.git(&["worktree", "add", "-q", &wt_path.to_string_lossy(), "kaas/acme"]);
    let tip = g.git(&["rev-parse", "kaas/acme"]);

    g.replace("tenants/acme.yaml", "cpus: 2", "cpus: 4");
    let r = g.kaas(&["pr", "acme"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("branch `kaas/acme` is checked out"), "{}", r.stderr);
    assert_eq!(g.git(&["rev-parse", "kaas/acme"]), tip);
}

/// `pr --push` found no credential the remote takes (exit 2), and said what to do.
#[track_caller]
pub(crate) fn assert_auth_refused(r: &Run, url: &str) {
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("could not authenticate to `{url}`")),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint: for SSH, add a key to ssh-agent"),
        "{}",
        r.stderr
    );
}

/// `git http-backend` behind basic auth on 127.0.0.1 (tests/it/support/git_http.py); stopped
/// when dropped.
struct HttpRemote {
    child: std::process::Child,
    port: u16,
}

impl HttpRemote {
    fn serve(root: &Path) -> HttpRemote {
        let (child, port) = crate::common::loopback_server(
            "git_http.py",
            &[root.as_os_str().to_owned(), "--auth".into(), "pat:secret".into()],
        );
        HttpRemote { child, port }
    }

    /// The same over HTTPS, with the certificate and key in `tls` (PEM files).
    fn serve_tls(root: &Path, cert: &Path, key: &Path) -> HttpRemote {
        let tls = format!("{}:{}", cert.display(), key.display());
        let (child, port) = crate::common::loopback_server_with(
            "git_http.py",
            &[root.as_os_str().to_owned(), "--auth".into(), "pat:secret".into()],
            &[("LOOPBACK_TLS", std::ffi::OsStr::new(&tls))],
        );
        HttpRemote { child, port }
    }
}

/// A self-signed certificate for 127.0.0.1 (openssl), as (certificate, key) in `dir`.
fn loopback_certificate(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let out = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ])
        .args([
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (cert, key)
}

impl Drop for HttpRemote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// HTTPS is pushed by the `git` program (libgit2 is built without TLS: its OpenSSL start-up
/// parsed the CA bundle on every render), so git's own TLS settings and credential helper apply;
/// without `git` on PATH the push is refused with what to do, and nothing is left behind.
#[test]
fn pr_pushes_over_https_through_git_with_its_ca_setting_and_credential_helper() {
    let g = GitRepo::rendered_with_remote();
    let root = g.remote().parent().expect("the bare remote has a parent").to_path_buf();
    let name = g.remote().file_name().unwrap().to_string_lossy().into_owned();
    let (cert, key) = loopback_certificate(g.home.path());
    let server = HttpRemote::serve_tls(&root, &cert, &key);
    let url = format!("https://127.0.0.1:{}/{name}", server.port);
    g.git(&["remote", "add", "web", &url]);
    g.git(&["config", "http.sslCAInfo", &cert.display().to_string()]);
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    // The binary as `g.kaas` runs it, without the machine's `GIT_SSL_CAINFO` (it would override
    // the repository's `http.sslCAInfo`), with `path` as PATH when given.
    let kaas = |path: Option<&Path>| -> Run {
        let mut c = bin_in_home(g.home.path());
        c.env_remove("GIT_SSL_CAINFO").env("KAAS_COMMIT_TIME", TIME);
        if let Some(p) = path {
            c.env("PATH", p);
        }
        c.arg("--repo")
            .arg(g.path())
            .args(["pr", "acme", "--push", "web"])
            .output()
            .expect("the binary runs")
            .into()
    };

    // No credentials: refused at once (git is never let prompt), and the branch is put back.
    let r = kaas(None);
    assert_auth_refused(&r, &url);
    assert!(g.try_git(&["rev-parse", "--verify", "-q", "kaas/acme"]).code != 0);

    // Without `git` on PATH: refused, naming what HTTPS needs.
    let no_git = tempfile::tempdir().unwrap();
    let r = kaas(Some(no_git.path()));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "cannot push to `{url}`: HTTPS remotes are pushed by the `git` program, and there is no `git` on PATH"
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("hint: install git"), "{}", r.stderr);
    assert!(g.try_git(&["rev-parse", "--verify", "-q", "kaas/acme"]).code != 0);

    // The credential helper answers; git checks the server against `http.sslCAInfo`.
    let store = g.home.path().join("credentials");
    std::fs::write(&store, format!("https://pat:secret@127.0.0.1:{}\n", server.port)).unwrap();
    g.git(&[
        "config",
        "credential.helper",
        &format!("store --file={}", store.display()),
    ]);
    let r = kaas(None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]),
        g.git(&["rev-parse", "kaas/acme"])
    );
}

#[test]
fn pr_pushes_over_http_with_the_git_credential_helper() {
    let g = GitRepo::rendered_with_remote();
    let root = g.remote().parent().expect("the bare remote has a parent").to_path_buf();
    let name = g.remote().file_name().unwrap().to_string_lossy().into_owned();
    let server = HttpRemote::serve(&root);
    let url = format!("http://127.0.0.1:{}/{name}", server.port);
    g.git(&["remote", "add", "web", &url]);
    // A size-changing edit: an edit of the same size in the same second as the index write is
    // invisible to git status (racy git), which this test is not about.
    g.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");

    // No credentials: refused, with what to do, and the local branch is put back.
    let r = g.kaas(&["pr", "acme", "--push", "web"]);
    assert_auth_refused(&r, &url);
    assert!(g.try_git(&["rev-parse", "--verify", "-q", "kaas/acme"]).code != 0);

    // The user's credential helper answers, as it would for `git push`.
    let store = g.home.path().join("credentials");
    std::fs::write(&store, format!("http://pat:secret@127.0.0.1:{}\n", server.port)).unwrap();
    g.git(&[
        "config",
        "credential.helper",
        &format!("store --file={}", store.display()),
    ]);
    let r = g.kaas(&["pr", "acme", "--push", "web"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        git_in(g.home.path(), g.remote(), &["rev-parse", "kaas/acme"]),
        g.git(&["rev-parse", "kaas/acme"])
    );
}
