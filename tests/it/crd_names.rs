//! `validate` refuses installed provider releases whose CRDs claim one name in a group (issue 31
//! item 14): the API server's naming controller accepts the names of the CRD created first and
//! never establishes the other (kubernetes/apiextensions-apiserver
//! `pkg/controller/status/naming_controller.go`). Checked with the real CRD files of
//! cluster-api-provider-proxmox v0.9.0 and cluster-api-provider-packet v0.9.0, served as their
//! release assets.

use crate::common::{ReleaseMirror, Repo, crds_dir};
use crate::crd_fetch::validate;

#[test]
fn two_providers_claiming_one_short_name_are_refused_naming_both_releases() {
    let repo = Repo::example();
    assert_eq!(repo.run(&["render"]).code, 0);
    let dir = tempfile::tempdir().unwrap();
    let mirror = ReleaseMirror::serve(&crds_dir(), None);

    // The example alone: no conflict.
    let alone = validate(&repo, &mirror.url(), &dir.path().join("cache"));
    assert_eq!(alone.code, 0, "{}", alone.stderr);
    assert!(!alone.stderr.contains("both claim"), "{}", alone.stderr);

    repo.replace(
        "kaas.yaml",
        "infrastructureProviders: {proxmox: v0.9.0}",
        "infrastructureProviders: {proxmox: v0.9.0, packet: v0.9.0}",
    );
    repo.replace(
        "kaas.yaml",
        "providerConfigSecrets: {proxmox: capmox-credentials}",
        "providerConfigSecrets: {proxmox: capmox-credentials, packet: capp-credentials}",
    );
    let both = validate(&repo, &mirror.url(), &dir.path().join("cache"));
    assert_eq!(both.code, 1, "{}", both.stderr);
    let message = "both claim the short name `pmt` in group `infrastructure.cluster.x-k8s.io`";
    let line = both
        .stderr
        .lines()
        .find(|l| l.contains(message))
        .unwrap_or_else(|| panic!("no `{message}` in:\n{}", both.stderr));
    assert!(line.starts_with("error: "), "{line}");
    for release in ["infrastructure-proxmox v0.9.0", "infrastructure-packet v0.9.0"] {
        assert!(line.contains(release), "{release} not named in: {line}");
    }
    for crd in [
        "`proxmoxmachinetemplates.infrastructure.cluster.x-k8s.io`",
        "`packetmachinetemplates.infrastructure.cluster.x-k8s.io`",
    ] {
        assert!(line.contains(crd), "{crd} not named in: {line}");
    }
    assert!(
        both.stderr
            .contains("install these two releases on separate management clusters"),
        "{}",
        both.stderr
    );
}
