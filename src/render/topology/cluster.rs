//! A topology-mode tenant's `Cluster`: the class, the version, the control plane replicas, one
//! MachineDeployment topology per pool (autoscaled pools carry the autoscaler's annotations and
//! no replicas), and the variables: kaas-gitops's own, then the tenant's.

use super::WORKER_CLASS;
use super::patches::{
    VAR_DATASTORE, VAR_DATASTORE_SCHEMA, VAR_DATASTORE_USERNAME, VAR_DNS, VAR_ENDPOINT, VAR_NODE_LABELS,
    VAR_NODE_TAINTS, VAR_SSH_KEYS,
};
use crate::map;
use crate::model::{Platform, PoolSize, Tenant, TenantTopology};
use crate::render::Object;
use crate::render::node::Node;
use crate::render::objects::cluster::{
    ClassRef, Cluster, ClusterSpec, ClusterVariable, ControlPlaneTopology, Deletion, MachineDeploymentTopology,
    MachineDeploymentVariables, Topology, TopologyMetadata, WorkersTopology,
};
use crate::render::objects::{ObjectMeta, present, to_node};
use crate::render::shared::{cluster_labels, cluster_network};
use crate::render::workers::{autoscaler_annotations, kubelet_labels};

/// The tenant's `Cluster` built from its class.
pub(crate) fn cluster(p: &Platform, t: &Tenant, topo: &TenantTopology) -> Object {
    let namespace = p.topology.as_ref().map(|t| t.namespace.clone());
    let deployments: Vec<MachineDeploymentTopology> = t
        .pools
        .iter()
        .map(|pool| {
            let (replicas, annotations) = match pool.size {
                PoolSize::Fixed(n) => (Some(n), None),
                // No replicas: the autoscaler owns them, and the topology controller leaves them.
                PoolSize::Autoscaled { min, max } => (None, present(autoscaler_annotations(pool, min, max))),
            };
            // Labels and taints reach the Node through the class's worker bootstrap template
            // (patches.rs, `node_patches`), from these per-pool values.
            let mut overrides = Vec::new();
            if let Some(labels) = kubelet_labels(pool) {
                overrides.push(ClusterVariable {
                    name: VAR_NODE_LABELS.into(),
                    value: Node::from(labels),
                });
            }
            if !pool.taints.is_empty() {
                let taints: Vec<Node> = pool
                    .taints
                    .iter()
                    .map(|(k, v, e)| map! {"key" => k, "value" => v.clone(), "effect" => e.as_str()})
                    .collect();
                overrides.push(ClusterVariable {
                    name: VAR_NODE_TAINTS.into(),
                    value: Node::from(taints),
                });
            }
            let metadata = TopologyMetadata {
                labels: present(Node::from(&pool.labels)),
                annotations,
            };
            MachineDeploymentTopology {
                class: WORKER_CLASS.into(),
                name: pool.name.clone(),
                metadata: (metadata.labels.is_some() || metadata.annotations.is_some()).then_some(metadata),
                replicas,
                variables: (!overrides.is_empty()).then_some(MachineDeploymentVariables { overrides }),
                failure_domain: pool.failure_domain.clone(),
                deletion: Deletion {
                    node_drain_timeout_seconds: crate::render::workers::NODE_DRAIN_TIMEOUT_SECONDS,
                },
            }
        })
        .collect();
    let variable = |name: &str, value: Node| ClusterVariable {
        name: name.to_string(),
        value,
    };
    let mut variables = vec![variable(VAR_DATASTORE, Node::from(t.datastore_name()))];
    if let Some(n) = t.datastore_names.named() {
        variables.push(variable(VAR_DATASTORE_SCHEMA, Node::from(&n.schema)));
        variables.push(variable(VAR_DATASTORE_USERNAME, Node::from(&n.username)));
    }
    if let Some(vip) = t.vip {
        variables.push(variable(
            VAR_ENDPOINT,
            map! {"host" => vip.to_string(), "port" => t.port},
        ));
    }
    if let Some(dns) = t.dns_service_ip() {
        variables.push(variable(VAR_DNS, Node::from(vec![dns.to_string()])));
    }
    if !t.ssh_authorized_keys.is_empty() {
        variables.push(variable(VAR_SSH_KEYS, Node::from(&t.ssh_authorized_keys)));
    }
    for (name, value) in &topo.variables {
        variables.push(variable(name, Node::from(value)));
    }
    let cluster = Cluster::new(
        ObjectMeta::new(&t.name, Some(&t.name), cluster_labels(t)),
        ClusterSpec {
            cluster_network: cluster_network(t),
            control_plane_ref: None,
            infrastructure_ref: None,
            topology: Some(Topology {
                class_ref: ClassRef {
                    name: topo.class.clone(),
                    namespace,
                },
                version: t.version.to_string(),
                control_plane: ControlPlaneTopology {
                    replicas: t.cp_replicas,
                },
                workers: (!deployments.is_empty()).then_some(WorkersTopology {
                    machine_deployments: deployments,
                }),
                variables,
            }),
            // Tenants built from a class keep their own Service (model::build::tenant).
            control_plane_endpoint: None,
        },
    );
    Object {
        kind: "Cluster",
        name: t.name.clone(),
        body: to_node(&cluster),
    }
}
