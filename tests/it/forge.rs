//! `pr --open`, `pr --platform` and `pr --all-changed` against forges: a real Gitea server
//! (built from its Go module by tests/forge/gitea.sh, started on loopback with SQLite), and
//! TEST DOUBLES of GitHub's and GitLab's REST APIs (tests/it/support/forge_double.py), which
//! cannot run here. Pushes go to a real bare repository (GitHub/GitLab: served by `git http-backend`
//! through `url.<it>.pushInsteadOf`;
//! Gitea: the server itself, over HTTP with the git credential helper).

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::common::{Repo, Run, bin_in_home, git as git_in, git_cmd};

const TIME: &str = "1700000000";
const TOKEN: &str = "kaas-test-token-0123456789";
const TOKEN_VARS: [&str; 4] = ["GH_TOKEN", "GITHUB_TOKEN", "GITLAB_TOKEN", "GITEA_TOKEN"];

/// The example, rendered and committed on `main`, with a remote `origin` whose URL is `url`
/// (what the forge is found from) and whose pushes go to a bare repository (`pushInsteadOf`),
/// or to the Gitea server (`gitea_fleet`).
struct Fleet {
    repo: Repo,
    home: tempfile::TempDir,
    root: tempfile::TempDir,
    /// `git http-backend` serving `root` (tests/it/support/git_http.py).
    git_http: Option<(std::process::Child, u16)>,
    /// Where pushes really go when not to `root` (Gitea).
    pushes_to: Option<String>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some((child, _)) = &mut self.git_http {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Fleet {
    fn new(url: &str) -> Fleet {
        let mut f = Fleet {
            repo: Repo::example(),
            home: tempfile::tempdir().unwrap(),
            root: tempfile::tempdir().unwrap(),
            git_http: None,
            pushes_to: None,
        };
        f.git(&["init", "-q", "-b", "main"]);
        f.git(&["add", "-A"]);
        f.git(&["commit", "-q", "-m", "inputs"]);
        let r = f.kaas(&["render", "--commit"], &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        git_in(f.home.path(), f.root.path(), &["init", "-q", "--bare", "fleet.git"]);
        f.git(&["remote", "add", "origin", url]);
        // Pushes go to the bare repository over smart HTTP; the remote's URL stays the forge's.
        // (Over a path, libgit2's local transport pushes to the remote's `url`, not the rewritten
        // push URL, so a real transport it is.)
        let (child, port) = crate::common::loopback_server(
            "git_http.py",
            &[
                f.root.path().as_os_str().to_owned(),
                "--auth".into(),
                "pat:secret".into(),
            ],
        );
        f.git_http = Some((child, port));
        let store = f.home.path().join("git-credentials");
        std::fs::write(&store, format!("http://pat:secret@127.0.0.1:{port}\n")).unwrap();
        f.git(&[
            "config",
            "credential.helper",
            &format!("store --file={}", store.display()),
        ]);
        let rewrite = format!("url.http://127.0.0.1:{port}/fleet.git.pushInsteadOf");
        f.git(&["config", &rewrite, url]);
        f.git(&["push", "-q", "-u", "origin", "main"]);
        f
    }

    #[track_caller]
    fn git(&self, args: &[&str]) -> String {
        git_in(self.home.path(), self.repo.path(), args)
    }

    /// The binary, with no forge token but those in `env`.
    fn kaas(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = bin_in_home(self.home.path());
        for v in TOKEN_VARS {
            c.env_remove(v);
        }
        c.env("KAAS_COMMIT_TIME", TIME)
            .envs(env.iter().copied())
            .arg("--repo")
            .arg(self.repo.path())
            .args(args);
        c.output().expect("the binary runs").into()
    }

    /// The commit of `branch` on the bare remote, if it is there.
    fn pushed(&self, branch: &str) -> Option<String> {
        if let Some(url) = &self.pushes_to {
            let refs = self.git(&["ls-remote", url, &format!("refs/heads/{branch}")]);
            return refs.split_whitespace().next().map(str::to_string);
        }
        let out = git_cmd(self.home.path(), &self.root.path().join("fleet.git"))
            .args(["rev-parse", "--verify", "-q", &format!("refs/heads/{branch}")])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn replace(&self, rel: &str, from: &str, to: &str) {
        let text = self.repo.read(rel);
        assert!(text.contains(from), "`{from}` is not in {rel}");
        self.repo.write(rel, &text.replacen(from, to, 1));
    }
}

/// A forge's API over HTTP, for reading back what the tests made.
fn api(method: &str, url: &str, auth: (&str, &str), body: Option<Value>) -> Value {
    let text = match (method, body) {
        ("GET", _) => ureq::get(url).header(auth.0, auth.1).call(),
        (_, Some(b)) => ureq::post(url)
            .header(auth.0, auth.1)
            .content_type("application/json")
            .send(b.to_string()),
        _ => panic!("unsupported"),
    }
    .unwrap_or_else(|e| panic!("{method} {url}: {e}"))
    .body_mut()
    .read_to_string()
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The GitHub or GitLab double, stopped when dropped.
struct Double {
    child: std::process::Child,
    port: u16,
    log: tempfile::NamedTempFile,
    kind: &'static str,
}

impl Double {
    fn start(kind: &'static str) -> Double {
        let log = tempfile::NamedTempFile::new().unwrap();
        let (child, port) = crate::common::loopback_server(
            "forge_double.py",
            &[kind.into(), TOKEN.into(), log.path().as_os_str().to_owned()],
        );
        Double { child, port, log, kind }
    }

    /// The API base `--forge-url` takes.
    fn api(&self) -> String {
        match self.kind {
            "github" => format!("http://127.0.0.1:{}", self.port),
            _ => format!("http://127.0.0.1:{}/api/v4", self.port),
        }
    }

    fn get(&self, path: &str) -> Value {
        let auth = match self.kind {
            "github" => ("Authorization", format!("Bearer {TOKEN}")),
            _ => ("PRIVATE-TOKEN", TOKEN.to_string()),
        };
        api("GET", &format!("{}{path}", self.api()), (auth.0, &auth.1), None)
    }

    /// The requests served, as `METHOD PATH` lines.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(self.log.path())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Double {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn github_env() -> Vec<(&'static str, &'static str)> {
    vec![("GITHUB_TOKEN", TOKEN)]
}

#[track_caller]
fn assert_ok(r: &Run) {
    assert_eq!(r.code, 0, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
}

/// The run failed with exit 2, said `message`, and said the branch stays pushed.
#[track_caller]
fn assert_refused_but_pushed(r: &Run, f: &Fleet, branch: &str, message: &str) {
    assert_eq!(r.code, 2, "stdout: {}\nstderr: {}", r.stdout, r.stderr);
    assert!(r.stderr.contains(message), "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("note: `{branch}` is pushed to `origin` and stays there")),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("\nhint: "), "{}", r.stderr);
    assert!(
        !r.stderr.contains(TOKEN) && !r.stdout.contains(TOKEN),
        "the token leaked"
    );
    assert!(f.pushed(branch).is_some(), "`{branch}` is on the remote");
}

#[test]
fn github_opens_one_pull_request_then_updates_it_and_never_opens_a_second() {
    let gh = Double::start("github");
    let f = Fleet::new("https://github.com/acme/fleet.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let open = [
        "pr",
        "acme",
        "--push",
        "origin",
        "--open",
        "--forge-url",
        &gh.api(),
        "--label",
        "kaas",
        "--reviewer",
        "pat",
        "--draft",
    ];
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert_eq!(
        r.stdout,
        "http://127.0.0.1:".to_string() + &gh.port.to_string() + "/acme/fleet/pull/1\n"
    );
    assert!(r.stderr.contains("`kaas/acme`: opened pull request #1"), "{}", r.stderr);
    let pr = gh.get("/repos/acme/fleet/pulls/1");
    assert_eq!(pr["title"], "Update tenant acme");
    assert_eq!(pr["head"]["ref"], "kaas/acme");
    assert_eq!(pr["base"]["ref"], "main", "origin/main is `main` on the forge");
    assert_eq!(pr["draft"], true);
    assert_eq!(pr["labels"][0]["name"], "kaas");
    assert_eq!(pr["requested_reviewers"][0]["login"], "pat");
    assert!(pr["body"].as_str().unwrap().contains("+    replicas: 3"), "{pr}");

    // Again, nothing changed: found, left alone.
    let before = gh.requests().len();
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert!(
        r.stderr.contains("pull request #1 is already up to date"),
        "{}",
        r.stderr
    );
    let again: Vec<String> = gh.requests()[before..].to_vec();
    assert!(
        again.iter().all(|l| l.starts_with("GET ")),
        "a rerun with nothing new only reads: {again:?}"
    );
    assert!(
        again[0].starts_with("GET /repos/acme/fleet/pulls?head=acme%3Akaas%2Facme&state=open"),
        "{again:?}"
    );

    // Another edit: the same pull request gets the new title and body.
    f.replace("tenants/acme.yaml", "replicas: 3 # scaled", "replicas: 4 # scaled");
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert!(r.stderr.contains("updated pull request #1"), "{}", r.stderr);
    let all = gh.get("/repos/acme/fleet/pulls?state=open");
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert!(all[0]["body"].as_str().unwrap().contains("+    replicas: 4"), "{all}");
    assert_eq!(
        f.pushed("kaas/acme"),
        Some(f.git(&["rev-parse", "kaas/acme"]).trim().to_string())
    );
}

#[test]
fn github_a_pull_request_opened_meanwhile_is_updated_not_duplicated() {
    // The double's `racy` repository lists no pull request the first time although one is open:
    // the create is refused with 422 "A pull request already exists", and that one is updated.
    let gh = Double::start("github");
    let f = Fleet::new("git@github.com:acme/racy.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    api(
        "POST",
        &format!("{}/repos/acme/racy/pulls", gh.api()),
        ("Authorization", &format!("Bearer {TOKEN}")),
        Some(serde_json::json!({"title": "by hand", "head": "kaas/acme", "base": "main", "body": "x"})),
    );
    let r = f.kaas(
        &["pr", "acme", "--push", "origin", "--open", "--forge-url", &gh.api()],
        &[("GH_TOKEN", TOKEN)],
    );
    assert_ok(&r);
    assert!(r.stderr.contains("updated pull request #1"), "{}", r.stderr);
    let all = gh.get("/repos/acme/racy/pulls?state=open");
    assert_eq!(all.as_array().unwrap().len(), 1, "{all}");
    assert_eq!(all[0]["title"], "Update tenant acme");
    let posts: Vec<String> = gh
        .requests()
        .into_iter()
        .filter(|l| l == "POST /repos/acme/racy/pulls")
        .collect();
    assert_eq!(posts.len(), 2, "the test's own create and the refused one");
}

#[test]
fn github_refusals_exit_2_name_the_cause_and_leave_the_branch_pushed() {
    let gh = Double::start("github");
    for (repo, env, message) in [
        (
            "acme/fleet",
            vec![("GITHUB_TOKEN", "wrong")],
            "GitHub refused to list the pull requests of `acme/fleet`: HTTP 401: Bad credentials",
        ),
        (
            "acme/forbidden",
            github_env(),
            "HTTP 403: Resource not accessible by personal access token",
        ),
        ("acme/missing", github_env(), "HTTP 404: Not Found"),
        ("acme/exhausted", github_env(), "GitHub rate-limits these requests"),
    ] {
        let f = Fleet::new(&format!("https://github.com/{repo}"));
        f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
        let r = f.kaas(
            &["pr", "acme", "--push", "origin", "--open", "--forge-url", &gh.api()],
            &env,
        );
        assert_refused_but_pushed(&r, &f, "kaas/acme", message);
        assert!(r.stdout.is_empty(), "no URL: {}", r.stdout);
    }
    // 422: a base the forge does not have.
    let f = Fleet::new("https://github.com/acme/fleet");
    f.git(&["branch", "release"]);
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = f.kaas(
        &[
            "pr",
            "acme",
            "--base",
            "release",
            "--push",
            "origin",
            "--open",
            "--forge-url",
            &gh.api(),
        ],
        &github_env(),
    );
    assert_refused_but_pushed(
        &r,
        &f,
        "kaas/acme",
        "GitHub refused to open a pull request from `kaas/acme` into `release`: HTTP 422: Validation Failed; `base` invalid",
    );
}

#[test]
fn rate_limits_with_a_short_retry_after_are_waited_out() {
    for (kind, repo) in [
        ("github", "acme/limited"),
        ("github", "acme/limited-403"),
        ("gitlab", "platform/limited"),
    ] {
        let d = Double::start(kind);
        let f = Fleet::new(&format!("https://{kind}.com/{repo}.git"));
        f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
        let var = if kind == "github" {
            "GITHUB_TOKEN"
        } else {
            "GITLAB_TOKEN"
        };
        let t0 = std::time::Instant::now();
        let r = f.kaas(
            &["pr", "acme", "--push", "origin", "--open", "--forge-url", &d.api()],
            &[(var, TOKEN)],
        );
        assert_ok(&r);
        assert!(
            t0.elapsed() >= std::time::Duration::from_secs(1),
            "Retry-After: 1 was honoured"
        );
        let reqs = d.requests();
        assert_eq!(
            reqs[0], reqs[1],
            "{kind} {repo}: the limited request was sent again: {reqs:?}"
        );
    }
}

#[test]
fn gitlab_opens_a_draft_merge_request_with_labels_and_reviewers_and_updates_it() {
    let gl = Double::start("gitlab");
    let f = Fleet::new("git@gitlab.example.org:platform/infra/fleet.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let open = [
        "pr",
        "acme",
        "--push",
        "origin",
        "--open",
        "--forge-url",
        &gl.api(),
        "--draft",
        "--label",
        "kaas",
        "--label",
        "tenant",
        "--reviewer",
        "sam",
    ];
    let env = [("GITLAB_TOKEN", TOKEN)];
    let r = f.kaas(&open, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("`kaas/acme`: opened merge request !1"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.ends_with("/platform/infra/fleet/-/merge_requests/1\n"),
        "{}",
        r.stdout
    );
    let mr = gl.get("/projects/platform%2Finfra%2Ffleet/merge_requests/1");
    assert_eq!(mr["title"], "Draft: Update tenant acme");
    assert_eq!(mr["draft"], true);
    assert_eq!(mr["target_branch"], "main");
    assert_eq!(mr["labels"], serde_json::json!(["kaas", "tenant"]));
    assert_eq!(mr["reviewers"][0]["username"], "sam");

    let r = f.kaas(&open, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("merge request !1 is already up to date"),
        "{}",
        r.stderr
    );

    // A new edit and a new label: updated in place; still a draft.
    f.replace("tenants/acme.yaml", "replicas: 3 # scaled", "replicas: 5 # scaled");
    let mut more = open.to_vec();
    more.retain(|a| *a != "--draft");
    more.extend(["--label", "urgent"]);
    let r = f.kaas(&more, &env);
    assert_ok(&r);
    assert!(r.stderr.contains("updated merge request !1"), "{}", r.stderr);
    let mrs = gl.get("/projects/platform%2Finfra%2Ffleet/merge_requests?state=opened");
    assert_eq!(mrs.as_array().unwrap().len(), 1, "{mrs}");
    assert_eq!(mrs[0]["title"], "Draft: Update tenant acme", "a draft stays a draft");
    assert_eq!(mrs[0]["labels"], serde_json::json!(["kaas", "tenant", "urgent"]));
    assert!(mrs[0]["description"].as_str().unwrap().contains("+    replicas: 5"));
}

#[test]
fn gitlab_conflict_and_refusals() {
    let gl = Double::start("gitlab");
    // 409 "Another open merge request already exists": the open one is updated.
    let f = Fleet::new("https://gitlab.com/platform/racy.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    api(
        "POST",
        &format!("{}/projects/platform%2Fracy/merge_requests", gl.api()),
        ("PRIVATE-TOKEN", TOKEN),
        Some(serde_json::json!({"title": "by hand", "source_branch": "kaas/acme", "target_branch": "main"})),
    );
    let open = ["pr", "acme", "--push", "origin", "--open", "--forge-url", &gl.api()];
    let r = f.kaas(&open, &[("GITLAB_TOKEN", TOKEN)]);
    assert_ok(&r);
    assert!(r.stderr.contains("updated merge request !1"), "{}", r.stderr);
    let mrs = gl.get("/projects/platform%2Fracy/merge_requests?state=opened");
    assert_eq!(mrs.as_array().unwrap().len(), 1, "{mrs}");
    assert!(
        gl.requests()
            .iter()
            .any(|l| l == "POST /api/v4/projects/platform%2Fracy/merge_requests")
    );

    let r = f.kaas(&open, &[("GITLAB_TOKEN", "wrong")]);
    assert_refused_but_pushed(&r, &f, "kaas/acme", "HTTP 401: 401 Unauthorized");
    assert!(
        r.stderr
            .contains("hint: the token was not accepted: check GITLAB_TOKEN"),
        "{}",
        r.stderr
    );
    let r = f.kaas(
        &[&open[..], &["--reviewer", "nobody"]].concat(),
        &[("GITLAB_TOKEN", TOKEN)],
    );
    // The MR is open already: reviewers are only asked for on a new one.
    assert_ok(&r);
    let f = Fleet::new("https://gitlab.com/platform/forbidden.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = f.kaas(&open, &[("GITLAB_TOKEN", TOKEN)]);
    assert_refused_but_pushed(&r, &f, "kaas/acme", "HTTP 403: 403 Forbidden");
}

#[test]
fn bad_forge_settings_exit_2_with_one_message_and_the_branch_stays_pushed() {
    // An unknown host, no token, and a remote that is a path: each one message, exit 2.
    let f = Fleet::new("https://git.example.org/acme/fleet.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = f.kaas(&["pr", "acme", "--push", "origin", "--open"], &github_env());
    assert_refused_but_pushed(
        &r,
        &f,
        "kaas/acme",
        "error: cannot tell which forge hosts `https://git.example.org/acme/fleet.git`",
    );
    assert!(
        r.stderr.contains("hint: name it: `--forge github|gitlab|gitea`"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stderr.matches("error:").count(), 1, "{}", r.stderr);

    let r = f.kaas(
        &["pr", "acme", "--push", "origin", "--open", "--forge", "gitea"],
        &github_env(),
    );
    assert_refused_but_pushed(&r, &f, "kaas/acme", "error: no Gitea token: none of GITEA_TOKEN is set");

    let f = Fleet::new("https://github.com/acme/fleet.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = f.kaas(&["pr", "acme", "--push", "origin", "--open"], &[]);
    assert_refused_but_pushed(
        &r,
        &f,
        "kaas/acme",
        "error: no GitHub token: none of GH_TOKEN, GITHUB_TOKEN is set",
    );
    assert!(r.stderr.contains("hint: export GH_TOKEN"), "{}", r.stderr);

    let local = tempfile::tempdir().unwrap();
    let f = Fleet::new(&local.path().to_string_lossy());
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let r = f.kaas(
        &["pr", "acme", "--push", "origin", "--open", "--forge", "github"],
        &github_env(),
    );
    assert_refused_but_pushed(&r, &f, "kaas/acme", "has no HTTPS equivalent: it is not on a forge");

    // The command line itself: --open needs --push; an unknown forge name is refused by clap.
    let r = f.kaas(&["pr", "acme", "--open"], &github_env());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--push <REMOTE>"), "{}", r.stderr);
    let r = f.kaas(
        &["pr", "acme", "--push", "origin", "--open", "--forge", "bitbucket"],
        &github_env(),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("possible values: github, gitlab, gitea"),
        "{}",
        r.stderr
    );
}

#[test]
fn all_changed_opens_one_pull_request_per_changed_tenant() {
    let gh = Double::start("github");
    let f = Fleet::new("https://github.com/acme/fleet.git");
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    f.replace(
        "tenants/globex.yaml",
        "name: globex",
        "name: globex\n  labels: {team: blue}",
    );
    let open = [
        "pr",
        "--all-changed",
        "--push",
        "origin",
        "--open",
        "--forge-url",
        &gh.api(),
    ];
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    let urls: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(urls.len(), 2, "{}", r.stdout);
    assert!(f.pushed("kaas/acme").is_some() && f.pushed("kaas/globex").is_some());
    assert!(f.pushed("kaas/initech").is_none(), "an unchanged tenant gets no branch");
    let all = gh.get("/repos/acme/fleet/pulls?state=open");
    let titles: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Update tenant acme", "Update tenant globex"]);

    // Again: the same two, unchanged.
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert_eq!(r.stderr.matches("is already up to date").count(), 2, "{}", r.stderr);
    assert_eq!(
        gh.get("/repos/acme/fleet/pulls?state=open").as_array().unwrap().len(),
        2
    );

    // Without changes anywhere: nothing to propose, exit 0.
    let clean = Fleet::new("https://github.com/acme/other.git");
    let r = clean.kaas(&open, &github_env());
    assert_ok(&r);
    assert!(
        r.stderr.contains("no tenant differs from `origin/main`"),
        "{}",
        r.stderr
    );
}

const D1: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const D2: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn lock_with_kamaji(tag: &str, digest: &str, vips: &str) -> String {
    format!(
        "# @generated by kaas-gitops (pin, render). Do not edit.\nversion: 1\nimages:\n- image: docker.io/clastix/kamaji\n  tag: {tag}\n  digest: \"{digest}\"\n{vips}"
    )
}

#[test]
fn platform_opens_one_pull_request_listing_images_and_tenants() {
    let gh = Double::start("github");
    let f = Fleet::new("https://github.com/acme/fleet.git");
    // The base pins the kamaji image; the working tree moves its tag and digest (as
    // `pin --update` does) and the etcd chart's image, which every dedicated etcd renders.
    let lock = f.repo.read("kaas.lock");
    let vips = &lock[lock.find("vips:").unwrap()..];
    f.repo.write("kaas.lock", &lock_with_kamaji("26.8.2-edge", D1, vips));
    let r = f.kaas(&["render", "--commit"], &[]);
    assert_ok(&r);
    f.git(&["push", "-q", "origin", "main"]);
    f.repo.write("kaas.lock", &lock_with_kamaji("26.9.1-edge", D2, vips));
    f.replace("kaas.yaml", "tag: 26.8.2-edge", "tag: 26.9.1-edge");
    f.replace("kaas.yaml", "tag: v3.6.12}", "tag: v3.6.13}");
    // A tenant's own edit is not the platform's: it stays out of the branch.
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");

    let open = [
        "pr",
        "--platform",
        "--push",
        "origin",
        "--open",
        "--forge-url",
        &gh.api(),
        "--label",
        "platform",
    ];
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert!(
        r.stderr.contains("`kaas/platform`: opened pull request #1"),
        "{}",
        r.stderr
    );
    let pr = gh.get("/repos/acme/fleet/pulls/1");
    let body = pr["body"].as_str().unwrap();
    assert!(
        pr["title"]
            .as_str()
            .unwrap()
            .starts_with("Update the platform (1 image moved, "),
        "{pr}"
    );
    assert!(
        body.contains(&format!(
            "| `docker.io/clastix/kamaji` | `26.8.2-edge@{D1}` | `26.9.1-edge@{D2}` |"
        )),
        "{body}"
    );
    for tenant in ["acme", "globex"] {
        // Both have their own etcd: its HelmRelease changes with the etcd image.
        let row = body
            .lines()
            .find(|l| l.starts_with(&format!("| `{tenant}` |")))
            .unwrap_or_else(|| panic!("a row for {tenant}: {body}"));
        assert!(row.contains("HelmRelease"), "{row}");
    }
    let files = f.git(&["diff", "--name-only", "main", "kaas/platform"]);
    assert!(
        files.lines().any(|l| l == "kaas.yaml") && files.lines().any(|l| l == "kaas.lock"),
        "{files}"
    );
    assert!(files.lines().any(|l| l.starts_with("overlays/platform/")), "{files}");
    assert!(!files.lines().any(|l| l == "tenants/acme.yaml"), "{files}");

    // Rerun: the same pull request, untouched.
    let r = f.kaas(&open, &github_env());
    assert_ok(&r);
    assert!(
        r.stderr.contains("pull request #1 is already up to date"),
        "{}",
        r.stderr
    );
    assert_eq!(
        gh.get("/repos/acme/fleet/pulls?state=open").as_array().unwrap().len(),
        1
    );
}

// --- Gitea: the real server ---------------------------------------------------------------

/// A Gitea server on loopback with SQLite in a temp dir, a user `kaas` (admin) and a token
/// made with its own CLI, and an empty repository `kaas/fleet` made through its API.
struct Gitea {
    child: std::process::Child,
    port: u16,
    token: String,
    dir: tempfile::TempDir,
}

/// The Gitea binary tests/run builds (tests/forge/gitea.sh), and the work path it needs.
fn gitea_binary() -> (PathBuf, PathBuf) {
    let out = Command::new(crate::common::project_root().join("tests/forge/gitea.sh"))
        .arg("--built")
        .output()
        .expect("tests/forge/gitea.sh runs");
    assert!(
        out.status.success(),
        "the Gitea server these tests need is missing: run tests/run, which builds it once with \
         tests/forge/gitea.sh from the Go module code.gitea.io/gitea (Go and its module proxy):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let work = std::fs::read_to_string(bin.parent().unwrap().parent().unwrap().join("work-path"))
        .expect("tests/forge/gitea.sh records the work path");
    (bin, PathBuf::from(work.trim()))
}

impl Gitea {
    fn start() -> Gitea {
        let (bin, work) = gitea_binary();
        let dir = tempfile::tempdir().unwrap();
        let port = crate::common::free_port();
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
        let d = dir.path().display();
        // app.ini: modules/setting in Gitea's source; INSTALL_LOCK skips the web installer.
        let ini = format!(
            "APP_NAME = kaas-gitops test\nRUN_USER = {user}\nRUN_MODE = prod\nWORK_PATH = {work}\n\n\
             [database]\nDB_TYPE = sqlite3\nPATH = {d}/gitea.db\n\n\
             [server]\nPROTOCOL = http\nHTTP_ADDR = 127.0.0.1\nHTTP_PORT = {port}\nROOT_URL = http://127.0.0.1:{port}/\n\
             DISABLE_SSH = true\nOFFLINE_MODE = true\nAPP_DATA_PATH = {d}/data\nLFS_START_SERVER = false\n\n\
             [repository]\nROOT = {d}/repos\n\n[security]\nINSTALL_LOCK = true\n\
             SECRET_KEY = kaas-gitops-tests-secret-key-0123456789abcdef\n\
             INTERNAL_TOKEN = eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJuYmYiOjE3MDAwMDAwMDB9.kaasgitopstestsinternaltoken0123456789abcd\n\n\
             [oauth2]\nENABLED = false\n\n[service]\nDISABLE_REGISTRATION = true\n\n[mailer]\nENABLED = false\n\n\
             [session]\nPROVIDER = memory\n\n[cache]\nADAPTER = memory\n\n[queue]\nTYPE = channel\n\n\
             [indexer]\nISSUE_INDEXER_TYPE = db\nREPO_INDEXER_ENABLED = false\n\n\
             [log]\nMODE = file\nLEVEL = Warn\nROOT_PATH = {d}/log\n\n[cron]\nENABLED = false\n",
            user = user.trim(),
            work = work.display(),
        );
        let conf = dir.path().join("app.ini");
        std::fs::write(&conf, ini).unwrap();
        let gitea = |args: &[&str]| {
            let mut c = Command::new(&bin);
            c.env("GITEA_WORK_DIR", &work)
                // Gitea refuses to run as root (modules/setting/setting.go) unless told; CI runs as root.
                .env("GITEA_I_AM_BEING_UNSAFE_RUNNING_AS_ROOT", "true")
                .env("HOME", dir.path())
                .arg("--config")
                .arg(&conf)
                .arg("--work-path")
                .arg(&work)
                .arg("--custom-path")
                .arg(dir.path().join("custom"))
                .args(args);
            c
        };
        let run = |args: &[&str]| -> String {
            let out = gitea(args).output().expect("gitea runs");
            assert!(
                out.status.success(),
                "gitea {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        };
        run(&["migrate"]);
        run(&[
            "admin",
            "user",
            "create",
            "--username",
            "kaas",
            "--password",
            "kaas-Secret-123",
            "--email",
            "kaas@example.org",
            "--admin",
            "--must-change-password=false",
        ]);
        run(&[
            "admin",
            "user",
            "create",
            "--username",
            "sam",
            "--password",
            "sam-Secret-123",
            "--email",
            "sam@example.org",
            "--must-change-password=false",
        ]);
        let token = run(&[
            "admin",
            "user",
            "generate-access-token",
            "--username",
            "kaas",
            "--token-name",
            "tests",
            "--scopes",
            "all",
            "--raw",
        ]);
        let child = gitea(&["web"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("gitea web starts");
        let g = Gitea {
            child,
            port,
            token,
            dir,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while ureq::get(&format!("{}/version", g.api())).call().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "gitea did not answer within 120 s; its log: {}",
                std::fs::read_to_string(g.dir.path().join("log/gitea.log")).unwrap_or_default()
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        g.post(
            "/user/repos",
            serde_json::json!({"name": "fleet", "default_branch": "main"}),
        );
        g
    }

    fn api(&self) -> String {
        format!("http://127.0.0.1:{}/api/v1", self.port)
    }

    fn auth(&self) -> String {
        format!("token {}", self.token)
    }

    fn get(&self, path: &str) -> Value {
        api(
            "GET",
            &format!("{}{path}", self.api()),
            ("Authorization", &self.auth()),
            None,
        )
    }

    fn post(&self, path: &str, body: Value) -> Value {
        api(
            "POST",
            &format!("{}{path}", self.api()),
            ("Authorization", &self.auth()),
            Some(body),
        )
    }
}

impl Drop for Gitea {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example pushed to the Gitea repository, with the credential helper holding the token
/// (`git push` over HTTP, as a user's git would).
fn gitea_fleet(g: &Gitea) -> Fleet {
    let url = format!("http://127.0.0.1:{}/kaas/fleet.git", g.port);
    let mut f = Fleet::new(&url);
    f.pushes_to = Some(url.clone());
    let port = f.git_http.as_ref().unwrap().1;
    f.git(&[
        "config",
        "--remove-section",
        &format!("url.http://127.0.0.1:{port}/fleet.git"),
    ]);
    let store = f.home.path().join("git-credentials");
    std::fs::write(&store, format!("http://kaas:{}@127.0.0.1:{}\n", g.token, g.port)).unwrap();
    f.git(&["push", "-q", "-u", "origin", "main"]);
    f
}

#[test]
fn gitea_pull_requests_for_a_tenant_all_changed_tenants_and_the_platform() {
    let g = Gitea::start();
    g.post(
        "/repos/kaas/fleet/labels",
        serde_json::json!({"name": "kaas", "color": "#00aabb"}),
    );
    let f = gitea_fleet(&g);
    let env = [("GITEA_TOKEN", g.token.as_str())];
    f.replace("tenants/acme.yaml", "replicas: 2", "replicas: 3 # scaled");
    let open = [
        "pr",
        "acme",
        "--push",
        "origin",
        "--open",
        "--forge",
        "gitea",
        "--label",
        "kaas",
        "--draft",
        "--reviewer",
        "sam",
    ];
    let r = f.kaas(&open, &env);
    assert_ok(&r);
    assert!(r.stderr.contains("`kaas/acme`: opened pull request #1"), "{}", r.stderr);
    assert_eq!(r.stdout, format!("http://127.0.0.1:{}/kaas/fleet/pulls/1\n", g.port));
    let pr = g.get("/repos/kaas/fleet/pulls/1");
    assert_eq!(pr["title"], "WIP: Update tenant acme");
    assert_eq!(pr["draft"], true, "Gitea reads the WIP: prefix as a draft");
    assert_eq!(pr["head"]["ref"], "kaas/acme");
    assert_eq!(pr["base"]["ref"], "main");
    assert_eq!(pr["labels"][0]["name"], "kaas");
    assert_eq!(pr["requested_reviewers"][0]["login"], "sam");
    assert!(pr["body"].as_str().unwrap().contains("+    replicas: 3"), "{pr}");
    assert!(!r.stderr.contains(&g.token), "the token leaked");

    // Rerun: found and left alone; then an edit updates it in place.
    let r = f.kaas(&open, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("pull request #1 is already up to date"),
        "{}",
        r.stderr
    );
    f.replace("tenants/acme.yaml", "replicas: 3 # scaled", "replicas: 4 # scaled");
    let r = f.kaas(&open, &env);
    assert_ok(&r);
    assert!(r.stderr.contains("updated pull request #1"), "{}", r.stderr);
    let pr = g.get("/repos/kaas/fleet/pulls/1");
    assert!(pr["body"].as_str().unwrap().contains("+    replicas: 4"), "{pr}");
    assert_eq!(
        pr["head"]["sha"].as_str().unwrap(),
        f.git(&["rev-parse", "kaas/acme"]).trim()
    );

    // A label the repository lacks: Gitea skips it silently; we do not.
    let r = f.kaas(&[&open[..], &["--label", "nosuch"]].concat(), &env);
    assert_refused_but_pushed(&r, &f, "kaas/acme", "no label `nosuch` in `kaas/fleet`");

    // A token Gitea does not know: its own 401, the branch stays pushed.
    let r = f.kaas(&open, &[("GITEA_TOKEN", "0123456789abcdef0123456789abcdef01234567")]);
    assert_refused_but_pushed(
        &r,
        &f,
        "kaas/acme",
        "Gitea refused to list the pull requests of `kaas/fleet`: HTTP 401",
    );

    // Every changed tenant: acme's is found again, globex gets its own.
    f.replace(
        "tenants/globex.yaml",
        "name: globex",
        "name: globex\n  labels: {team: blue}",
    );
    let all = ["pr", "--all-changed", "--push", "origin", "--open", "--forge", "gitea"];
    let r = f.kaas(&all, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("`kaas/acme`: pull request #1 is already up to date"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("`kaas/globex`: opened pull request #2"),
        "{}",
        r.stderr
    );
    let r = f.kaas(&all, &env);
    assert_ok(&r);
    assert_eq!(r.stderr.matches("is already up to date").count(), 2, "{}", r.stderr);

    // The platform: its own branch and pull request.
    f.replace("kaas.yaml", "tag: v3.6.12}", "tag: v3.6.13}");
    let platform = ["pr", "--platform", "--push", "origin", "--open", "--forge", "gitea"];
    let r = f.kaas(&platform, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("`kaas/platform`: opened pull request #3"),
        "{}",
        r.stderr
    );
    let r = f.kaas(&platform, &env);
    assert_ok(&r);
    assert!(
        r.stderr.contains("pull request #3 is already up to date"),
        "{}",
        r.stderr
    );
    let open_prs = g.get("/repos/kaas/fleet/pulls?state=open");
    let mut heads: Vec<&str> = open_prs
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["head"]["ref"].as_str().unwrap())
        .collect();
    heads.sort();
    assert_eq!(heads, ["kaas/acme", "kaas/globex", "kaas/platform"]);
    let body = g.get("/repos/kaas/fleet/pulls/3")["body"].as_str().unwrap().to_string();
    assert!(body.contains("### Tenants"), "{body}");
    assert!(
        body.lines()
            .any(|l| l.starts_with("| `acme` |") && l.contains("HelmRelease")),
        "{body}"
    );
}
