//! `spec.clusterApi` against the release tables (issue 29): the Cluster API contract each
//! provider release speaks (the providers' `metadata.yaml`) and the core the Kamaji control plane
//! provider was built against (`sigs.k8s.io/cluster-api` in its `go.mod` at each tag). A
//! platform change that breaks a row is refused by `render` and `validate` at the field, naming
//! the row and what would be valid.

use crate::common::{Repo, crds_dir};

const CONTRACT: &str = "    contract: v1beta2\n";

/// The example with `coreVersion` written under `contract`.
fn with_core(core: &str) -> Repo {
    let repo = Repo::example();
    repo.replace("kaas.yaml", CONTRACT, &format!("{CONTRACT}    coreVersion: {core}\n"));
    repo
}

/// `path:line:column` of the first line of `path` holding `needle`, at the needle's value.
fn at(repo: &Repo, path: &str, needle: &str) -> String {
    let text = repo.read(path);
    let (n, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in {path}"));
    let column = line.find(needle).unwrap() + needle.find(": ").unwrap() + 3;
    format!("{path}:{}:{column}", n + 1)
}

#[test]
fn a_core_older_than_the_kamaji_provider_was_built_against_is_refused_at_core_version() {
    let repo = with_core("v1.12.3");
    let stderr = repo.assert_render_refused(
        &at(&repo, "kaas.yaml", "coreVersion: v1.12.3"),
        "error: Cluster API v1.12.3 is older than the Kamaji control plane provider v0.20.0 needs: v1.13 or newer (release table: provider v0.20.0 was built against `sigs.k8s.io/cluster-api` v1.13.2 in its go.mod)",
    );
    for expected in [
        "= field: `spec.clusterApi.coreVersion`",
        "= hint: set `coreVersion` to a v1.13 or newer release of the v1beta2 contract; no Kamaji provider release of the v1beta2 contract runs on v1.12",
    ] {
        assert!(stderr.contains(expected), "no `{expected}` in:\n{stderr}");
    }

    // `validate` reports it at the same place, as a platform finding.
    let run = repo.run(&["validate", "--crds", crds_dir().to_str().unwrap(), "--format", "json"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["field"] == "spec.clusterApi.coreVersion")
        .unwrap_or_else(|| panic!("no finding at coreVersion in {doc}"));
    let line = at(&repo, "kaas.yaml", "coreVersion: v1.12.3");
    let mut parts = line.rsplit(':');
    let (column, line) = (parts.next().unwrap(), parts.next().unwrap());
    assert_eq!(
        (
            &f["severity"],
            &f["check"],
            &f["file"],
            f["line"].to_string(),
            f["column"].to_string()
        ),
        (
            &"error".into(),
            &"platform".into(),
            &"kaas.yaml".into(),
            line.to_string(),
            column.to_string()
        ),
        "{f}"
    );

    // The core the provider was built against renders.
    repo.replace("kaas.yaml", "coreVersion: v1.12.3", "coreVersion: v1.13.0");
    let run = repo.run(&["render"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_core_of_another_contract_is_refused_naming_the_releases_of_each() {
    let repo = with_core("v1.10.4");
    let stderr = repo.assert_render_refused(
        &at(&repo, "kaas.yaml", "coreVersion: v1.10.4"),
        "error: Cluster API v1.10.4 speaks contract v1beta1, but `spec.clusterApi.contract` is v1beta2 (release table: cluster-api v1.0-v1.10 speaks v1beta1, from its metadata.yaml)",
    );
    assert!(
        stderr.contains("= hint: set `coreVersion` to a release of the v1beta2 contract; known core releases: v1.0-v1.10 (v1beta1), v1.11-v1.14 (v1beta2)"),
        "{stderr}"
    );
}

#[test]
fn a_v1beta1_management_cluster_is_refused_at_the_contract_alone() {
    // kaas-gitops renders `cluster.x-k8s.io/v1beta2` and KamajiControlPlane v1alpha2: a v1beta1
    // core (v1.10) serves neither, and the provider serves v1alpha2 only from v0.20.0. One error,
    // at `contract`, not one per provider row.
    let repo = with_core("v1.10.4");
    repo.replace("kaas.yaml", "contract: v1beta2", "contract: v1beta1");
    repo.replace("kaas.yaml", "version: v0.20.0", "version: v0.19.0");
    repo.replace("kaas.yaml", "proxmox: v0.9.0", "proxmox: v0.7.0");
    let stderr = repo.assert_render_refused(
        &at(&repo, "kaas.yaml", "contract: v1beta1"),
        "error: a v1beta1 management cluster cannot run a kaas-gitops fleet: kaas-gitops renders `cluster.x-k8s.io/v1beta2` Clusters and MachineDeployments, which Cluster API serves from v1.11 (the v1beta2 contract), and `controlplane.cluster.x-k8s.io/v1alpha2` KamajiControlPlanes, which the Kamaji control plane provider serves from v0.20.0, a v1beta2-contract release",
    );
    assert!(
        stderr.contains("= hint: write `contract: v1beta2` (the default) with a `coreVersion` of v1.13 or newer"),
        "{stderr}"
    );
    assert!(stderr.contains("error: 1 problem(s) found"), "{stderr}");
}

#[test]
fn a_kamaji_provider_before_v1alpha2_is_refused_at_its_version() {
    let repo = Repo::example();
    repo.replace("kaas.yaml", "version: v0.20.0", "version: v0.19.0");
    let stderr = repo.assert_render_refused(
        &at(&repo, "kaas.yaml", "version: v0.19.0"),
        "error: the Kamaji control plane provider v0.19.0 serves v1alpha1 of `controlplane.cluster.x-k8s.io`, but kaas-gitops renders KamajiControlPlane v1alpha2 (release table: kamaji v0.1-v0.19 speaks v1beta1, from its metadata.yaml)",
    );
    assert!(
        stderr.contains("= field: `spec.clusterApi.controlPlaneProvider.version`"),
        "{stderr}"
    );
    assert!(stderr.contains("= hint: use v0.20.0 or newer"), "{stderr}");
}
