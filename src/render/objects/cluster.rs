//! cluster.x-k8s.io/v1beta2: `Cluster` (with its own control plane and infrastructure, or from
//! a ClusterClass topology) and `MachineDeployment`.

use serde::Serialize;

use super::ObjectMeta;
use crate::render::node::Node;

/// The API version of every object here.
pub const API_VERSION: &str = "cluster.x-k8s.io/v1beta2";

/// A `Cluster`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: ClusterSpec,
}

impl Cluster {
    /// A `Cluster` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: ClusterSpec) -> Cluster {
        Cluster {
            api_version: API_VERSION,
            kind: "Cluster",
            metadata,
            spec,
        }
    }
}

/// `Cluster.spec`: the references of a classic cluster, or the topology of a class-based one.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// `spec.clusterNetwork`.
    pub cluster_network: ClusterNetwork,
    /// `spec.controlPlaneRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_ref: Option<ContractRef>,
    /// `spec.infrastructureRef`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub infrastructure_ref: Option<ContractRef>,
    /// `spec.topology`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<Topology>,
    /// `spec.controlPlaneEndpoint`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub control_plane_endpoint: Option<ApiEndpoint>,
}

/// `spec.controlPlaneEndpoint`.
#[derive(Debug, Clone, Serialize)]
pub struct ApiEndpoint {
    /// The address or hostname.
    pub host: String,
    /// The port.
    pub port: u16,
}

/// `spec.clusterNetwork`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetwork {
    /// The API server's port.
    pub api_server_port: u16,
    /// Pod CIDRs.
    pub pods: NetworkRanges,
    /// Service CIDRs.
    pub services: NetworkRanges,
}

/// `{cidrBlocks: [...]}`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkRanges {
    /// The CIDRs.
    pub cidr_blocks: Vec<String>,
}

/// A v1beta2 contract reference: `{apiGroup, kind, name}` in the referrer's namespace.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContractRef {
    /// The API group.
    pub api_group: String,
    /// The kind.
    pub kind: String,
    /// The name.
    pub name: String,
}

/// `Cluster.spec.topology`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// The ClusterClass.
    pub class_ref: ClassRef,
    /// The Kubernetes version.
    pub version: String,
    /// `controlPlane`.
    pub control_plane: ControlPlaneTopology,
    /// `workers`, left out without pools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<WorkersTopology>,
    /// The class's variables.
    pub variables: Vec<ClusterVariable>,
}

/// `topology.classRef`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassRef {
    /// The class name.
    pub name: String,
    /// The class's namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// `topology.controlPlane`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlaneTopology {
    /// Control plane replicas.
    pub replicas: u32,
}

/// `topology.workers`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkersTopology {
    /// One per pool.
    pub machine_deployments: Vec<MachineDeploymentTopology>,
}

/// One pool of a topology.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentTopology {
    /// The class's worker class.
    pub class: String,
    /// The pool name.
    pub name: String,
    /// Labels and annotations of the pool's machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TopologyMetadata>,
    /// Left out when the autoscaler owns the size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// Per-pool values of the class's variables (`variables.overrides`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variables: Option<MachineDeploymentVariables>,
    /// `failureDomain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
    /// `deletion`.
    pub deletion: Deletion,
}

/// `metadata` of a pool in a topology.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyMetadata {
    /// Labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Node>,
    /// Annotations.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Node>,
}

/// `machineDeployments[].variables`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentVariables {
    /// Values for this pool, over the Cluster's.
    pub overrides: Vec<ClusterVariable>,
}

/// `deletion` of a machine template or pool.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deletion {
    /// How long a node is drained before its machine is deleted anyway.
    pub node_drain_timeout_seconds: u32,
}

/// A class variable's value.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVariable {
    /// The variable.
    pub name: String,
    /// Its value, any YAML.
    pub value: Node,
}

/// A `MachineDeployment`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeployment {
    api_version: &'static str,
    kind: &'static str,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// `spec`.
    pub spec: MachineDeploymentSpec,
}

impl MachineDeployment {
    /// A `MachineDeployment` with its apiVersion and kind.
    pub fn new(metadata: ObjectMeta, spec: MachineDeploymentSpec) -> MachineDeployment {
        MachineDeployment {
            api_version: API_VERSION,
            kind: "MachineDeployment",
            metadata,
            spec,
        }
    }
}

/// `MachineDeployment.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeploymentSpec {
    /// The Cluster.
    pub cluster_name: String,
    /// Left out when the autoscaler owns the size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u32>,
    /// `selector`.
    pub selector: LabelSelector,
    /// `template`.
    pub template: MachineTemplateSpec,
}

/// A label selector by `matchLabels`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// The labels.
    pub match_labels: Node,
}

/// `MachineDeployment.spec.template`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineTemplateSpec {
    /// `metadata`.
    pub metadata: MachineTemplateMetadata,
    /// `spec`.
    pub spec: MachineSpec,
}

/// `template.metadata`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineTemplateMetadata {
    /// The machines' labels.
    pub labels: Node,
}

/// `template.spec`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// The Cluster.
    pub cluster_name: String,
    /// The Kubernetes version.
    pub version: String,
    /// `bootstrap`.
    pub bootstrap: Bootstrap,
    /// The machine template.
    pub infrastructure_ref: ContractRef,
    /// `failureDomain`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
    /// `deletion`.
    pub deletion: Deletion,
}

/// `template.spec.bootstrap`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// The bootstrap config template.
    pub config_ref: ContractRef,
}
