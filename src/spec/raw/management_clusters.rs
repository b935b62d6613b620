//! Several management clusters from one repository, as written: kaas.yaml
//! `spec.managementClusters` and a tenant's `spec.placement` (see docs/management-clusters.md).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One entry of kaas.yaml `spec.managementClusters`.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ManagementCluster {
    /// The cluster's name, a DNS-1123 label: its Flux entry point is `flux/<name>/` (the
    /// default cluster's stays `flux/`), and `kaas.lock` records which tenants run on it.
    pub name: String,
    /// Labels tenants select it by (`spec.placement.selector`), e.g. `{region: eu-west}`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The cluster tenants without `spec.placement` run on, and whose entry point stays `flux/`
    /// (default: the first listed). The cluster an existing single-cluster repository ran on.
    #[serde(default)]
    pub default: bool,
    /// How many tenants it takes (absent: no limit).
    pub capacity: Option<Capacity>,
    /// Address ranges or CIDRs its tenants' VIPs come from (absent: kaas.yaml
    /// `spec.loadBalancer.pools`).
    pub pools: Option<Vec<String>>,
    /// The kubeconfig context that reaches it: `status --all-management-clusters` reads each
    /// cluster through its own (`--context-of NAME=CONTEXT` overrides it).
    pub context: Option<String>,
}

/// `spec.managementClusters[].capacity`: every limit given must hold.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Capacity {
    /// Tenants, decommissioned ones included (their datastore still runs there).
    pub tenants: Option<u32>,
    /// Tenant control plane replicas summed over its tenants (each replica is a kube-apiserver,
    /// controller-manager, scheduler and konnectivity-server Pod's worth of resources).
    pub control_plane_replicas: Option<u32>,
}

/// A tenant's `spec.placement`: where its control plane runs. Exactly one of
/// `managementCluster` and `selector`; without `placement`, the default management cluster.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Placement {
    /// A management cluster by name.
    pub management_cluster: Option<String>,
    /// Labels a management cluster must all carry, e.g. `{region: eu-west}`: of those that
    /// match, the one with the most free capacity (ties: the first listed) is picked once and
    /// recorded in `kaas.lock`.
    pub selector: Option<BTreeMap<String, String>>,
    /// `[move]`: the tenant has been moved to another management cluster by hand (its Cluster API
    /// objects and datastore, docs/management-clusters.md); without it a change of placement of
    /// a running tenant is refused.
    #[serde(default)]
    pub acknowledge: Vec<PlacementAcknowledgement>,
}

/// `spec.placement.acknowledge[]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PlacementAcknowledgement {
    /// The tenant moves to another management cluster.
    Move,
}
