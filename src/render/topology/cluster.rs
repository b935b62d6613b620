//! A topology-mode tenant's `Cluster`: the class, the version, the control plane replicas, one
//! MachineDeployment topology per pool (autoscaled pools carry the autoscaler's annotations and
//! no replicas), and the variables: kaas-gitops's own, then the tenant's.

use super::WORKER_CLASS;
use super::patches::{VAR_DATASTORE, VAR_ENDPOINT, VAR_SSH_KEYS};
use crate::map;
use crate::model::{Platform, PoolSize, Tenant, TenantTopology};
use crate::render::Object;
use crate::render::node::Node;
use crate::render::shared::{cluster_labels, cluster_network};
use crate::render::workers::autoscaler_annotations;

/// The tenant's `Cluster` built from its class.
pub(crate) fn cluster(p: &Platform, t: &Tenant, topo: &TenantTopology) -> Object {
    let namespace = p.topology.as_ref().map(|t| t.namespace.as_str());
    let deployments: Vec<Node> = t
        .pools
        .iter()
        .map(|pool| {
            let (replicas, annotations) = match pool.size {
                PoolSize::Fixed(n) => (Some(n), Node::Absent),
                // No replicas: the autoscaler owns them, and the topology controller leaves them.
                PoolSize::Autoscaled { min, max } => (None, autoscaler_annotations(pool, min, max)),
            };
            let taints: Vec<Node> = pool
                .taints
                .iter()
                .map(|(k, v, e)| {
                    map! {"key" => k, "value" => v.clone(), "effect" => e.as_str(), "propagation" => "OnInitialization"}
                })
                .collect();
            map! {
                "class" => WORKER_CLASS,
                "name" => &pool.name,
                "metadata" => map! {
                    "labels" => Node::from(&pool.labels).or_absent(),
                    "annotations" => annotations,
                }.or_absent(),
                "replicas" => replicas,
                "taints" => Node::from(taints).or_absent(),
                "deletion" => map! {"nodeDrainTimeoutSeconds" => crate::render::workers::NODE_DRAIN_TIMEOUT_SECONDS},
            }
        })
        .collect();
    let mut variables = vec![map! {"name" => VAR_DATASTORE, "value" => t.datastore_name()}];
    if let Some(vip) = t.vip {
        variables.push(map! {
            "name" => VAR_ENDPOINT,
            "value" => map! {"host" => vip.to_string(), "port" => t.port},
        });
    }
    if !t.ssh_authorized_keys.is_empty() {
        variables.push(map! {"name" => VAR_SSH_KEYS, "value" => &t.ssh_authorized_keys});
    }
    for (name, value) in &topo.variables {
        variables.push(map! {"name" => name, "value" => Node::from(value)});
    }
    Object {
        kind: "Cluster",
        name: t.name.clone(),
        body: map! {
            "apiVersion" => "cluster.x-k8s.io/v1beta2",
            "kind" => "Cluster",
            "metadata" => map! {"name" => &t.name, "namespace" => &t.name, "labels" => cluster_labels(t)},
            "spec" => map! {
                "clusterNetwork" => cluster_network(t),
                "topology" => map! {
                    "classRef" => map! {"name" => &topo.class, "namespace" => namespace},
                    "version" => t.version.to_string(),
                    "controlPlane" => map! {"replicas" => t.cp_replicas},
                    "workers" => map! {"machineDeployments" => Node::from(deployments).or_absent()}.or_absent(),
                    "variables" => variables,
                },
            },
        },
    }
}
