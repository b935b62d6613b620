//! Each control plane's schema and user in its DataStore are named in git, so a control plane
//! re-created from git (a rebuilt management cluster) finds its data (issue 41, item 2).
//! See: issues/41
//!
//! Kamaji names both after the TenantControlPlane's UID when they are unset (clastix/kamaji
//! 26.8.2-edge `internal/webhook/handlers/tcp_defaults.go:88-94`,
//! `api/v1alpha1/tenantcontrolplane_funcs.go`), and refuses any change once set
//! (`api/v1alpha1/tenantcontrolplane_types.go:519,525`); the provider copies the
//! KamajiControlPlane's (cluster-api-control-plane-provider-kamaji v0.20.0
//! `controllers/kamajicontrolplane_controller_tcp.go:106-110`).

use crate::common::{Repo, loopback_server, management_kubeconfig};

const UID: &str = "3f0e6b5c-1d2a-4c7e-9b1f-0a2b3c4d5e6f";
const KCP: &str = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";

fn rendered_example() -> Repo {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    repo
}

#[track_caller]
fn names_of(repo: &Repo) -> (Option<String>, Option<String>) {
    let kcp = repo.object(KCP);
    let get = |k: &str| kcp["spec"][k].as_str().map(str::to_string);
    (get("dataStoreSchema"), get("dataStoreUsername"))
}

/// What an older kaas-gitops left: a deployed control plane without names (Kamaji used its
/// UID), no lock entry, and an input hash that no longer matches (another tool version).
fn as_deployed_before_names(repo: &Repo) {
    let kcp = repo.read(KCP);
    let stripped: String = kcp
        .lines()
        .filter(|l| !l.contains("dataStoreSchema:") && !l.contains("dataStoreUsername:"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(kcp, stripped, "the control plane had names");
    repo.write(KCP, &stripped);
    repo.replace(
        "kaas.lock",
        "- tenant: acme\n  schema: kaas_acme\n  username: kaas_acme\n",
        "",
    );
    repo.replace(
        "tenants/acme.yaml",
        "kind: Tenant\n",
        "kind: Tenant\n# rendered before issue 41\n",
    );
}

#[test]
fn r41_a_new_tenant_gets_named_datastore_names_in_its_control_plane_and_the_lock() {
    let repo = rendered_example();
    assert_eq!(names_of(&repo), (Some("kaas_acme".into()), Some("kaas_acme".into())));
    let lock = repo.read("kaas.lock");
    let datastores = &lock[lock.find("datastores:\n").expect("a datastores section")..];
    assert!(
        datastores.starts_with("datastores:\n- tenant: acme\n  schema: kaas_acme\n  username: kaas_acme\n- tenant: globex\n  schema: kaas_globex\n"),
        "{lock}"
    );
    // Topology mode passes them through the Cluster's variables to the shared template.
    let repo = Repo::fixture("topology");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let tenant = repo.read("kaas.lock");
    let name = tenant
        .split("- tenant: ")
        .nth(1)
        .and_then(|s| s.lines().next())
        .expect("a tenant in the lock")
        .to_string();
    let cluster = repo.object(&format!("overlays/tenants/{name}/cluster-{name}.yaml"));
    let vars = cluster["spec"]["topology"]["variables"].as_array().unwrap();
    let var = |n: &str| vars.iter().find(|v| v["name"] == n).map(|v| v["value"].clone());
    let want = serde_json::json!(format!("kaas_{}", name.replace('-', "_")));
    assert_eq!(var("kaasDataStoreSchema"), Some(want.clone()), "{cluster}");
    assert_eq!(var("kaasDataStoreUsername"), Some(want), "{cluster}");
}

#[test]
fn r41_a_tenant_deployed_without_names_stays_on_kamajis_uid_until_adopted() {
    let repo = rendered_example();
    as_deployed_before_names(&repo);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Kept as deployed: a new name would be refused by Kamaji and stall the provider.
    assert_eq!(names_of(&repo), (None, None));
    assert!(
        run.stderr.contains("warning: tenant `acme`'s datastore schema and user are Kamaji's default, its TenantControlPlane's UID, which git does not know: a control plane re-created from git (a rebuilt management cluster) would start on an empty datastore\n --> tenants/acme.yaml:6:9"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("kaas-gitops adopt acme"), "{}", run.stderr);
    assert!(
        repo.read("kaas.lock")
            .contains("- tenant: acme\n  kamajiDefault: true\n"),
        "{}",
        repo.read("kaas.lock")
    );
    // The next render knows it from the lock, and still warns.
    let run = repo.run(&["render", "--full"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(names_of(&repo), (None, None));
    assert!(run.stderr.contains("Kamaji's default"), "{}", run.stderr);

    // `adopt` reads what the management cluster runs and records it; render writes it.
    let (_server, port) = loopback_server("tenant_control_planes.py", &[UID.into()]);
    let dir = tempfile::tempdir().unwrap();
    let config = management_kubeconfig(dir.path(), port);
    let config = config.to_str().unwrap();
    let run = repo.run(&["adopt", "acme", "globex", "--kubeconfig", config]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!(
            "acme: recorded schema `{UID}` and user `{UID}`\nglobex: no TenantControlPlane in the management cluster; a new control plane gets schema `kaas_globex` and user `kaas_globex`\n"
        )
    );
    assert!(
        repo.read("kaas.lock")
            .contains(&format!("- tenant: acme\n  schema: {UID}\n  username: {UID}\n")),
        "{}",
        repo.read("kaas.lock")
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("Kamaji's default"), "{}", run.stderr);
    assert_eq!(names_of(&repo), (Some(UID.into()), Some(UID.into())));
    // Idempotent, and the lock round-trips: nothing to write, no drift.
    let before = repo.snapshot();
    let run = repo.run(&["adopt", "acme", "--kubeconfig", config]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        format!("acme: unchanged, schema `{UID}` and user `{UID}`\n")
    );
    assert_eq!(repo.run(&["render", "--check"]).code, 0);
    assert_eq!(before, repo.snapshot());
}

#[test]
fn r41_a_changed_datastore_name_is_refused_at_the_tenant() {
    let repo = rendered_example();
    repo.replace("kaas.lock", "  schema: kaas_acme\n", "  schema: kaas_acme2\n");
    let stderr = repo.assert_render_refused(
        "tenants/acme.yaml:5:9",
        "error: kaas.lock gives tenant `acme`'s control plane schema `kaas_acme2` and user `kaas_acme` in its DataStore, but it is deployed with schema `kaas_acme` and user `kaas_acme`; Kamaji refuses to change either",
    );
    assert!(
        stderr.contains("hint: its data lives under the deployed schema (etcd key prefix `/kaas_acme/`): put those names back in kaas.lock `datastores:`, or run `kaas-gitops adopt acme` to record what the management cluster runs"),
        "{stderr}"
    );

    // `adopt` refuses the same disagreement with the cluster, and writes nothing.
    repo.replace("kaas.lock", "  schema: kaas_acme2\n", "  schema: kaas_acme\n");
    let (_server, port) = loopback_server("tenant_control_planes.py", &[UID.into()]);
    let dir = tempfile::tempdir().unwrap();
    let config = management_kubeconfig(dir.path(), port);
    let before = repo.read("kaas.lock");
    let run = repo.run(&["adopt", "--kubeconfig", config.to_str().unwrap()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("error: kaas.lock records schema `kaas_acme` and user `kaas_acme` for tenant `acme`, but its TenantControlPlane runs schema `{UID}` and user `{UID}`; Kamaji never changes either")),
        "{}",
        run.stderr
    );
    assert_eq!(before, repo.read("kaas.lock"));
}

#[test]
fn r41_an_invalid_name_in_the_lock_is_refused_at_its_line() {
    let repo = rendered_example();
    repo.replace("kaas.lock", "  username: kaas_acme\n", "  username: Kaas/Acme\n");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("error: `Kaas/Acme` is no datastore name: only lower-case letters, digits, `_` and `-` are allowed\n  --> kaas.lock:"),
        "{}",
        run.stderr
    );
}

/// The plan's step 0, run with a `kubectl` that answers the TenantControlPlane's schema.
fn run_prefix_check(plan: &str, live_schema: &str) -> std::process::Output {
    let start = plan.find("\n# 0. ").expect("a step 0");
    let end = plan.find("\n# 1. ").expect("a step 1");
    let dir = tempfile::tempdir().unwrap();
    let kubectl = dir.path().join("kubectl");
    std::fs::write(&kubectl, format!("#!/bin/sh\nprintf '%s' '{live_schema}'\n")).unwrap();
    let executable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
    std::fs::set_permissions(&kubectl, executable).unwrap();
    let path = format!("{}:{}", dir.path().display(), std::env::var("PATH").unwrap_or_default());
    std::process::Command::new("sh")
        .args(["-ec", &plan[start..end]])
        .env("PATH", path)
        .output()
        .unwrap()
}

#[test]
fn r41_restore_plan_checks_the_key_prefix_it_restores_into() {
    let repo = rendered_example();
    let run = repo.run(&["backup", "restore-plan", "acme"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = run.stdout;
    assert!(
        plan.contains("\n# 0. Check that each control plane reads the key prefix its data is restored under.\n# `acme`: key prefix `/kaas_acme/` (dataStoreSchema, kaas.lock).\n"),
        "{plan}"
    );
    assert!(plan.find("# 0. ").unwrap() < plan.find("flux -n flux-system suspend").unwrap());
    let ok = run_prefix_check(&plan, "kaas_acme");
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let wrong = run_prefix_check(&plan, UID);
    assert!(!wrong.status.success());
    assert_eq!(
        String::from_utf8_lossy(&wrong.stderr),
        format!(
            "acme: the TenantControlPlane reads /{UID}/, the repository records /kaas_acme/: restoring would leave its data where it does not look (docs/backup.md)\n"
        )
    );

    // A tenant still on Kamaji's default: git knows no prefix, and the plan says so.
    as_deployed_before_names(&repo);
    assert_eq!(repo.run(&["render"]).code, 0);
    let plan = repo.run(&["backup", "restore-plan", "acme"]).stdout;
    assert!(
        plan.contains("# `acme`: key prefix unknown to git (Kamaji's default, the TenantControlPlane's UID; run `kaas-gitops adopt acme` to record it)."),
        "{plan}"
    );
    let shown = run_prefix_check(&plan, UID);
    assert!(shown.status.success());
    assert!(String::from_utf8_lossy(&shown.stderr).starts_with(&format!("acme: key prefix /{UID}/ (Kamaji's default")));
}
