//! Pieces several renderers share, kept apart so that no renderer imports another to reach them:
//! the labels and metadata every object carries, the `Cluster`'s network and labels, the bundled
//! etcd's names, the controller manager flag of an external cloud provider.

use crate::map;
use crate::model::{Delivery, Platform, Tenant};
use crate::render::meta;
use crate::render::node::Node;
use crate::render::objects::cluster::{ClusterNetwork, NetworkRanges};
use crate::render::objects::helm::SourceRef;

/// The release name of the kamaji chart's bundled etcd (its `fullnameOverride`).
pub const DEFAULT_RELEASE: &str = "kamaji-etcd";
/// The DataStore the bundled etcd backs.
pub use crate::model::datastores::DEFAULT_DATASTORE;

/// Labels on every platform object.
pub fn platform_labels() -> Node {
    map! {"app.kubernetes.io/managed-by" => "kaas-gitops"}
}

/// The labels every object of `t` carries.
pub fn tenant_labels(t: &Tenant) -> Node {
    map! {
        "app.kubernetes.io/managed-by" => "kaas-gitops",
        "kaas-gitops.dev/tenant" => &t.name,
    }
}

/// `metadata` of a namespaced object of `t`.
pub fn tmeta(t: &Tenant, name: &str) -> Node {
    meta(name, Some(&t.name), tenant_labels(t))
}

/// The `Cluster`'s labels: the tenant's over the ones every object carries.
pub fn cluster_labels(t: &Tenant) -> Node {
    let mut labels = vec![
        ("app.kubernetes.io/managed-by".to_string(), Node::from("kaas-gitops")),
        ("kaas-gitops.dev/tenant".to_string(), Node::from(&t.name)),
    ];
    for (k, v) in &t.labels {
        labels.retain(|(existing, _)| existing != k);
        labels.push((k.clone(), Node::from(v)));
    }
    Node::Map(labels)
}

/// `spec.clusterNetwork` of the `Cluster`.
pub fn cluster_network(t: &Tenant) -> ClusterNetwork {
    ClusterNetwork {
        api_server_port: t.port,
        pods: NetworkRanges {
            cidr_blocks: t.pods.clone(),
        },
        services: NetworkRanges {
            cidr_blocks: t.services.clone(),
        },
    }
}

/// The controller manager flag that leaves node and route work to a cloud controller manager.
pub const CLOUD_PROVIDER_EXTERNAL: &str = "--cloud-provider=external";

/// The source a tenant's Kustomizations read (its own and its `<tenant>-access` one) and the
/// interval they reconcile at. `name` is the tenant's Kustomization name, which its own
/// OCIRepository or ExternalArtifact shares. A tenant delivered as an artifact is reconciled for
/// drift every `tenantInterval`: a new artifact revision is applied at once, outside the
/// interval (kustomize-controller v1.9.4, `docs/spec/v1/kustomizations.md`, "Interval"); an
/// ExternalArtifact needs kustomize-controller's `--feature-gates=ExternalArtifact=true`
/// (`api/v1/reference_types.go`, `CrossNamespaceSourceReference.Kind`).
pub(crate) fn tenant_source(p: &Platform, name: &str) -> (String, SourceRef) {
    let own = |kind: &str| SourceRef {
        kind: kind.into(),
        name: name.to_string(),
        namespace: p.source_namespace.clone(),
    };
    match &p.delivery {
        Delivery::Oci(o) => (o.tenant_interval.clone(), own("OCIRepository")),
        Delivery::Artifact(a) => (a.tenant_interval.clone(), own("ExternalArtifact")),
        Delivery::Git => (
            p.interval.clone(),
            SourceRef {
                kind: p.source_kind.clone(),
                name: p.source_name.clone(),
                namespace: p.source_namespace.clone(),
            },
        ),
    }
}
