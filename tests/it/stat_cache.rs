//! The stat cache (issue 8): a no-op `render`, and a passing `render --check`, in a git
//! repository is proved from file stats alone, prints what the full run printed, and any change
//! to an input or a compared output still takes the full pipeline.

use crate::common::Repo;

const HIT: &str = "stat cache: no input or output changed";

/// Until the file system's clock has moved past every file of the repository: files written
/// before are then strictly older than a run started after, so that run may record them (see
/// `stat_cache::Stamp`).
fn past_racy_window(repo: &Repo) {
    crate::common::wait_until_timestamps_advance(repo.path());
}

fn git_repo() -> Repo {
    git_init(Repo::example())
}

fn git_init(repo: Repo) -> Repo {
    let out = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(repo.path())
        .output()
        .expect("git runs");
    assert!(out.status.success(), "{out:?}");
    repo
}

/// `render -v --format json`: (served from the stat cache, stdout).
#[track_caller]
fn render(repo: &Repo) -> (bool, String) {
    let run = repo.run(&["-v", "render", "--format", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    (run.stderr.contains(HIT), run.stdout)
}

/// After a change: the full pipeline runs and repairs or re-renders; the next no-op records the
/// state, and the one after is served from the cache with the same output.
#[track_caller]
fn assert_seen_then_cached(repo: &Repo, what: &str, expect_in_output: &str) {
    let (hit, out) = render(repo);
    assert!(!hit, "{what}: served from the stat cache");
    assert!(
        out.contains(expect_in_output),
        "{what}: no `{expect_in_output}` in {out}"
    );
    let check = repo.run(&["render", "--check"]);
    assert_eq!(check.code, 0, "{what}: {}{}", check.stdout, check.stderr);
    past_racy_window(repo);
    let (hit, slow) = render(repo);
    assert!(
        !hit,
        "{what}: the first no-op after a write must take the full pipeline"
    );
    let (hit, fast) = render(repo);
    assert!(hit, "{what}: the second no-op was not served from the stat cache");
    assert_eq!(slow, fast, "{what}: the cached outcome differs from the full no-op");
}

#[test]
fn a_no_op_render_is_proved_from_stats_and_every_change_is_still_seen() {
    let repo = git_repo();
    assert_seen_then_cached(&repo, "first render", r#""status":"created""#);
    // The cache lives in the git folder: the working tree holds only what render writes.
    assert!(repo.path().join(".git/kaas-gitops/render-stat.bin").is_file());
    assert!(!repo.snapshot().keys().any(|p| p.contains("kaas-gitops/")));

    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore"),
    );
    assert_seen_then_cached(&repo, "an edited tenant", r#""name":"acme","status":"changed""#);

    repo.write("flux/stray.yaml", "kind: Nothing\n");
    assert_seen_then_cached(&repo, "a stray file in flux/", r#""deleted":["flux/stray.yaml"]"#);

    // A file put in an empty folder the render listed: only that folder's mtime moves.
    std::fs::create_dir(repo.path().join("flux/empty")).unwrap();
    past_racy_window(&repo);
    assert!(!render(&repo).0);
    assert!(render(&repo).0);
    repo.write("flux/empty/stray.yaml", "kind: Nothing\n");
    assert_seen_then_cached(
        &repo,
        "a file in an empty folder",
        r#""deleted":["flux/empty/stray.yaml"]"#,
    );

    // An overlay the input-hash skip does not keep (a folder it does not render is in it) is
    // compared file by file, so its files are recorded: an in-place edit of one is seen.
    std::fs::create_dir(repo.path().join("overlays/tenants/acme/extra")).unwrap();
    past_racy_window(&repo);
    assert!(!render(&repo).0);
    assert!(render(&repo).0);
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    let text = repo.read(kcp);
    repo.write(kcp, &text.replacen("kind", "KIND", 1));
    assert_seen_then_cached(
        &repo,
        "an edit in an overlay that is not kept",
        r#""name":"acme","status":"changed""#,
    );
    std::fs::remove_dir(repo.path().join("overlays/tenants/acme/extra")).unwrap();

    // An in-place edit of the same length: only the file's own stat shows it.
    let rel = "flux/kustomization-kaas-platform.yaml";
    let text = repo.read(rel);
    assert!(text.contains("prune: true"), "{text}");
    repo.write(rel, &text.replacen("prune: true", "prune: fals", 1));
    assert_seen_then_cached(&repo, "an edited Flux entry", &format!(r#""written":["{rel}"]"#));

    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    std::fs::remove_file(repo.path().join(kcp)).unwrap();
    assert_seen_then_cached(&repo, "a deleted overlay file", kcp);

    repo.write(
        "tenants/zeta.yaml",
        &repo.read("tenants/initech.yaml").replace("name: initech", "name: zeta"),
    );
    assert_seen_then_cached(&repo, "a new tenant", r#""name":"zeta","status":"created""#);
    std::fs::remove_file(repo.path().join("tenants/zeta.yaml")).unwrap();
    assert_seen_then_cached(&repo, "a removed tenant", r#""name":"zeta","status":"deleted""#);

    let platform = repo.read("kaas.yaml");
    repo.write("kaas.yaml", &format!("{platform}# a comment\n"));
    assert_seen_then_cached(&repo, "an edited kaas.yaml", r#""ok":true"#);
}

#[test]
fn options_that_compare_more_bypass_the_cache_and_a_planted_cache_path_is_ignored() {
    let repo = git_repo();
    assert_seen_then_cached(&repo, "first render", r#""status":"created""#);
    // A hand edit inside an overlay file: a plain render trusts the overlay's recorded input
    // hash, as it does without the cache; --check and --full compare every byte.
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    let text = repo.read(kcp);
    repo.write(kcp, &text.replace("replicas: 2", "replicas: 9"));
    let check = repo.run(&["-v", "render", "--check"]);
    assert_eq!(check.code, 1, "{}", check.stderr);
    assert!(!check.stderr.contains(HIT));
    assert!(check.stdout.contains("+  replicas: 2"), "{}", check.stdout);
    let full = repo.run(&["-v", "render", "--full"]);
    assert_eq!(full.code, 0, "{}", full.stderr);
    assert!(!full.stderr.contains(HIT));
    assert!(repo.read(kcp).contains("replicas: 2"));

    // The cache folder replaced by a file: no cache, no error, renders as usual.
    let (_, _) = render(&repo);
    let dir = repo.path().join(".git/kaas-gitops");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::write(&dir, "not a folder").unwrap();
    for _ in 0..2 {
        let (hit, out) = render(&repo);
        assert!(!hit);
        assert!(out.contains(r#""ok":true"#), "{out}");
    }
    assert_eq!(std::fs::read_to_string(&dir).unwrap(), "not a folder");
}

/// Every rendered file (overlays, flux, kaas.lock), for comparing two repositories.
fn output(repo: &Repo) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut all = repo.snapshot();
    all.retain(|p, _| p.starts_with("overlays/") || p.starts_with("flux/") || p == "kaas.lock");
    all
}

#[test]
fn tenants_from_the_parse_cache_render_the_same_bytes_and_errors_keep_their_lines() {
    // The same edits in a git repository (caches on) and a plain folder (no caches).
    let cached = git_repo();
    let plain = Repo::example();
    for repo in [&cached, &plain] {
        assert_eq!(repo.run(&["render"]).code, 0);
        let spec = repo.read("tenants/acme.yaml");
        repo.write(
            "tenants/acme.yaml",
            &spec.replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore"),
        );
    }
    let run = cached.run(&["-v", "render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("(2 of 3 tenant files from the parse cache)"),
        "{}",
        run.stderr
    );
    assert_eq!(plain.run(&["render"]).code, 0);
    assert_eq!(output(&cached), output(&plain), "the parse cache changed the output");

    // A platform change that makes an unchanged (cached) tenant invalid: the error still names
    // its file, line and column.
    let platform = cached.read("kaas.yaml");
    cached.write("kaas.yaml", &platform.replace("max: v1.34.99}", "max: v1.33.99}"));
    let err = cached.assert_render_refused("tenants/globex.yaml:8:", "v1.34.1");
    assert!(err.contains(r#"version: "v1.34.1""#), "{err}");
}

/// `render --check -v --format json`: (exit code, served from the stat cache, stdout).
fn check(repo: &Repo) -> (i32, bool, String) {
    let run = repo.run(&["-v", "render", "--check", "--format", "json"]);
    (run.code, run.stderr.contains(HIT), run.stdout)
}

/// After a change: the full check fails and names `drifted`; a render repairs it; the next full
/// check passes and records the state; the one after is served from the cache, identically.
#[track_caller]
fn assert_caught_then_cached(repo: &Repo, what: &str, drifted: &str) {
    let (code, hit, out) = check(repo);
    assert_eq!((code, hit), (1, false), "{what}: {out}");
    assert!(out.contains(drifted), "{what}: no `{drifted}` in {out}");
    assert_eq!(repo.run(&["render", "--full"]).code, 0, "{what}");
    past_racy_window(repo);
    let (code, hit, slow) = check(repo);
    assert_eq!((code, hit), (0, false), "{what}: the first check after a write: {slow}");
    let (code, hit, fast) = check(repo);
    assert_eq!(
        (code, hit),
        (0, true),
        "{what}: the second check was not served from the cache"
    );
    assert_eq!(slow, fast, "{what}: the cached check printed something else");
}

#[test]
fn a_passing_check_is_proved_from_stats_and_every_hand_edit_is_still_caught() {
    let repo = git_repo();
    assert_eq!(repo.run(&["render"]).code, 0);
    past_racy_window(&repo);
    let (code, hit, _) = check(&repo);
    assert_eq!((code, hit), (0, false));
    let (code, hit, out) = check(&repo);
    assert_eq!((code, hit), (0, true), "{out}");
    assert!(repo.path().join(".git/kaas-gitops/check-stat.bin").is_file());

    // What a plain render trusts and a check does not: a same-length, in-place edit of a file
    // inside an overlay. Only that file's own stat shows it.
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    let text = repo.read(kcp);
    std::fs::OpenOptions::new()
        .write(true)
        .open(repo.path().join(kcp))
        .and_then(|mut f| std::io::Write::write_all(&mut f, text.replacen("kind", "KIND", 1).as_bytes()))
        .unwrap();
    assert_caught_then_cached(&repo, "an in-place edit inside an overlay", kcp);

    let stray = "overlays/tenants/acme/extra/stray.yaml";
    std::fs::create_dir(repo.path().join("overlays/tenants/acme/extra")).unwrap();
    repo.write(stray, "kind: Nothing\n");
    assert_caught_then_cached(&repo, "a stray file in a new folder of an overlay", stray);

    // An empty folder holds no drift, so the check passes and is recorded; a file put in it
    // later moves only that folder's mtime.
    std::fs::create_dir(repo.path().join("flux/empty")).unwrap();
    past_racy_window(&repo);
    let (code, hit, _) = check(&repo);
    assert_eq!((code, hit), (0, false));
    let (code, hit, _) = check(&repo);
    assert_eq!((code, hit), (0, true));
    repo.write("flux/empty/stray.yaml", "kind: Nothing\n");
    assert_caught_then_cached(
        &repo,
        "a file in an empty folder the check listed",
        "flux/empty/stray.yaml",
    );

    // A temp file a killed run left in the repository root is drift, though the root itself
    // is not recorded (the lock file comes and goes there).
    repo.write(".kaas.lock.kaas-tmp-999", "junk\n");
    let (code, hit, out) = check(&repo);
    assert_eq!((code, hit), (1, false), "a temp file in the root: {out}");
    assert_eq!(repo.run(&["render"]).code, 0);
    assert!(!repo.path().join(".kaas.lock.kaas-tmp-999").exists());

    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore"),
    );
    assert_caught_then_cached(&repo, "an edited tenant", kcp);

    // A render that writes forgets the check's record too.
    repo.write("tenants/acme.yaml", &spec);
    assert_eq!(repo.run(&["render"]).code, 0);
    assert!(!repo.path().join(".git/kaas-gitops/check-stat.bin").exists());
    let (code, hit, _) = check(&repo);
    assert_eq!((code, hit), (0, false));
}

/// `args` with the run's timing cut from its last line, which is all that may differ between a
/// full run and one the cache serves.
fn human(repo: &Repo, args: &[&str]) -> (bool, String) {
    let mut all = vec!["-v"];
    all.extend_from_slice(args);
    let run = repo.run(&all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let hit = run.stderr.contains(HIT);
    let text: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| !l.starts_with("stat cache:") && !l.starts_with("timings:"))
        .map(|l| l.split(" in ").next().unwrap_or(l))
        .collect();
    (hit, text.join("\n"))
}

#[test]
fn a_replayed_warning_shows_its_source_line_as_the_full_run_does() {
    // The Packet fixture warns at a field of kaas.yaml: the message shows that line and a caret.
    let repo = git_init(Repo::fixture("providers/packet"));
    assert_eq!(repo.run(&["render"]).code, 0);
    past_racy_window(&repo);
    for args in [&["render"][..], &["render", "--check"][..]] {
        let (hit, full) = human(&repo, args);
        assert!(!hit, "{args:?}");
        assert!(
            full.contains("warning:") && full.contains(" | "),
            "{args:?}: no located warning in {full}"
        );
        let (hit, cached) = human(&repo, args);
        assert!(hit, "{args:?}: not served from the stat cache");
        assert_eq!(full, cached, "{args:?}");
    }
}

#[test]
fn a_symlinked_output_is_never_recorded() {
    let repo = git_repo();
    assert_eq!(repo.run(&["render"]).code, 0);
    // A kept overlay's kustomization.yaml made a symlink to a file outside the repository.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("kustomization.yaml");
    let rel = "overlays/tenants/acme/kustomization.yaml";
    std::fs::write(&target, repo.read(rel)).unwrap();
    std::fs::remove_file(repo.path().join(rel)).unwrap();
    std::os::unix::fs::symlink(&target, repo.path().join(rel)).unwrap();
    past_racy_window(&repo);
    for _ in 0..2 {
        let (hit, _) = render(&repo);
        assert!(!hit, "a symlinked output was trusted");
    }
}

#[test]
fn kaas_repositories_in_folders_of_one_git_repository_each_keep_their_own_records() {
    use crate::common::{bin, copy_tree, project_root};
    let outer = git_init(Repo::empty());
    let folders = ["platform/eu", "platform/us"];
    for folder in folders {
        for part in ["kaas.yaml", "tenants", "base"] {
            copy_tree(&project_root().join(part), &outer.path().join(folder).join(part));
        }
    }
    // `render --check -v` in `folder`: (exit code, served from the stat cache).
    let check = |folder: &str| {
        let out = bin()
            .arg("--repo")
            .arg(outer.path().join(folder))
            .args(["-v", "render", "--check"])
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stderr.contains(HIT))
    };
    for folder in folders {
        let run = bin()
            .arg("--repo")
            .arg(outer.path().join(folder))
            .args(["render"])
            .output()
            .expect("the binary runs");
        assert!(run.status.success(), "{run:?}");
    }
    past_racy_window(&outer);
    for folder in folders {
        assert_eq!(check(folder), (Some(0), false), "{folder}: the first check compares");
    }
    // Each folder's record survives the other's check.
    for _ in 0..2 {
        for folder in folders {
            assert_eq!(check(folder), (Some(0), true), "{folder}: not served from its record");
        }
    }
    let mut caches: Vec<String> = std::fs::read_dir(outer.path().join(".git"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kaas-gitops"))
        .collect();
    caches.sort();
    assert_eq!(caches.len(), 2, "one cache folder per kaas repository: {caches:?}");
    assert!(caches.iter().all(|c| c.starts_with("kaas-gitops-")), "{caches:?}");
    // And an edit in one is caught there, as at the top of a working tree.
    let acme = outer
        .path()
        .join("platform/us/overlays/tenants/acme/kustomization.yaml");
    let text = std::fs::read_to_string(&acme).unwrap();
    std::fs::write(&acme, text.replacen("resources:", "resources: ", 1)).unwrap();
    assert_eq!(check("platform/us"), (Some(1), false));
    assert_eq!(check("platform/eu"), (Some(0), true));
}

#[test]
fn a_git_folder_of_another_user_above_the_repository_is_never_trusted() {
    use crate::common::{bin, copy_tree, project_root};
    use std::os::unix::fs::MetadataExt;
    // Anyone may create `/tmp/.git`; a record there could claim a failing check passed.
    let outer = Repo::empty();
    let foreign = outer.path().join(".git");
    std::fs::create_dir(&foreign).unwrap();
    if std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).is_err() {
        eprintln!("SKIPPED: only root can give `.git` to another user here");
        return;
    }
    assert_ne!(
        std::fs::metadata(&foreign).unwrap().uid(),
        rustix::process::geteuid().as_raw()
    );
    let inner = outer.path().join("work");
    for part in ["kaas.yaml", "tenants", "base"] {
        copy_tree(&project_root().join(part), &inner.join(part));
    }
    let run = |args: &[&str]| {
        let out = bin()
            .arg("--repo")
            .arg(&inner)
            .args(args)
            .output()
            .expect("the binary runs");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert_eq!(run(&["render"]).0, Some(0));
    past_racy_window(&outer);
    for _ in 0..3 {
        let (code, stderr) = run(&["-v", "render", "--check"]);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(
            !stderr.contains(HIT),
            "served from a record in another user's git folder"
        );
    }
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        0,
        "nothing is written there"
    );
}
