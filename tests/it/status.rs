//! `status` and `wait` where no cluster is needed: the rendered fleet and the kubeconfig are
//! checked first, and every failure to reach the cluster is one message and exit 2. Against a
//! real API server and the real Flux controllers: the e2e scenario "status and wait".

use std::ffi::OsStr;

use crate::common::{Repo, Run};

fn rendered() -> Repo {
    let repo = Repo::example();
    let r = repo.run(&["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    repo
}

/// A kubeconfig with one context `lab` whose server is `server`.
fn kubeconfig(dir: &std::path::Path, server: &str) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: lab\nclusters:\n- name: lab\n  cluster: {{server: \"{server}\"}}\nusers:\n- name: me\n  user: {{token: not-a-secret}}\ncontexts:\n- name: lab\n  context: {{cluster: lab, user: me}}\n"
        ),
    )
    .unwrap();
    path
}

fn run(repo: &Repo, args: &[&str], kubeconfig_env: &OsStr) -> Run {
    repo.run_with(args, &[("KUBECONFIG", kubeconfig_env), ("HOME", kubeconfig_env)])
}

#[test]
fn an_unreachable_cluster_is_one_message_and_exit_2() {
    let repo = rendered();
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    for command in ["status", "wait"] {
        let config = config.to_string_lossy();
        let r = run(
            &repo,
            &[command, "--kubeconfig", &config, "--revision", "0123456"],
            OsStr::new(""),
        );
        assert_eq!(r.code, 2, "{command}: {}", r.stderr);
        assert!(
            r.stderr
                .starts_with("error: cannot reach the management cluster at https://127.0.0.1:9/: "),
            "{command}: {}",
            r.stderr
        );
        assert!(r.stderr.contains("hint: check that the cluster is up"), "{}", r.stderr);
        assert_eq!(r.stdout, "", "nothing on stdout");
    }
    // KUBECONFIG is read as kubectl reads it; --format json says the same in one document.
    let r = run(&repo, &["status", "--format", "json"], config.as_os_str());
    assert_eq!(r.code, 2, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false);
    assert!(
        doc["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("cannot reach the management cluster at https://127.0.0.1:9/"),
        "{doc}"
    );
}

#[test]
fn an_unknown_context_and_a_missing_kubeconfig_are_named() {
    let repo = rendered();
    let dir = tempfile::tempdir().unwrap();
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    let r = run(
        &repo,
        &["status", "--kubeconfig", &config.to_string_lossy(), "--context", "prod"],
        OsStr::new(""),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.starts_with(&format!(
            "error: cannot load the kubeconfig `{}`: it has no context `prod` (it has: lab)\n",
            config.display()
        )),
        "{}",
        r.stderr
    );
    let missing = dir.path().join("none");
    let r = run(
        &repo,
        &["status", "--kubeconfig", &missing.to_string_lossy()],
        OsStr::new(""),
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with(&format!("error: cannot load the kubeconfig `{}`: ", missing.display())),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint: name the management cluster's kubeconfig"),
        "{}",
        r.stderr
    );
}

#[test]
fn tenants_are_checked_against_the_rendered_fleet_before_any_request() {
    let repo = rendered();
    let dir = tempfile::tempdir().unwrap();
    // A server that would hang the run if it were asked: nothing listens, but no request is made.
    let config = kubeconfig(dir.path(), "https://127.0.0.1:9");
    let r = run(
        &repo,
        &["status", "hooli", "--kubeconfig", &config.to_string_lossy()],
        OsStr::new(""),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "error: no tenant `hooli` is rendered under `flux/`\n\nhint: rendered tenants: acme, globex, initech\n"
    );
    let empty = Repo::example();
    let r = run(
        &empty,
        &["wait", "--kubeconfig", &config.to_string_lossy()],
        OsStr::new(""),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .starts_with("error: nothing rendered: no Flux Kustomization under `flux/`"),
        "{}",
        r.stderr
    );
}

#[test]
fn wait_takes_a_human_timeout() {
    let repo = rendered();
    let r = repo.run(&["wait", "--timeout", "soon"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("invalid value 'soon' for '--timeout <DURATION>'"),
        "{}",
        r.stderr
    );
}
