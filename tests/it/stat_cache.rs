//! The stat cache (issue 8): a no-op `render` in a git repository is proved from file stats
//! alone, prints what the full no-op printed, and any change to an input or a compared output
//! still takes the full pipeline.

use crate::common::Repo;

const HIT: &str = "stat cache: no input or output changed";

fn git_repo() -> Repo {
    let repo = Repo::example();
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
    assert!(repo.path().join(".git/kaas-gitops/render-stat.json").is_file());
    assert!(!repo.snapshot().keys().any(|p| p.contains("kaas-gitops/")));

    let spec = repo.read("tenants/acme.yaml");
    repo.write(
        "tenants/acme.yaml",
        &spec.replace("replicas: 2\n    dataStore", "replicas: 3\n    dataStore"),
    );
    assert_seen_then_cached(&repo, "an edited tenant", r#""name":"acme","status":"changed""#);

    repo.write("flux/stray.yaml", "kind: Nothing\n");
    assert_seen_then_cached(&repo, "a stray file in flux/", r#""deleted":["flux/stray.yaml"]"#);

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
