//! KubeVirt (CAPK). The `KubevirtCluster` is marked as managed by Kamaji, so CAPK creates no
//! load balancer Service for control-plane VMs that do not exist, and the Kamaji provider patches
//! the endpoint in. CAPK sets each node's provider ID itself (`kubevirt://<machine>`): there is
//! no cloud controller manager and no kubelet flag.

use super::{ClusterParts, NodeWiring, Size};
use crate::model::KubevirtCluster;
use crate::render::node::Node;
use crate::{map, seq};

/// Marks an infrastructure cluster as managed by another controller than its provider.
pub(super) const MANAGED_BY: &str = "cluster.x-k8s.io/managed-by";

/// `KubevirtCluster`: the annotation and no spec.
pub(super) fn cluster() -> ClusterParts {
    ClusterParts {
        annotations: vec![(MANAGED_BY, "kamaji")],
        spec: Node::Absent,
    }
}

/// `KubevirtMachineTemplate.spec.template.spec`: a VM of the pool's size booting `image`.
pub(super) fn machine(k: &KubevirtCluster, size: &Size) -> Node {
    let (volume, data_volumes) = match &k.storage_class {
        None => (
            map! {"name" => "rootdisk", "containerDisk" => map! {"image" => &k.image}},
            Node::Absent,
        ),
        Some(class) => (
            map! {"name" => "rootdisk", "dataVolume" => map! {"name" => "rootdisk"}},
            seq![map! {
                "metadata" => map! {"name" => "rootdisk"},
                "spec" => map! {
                    "source" => map! {"registry" => map! {"url" => format!("docker://{}", k.image)}},
                    "storage" => map! {
                        "storageClassName" => class,
                        "resources" => map! {"requests" => map! {"storage" => format!("{}Gi", size.disk_gib)}},
                    },
                },
            }],
        ),
    };
    map! {
        // CAPK holds no SSH keys for an externally managed cluster, so it could not check
        // the bootstrap over SSH anyway; say so instead of relying on it skipping the check.
        "virtualMachineBootstrapCheck" => map! {"checkStrategy" => "none"},
        "virtualMachineTemplate" => map! {
            "spec" => map! {
                "runStrategy" => "Always",
                "dataVolumeTemplates" => data_volumes,
                "template" => map! {
                    "spec" => map! {
                        "domain" => map! {
                            "cpu" => map! {"cores" => size.cpus},
                            "memory" => map! {"guest" => format!("{}Mi", size.memory_mib)},
                            "devices" => map! {
                                "disks" => seq![map! {"name" => "rootdisk", "disk" => map! {"bus" => "virtio"}}],
                                "networkInterfaceMultiqueue" => true,
                            },
                        },
                        "evictionStrategy" => "External",
                        "volumes" => seq![volume],
                    },
                },
            },
        },
    }
}

/// Nothing beyond kubeadm's defaults.
pub(super) fn node() -> NodeWiring {
    NodeWiring::default()
}
