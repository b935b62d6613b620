//! What the last render left of a tenant is read, for the transition rules, only when that
//! tenant's inputs changed: a tenant whose input hash is unchanged cannot make a transition.
//! So a one-tenant edit (what `watch` does on every save) opens that tenant's previous output
//! and, of every other tenant, only the `kustomization.yaml` holding its input hash (issue 33).

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{Repo, traced};

/// Per tenant, the names of the files in `overlays/tenants/<tenant>/` that the traced run
/// opened (listing a folder opens the folder, not a file in it, and is not counted).
fn overlay_files_opened(trace: &str) -> BTreeMap<String, BTreeSet<String>> {
    const DIR: &str = "/overlays/tenants/";
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in trace.lines().filter(|l| l.contains("open")) {
        let Some(at) = line.find(DIR) else { continue };
        let path = line[at + DIR.len()..].split('"').next().unwrap_or_default();
        if let Some((tenant, file)) = path.split_once('/')
            && !file.is_empty()
        {
            out.entry(tenant.to_string()).or_default().insert(file.to_string());
        }
    }
    out
}

#[test]
fn a_one_tenant_edit_reads_no_other_tenants_previous_output() {
    let repo = Repo::example();
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // acme's control plane goes from 2 to 3 replicas; globex and initech are unchanged.
    let acme = repo.read("tenants/acme.yaml");
    let edited = acme.replacen("    replicas: 2\n", "    replicas: 3\n", 1);
    assert_ne!(acme, edited);
    repo.write("tenants/acme.yaml", &edited);

    let (run, trace) = traced(&repo, "trace=open,openat", &[], &["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let kcp = repo.object("overlays/tenants/acme/kamajicontrolplane-acme.yaml");
    assert_eq!(kcp["spec"]["replicas"], 3, "the edit was rendered");

    let opened = overlay_files_opened(&trace);
    let only_the_hash = BTreeSet::from(["kustomization.yaml".to_string()]);
    for other in ["globex", "initech"] {
        assert_eq!(
            opened.get(other),
            Some(&only_the_hash),
            "the render opened more of unchanged `{other}`'s overlay than its input hash:\n{opened:#?}"
        );
    }
    let acme = opened.get("acme").cloned().unwrap_or_default();
    assert!(
        acme.contains("kamajicontrolplane-acme.yaml"),
        "the edited tenant's previous control plane was read: {acme:?}"
    );

    // The edited tenant is still judged against what was rendered: a downgrade is refused.
    repo.assert_edit_refused(
        "tenants/acme.yaml",
        |t| t.replace("version: v1.33.4", "version: v1.32.9"),
        "tenants/acme.yaml:11:14",
        "v1.32.9 would take tenant `acme` down a minor from v1.33.4, the deployed version",
    );
}
