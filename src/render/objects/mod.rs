//! Typed Kubernetes objects for the kinds kaas-gitops writes most: `Cluster` and
//! `MachineDeployment` (cluster.x-k8s.io/v1beta2), `KamajiControlPlane`
//! (controlplane.cluster.x-k8s.io/v1alpha2), `HelmRelease` (helm.toolkit.fluxcd.io/v2) and
//! `Kustomization` (kustomize.toolkit.fluxcd.io/v1). Each struct holds exactly the fields the
//! renderers write, in the order they are written, so a misspelt field does not compile and
//! `tests/it/objects.rs` checks every name against the upstream CRD. Free-form parts (labels,
//! annotations, Helm values, variable values) stay [`Node`]s. One file per API group.

pub mod artifact;
pub mod cluster;
pub mod controlplane;
pub mod helm;
pub mod kustomize;
mod node_ser;
pub(crate) mod oci;

use serde::Serialize;

use crate::render::node::Node;
pub use node_ser::to_node;

/// `metadata` as kaas-gitops writes it: labels and annotations keep the order they are built in.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.labels`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Node>,
    /// `metadata.annotations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Node>,
}

impl ObjectMeta {
    /// A name, a namespace and labels (left out when empty), no annotations.
    pub fn new(name: impl Into<String>, namespace: Option<&str>, labels: Node) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            namespace: namespace.map(str::to_string),
            labels: present(labels),
            annotations: None,
        }
    }
}

/// `None` for a node that would vanish from its map (absent, or an empty map or sequence).
pub fn present(node: Node) -> Option<Node> {
    match node.or_absent() {
        Node::Absent => None,
        n => Some(n),
    }
}
