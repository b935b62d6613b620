//! Topology mode. The platform layer renders every ClusterClass of `kaas.yaml` with one
//! `KamajiControlPlaneTemplate` and one worker `KubeadmConfigTemplate` shared by all classes
//! (in the classes' namespace), each class's own infrastructure cluster and machine templates,
//! its variables and its patches; a topology-mode tenant renders a `Cluster` with
//! `spec.topology` instead of the control plane, infrastructure cluster and pools.

mod cluster;
mod patches;

use crate::map;
use crate::model::{ClusterClass, Platform, Topology};
use crate::render::node::Node;
use crate::render::providers::{self, ClusterContext, Size};
use crate::render::workers::hashed_name;
use crate::render::{Object, meta};

pub(crate) use cluster::cluster;
pub(crate) use patches::{VAR_DATASTORE_SCHEMA, VAR_DATASTORE_USERNAME};

/// The one worker class of every ClusterClass.
pub(crate) const WORKER_CLASS: &str = "default-worker";
/// The control plane template's kind and apiVersion.
const KCP_TEMPLATE: (&str, &str) = ("KamajiControlPlaneTemplate", "controlplane.cluster.x-k8s.io/v1alpha2");
/// The worker bootstrap template's kind and apiVersion.
const KCT: (&str, &str) = ("KubeadmConfigTemplate", "bootstrap.cluster.x-k8s.io/v1beta2");

/// A template in the classes' namespace: its name (hashed: ClusterClass templates are rotated,
/// never edited in place) and the object.
struct Template {
    kind: &'static str,
    api_version: &'static str,
    name: String,
    object: Object,
}

fn template(ns: &str, prefix: &str, (kind, api_version): (&'static str, &'static str), spec: Node) -> Template {
    let name = hashed_name(prefix, &spec);
    let object = Object {
        kind,
        name: name.clone(),
        body: map! {
            "apiVersion" => api_version,
            "kind" => kind,
            "metadata" => meta(&name, Some(ns), labels()),
            "spec" => spec,
        },
    };
    Template {
        kind,
        api_version,
        name,
        object,
    }
}

fn labels() -> Node {
    map! {"app.kubernetes.io/managed-by" => "kaas-gitops"}
}

fn template_ref(t: &Template) -> Node {
    map! {"apiVersion" => t.api_version, "kind" => t.kind, "name" => &t.name}
}

/// The shared control plane template. Per-tenant values (datastore, VIP) and per-provider ones
/// (Service annotations, cloud provider) come in through the classes' patches.
fn control_plane_template(ns: &str) -> Template {
    let spec = map! {
        "template" => map! {
            "spec" => map! {
                "addons" => map! {"coreDNS" => map! {}, "kubeProxy" => map! {}, "konnectivity" => map! {}},
                "kubelet" => map! {
                    "cgroupfs" => "systemd",
                    "preferredAddressTypes" => vec!["InternalIP", "ExternalIP", "Hostname"],
                },
                "network" => map! {"serviceType" => "LoadBalancer"},
            },
        },
    };
    template(ns, "kamaji", KCP_TEMPLATE, spec)
}

/// The shared worker bootstrap template. Providers' patches add the kubelet's flags and files
/// under `spec.template.spec`, which therefore must not be empty (an empty spec could be dropped
/// on its way through the API server and leave the patches no parent to add to).
fn bootstrap_template(ns: &str) -> Template {
    let spec = map! {"template" => map! {"spec" => map! {"format" => "cloud-config"}}};
    template(ns, "kamaji-worker", KCT, spec)
}

/// Everything topology mode adds to the platform layer.
pub(crate) fn platform_objects(p: &Platform) -> Vec<Object> {
    let Some(topology) = &p.topology else {
        return Vec::new();
    };
    let ns = &topology.namespace;
    let kcp = control_plane_template(ns);
    let kct = bootstrap_template(ns);
    let mut out = Vec::new();
    for class in &topology.classes {
        out.extend(class_objects(p, topology, class, &kcp, &kct));
    }
    out.push(kcp.object);
    out.push(kct.object);
    out
}

fn class_objects(
    p: &Platform,
    topology: &Topology,
    class: &ClusterClass,
    kcp: &Template,
    kct: &Template,
) -> Vec<Object> {
    let ns = &topology.namespace;
    let provider = class.infrastructure.provider();
    let kinds = providers::kinds(provider);
    let Some(cluster_kind) = kinds.cluster_template else {
        unreachable!("validation refuses classes of providers without a cluster template")
    };
    let parts = providers::cluster_parts(
        &class.infrastructure,
        &ClusterContext {
            tenant: None,
            endpoint: None,
            routed: false,
        },
    );
    let cluster_spec = map! {
        "template" => map! {
            "metadata" => map! {"annotations" => providers::annotations(&parts.annotations)}.or_absent(),
            // Some template kinds require `spec` even where the cluster kind takes none.
            "spec" => match parts.spec {
                Node::Absent => map! {},
                spec => spec,
            },
        },
    };
    let infra = template(
        ns,
        &class.name,
        (cluster_kind.kind, cluster_kind.api_version),
        cluster_spec,
    );
    let size = Size {
        cpus: class.cpus,
        memory_mib: class.memory_mib,
        disk_gib: class.disk_gib,
    };
    let machine_spec = map! {"template" => map! {"spec" => providers::machine_spec(&class.infrastructure, &size, None, crate::model::NodeOs::CloudInit, None)}};
    let machine = template(
        ns,
        &format!("{}-worker", class.name),
        (kinds.machine_template.kind, kinds.machine_template.api_version),
        machine_spec,
    );
    let class_object = Object {
        kind: "ClusterClass",
        name: class.name.clone(),
        body: map! {
            "apiVersion" => "cluster.x-k8s.io/v1beta2",
            "kind" => "ClusterClass",
            "metadata" => meta(&class.name, Some(ns), labels()),
            "spec" => map! {
                "controlPlane" => map! {"templateRef" => template_ref(kcp)},
                "infrastructure" => map! {"templateRef" => template_ref(&infra)},
                "workers" => map! {
                    "machineDeployments" => vec![map! {
                        "class" => WORKER_CLASS,
                        "bootstrap" => map! {"templateRef" => template_ref(kct)},
                        "infrastructure" => map! {"templateRef" => template_ref(&machine)},
                    }],
                },
                "variables" => patches::variables(class),
                "patches" => patches::patches(p.load_balancer, class, &patches::Selectors {
                    control_plane: kcp_selector(),
                    infrastructure_cluster: infra_selector(&infra),
                    worker_bootstrap: worker_selector(kct),
                    worker_machine: worker_selector(&machine),
                }),
            },
        },
    };
    vec![class_object, infra.object, machine.object]
}

fn kcp_selector() -> Node {
    map! {
        "apiVersion" => KCP_TEMPLATE.1,
        "kind" => KCP_TEMPLATE.0,
        "matchResources" => map! {"controlPlane" => true},
    }
}

fn infra_selector(t: &Template) -> Node {
    map! {
        "apiVersion" => t.api_version,
        "kind" => t.kind,
        "matchResources" => map! {"infrastructureCluster" => true},
    }
}

fn worker_selector(t: &Template) -> Node {
    map! {
        "apiVersion" => t.api_version,
        "kind" => t.kind,
        "matchResources" => map! {"machineDeploymentClass" => map! {"names" => vec![WORKER_CLASS]}},
    }
}
