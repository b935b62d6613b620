//! A deployed tenant that loses Kamaji's kube-proxy, or gains a CNI add-on that replaces it:
//! refused against the last commit unless the tenant file acknowledges it, like the version
//! steps (`model::build::transitions::cni_changes`).

use std::path::Path;

use crate::common::{Repo, git};

/// `render` refuses at `location` with `message`, and neither the files nor git change.
#[track_caller]
fn refused(home: &Path, repo: &Repo, location: &str, message: &str) -> String {
    let state = |repo: &Repo| {
        (
            git(home, repo.path(), &["rev-parse", "HEAD"]),
            git(home, repo.path(), &["status", "--porcelain"]),
        )
    };
    let before = state(repo);
    let stderr = repo.assert_render_refused(location, message);
    assert_eq!(before, state(repo), "a refused render changed git");
    stderr
}

const NO_CNI: &str = "  addons:\n    cni: none\n";

#[test]
fn a_deployed_tenant_gaining_a_cni_that_replaces_kube_proxy_is_refused_until_acknowledged() {
    let home = tempfile::tempdir().unwrap();
    let repo = crate::common::committed_example(home.path(), |r| {
        let acme = r.read("tenants/acme.yaml");
        r.write("tenants/acme.yaml", &format!("{acme}{NO_CNI}"));
    });
    let kcp = "overlays/tenants/acme/kamajicontrolplane-acme.yaml";
    assert!(repo.read(kcp).contains("    kubeProxy: {}\n"), "{}", repo.read(kcp));

    // The tenant names the CNI: refused at its `cni` value.
    repo.replace("tenants/acme.yaml", "    cni: none\n", "    cni: cilium\n");
    let line = repo.read("tenants/acme.yaml").lines().count();
    let err = refused(
        home.path(),
        &repo,
        &format!("tenants/acme.yaml:{line}:10"),
        "tenant `acme` runs kube-proxy and gains the CNI `cilium`, which replaces it: Kamaji deletes the kube-proxy DaemonSet from the running cluster, and Cilium's `cni.exclusive` removes any other CNI's configuration from every node",
    );
    assert!(err.contains("= field: `spec.addons.cni`"), "{err}");
    assert!(
        err.contains("add `acknowledge: [cniMigration]` to `spec.addons` of `tenants/acme.yaml`"),
        "{err}"
    );

    // Its file drops the `cni: none` (the default CNI arrives) but keeps `spec.addons`.
    repo.replace("tenants/acme.yaml", "    cni: cilium\n", "    extra: []\n");
    refused(
        home.path(),
        &repo,
        &format!("tenants/acme.yaml:{}:3", line - 1),
        "tenant `acme` runs kube-proxy and gains the CNI `cilium`",
    );

    // Acknowledged: rendered, kube-proxy off, Cilium on.
    repo.replace(
        "tenants/acme.yaml",
        "    extra: []\n",
        "    acknowledge: [cniMigration]\n",
    );
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!repo.read(kcp).contains("kubeProxy"), "{}", repo.read(kcp));
    assert!(
        repo.path()
            .join("overlays/tenants/acme/helmrelease-acme-cilium.yaml")
            .is_file()
    );
}

#[test]
fn a_default_cni_reaching_deployed_tenants_is_refused_once_at_kaas_yaml() {
    let home = tempfile::tempdir().unwrap();
    let defaults = "    defaults:\n      cni: cilium\n";
    let repo =
        crate::common::committed_example(home.path(), |r| r.replace("kaas.yaml", defaults, "    defaults: {}\n"));
    repo.replace("kaas.yaml", "    defaults: {}\n", defaults);
    let line = repo
        .read("kaas.yaml")
        .lines()
        .position(|l| l == "      cni: cilium")
        .unwrap()
        + 1;
    let err = refused(
        home.path(),
        &repo,
        &format!("kaas.yaml:{line}:12"),
        "the default CNI `cilium` reaches deployed tenant(s) `acme`, `globex`, `initech`, which run kube-proxy or another CNI",
    );
    assert_eq!(err.matches("  --> ").count(), 1, "{err}");
    assert!(err.contains("`spec.addons.cni: none`"), "{err}");
    // A tenant that says `cni: none` keeps its kube-proxy; acknowledged ones migrate.
    for t in ["acme", "globex"] {
        let file = format!("tenants/{t}.yaml");
        let text = repo.read(&file);
        repo.write(&file, &format!("{text}  addons:\n    acknowledge: [cniMigration]\n"));
    }
    refused(
        home.path(),
        &repo,
        &format!("kaas.yaml:{line}:12"),
        "deployed tenant(s) `initech`,",
    );
    let text = repo.read("tenants/initech.yaml");
    repo.write("tenants/initech.yaml", &format!("{text}{NO_CNI}"));
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        repo.read("overlays/tenants/initech/kamajicontrolplane-initech.yaml")
            .contains("kubeProxy: {}")
    );
}

#[test]
fn a_new_tenant_gets_the_default_cni_without_acknowledging() {
    let home = tempfile::tempdir().unwrap();
    let initech = Repo::example().read("tenants/initech.yaml");
    let repo = crate::common::committed_example(home.path(), |r| {
        std::fs::remove_file(r.path().join("tenants/initech.yaml")).unwrap();
    });
    repo.write("tenants/initech.yaml", &initech);
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        repo.path()
            .join("overlays/tenants/initech/helmrelease-initech-cilium.yaml")
            .is_file()
    );
}
