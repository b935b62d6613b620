//! Worker pools: a MachineDeployment, its machine template and KubeadmConfigTemplate. Cluster
//! API treats templates as immutable, so each template is named after a hash of its spec: a
//! changed spec is a new template, and the MachineDeployment's new reference rolls the machines.

use sha2::{Digest, Sha256};

use crate::model::{Pool, PoolSize, Tenant};
use crate::render::node::Node;
use crate::render::objects::cluster::{
    Bootstrap, ContractRef, Deletion, LabelSelector, MachineDeployment, MachineDeploymentSpec, MachineSpec,
    MachineTemplateMetadata, MachineTemplateSpec,
};
use crate::render::objects::{ObjectMeta, to_node};
use crate::render::providers::{self, Size};
use crate::render::shared::{tenant_labels, tmeta};
use crate::render::{Object, yaml};
use crate::{map, seq};

const AUTOSCALER_MIN: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size";
const AUTOSCALER_MAX: &str = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size";
const CAPACITY: &str = "capacity.cluster-autoscaler.kubernetes.io";

/// `<tenant>-<pool>-<first 8 hex of sha256(spec)>`.
pub fn template_name(t: &Tenant, pool: &Pool, spec: &Node) -> String {
    hashed_name(&format!("{}-{}", t.name, pool.name), spec)
}

/// `<prefix>-<first 8 hex of sha256(spec)>`: a template name that changes with its spec.
pub(crate) fn hashed_name(prefix: &str, spec: &Node) -> String {
    let bytes = yaml::document("", spec);
    let digest = Sha256::digest(&bytes);
    format!("{prefix}-{}", &hex::encode(digest)[..8])
}

/// The pool's three objects.
pub fn pool_objects(t: &Tenant, pool: &Pool) -> Vec<Object> {
    let kind = providers::kinds(t.provider()).machine_template;
    let (infra_kind, infra_api) = (kind.kind, kind.api_version);
    let size = Size {
        cpus: pool.cpus,
        memory_mib: pool.memory_mib,
        disk_gib: pool.disk_gib,
    };
    let machine = providers::machine_spec(&t.infrastructure, &size, pool.proxmox.as_ref(), pool.os, Some(&t.name));
    let infra_spec = map! {"template" => map! {"spec" => machine}};
    let infra_name = template_name(t, pool, &infra_spec);
    let bootstrap_spec = kubeadm_spec(t, pool, &infra_name);
    let bootstrap_name = template_name(t, pool, &bootstrap_spec);
    let md_name = format!("{}-{}", t.name, pool.name);
    vec![
        Object {
            kind: infra_kind,
            name: infra_name.clone(),
            body: map! {
                "apiVersion" => infra_api,
                "kind" => infra_kind,
                "metadata" => tmeta(t, &infra_name),
                "spec" => infra_spec,
            },
        },
        Object {
            kind: "KubeadmConfigTemplate",
            name: bootstrap_name.clone(),
            body: map! {
                "apiVersion" => "bootstrap.cluster.x-k8s.io/v1beta2",
                "kind" => "KubeadmConfigTemplate",
                "metadata" => tmeta(t, &bootstrap_name),
                "spec" => bootstrap_spec,
            },
        },
        machine_deployment(t, pool, &md_name, infra_kind, &infra_name, &bootstrap_name),
    ]
}

/// Labels the kubelet may set on its own Node; `kubernetes.io`/`k8s.io` ones are left to
/// Cluster API's label sync (the kubelet refuses them).
pub(crate) fn kubelet_labels(pool: &Pool) -> Option<String> {
    let own: Vec<String> = pool
        .labels
        .iter()
        .filter(|(k, _)| {
            let prefix = k.split_once('/').map_or("", |(p, _)| p);
            !(prefix.ends_with("kubernetes.io") || prefix.ends_with("k8s.io"))
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    (!own.is_empty()).then(|| own.join(","))
}

/// The pool's `KubeadmConfigTemplate.spec`; `machine_template` is its machine template's name,
/// which a provider's per-template Secret is named after (so this template's name follows it).
fn kubeadm_spec(t: &Tenant, pool: &Pool, machine_template: &str) -> Node {
    let mut wiring = providers::node(&t.infrastructure, pool.os);
    if let Some(f) = wiring.machine_secret_file {
        wiring.files.push(f.file(machine_template));
    }
    let mut args = wiring.kubelet_args();
    if let Some(labels) = kubelet_labels(pool) {
        args.push(map! {"name" => "node-labels", "value" => labels});
    }
    let taints: Vec<Node> = pool
        .taints
        .iter()
        .map(|(k, v, e)| map! {"key" => k, "value" => v.clone(), "effect" => e.as_str()})
        .collect();
    let users = if t.ssh_authorized_keys.is_empty() {
        Node::Absent
    } else {
        seq![map! {"name" => wiring.user.unwrap_or("root"), "sshAuthorizedKeys" => &t.ssh_authorized_keys}]
    };
    // The spec must not be empty (the CRD's `minProperties: 1`); cloud-init is kubeadm's default
    // format, so naming it changes nothing for nodes that need no other settings.
    let bare = wiring.files.is_empty()
        && wiring.post_kubeadm_commands.is_empty()
        && wiring.node_name.is_none()
        && args.is_empty()
        && taints.is_empty()
        && users == Node::Absent;
    let format = if wiring.ignition {
        Some("ignition")
    } else {
        bare.then_some("cloud-config")
    };
    map! {
        "template" => map! {
            "spec" => map! {
                "format" => format,
                "ignition" => wiring.ignition_config.map(|c| map! {"containerLinuxConfig" => map! {"additionalConfig" => c}}),
                "files" => Node::from(wiring.files).or_absent(),
                "preKubeadmCommands" => Node::from(wiring.pre_kubeadm_commands).or_absent(),
                "postKubeadmCommands" => Node::from(wiring.post_kubeadm_commands).or_absent(),
                "joinConfiguration" => map! {
                    "nodeRegistration" => map! {
                        "name" => wiring.node_name,
                        "kubeletExtraArgs" => Node::from(args).or_absent(),
                        "taints" => Node::from(taints).or_absent(),
                    }.or_absent(),
                }.or_absent(),
                "users" => users,
            },
        },
    }
}

fn machine_deployment(
    t: &Tenant,
    pool: &Pool,
    name: &str,
    infra_kind: &str,
    infra_name: &str,
    bootstrap_name: &str,
) -> Object {
    let selector = map! {
        "cluster.x-k8s.io/cluster-name" => &t.name,
        "cluster.x-k8s.io/deployment-name" => name,
    };
    let mut template_labels = match &selector {
        Node::Map(m) => m.clone(),
        _ => unreachable!("built as a map"),
    };
    for (k, v) in &pool.labels {
        template_labels.push((k.clone(), Node::from(v)));
    }
    let (replicas, annotations) = match pool.size {
        PoolSize::Fixed(n) => (Some(n), None),
        PoolSize::Autoscaled { min, max } => (None, Some(autoscaler_annotations(pool, min, max))),
    };
    let mut metadata = ObjectMeta::new(name, Some(&t.name), tenant_labels(t));
    metadata.annotations = annotations;
    let contract_ref = |api_group: &str, kind: &str, name: &str| ContractRef {
        api_group: api_group.into(),
        kind: kind.into(),
        name: name.into(),
    };
    let deployment = MachineDeployment::new(
        metadata,
        MachineDeploymentSpec {
            cluster_name: t.name.clone(),
            // Autoscaled pools leave replicas to the autoscaler, so Flux and it do not fight.
            replicas,
            selector: LabelSelector { match_labels: selector },
            template: MachineTemplateSpec {
                metadata: MachineTemplateMetadata {
                    labels: Node::Map(template_labels),
                },
                spec: MachineSpec {
                    cluster_name: t.name.clone(),
                    version: pool.version.unwrap_or(t.version).to_string(),
                    bootstrap: Bootstrap {
                        config_ref: contract_ref("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate", bootstrap_name),
                    },
                    infrastructure_ref: contract_ref(providers::GROUP, infra_kind, infra_name),
                    failure_domain: pool.failure_domain.clone(),
                    // A node whose tenant API no longer answers (a pool removed while the
                    // control plane is down) would otherwise be drained for ever: the
                    // default 0 means no limit (cluster-api v1.14.0, MachineDeployment
                    // `spec.template.spec.deletion.nodeDrainTimeoutSeconds`).
                    deletion: Deletion {
                        node_drain_timeout_seconds: NODE_DRAIN_TIMEOUT_SECONDS,
                    },
                },
            },
        },
    );
    Object {
        kind: "MachineDeployment",
        name: name.to_string(),
        body: to_node(&deployment),
    }
}

/// How long Cluster API drains a worker before deleting its machine anyway.
pub(crate) const NODE_DRAIN_TIMEOUT_SECONDS: u32 = 600;

/// Min/max as strings, and the capacity cluster-autoscaler needs to scale an empty pool.
pub(crate) fn autoscaler_annotations(pool: &Pool, min: u32, max: u32) -> Node {
    let mut a = vec![
        (AUTOSCALER_MIN.to_string(), Node::from(min.to_string())),
        (AUTOSCALER_MAX.to_string(), Node::from(max.to_string())),
        (format!("{CAPACITY}/cpu"), Node::from(pool.cpus.to_string())),
        (
            format!("{CAPACITY}/memory"),
            Node::from(format!("{}Mi", pool.memory_mib)),
        ),
        (
            format!("{CAPACITY}/ephemeral-disk"),
            Node::from(format!("{}Gi", pool.disk_gib)),
        ),
    ];
    if !pool.labels.is_empty() {
        let labels: Vec<String> = pool.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        a.push((format!("{CAPACITY}/labels"), Node::from(labels.join(","))));
    }
    if !pool.taints.is_empty() {
        let taints: Vec<String> = pool
            .taints
            .iter()
            .map(|(k, v, e)| format!("{k}={}:{}", v.as_deref().unwrap_or(""), e.as_str()))
            .collect();
        a.push((format!("{CAPACITY}/taints"), Node::from(taints.join(","))));
    }
    Node::Map(a)
}
