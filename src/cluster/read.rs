//! The objects `status` and `wait` compare with the rendered fleet, in as few lists as the API
//! allows: the Flux Kustomizations and sources in their namespaces, everything else kaas-gitops
//! rendered by its `app.kubernetes.io/managed-by` label.

use std::collections::BTreeSet;

use crate::cluster::{
    CLUSTER, Cluster, ClusterError, DATA_STORE, EXTERNAL_ARTIFACT, GIT_REPOSITORY, HELM_RELEASE, KAMAJI_CONTROL_PLANE,
    KUSTOMIZATION, Kind, MACHINE_DEPLOYMENT, MACHINE_SET, OCI_REPOSITORY,
};
use crate::status::health::DEPLOYMENT_NAME_LABEL;
use crate::status::{Entry, Live, live};

const MANAGED: &str = "app.kubernetes.io/managed-by=kaas-gitops";

/// The live objects of `entries`, and notes on what the cluster does not serve (Cluster API
/// not installed: its objects then show as Missing). Flux not installed is an error.
pub fn fleet(cluster: &Cluster, entries: &[Entry]) -> Result<(Live, Vec<String>), ClusterError> {
    let mut objects = Vec::new();
    let mut notes = Vec::new();
    let namespaces: BTreeSet<&str> = entries.iter().map(|e| e.kustomization.namespace.as_str()).collect();
    for ns in namespaces {
        objects.extend(cluster.list(KUSTOMIZATION, Some(ns), None)?);
    }
    for kind in [GIT_REPOSITORY, OCI_REPOSITORY, EXTERNAL_ARTIFACT] {
        let sources: BTreeSet<&str> = entries
            .iter()
            .filter_map(|e| e.source.as_ref())
            .filter(|s| s.kind == kind.kind)
            .map(|s| s.namespace.as_str())
            .collect();
        for ns in sources {
            objects.extend(cluster.list(kind, Some(ns), None)?);
        }
    }
    let wanted: BTreeSet<&str> = entries
        .iter()
        .flat_map(|e| e.objects.iter().map(|o| o.kind.as_str()))
        .collect();
    for kind in [
        HELM_RELEASE,
        CLUSTER,
        KAMAJI_CONTROL_PLANE,
        MACHINE_DEPLOYMENT,
        DATA_STORE,
    ] {
        if !wanted.contains(kind.kind) {
            continue;
        }
        match cluster.list(kind, None, Some(MANAGED)) {
            Ok(found) => objects.extend(found),
            Err(ClusterError::NoApi { .. }) if !is_flux(kind) => notes.push(format!(
                "the cluster serves no {} ({}/{}): Cluster API or the Kamaji provider is not installed",
                kind.kind, kind.group, kind.version
            )),
            Err(e) => return Err(e),
        }
    }
    // Cluster API makes the MachineSets (no label of ours): all of them with its deployment label.
    if wanted.contains(MACHINE_DEPLOYMENT.kind) {
        match cluster.list(MACHINE_SET, None, Some(DEPLOYMENT_NAME_LABEL)) {
            Ok(found) => objects.extend(found),
            Err(ClusterError::NoApi { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok((live(objects), notes))
}

fn is_flux(kind: Kind) -> bool {
    kind.group.ends_with(".fluxcd.io")
}
