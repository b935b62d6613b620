//! `spec.flux.delivery.mode: oci`: the rendered wiring (one OCIRepository per tenant, the tenant
//! Kustomization reading it) and `publish` against a real registry on loopback (Debian's
//! `docker-registry`): cold, again, after a one-tenant change, after a `base/tenant/` change,
//! from another clone, and after a run stopped half-way.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use kaas_gitops::delivery::{self, TenantSource};
use kaas_gitops::pin::auth::DockerConfig;
use kaas_gitops::publish::oci::OciTarget;
use kaas_gitops::publish::{self, Change, Target};

use crate::common::{Repo, Run};
use crate::registry::Registry;

const TENANTS: [&str; 3] = ["acme", "globex", "initech"];

/// `git ARGS` in `dir`, with an empty home of its own ([`crate::common::git_env`]).
#[track_caller]
fn git(dir: &Path, args: &[&str]) -> String {
    let home = tempfile::tempdir().expect("a temp dir");
    crate::common::git(home.path(), dir, args)
}

/// The example repository delivering tenants through `host`, rendered and committed.
fn oci_fleet(host: &str) -> Repo {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        &format!(
            "    interval: 10m\n    delivery:\n      mode: oci\n      oci: {{repository: {host}/kaas/tenants, insecure: true}}\n"
        ),
    );
    git(repo.path(), &["init", "-q", "-b", "main"]);
    commit_render(&repo, "fleet");
    repo
}

#[track_caller]
fn commit_render(repo: &Repo, message: &str) {
    let r = repo.run(&["render"]);
    assert_eq!(r.code, 0, "render: {}", r.stderr);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "--allow-empty", "-m", message]);
}

/// `publish -o json` (anonymous: an empty Docker config).
#[track_caller]
fn publish_json(repo: &Repo, extra: &[&str]) -> (Run, serde_json::Value) {
    let empty = tempfile::tempdir().unwrap();
    let mut args = vec!["publish", "-o", "json"];
    args.extend_from_slice(extra);
    let run = repo.run_with(&args, &[("DOCKER_CONFIG", empty.path().as_os_str())]);
    let doc: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
    (run, doc)
}

/// tenant -> (change, digest) of a publish's JSON.
fn changes(doc: &serde_json::Value) -> BTreeMap<String, (String, String)> {
    doc["tenants"]
        .as_array()
        .expect("tenants")
        .iter()
        .map(|t| {
            (
                t["tenant"].as_str().unwrap().to_string(),
                (
                    t["change"].as_str().unwrap().to_string(),
                    t["digest"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

fn pushed(doc: &serde_json::Value) -> Vec<String> {
    changes(doc)
        .into_iter()
        .filter(|(_, (c, _))| c == "pushed")
        .map(|(t, _)| t)
        .collect()
}

#[test]
fn oci_delivery_renders_one_source_per_tenant_and_keeps_the_platform_on_git() {
    let repo = oci_fleet("registry.example.com:5000");
    let oci = repo.object("flux/ocirepository-kaas-tenant-acme.yaml");
    assert_eq!(oci["apiVersion"], "source.toolkit.fluxcd.io/v1");
    assert_eq!(oci["spec"]["url"], "oci://registry.example.com:5000/kaas/tenants/acme");
    assert_eq!(oci["spec"]["ref"]["tag"], "latest");
    assert_eq!(oci["spec"]["insecure"], true);
    assert_eq!(
        oci["spec"]["layerSelector"],
        serde_json::json!({"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "operation": "extract"})
    );
    let ks = repo.object("flux/kustomization-kaas-tenant-acme.yaml");
    assert_eq!(
        ks["spec"]["sourceRef"],
        serde_json::json!({"kind": "OCIRepository", "name": "kaas-tenant-acme", "namespace": "flux-system"})
    );
    assert_eq!(ks["spec"]["path"], "./overlays/tenants/acme");
    assert_eq!(ks["spec"]["interval"], "1h");
    assert_eq!(ks["spec"]["dependsOn"][0]["name"], "kaas-platform");
    // The in-tenant access bindings read the tenant's artifact, and as seldom: at 1,000 tenants
    // a 10m interval of theirs would be 100 reconciles a minute.
    let access = repo.object("overlays/tenants/acme/kustomization-acme-access.yaml");
    assert_eq!(access["spec"]["sourceRef"], ks["spec"]["sourceRef"]);
    assert_eq!(access["spec"]["interval"], "1h");
    for entry in ["kaas-kamaji", "kaas-platform"] {
        let platform = repo.object(&format!("flux/kustomization-{entry}.yaml"));
        assert_eq!(platform["spec"]["sourceRef"]["kind"], "GitRepository", "{entry}");
        assert_eq!(platform["spec"]["interval"], "10m", "{entry}");
    }
    let list = repo.read("flux/kustomization.yaml");
    for t in TENANTS {
        assert!(
            list.contains(&format!("- ocirepository-kaas-tenant-{t}.yaml")),
            "{list}"
        );
    }
    // A deleted tenant takes its OCIRepository with it (the root Kustomization prunes it).
    std::fs::remove_file(repo.path().join("tenants/initech.yaml")).unwrap();
    let r = repo.run(&["render"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!repo.path().join("flux/ocirepository-kaas-tenant-initech.yaml").exists());
    assert!(!repo.read("flux/kustomization.yaml").contains("initech"));
}

#[test]
fn oci_delivery_settings_are_checked() {
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        "    interval: 10m\n    delivery:\n      mode: oci\n",
    );
    let err = repo.assert_render_refused("kaas.yaml:", "`mode: oci` needs `oci.repository`");
    assert!(err.contains("spec.flux.delivery"), "{err}");
    let repo = Repo::example();
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        "    interval: 10m\n    delivery:\n      mode: oci\n      oci: {repository: oci://r.example.com/x:v1, interval: soon}\n",
    );
    let err = repo.assert_render_refused("kaas.yaml:", "is not `<registry host>/<path>`");
    assert!(
        err.contains("`soon` is not a duration"),
        "every error of the run at once:\n{err}"
    );
}

#[test]
fn publish_pushes_each_tenant_once_then_only_what_changed() {
    let reg = Registry::start();
    let repo = oci_fleet(&reg.host());

    let (run, cold) = publish_json(&repo, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(pushed(&cold), TENANTS);
    for (t, (_, digest)) in changes(&cold) {
        assert_eq!(reg.digest(&format!("kaas/tenants/{t}"), "latest"), digest, "{t}");
    }
    let first = changes(&cold);

    let (run, again) = publish_json(&repo, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(pushed(&again).is_empty(), "a second publish pushes nothing: {again}");
    assert_eq!(again["bytes"], 0);

    // One tenant's file changes: only its artifact moves.
    repo.replace("tenants/acme.yaml", "memoryMiB: 4096", "memoryMiB: 8192");
    commit_render(&repo, "acme: bigger workers");
    let (_, one) = publish_json(&repo, &[]);
    assert_eq!(pushed(&one), ["acme"], "{one}");
    assert_ne!(changes(&one)["acme"].1, first["acme"].1);
    assert_eq!(changes(&one)["globex"].1, first["globex"].1);

    // A kaas.yaml edit moves every overlay's input hash; the artifacts only where objects change.
    repo.replace(
        "kaas.yaml",
        "    interval: 10m\n",
        "    interval: 10m\n    # a comment\n",
    );
    commit_render(&repo, "kaas.yaml: a comment");
    let (_, platform_edit) = publish_json(&repo, &[]);
    assert!(pushed(&platform_edit).is_empty(), "{platform_edit}");

    // base/tenant/ is in every artifact: all move.
    let quota = std::fs::read_to_string(repo.path().join("base/tenant/resourcequota.yaml")).unwrap();
    repo.write("base/tenant/resourcequota.yaml", &format!("{quota}# reviewed\n"));
    commit_render(&repo, "base/tenant changed");
    let (_, all) = publish_json(&repo, &[]);
    assert_eq!(pushed(&all), TENANTS);

    // An older commit names other content: --revision publishes it (a rollback).
    let (_, back) = publish_json(&repo, &["--revision", "HEAD~2", "--dry-run"]);
    assert_eq!(pushed(&back), TENANTS, "{back}");
    assert_eq!(changes(&back)["globex"].1, first["globex"].1);
}

#[test]
fn another_clone_computes_the_same_digests() {
    let reg = Registry::start();
    let repo = oci_fleet(&reg.host());
    let (_, cold) = publish_json(&repo, &[]);
    assert_eq!(pushed(&cold), TENANTS);
    // Another checkout: other inodes, mtimes and umask; the artifacts come from git objects.
    let other = tempfile::tempdir().unwrap();
    let clone = other.path().join("clone");
    let out = Command::new("git")
        .args(["clone", "-q"])
        .arg(repo.path())
        .arg(&clone)
        .output()
        .unwrap();
    assert!(out.status.success());
    let empty = tempfile::tempdir().unwrap();
    let run: Run = crate::common::bin()
        .arg("--repo")
        .arg(&clone)
        .args(["publish", "--dry-run", "-o", "json"])
        .env("DOCKER_CONFIG", empty.path())
        .output()
        .unwrap()
        .into();
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(pushed(&doc).is_empty(), "{doc}");
    assert_eq!(changes(&doc), {
        let mut c = changes(&cold);
        c.values_mut().for_each(|v| v.0 = "unchanged".into());
        c
    });
}

/// A registry that dies after `manifests` manifest PUTs, in the middle of the next tenant
/// (after its blobs): what a killed `publish` leaves.
struct Dies {
    inner: OciTarget,
    manifests: usize,
    dead: bool,
}

impl Target for Dies {
    fn current(&mut self, s: &TenantSource) -> Result<Option<String>, String> {
        if self.dead {
            return Err("killed".into());
        }
        self.inner.current(s)
    }
    fn push_blob(&mut self, s: &TenantSource, d: &str, b: &[u8]) -> Result<(), String> {
        if self.dead {
            return Err("killed".into());
        }
        self.inner.push_blob(s, d, b)
    }
    fn push_manifest(&mut self, s: &TenantSource) -> Result<(), String> {
        if self.dead || self.manifests == 0 {
            self.dead = true;
            return Err("killed".into());
        }
        self.manifests -= 1;
        self.inner.push_manifest(s)
    }
}

/// The committed tree as `publish` reads it (the work tree equals HEAD here).
fn tree(repo: &Repo) -> BTreeMap<String, Vec<u8>> {
    let files = git(repo.path(), &["ls-files"]);
    files
        .lines()
        .map(|p| (p.to_string(), std::fs::read(repo.path().join(p)).unwrap()))
        .collect()
}

#[test]
fn a_publish_stopped_half_way_leaves_whole_artifacts_and_the_next_run_converges() {
    let reg = Registry::start();
    let repo = oci_fleet(&reg.host());
    let (_, cold) = publish_json(&repo, &[]);
    let before = changes(&cold);
    // Every tenant changes; the run dies after one manifest, in the middle of the second tenant.
    let quota = std::fs::read_to_string(repo.path().join("base/tenant/resourcequota.yaml")).unwrap();
    repo.write("base/tenant/resourcequota.yaml", &format!("{quota}# v2\n"));
    commit_render(&repo, "v2");
    let sources = delivery::tenant_sources(&tree(&repo)).unwrap();
    assert_eq!(
        sources.len(),
        3,
        "{:?}",
        tree(&repo)
            .keys()
            .filter(|k| k.starts_with("flux/"))
            .collect::<Vec<_>>()
    );
    let empty = tempfile::tempdir().unwrap();
    let inner = OciTarget::new(
        std::time::Duration::from_secs(20),
        vec![reg.host()],
        DockerConfig::locate(Some(empty.path().to_path_buf()), None),
    )
    .unwrap();
    let mut dies = Dies {
        inner,
        manifests: 1,
        dead: false,
    };
    let (results, _) = publish::publish(&sources, &mut dies);
    let outcome: Vec<Change> = results.iter().map(|r| r.change).collect();
    assert_eq!(outcome, [Change::Pushed, Change::Failed, Change::Failed]);
    // Each tag names whole content: the new artifact, or the old one, never a missing blob.
    assert_eq!(reg.digest("kaas/tenants/acme", "latest"), sources[0].artifact.digest());
    assert_eq!(reg.digest("kaas/tenants/globex", "latest"), before["globex"].1);
    assert_eq!(reg.digest("kaas/tenants/initech", "latest"), before["initech"].1);
    // The next run finishes the job, and pushes nothing twice.
    let (run, next) = publish_json(&repo, &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(pushed(&next), ["globex", "initech"], "{next}");
    for s in &sources {
        assert_eq!(
            reg.digest(&format!("kaas/tenants/{}", s.tenant), "latest"),
            s.artifact.digest()
        );
    }
}

#[test]
fn publish_reports_an_unreachable_registry_for_every_tenant_and_exits_2() {
    let mut reg = Registry::start();
    let repo = oci_fleet(&reg.host());
    reg.stop();
    let (run, doc) = publish_json(&repo, &[]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["diagnostics"].as_array().unwrap().len(), 3, "{doc}");
    let changes = changes(&doc);
    assert!(changes.values().all(|(c, _)| c == "failed"), "{changes:?}");
}
