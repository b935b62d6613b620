//! `pin` against real registries on loopback (Debian's `docker-registry`), and `render` from the
//! lock it writes, offline. Each test asserts what a user sees: the exit code, the messages, and
//! the bytes of `kaas.lock`. See: issue 3.

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;

use crate::common::{Repo, Run, project_root};
use crate::registry::{FakeRegistry, Fault, Registry, docker_config, fake_manifest};

/// The tags the example platform renders, on a local registry: (repository path, tag).
const KAMAJI: (&str, &str) = ("clastix/kamaji", "26.8.2-edge");
const ETCD: (&str, &str) = ("coreos/etcd", "v3.6.12");
const CFSSL: (&str, &str) = ("cfssl/cfssl", "v1.6.5");
const KUBECTL: (&str, &str) = ("clastix/kubectl", "v1.33");
const ETCD_JOB: (&str, &str) = ("coreos/etcd", "v3.5.6");
const CPP: (&str, &str) = ("clastix/cluster-api-control-plane-provider-kamaji", "v0.20.0");
const AUTOSCALER: (&str, &str) = ("autoscaling/cluster-autoscaler", "v1.35.0");
/// The autoscaler of each tenant minor (`clusterAutoscaler.tagsByMinor`).
const AUTOSCALER_31: (&str, &str) = ("autoscaling/cluster-autoscaler", "v1.31.5");
const AUTOSCALER_32: (&str, &str) = ("autoscaling/cluster-autoscaler", "v1.32.7");
const AUTOSCALER_33: (&str, &str) = ("autoscaling/cluster-autoscaler", "v1.33.5");
const AUTOSCALER_34: (&str, &str) = ("autoscaling/cluster-autoscaler", "v1.34.4");
/// Every image but Kamaji's, whose tags some tests choose.
const OTHERS: [(&str, &str); 10] = [
    ETCD,
    CFSSL,
    KUBECTL,
    ETCD_JOB,
    CPP,
    AUTOSCALER,
    AUTOSCALER_31,
    AUTOSCALER_32,
    AUTOSCALER_33,
    AUTOSCALER_34,
];

/// Pushes every image of the platform; etcd's tag is multi-arch (an index).
fn push_platform(reg: &Registry) {
    reg.push_image(KAMAJI.0, KAMAJI.1, "kamaji 26.8.2");
    push_others(reg);
}

fn push_others(reg: &Registry) {
    for (repo, tag) in OTHERS {
        if (repo, tag) == ETCD {
            reg.push_index(repo, tag, "etcd 3.6.12");
        } else {
            reg.push_image(repo, tag, &format!("{repo} {tag}"));
        }
    }
}

/// The example `kaas.yaml` with every image on `host` (the kamaji-etcd job images made
/// explicit), `host` served over plain HTTP, and Kamaji's `tag:` line replaced by `kamaji_tag`.
fn platform_on(host: &str, kamaji_tag: &str) -> String {
    let text = std::fs::read_to_string(project_root().join("kaas.yaml")).unwrap();
    let edits = [
        ("      tag: 26.8.2-edge\n", format!("      {kamaji_tag}\n")),
        (
            "    image: {repository: quay.io/coreos/etcd, tag: v3.6.12}\n",
            format!(
                "    image: {{repository: quay.io/coreos/etcd, tag: v3.6.12}}\n    jobs:\n      cfssl: {{repository: {h}/cfssl/cfssl, tag: v1.6.5}}\n      kubectl: {{repository: {h}/clastix/kubectl, tag: v1.33}}\n      etcd: {{repository: {h}/coreos/etcd, tag: v3.5.6}}\n",
                h = host
            ),
        ),
        (
            "  git:\n",
            format!("  registries:\n    insecure: [\"{host}\"]\n  git:\n"),
        ),
    ];
    let mut out = text;
    for (from, to) in edits {
        assert!(out.contains(from), "the example kaas.yaml has `{from}`");
        out = out.replacen(from, &to, 1);
    }
    for registry in ["docker.io/", "quay.io/", "registry.k8s.io/"] {
        out = out.replace(registry, &format!("{host}/"));
    }
    out
}

/// The example repository (with its `kaas.lock`, which holds VIPs) pointed at `host`.
pub(crate) fn repo_on(host: &str, kamaji_tag: &str) -> Repo {
    let repo = Repo::example();
    crate::common::copy_tree(&project_root().join("kaas.lock"), &repo.path().join("kaas.lock"));
    repo.write("kaas.yaml", &platform_on(host, kamaji_tag));
    repo
}

/// A Docker config dir with nothing in it, so no test reads the developer's `~/.docker`.
pub(crate) fn no_credentials() -> tempfile::TempDir {
    docker_config("{}")
}

/// `kaas-gitops pin ARGS` with credentials from `config` and a short registry timeout.
#[track_caller]
pub(crate) fn pin(repo: &Repo, args: &[&str], config: &tempfile::TempDir) -> Run {
    let mut all = vec!["pin"];
    all.extend_from_slice(args);
    repo.run_with(
        &all,
        &[
            ("DOCKER_CONFIG", config.path().as_os_str()),
            ("HOME", config.path().as_os_str()),
            ("KAAS_REGISTRY_TIMEOUT", OsStr::new("5")),
        ],
    )
}

/// `stderr` with the registry's address made stable for snapshots.
fn filtered(text: &str, hosts: &[&str]) -> String {
    let mut out = text.to_string();
    for (i, h) in hosts.iter().enumerate() {
        out = out.replace(h, if i == 0 { "[REGISTRY]" } else { "[REGISTRY2]" });
    }
    out
}

/// The digest `kaas.lock` pins for `image:tag`.
#[track_caller]
fn locked(repo: &Repo, image: &str, tag: &str) -> String {
    let lock = repo.read("kaas.lock");
    let entry = format!("- image: {image}\n  tag: {tag}\n  digest: ");
    let at = lock
        .find(&entry)
        .unwrap_or_else(|| panic!("no pin for `{image}:{tag}` in:\n{lock}"));
    lock[at + entry.len()..].lines().next().unwrap().to_string()
}

fn inode(repo: &Repo) -> u64 {
    std::fs::metadata(repo.path().join("kaas.lock")).unwrap().ino()
}

#[test]
fn pin_records_the_registrys_digests_and_render_uses_them_offline() {
    let mut reg = Registry::start();
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let creds = no_credentials();

    let run = pin(&repo, &[], &creds);
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("pin_first_run_stderr", filtered(&run.stderr, &[&host]));
    for (path, tag) in [KAMAJI].iter().chain(OTHERS.iter()) {
        assert_eq!(
            locked(&repo, &format!("{host}/{path}"), tag),
            reg.digest(path, tag),
            "{path}:{tag}"
        );
    }
    // A multi-arch tag is pinned by its index (what `reg.digest` states for the tag), the
    // digest nodes of every architecture pull; the snapshot above shows it marked as an index.
    let lock = repo.read("kaas.lock");
    insta::assert_snapshot!("pin_lock", filtered(&lock, &[&host]));
    assert!(
        lock.contains("- tenant: globex\n  address: \"10.0.4.100\""),
        "VIPs kept:\n{lock}"
    );

    // A second pin asks nothing that changes anything and does not rewrite the file.
    let before = (repo.read("kaas.lock"), inode(&repo));
    let again = pin(&repo, &[], &creds);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stderr.starts_with("`kaas.lock` is up to date: 0 new, 0 moved, 11 unchanged\nwarning: chart kamaji 0.0.0+latest is not reproducible"),
        "{}",
        again.stderr
    );
    assert_eq!((repo.read("kaas.lock"), inode(&repo)), before);

    // Render needs no registry: every image is rendered `tag@digest` from the lock.
    reg.stop();
    let render = repo.run(&["render", "--locked"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(!render.stderr.contains("warning"), "{}", render.stderr);
    let kamaji = repo.read("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    let kamaji_digest = locked(&repo, &format!("{host}/{}", KAMAJI.0), KAMAJI.1);
    assert!(
        kamaji.contains(&format!("      tag: 26.8.2-edge@{kamaji_digest}\n")),
        "{kamaji}"
    );
    let rendered: String = repo
        .snapshot()
        .into_iter()
        .filter(|(p, _)| p.starts_with("overlays/"))
        .map(|(_, b)| String::from_utf8(b).unwrap())
        .collect();
    // Every image a tenant or the platform uses: the autoscaler of initech's 1.32 and globex's
    // 1.34 (the tags of minors no autoscaled tenant runs are pinned, not rendered).
    let used = [
        KAMAJI,
        ETCD,
        CFSSL,
        KUBECTL,
        ETCD_JOB,
        CPP,
        AUTOSCALER_32,
        AUTOSCALER_34,
    ];
    for (path, tag) in used {
        let digest = locked(&repo, &format!("{host}/{path}"), tag);
        assert!(
            rendered.contains(&format!("{tag}@{digest}")),
            "`{path}:{tag}@{digest}` is rendered"
        );
    }

    // With the registry gone, an update fails cleanly and leaves the lock as it was.
    let before = (repo.read("kaas.lock"), inode(&repo));
    let down = pin(&repo, &["--update"], &creds);
    assert_eq!(down.code, 2, "{}", down.stderr);
    assert!(
        down.stderr.starts_with(&format!(
            "error: cannot connect to registry `{host}` to resolve `{host}/clastix/kamaji:26.8.2-edge`\n"
        )),
        "{}",
        down.stderr
    );
    assert!(down.stderr.contains("\nhint: check that `"), "{}", down.stderr);
    assert!(
        down.stderr.ends_with("note: `kaas.lock` was not changed\n"),
        "{}",
        down.stderr
    );
    assert_eq!((repo.read("kaas.lock"), inode(&repo)), before);
}

#[test]
fn json_output_lists_every_pin() {
    let reg = Registry::start();
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let run = pin(&repo, &["--format", "json"], &no_credentials());
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], true);
    assert_eq!(doc["written"], true);
    let images = doc["images"].as_array().unwrap();
    assert_eq!(images.len(), 11);
    let etcd = images
        .iter()
        .find(|i| i["image"] == format!("{host}/coreos/etcd") && i["tag"] == "v3.6.12")
        .unwrap();
    assert_eq!(etcd["digest"], reg.digest(ETCD.0, ETCD.1));
    assert_eq!(etcd["index"], true);
    assert_eq!(etcd["change"], "new");
    assert_eq!(etcd["fields"], serde_json::json!(["spec.kamajiEtcd.image"]));
}

#[test]
fn the_edge_policy_picks_the_newest_edge_release_in_either_format() {
    let reg = Registry::start();
    push_others(&reg);
    let host = reg.host();
    // Before March 2026: only `edge-YY.M.N` releases, a moving `latest`, and a pre-release.
    for tag in ["edge-25.12.3", "edge-26.2.5", "latest", "26.3.1-edge-rc.1"] {
        reg.push_image(KAMAJI.0, tag, &format!("kamaji {tag}"));
    }
    let policy = "tagPolicy: {pattern: edge, exclude: [26.11.1-edge]}";
    let repo = repo_on(&host, policy);
    let creds = no_credentials();

    let run = pin(&repo, &[], &creds);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kamaji = format!("{host}/{}", KAMAJI.0);
    assert_eq!(
        locked(&repo, &kamaji, "edge-26.2.5"),
        reg.digest(KAMAJI.0, "edge-26.2.5")
    );

    // New releases in the current format; 26.10 is newer than 26.9 (numbers, not text);
    // 26.11.1-edge is excluded and 26.12.1-edge-rc.1 is a pre-release.
    for tag in [
        "26.8.2-edge",
        "26.9.1-edge",
        "26.10.1-edge",
        "26.11.1-edge",
        "26.12.1-edge-rc.1",
    ] {
        reg.push_image(KAMAJI.0, tag, &format!("kamaji {tag}"));
    }
    reg.push_image(KAMAJI.0, "latest", "kamaji latest again");

    // Plain `pin` keeps the pinned tag: pins move only on `--update`.
    let before = repo.read("kaas.lock");
    let sticky = pin(&repo, &[], &creds);
    assert_eq!(sticky.code, 0, "{}", sticky.stderr);
    assert_eq!(repo.read("kaas.lock"), before);

    let update = pin(&repo, &["--update"], &creds);
    assert_eq!(update.code, 0, "{}", update.stderr);
    let old = reg.digest(KAMAJI.0, "edge-26.2.5");
    let new = reg.digest(KAMAJI.0, "26.10.1-edge");
    assert!(
        update.stderr.starts_with(&format!(
            "moved     {kamaji}:edge-26.2.5@{old} -> {kamaji}:26.10.1-edge@{new}\n"
        )),
        "{}",
        update.stderr
    );
    assert!(
        update
            .stderr
            .contains("\nwrote `kaas.lock`: 0 new, 1 moved, 10 unchanged\n"),
        "{}",
        update.stderr
    );
    // Kamaji's CRDs follow its image: those of the new tag are pinned in place of the old.
    assert!(
        update
            .stderr
            .contains("pinned    crds kamaji 26.10.1-edge (kamaji.clastix.io_tenantcontrolplanes.yaml) sha256:"),
        "{}",
        update.stderr
    );
    assert_eq!(locked(&repo, &kamaji, "26.10.1-edge"), new);
    assert!(
        !repo.read("kaas.lock").contains("edge-26.2.5"),
        "the old pin and its CRDs are gone"
    );

    // `render` reads the policy's pick from the lock.
    let render = repo.run(&["render", "--locked"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(
        repo.read("overlays/platform/kamaji/helmrelease-kamaji.yaml")
            .contains(&format!("26.10.1-edge@{new}"))
    );
}

#[test]
fn a_policy_pick_that_cannot_run_the_supported_kubernetes_is_refused_and_nothing_written() {
    let reg = Registry::start();
    push_others(&reg);
    let host = reg.host();
    // edge-25.9.1 builds on kubeadm v1.33.4; the example supports up to v1.34.99.
    reg.push_image(KAMAJI.0, "edge-25.9.1", "kamaji edge-25.9.1");
    let repo = repo_on(&host, "tagPolicy: {pattern: edge}");
    let creds = no_credentials();
    let before = repo.read("kaas.lock");

    let run = pin(&repo, &[], &creds);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(
            "error: `v1.34.99` is newer than Kamaji `edge-25.9.1` (the newest tag the `tagPolicy` allows) can run: its webhook refuses a TenantControlPlane above v1.33.4 (release table: `edge-25.9.1` -> `KubeadmVersion` v1.33.4, from its internal/upgrade/kubeadm_version.go)\n  --> kaas.yaml:19:"
        ),
        "{}",
        run.stderr
    );
    for expected in [
        "= field: `spec.kamaji.supportedKubernetes.max`",
        "= hint: set `max` to at most `v1.33.4`, or move `spec.kamaji.image` to a Kamaji release that runs 1.34; `pin` does not fall back to an older tag, which runs no newer Kubernetes",
        "note: `kaas.lock` was not changed",
    ] {
        assert!(run.stderr.contains(expected), "no `{expected}` in:\n{}", run.stderr);
    }
    assert_eq!(repo.read("kaas.lock"), before);

    // A release that runs v1.34 is pinned.
    reg.push_image(KAMAJI.0, KAMAJI.1, "kamaji 26.8.2");
    let run = pin(&repo, &[], &creds);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kamaji = format!("{host}/{}", KAMAJI.0);
    assert_eq!(locked(&repo, &kamaji, KAMAJI.1), reg.digest(KAMAJI.0, KAMAJI.1));

    // A platform change above what the newest release runs: `--update` refuses, and names the
    // pinned release it checked.
    repo.replace("kaas.yaml", "max: v1.34.99", "max: v1.37.0");
    let before = repo.read("kaas.lock");
    let update = pin(&repo, &["--update", "--format", "json"], &creds);
    assert_eq!(update.code, 1, "{}", update.stderr);
    let doc: serde_json::Value = serde_json::from_str(&update.stdout).unwrap();
    let d = &doc["diagnostics"][0];
    assert_eq!(d["file"], "kaas.yaml", "{doc}");
    assert_eq!(d["line"], 19, "{doc}");
    assert_eq!(d["field"], "spec.kamaji.supportedKubernetes.max", "{doc}");
    assert!(
        d["message"].as_str().unwrap().starts_with(
            "`v1.37.0` is newer than Kamaji `26.8.2-edge` (pinned in kaas.lock) can run: its webhook refuses a TenantControlPlane above v1.36 (release table: `26.8.2-edge` -> `KubeadmVersion` v1.36.0"
        ),
        "{doc}"
    );
    assert_eq!(repo.read("kaas.lock"), before);
}

#[test]
fn a_tag_that_moved_is_reported_by_update() {
    let reg = Registry::start();
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let creds = no_credentials();
    assert_eq!(pin(&repo, &[], &creds).code, 0);
    let old = reg.digest(KAMAJI.0, KAMAJI.1);
    let new = reg.push_image(KAMAJI.0, KAMAJI.1, "kamaji 26.8.2 rebuilt");

    let only = pin(&repo, &["--update", &format!("{host}/clastix/kamaji")], &creds);
    assert_eq!(only.code, 0, "{}", only.stderr);
    let kamaji = format!("{host}/clastix/kamaji:26.8.2-edge");
    assert_eq!(
        only.stderr,
        format!("moved     {kamaji}@{old} -> {kamaji}@{new}\nwrote `kaas.lock`: 0 new, 1 moved, 0 unchanged\n")
    );
}

#[test]
fn basic_auth_credentials_come_from_the_docker_config_file() {
    let reg = Registry::with_htpasswd("kaas", "s3cret-pass");
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let before = repo.read("kaas.lock");

    let anonymous = pin(&repo, &[], &no_credentials());
    assert_denied(&anonymous, &host, &format!("{host}/clastix/kamaji:26.8.2-edge"));
    assert_eq!(repo.read("kaas.lock"), before);

    let wrong = logged_in(&host, "wrong");
    let denied = pin(&repo, &[], &wrong);
    assert_eq!(denied.code, 2, "{}", denied.stderr);
    assert_eq!(repo.read("kaas.lock"), before);

    let good = logged_in(&host, "s3cret-pass");
    let run = pin(&repo, &[], &good);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        locked(&repo, &format!("{host}/clastix/kamaji"), "26.8.2-edge"),
        reg.digest(KAMAJI.0, KAMAJI.1)
    );

    // Without DOCKER_CONFIG, `~/.docker/config.json` is read.
    let home = tempfile::tempdir().unwrap();
    crate::common::copy_tree(
        &good.path().join("config.json"),
        &home.path().join(".docker/config.json"),
    );
    std::fs::write(repo.path().join("kaas.lock"), &before).unwrap();
    let from_home = repo.run_with(
        &["pin"],
        &[
            ("HOME", home.path().as_os_str()),
            ("DOCKER_CONFIG", OsStr::new("")),
            ("KAAS_REGISTRY_TIMEOUT", OsStr::new("5")),
        ],
    );
    assert_eq!(from_home.code, 0, "{}", from_home.stderr);
}

#[test]
fn public_images_pin_through_the_anonymous_token_flow_and_private_ones_with_credentials() {
    // docker.io, quay.io, ghcr.io and registry.k8s.io answer an anonymous pull with a 401 that
    // names a token server; a client fetches a pull token there and retries.
    let reg = Registry::with_token_server();
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (image, tag) in [KAMAJI, ETCD, AUTOSCALER] {
        assert_eq!(locked(&repo, &format!("{host}/{image}"), tag), reg.digest(image, tag));
    }
    let log = reg.token_log();
    assert!(
        log.lines().any(|l| l == "anonymous repository:clastix/kamaji:pull"),
        "no anonymous pull token was asked for:\n{log}"
    );

    // A repository the token server grants only to a logged-in user.
    reg.push_image("private/kamaji", "26.8.2-edge", "private kamaji");
    let platform = repo.read("kaas.yaml");
    let private = platform.replace(
        &format!("repository: {host}/clastix/kamaji\n"),
        &format!("repository: {host}/private/kamaji\n"),
    );
    assert_ne!(private, platform);
    repo.write("kaas.yaml", &private);
    let before = repo.read("kaas.lock");
    let anonymous = pin(&repo, &[], &no_credentials());
    assert_denied(&anonymous, &host, &format!("{host}/private/kamaji:26.8.2-edge"));
    assert_eq!(repo.read("kaas.lock"), before);

    let good = logged_in(&host, "s3cret-pass");
    let run = pin(&repo, &[], &good);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        locked(&repo, &format!("{host}/private/kamaji"), "26.8.2-edge"),
        reg.digest("private/kamaji", "26.8.2-edge")
    );
    let log = reg.token_log();
    assert!(
        log.lines().any(|l| l == "kaas repository:private/kamaji:pull"),
        "the credentials were not sent to the token server:\n{log}"
    );
}

/// A Docker config logged in to `host` as the test registries' user `kaas`.
fn logged_in(host: &str, password: &str) -> tempfile::TempDir {
    docker_config(&format!(
        r#"{{"auths": {{"{host}": {{"auth": "{}"}}}}}}"#,
        b64(&format!("kaas:{password}"))
    ))
}

/// `pin` was denied `reference` (exit 2), said so first, and said how to log in.
#[track_caller]
fn assert_denied(run: &Run, host: &str, reference: &str) {
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with(&format!(
            "error: registry `{host}` denied access to `{reference}` (HTTP 401)\n"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("hint: log in with `docker login {host}`")),
        "{}",
        run.stderr
    );
}

fn b64(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[test]
fn a_registry_that_stops_part_way_leaves_the_lock_untouched() {
    let main = Registry::start();
    push_platform(&main);
    let mut other = Registry::start();
    other.push_image(AUTOSCALER.0, AUTOSCALER.1, "autoscaler elsewhere");
    let (host, gone) = (main.host(), other.host());
    other.stop();
    // cluster-autoscaler, the last image pinned, lives on the registry that is gone.
    let text = platform_on(&host, "tag: 26.8.2-edge")
        .replace(&format!("{host}/autoscaling"), &format!("{gone}/autoscaling"))
        .replace(
            &format!("insecure: [\"{host}\"]"),
            &format!("insecure: [\"{host}\", \"{gone}\"]"),
        );
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    repo.write("kaas.yaml", &text);
    let before = repo.read("kaas.lock");

    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 2, "{}", run.stderr);
    insta::assert_snapshot!("pin_registry_gone_stderr", filtered(&run.stderr, &[&gone, &host]));
    assert_eq!(repo.read("kaas.lock"), before);
}

#[test]
fn a_tag_that_does_not_exist_is_a_user_error() {
    let reg = Registry::start();
    push_platform(&reg);
    let host = reg.host();
    let repo = repo_on(&host, "tag: 26.8.9-edge");
    let before = repo.read("kaas.lock");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!("pin_missing_tag_stderr", filtered(&run.stderr, &[&host]));
    assert_eq!(repo.read("kaas.lock"), before);
}

#[test]
fn a_manifest_that_does_not_match_its_digest_is_refused() {
    let fake = FakeRegistry::start(Fault::DigestMismatch);
    let host = fake.host();
    let repo = repo_on(&host, "tag: 26.8.2-edge");
    let before = repo.read("kaas.lock");
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 2, "{}", run.stderr);
    let (body, stated) = fake_manifest();
    let actual = crate::registry::sha256(&body);
    assert!(
        run.stderr.starts_with(&format!(
            "error: the manifest of `{host}/clastix/kamaji:26.8.2-edge` from registry `{host}` does not match its digest: the registry states `{stated}`, the bytes received hash to `{actual}`\n"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(repo.read("kaas.lock"), before);
}

#[test]
fn server_errors_and_silence_fail_within_bounds() {
    for (fault, expected) in [
        (Fault::ServerError, "failed with HTTP 500 to resolve"),
        (Fault::Silent, "did not answer within 1 s to resolve"),
    ] {
        let fake = FakeRegistry::start(fault);
        let host = fake.host();
        let repo = repo_on(&host, "tag: 26.8.2-edge");
        let before = repo.read("kaas.lock");
        let run = repo.run_with(
            &["pin", "--timeout", "1"],
            &[("DOCKER_CONFIG", no_credentials().path().as_os_str())],
        );
        assert_eq!(run.code, 2, "{fault:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with(&format!(
                "error: registry `{host}` {expected} `{host}/clastix/kamaji:26.8.2-edge`"
            )),
            "{fault:?}: {}",
            run.stderr
        );
        assert_eq!(repo.read("kaas.lock"), before);
    }
}

#[test]
fn an_unknown_image_argument_is_refused_before_any_request() {
    let repo = Repo::example();
    let run = pin(&repo, &["docker.io/library/nginx"], &no_credentials());
    assert_eq!(run.code, 1, "{}", run.stderr);
    insta::assert_snapshot!("pin_unknown_image_stderr", run.stderr);
    assert!(!repo.path().join("kaas.lock").exists());
}

#[test]
fn an_invalid_platform_is_reported_like_render_does() {
    let repo = Repo::example();
    let text = repo
        .read("kaas.yaml")
        .replace("tag: v3.6.12", "tag: \"v3.6.12@sha256:00\"");
    repo.write("kaas.yaml", &text);
    let run = pin(&repo, &[], &no_credentials());
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("is not an image tag"), "{}", run.stderr);
    assert!(run.stderr.ends_with("nothing was written\n"), "{}", run.stderr);
}

#[test]
fn render_without_pins_warns_and_render_locked_fails() {
    let repo = Repo::example();
    let locked = repo.run(&["render", "--locked"]);
    assert_eq!(locked.code, 1, "{}", locked.stderr);
    // Every unpinned image, at its field, and nothing written.
    insta::assert_snapshot!("render_locked_without_pins_stderr", locked.stderr);
    assert!(
        !repo.path().join("overlays").exists(),
        "nothing is rendered under --locked"
    );

    let plain = repo.run(&["render"]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(
        plain.stderr.starts_with(
            "warning: 11 image(s) have no digest in kaas.lock and are rendered by tag alone, which is not reproducible: docker.io/clastix/kamaji:26.8.2-edge, "
        ),
        "{}",
        plain.stderr
    );
    let kamaji = repo.read("overlays/platform/kamaji/helmrelease-kamaji.yaml");
    assert!(kamaji.contains("      tag: 26.8.2-edge\n"), "{kamaji}");
    assert!(!kamaji.contains("sha256"), "no digest is invented:\n{kamaji}");
}

/// The sha256 `kaas.lock` records for the release asset at `path` under https://github.com.
#[track_caller]
fn locked_crds(lock: &str, path: &str) -> String {
    let entry = format!("- url: https://github.com{path}\n");
    let at = lock
        .find(&entry)
        .unwrap_or_else(|| panic!("no CRD asset `{path}` in:\n{lock}"));
    let sha = lock[at..]
        .lines()
        .take(5)
        .find_map(|l| l.trim().strip_prefix("sha256: "))
        .unwrap_or_else(|| panic!("no sha256 for `{path}` in:\n{lock}"));
    sha.to_string()
}

/// The sha256 of what `mirror` serves at `path`.
fn served_sha256(mirror: &crate::common::ReleaseMirror, path: &str) -> String {
    use sha2::{Digest as _, Sha256};
    let mut resp = ureq::get(&format!("{}{path}", mirror.url()))
        .call()
        .expect("the mirror answers");
    let bytes = resp.body_mut().read_to_vec().expect("a body");
    format!("sha256:{}", hex::encode(Sha256::digest(&bytes)))
}

#[test]
fn pin_records_the_crd_release_assets_and_validate_refuses_changed_bytes() {
    use crate::common::{ReleaseMirror, copy_tree, crds_dir};
    use crate::crd_fetch::{EXAMPLE_ASSETS, NO_NETWORK, validate};

    let reg = Registry::start();
    push_platform(&reg);
    let repo = repo_on(&reg.host(), "tag: 26.8.2-edge");
    let creds = no_credentials();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let mirror = ReleaseMirror::serve(&crds_dir(), None);
    let pin_through = |mirror: &ReleaseMirror, cache: &std::path::Path, args: &[&str]| {
        let mut all = vec!["pin"];
        all.extend_from_slice(args);
        repo.run_with(
            &all,
            &[
                ("DOCKER_CONFIG", creds.path().as_os_str()),
                ("HOME", creds.path().as_os_str()),
                ("KAAS_REGISTRY_TIMEOUT", OsStr::new("5")),
                ("KAAS_CRD_MIRROR", OsStr::new(&mirror.url())),
                ("KAAS_CRD_CACHE", cache.as_os_str()),
            ],
        )
    };

    // `pin` records the sha256 of every release asset the platform's CRDs come from, and says so.
    let run = pin_through(&mirror, &cache, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lock = repo.read("kaas.lock");
    for path in EXAMPLE_ASSETS {
        assert_eq!(locked_crds(&lock, path), served_sha256(&mirror, path), "{path}");
    }
    assert_eq!(
        run.stderr.matches("pinned    crds ").count(),
        EXAMPLE_ASSETS.len(),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("pinned    crds cluster-api v1.14.0 (core-components.yaml) sha256:"),
        "{}",
        run.stderr
    );
    // And that the kamaji chart is the one input it cannot pin.
    assert!(
        run.stderr.contains(
            "warning: chart kamaji 0.0.0+latest is not reproducible: the chart is republished under this same version on every upstream push; `kaas.lock` cannot pin it (`kaas.yaml` spec.kamaji.chart.version)\n"
        ),
        "{}",
        run.stderr
    );

    // `render` keeps them; `validate` then runs offline from the cache, with nothing to warn.
    assert_eq!(repo.run(&["render"]).code, 0);
    assert_eq!(repo.read("kaas.lock"), lock, "render keeps the CRD pins");
    let offline = validate(&repo, NO_NETWORK, &cache);
    assert_eq!(offline.code, 0, "{}", offline.stderr);
    assert!(
        !offline.stderr.contains("no sha256"),
        "every asset is pinned: {}",
        offline.stderr
    );

    // A cached asset whose bytes changed is refused, with the file, both hashes and the way out.
    let core = "/kubernetes-sigs/cluster-api/releases/download/v1.14.0/core-components.yaml";
    let cached = cache.join("cluster-api/v1.14.0/core-components.yaml");
    let mut text = std::fs::read_to_string(&cached).unwrap();
    text.push_str("# edited\n");
    std::fs::write(&cached, &text).unwrap();
    let tampered = validate(&repo, NO_NETWORK, &cache);
    assert_eq!(tampered.code, 2, "{}", tampered.stderr);
    assert!(
        tampered.stderr.contains(&format!(
            "error: the CRDs of cluster-api v1.14.0 changed: `{}` has sha256:",
            cached.display()
        )),
        "{}",
        tampered.stderr
    );
    assert!(
        tampered
            .stderr
            .contains(&format!("`kaas.lock` records {}", locked_crds(&lock, core))),
        "{}",
        tampered.stderr
    );
    assert!(
        tampered.stderr.contains("run `kaas-gitops pin --update`"),
        "{}",
        tampered.stderr
    );

    // So is a download whose bytes changed (a re-published release, a wrong mirror).
    let changed = dir.path().join("changed-crds");
    copy_tree(&crds_dir(), &changed);
    let clusters = changed.join("cluster.x-k8s.io/clusters.yaml");
    let mut text = std::fs::read_to_string(&clusters).unwrap();
    text.push_str("# re-published\n");
    std::fs::write(&clusters, text).unwrap();
    let other = ReleaseMirror::serve(&changed, None);
    let fresh = dir.path().join("fresh-cache");
    let refused = validate(&repo, &other.url(), &fresh);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(&format!(
            "error: the CRDs of cluster-api v1.14.0 changed: `{}{core}` has {}, `kaas.lock` records {}",
            other.url(),
            served_sha256(&other, core),
            locked_crds(&lock, core)
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(
        refused.stderr.matches(" changed: ").count(),
        1,
        "only that asset: {}",
        refused.stderr
    );

    // `pin --update` accepts the new bytes and says what moved.
    let update = pin_through(&other, &fresh, &["--update"]);
    assert_eq!(update.code, 0, "{}", update.stderr);
    assert!(
        update.stderr.contains(&format!(
            "moved     crds cluster-api v1.14.0 (core-components.yaml) {} -> {}",
            locked_crds(&lock, core),
            served_sha256(&other, core)
        )),
        "{}",
        update.stderr
    );
    assert_eq!(locked_crds(&repo.read("kaas.lock"), core), served_sha256(&other, core));
    assert_eq!(validate(&repo, NO_NETWORK, &fresh).code, 0);
}

#[test]
fn pin_records_the_gateway_api_release_of_a_fleet_behind_a_gateway() {
    use crate::common::{ReleaseMirror, crds_dir};
    use crate::crd_fetch::{EXAMPLE_ASSETS, NO_NETWORK, validate};
    use crate::exposure::{EXPOSURE, GATEWAY_API_ASSET};

    let reg = Registry::start();
    push_platform(&reg);
    let repo = repo_on(&reg.host(), "tag: 26.8.2-edge");
    repo.replace(
        "kaas.yaml",
        "  dataStores: [default]\n",
        &format!("{EXPOSURE}  dataStores: [default]\n"),
    );
    repo.replace("tenants/acme.yaml", "    endpoint: {host: 10.0.4.10, port: 6443}\n", "");
    let creds = no_credentials();
    let cache = tempfile::tempdir().unwrap();
    let mirror = ReleaseMirror::serve(&crds_dir(), None);
    let run = repo.run_with(
        &["pin"],
        &[
            ("DOCKER_CONFIG", creds.path().as_os_str()),
            ("HOME", creds.path().as_os_str()),
            ("KAAS_REGISTRY_TIMEOUT", OsStr::new("5")),
            ("KAAS_CRD_MIRROR", OsStr::new(&mirror.url())),
            ("KAAS_CRD_CACHE", cache.path().as_os_str()),
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lock = repo.read("kaas.lock");
    assert_eq!(
        locked_crds(&lock, GATEWAY_API_ASSET),
        served_sha256(&mirror, GATEWAY_API_ASSET)
    );
    assert!(lock.contains("  component: gateway-api\n  version: v1.5.1\n"), "{lock}");
    assert_eq!(
        run.stderr.matches("pinned    crds ").count(),
        EXAMPLE_ASSETS.len() + 1,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("pinned    crds gateway-api v1.5.1 (standard-install.yaml) sha256:"),
        "{}",
        run.stderr
    );
    // The rendered Gateway is then checked offline against the pinned release.
    assert_eq!(repo.run(&["render"]).code, 0);
    let offline = validate(&repo, NO_NETWORK, cache.path());
    assert_eq!(offline.code, 0, "{}", offline.stderr);
    assert!(!offline.stderr.contains("no sha256"), "{}", offline.stderr);
}
